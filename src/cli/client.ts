// What a command runs with: its flags and arguments, the node's URL, and signing of tokens for that node.
import type { Opts } from "./args.js";
import { fail } from "./args.js";
import { loadKey, signToken } from "./keys.js";

export interface Ctx {
  /** The command's name as typed, and its positional arguments after it. */
  command: string;
  args: string[];
  o: Opts;
  url: string;
  keyPath: string;
  ttl: number;
  iss: string | undefined;
  /** The node name tokens are for: --aud, else what the server's /healthz says. */
  aud(): Promise<string>;
  /** A token carrying `claims`, signed with the key, for the node. */
  sign(claims: Record<string, unknown>): Promise<string>;
}

export function createCtx(command: string, args: string[], o: Opts): Ctx {
  const url = String(o["url"] ?? process.env["PODSYNC_URL"] ?? "http://127.0.0.1:8080").replace(/\/$/, "");
  const keyPath = String(o["key"] ?? process.env["PODSYNC_KEY"] ?? ".podsync/dev-key.json");
  const ttl = Number(o["ttl"] ?? 60);
  const iss = o["iss"] as string | undefined;
  let aud: Promise<string> | undefined;
  const ctx: Ctx = {
    command,
    args,
    o,
    url,
    keyPath,
    ttl,
    iss,
    aud: () => (aud ??= o["aud"] !== undefined ? Promise.resolve(String(o["aud"])) : nodeName(url)),
    sign: async (claims) => signToken(loadKey(keyPath), claims, await ctx.aud(), ttl, iss),
  };
  return ctx;
}

async function nodeName(url: string): Promise<string> {
  try {
    const r = await fetch(`${url}/healthz`);
    const j = (await r.json()) as { node?: string };
    if (j.node) return j.node;
  } catch (e) {
    fail(`cannot reach ${url}: ${(e as Error).message}`);
  }
  return fail(`${url}/healthz did not say the node name; pass --aud`);
}
