// What a command runs with: its flags and arguments, the node's URL, signing of tokens for that node, and
// requests to it (a connection failure said plainly; an error answer thrown once, as a ServerError).
import type { Opts } from "./args.js";
import { fail } from "./args.js";
import { DEFAULT_HOST, DEFAULT_PORT } from "../settings/port.js";
import { findKey, signToken, type FoundKey } from "./keys.js";

export const DEFAULT_URL = `http://${DEFAULT_HOST}:${DEFAULT_PORT}`;

/** The node answered with an error (problem+json, or anything not ok): main prints it once, exit code 1. */
export class ServerError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Record<string, unknown>,
    readonly hint?: string,
  ) {
    super(String(problem["detail"] ?? problem["title"] ?? `HTTP ${status}`));
  }
}

export interface Ctx {
  /** The command's name as typed, and its positional arguments after it. */
  command: string;
  args: string[];
  o: Opts;
  url: string;
  /** -n, else "default". */
  namespace: string;
  /** -q: no progress or notes on stderr. */
  quiet: boolean;
  ttl: number;
  iss: string | undefined;
  /** The signing key (looked up on first use: keys.ts). */
  key(): FoundKey;
  /** The node name tokens are for: --aud, else what the server's /healthz says. */
  aud(): Promise<string>;
  /** A token carrying `claims`, signed with the key, for the node. */
  sign(claims: Record<string, unknown>): Promise<string>;
  /** fetch against the node's URL; a connection failure is an error saying what happened. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** The JSON body of an answer; an error answer (status >= 400, or a problem) throws a ServerError. */
  json<T = Record<string, unknown>>(r: Response): Promise<T>;
  /** A request with a Bearer token carrying `claims`, its JSON answer. */
  call<T = Record<string, unknown>>(method: string, path: string, claims: Record<string, unknown>): Promise<T>;
  /** Progress and notes: stderr, unless -q. */
  note(line: string): void;
}

export function createCtx(command: string, args: string[], o: Opts, env: NodeJS.ProcessEnv = process.env): Ctx {
  const url = String(o["url"] ?? env["PODSYNC_URL"] ?? DEFAULT_URL).replace(/\/$/, "");
  // Seconds, or a duration (fleet join-token --ttl 15m).
  const t = /^(\d+)(s|m|h)$/.exec(String(o["ttl"] ?? ""));
  const ttl = t ? Number(t[1]) * { s: 1, m: 60, h: 3600 }[t[2] as "s" | "m" | "h"] : Number(o["ttl"] ?? 60);
  if (!Number.isInteger(ttl) || ttl < 1) fail("--ttl must be a whole number of seconds, or a duration (90s, 15m, 1h)");
  let key: FoundKey | undefined;
  let aud: Promise<string> | undefined;
  const ctx: Ctx = {
    command,
    args,
    o,
    url,
    namespace: String(o["namespace"] ?? "default"),
    quiet: Boolean(o["quiet"]),
    ttl,
    iss: o["iss"] as string | undefined,
    key: () => (key ??= findKey(o["key"] as string | undefined, env)),
    aud: () => (aud ??= o["aud"] !== undefined ? Promise.resolve(String(o["aud"])) : nodeName(ctx)),
    sign: async (claims) => {
      const aud = await ctx.aud(); // first: a node that cannot be reached is the first thing to say
      return signToken(ctx.key().key, claims, aud, ttl, ctx.iss);
    },
    fetch: async (path, init) => {
      try {
        return await fetch(`${url}${path}`, init);
      } catch (e) {
        return fail(unreachable(url, e));
      }
    },
    json: async <T>(r: Response) => {
      const text = await r.text();
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        throw new ServerError(r.status, {
          title: `HTTP ${r.status}`,
          detail: `the answer is not JSON: ${text.slice(0, 200)}`,
        });
      }
      if (r.status >= 400 && (r.status !== 207 || body["type"]))
        throw new ServerError(r.status, body, authHint(ctx, body));
      return body as T;
    },
    call: async (method, path, claims) =>
      ctx.json(await ctx.fetch(path, { method, headers: { authorization: `Bearer ${await ctx.sign(claims)}` } })),
    note: (line) => {
      if (!ctx.quiet) process.stderr.write(`${line}\n`);
    },
  };
  return ctx;
}

/** The connection failure in plain words: undici's "fetch failed" hides the reason in `cause`. */
function unreachable(url: string, e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? "";
  const why =
    code === "ECONNREFUSED"
      ? "connection refused: nothing listens there (start the node with `npm start`, or point --url / $PODSYNC_URL at it)"
      : code === "ENOTFOUND" || code === "EAI_AGAIN"
        ? "no such host"
        : code === "ETIMEDOUT" || code === "UND_ERR_CONNECT_TIMEOUT"
          ? "the connection timed out"
          : code === "ECONNRESET" || code === "UND_ERR_SOCKET"
            ? "the connection was closed by the other end"
            : (cause?.message ?? (e as Error).message);
  return `cannot reach podsync at ${url}: ${why}`;
}

/** For a refused signature: which key signed it, and how a node comes to trust a key. */
function authHint(ctx: Ctx, body: Record<string, unknown>): string | undefined {
  const reason = body["reason"];
  if (reason !== "unknown-key" && reason !== "bad-signature" && reason !== "wrong-issuer") return undefined;
  const k = ctx.key();
  return `signed with ${k.path} (from ${k.source}, kid ${k.key.kid ?? "none"}, issuer ${ctx.iss ?? k.key.iss ?? "podsync-dev"}); the node trusts its PODSYNC_JWKS_FILE with PODSYNC_ISSUERS, or, with no keys configured, only the dev key it made (.podsync/dev-key.json where it was started)`;
}

async function nodeName(ctx: Ctx): Promise<string> {
  const r = await ctx.fetch("/healthz");
  let j: { node?: string } = {};
  try {
    j = (await r.json()) as { node?: string };
  } catch {
    // not podsync: said below
  }
  if (j.node) return j.node;
  return fail(`${ctx.url}/healthz did not say the node name (is it podsync?); pass --aud NODE`);
}
