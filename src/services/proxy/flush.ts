// `podsync services flush`: the table podsync owns, deleted whole (kube-proxy's CleanupLeftovers); no other table
// is ever named.
import { type NftRunner, nftCli } from "./nft.js";

export const DEFAULT_TABLE = "podsync";

export async function flushServiceTable(
  table = DEFAULT_TABLE,
  nft: NftRunner = nftCli(),
): Promise<{ ok: true; table: string; deleted: boolean } | { ok: false; table: string; error: string }> {
  const probe = await nft.probe();
  if (!probe.ok) return { ok: false, table, error: `cannot flush inet ${table}: ${probe.reason}` };
  try {
    return { ok: true, table, deleted: await nft.deleteTable(table) };
  } catch (e) {
    return { ok: false, table, error: (e as Error).message };
  }
}
