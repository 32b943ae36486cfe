// The Worker's side of the replay guard. Guarantees: a jti is claimed at most once per node, atomically,
// because the claim runs inside that node's ReplayGuard object.
import type { ReplayStore } from "../auth/replay.js";
import type { DONamespace } from "./durable-object.js";

/** Replay store backed by a Durable Object (one per node): claim is atomic inside the object. */
export class DurableReplayStore implements ReplayStore {
  constructor(
    private readonly ns: DONamespace,
    private readonly node: string,
  ) {}
  async claim(key: string, expiresAtMs: number): Promise<boolean> {
    const stub = this.ns.get(this.ns.idFromName(this.node));
    const r = await stub.fetch("https://replay/claim", { method: "POST", body: JSON.stringify({ key, expiresAtMs }) });
    if (!r.ok) throw new Error(`replay store answered ${r.status}`);
    return ((await r.json()) as { fresh: boolean }).fresh;
  }
}
