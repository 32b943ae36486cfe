// The credential plugin's cache: `podsync token --act read --exec-credential` (the plugin kubectl runs before every
// command) keeps the ExecCredential it printed under $XDG_CACHE_HOME/podsync/ (default ~/.cache/podsync/), 0600 in a
// 0700 directory, until shortly before it expires, keyed by the server, the audience and the key (its path and a
// hash of its bytes, so a new key is a new entry), and the token's other claims (iss, exec, ttl). The kubeconfig's
// sh guard (commands/keys/kubeconfig.ts) prints a fresh entry without starting node at all; bin/podsync.mjs serves a hit
// before anything else is loaded (no build check, no CLI, no jose). Only node: built-ins here.
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

/** Served from the cache only while it has at least this long left (kubectl refreshes before expiry too). */
export const REFRESH_BEFORE_MS = 60_000;

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env["XDG_CACHE_HOME"] || join(homedir(), ".cache"), "podsync");
}

/** What the plugin's command line and environment say the credential is for; undefined: not a cacheable call. */
export function cacheKey(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): string | undefined {
  let v: Record<string, string | boolean | undefined>;
  try {
    ({ values: v } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: false,
      options: {
        act: { type: "string" },
        "exec-credential": { type: "boolean" },
        exec: { type: "boolean" },
        "port-forward": { type: "boolean" },
        ttl: { type: "string" },
        key: { type: "string" },
        aud: { type: "string" },
        iss: { type: "string" },
        url: { type: "string" },
      },
    }) as { values: Record<string, string | boolean | undefined> });
  } catch {
    return undefined;
  }
  if (v["act"] !== "read" || v["exec-credential"] !== true || typeof v["key"] !== "string") return undefined;
  let keyHash: string;
  const keyPath = resolve(v["key"]);
  try {
    keyHash = createHash("sha256").update(readFileSync(keyPath)).digest("hex");
  } catch {
    return undefined;
  }
  // kubectl names the cluster's server in KUBERNETES_EXEC_INFO (provideClusterInfo); else the CLI's node URL.
  let server = String(v["url"] ?? env["PODSYNC_URL"] ?? "");
  try {
    const info = JSON.parse(env["KUBERNETES_EXEC_INFO"] ?? "{}") as { spec?: { cluster?: { server?: string } } };
    server = info.spec?.cluster?.server ?? server;
  } catch {}
  const parts = [server, v["aud"] ?? "", v["iss"] ?? "", v["exec"] === true, v["ttl"] ?? "", keyPath, keyHash];
  // --port-forward joins the key only when given, so the keys of existing entries stay as they were.
  if (v["port-forward"] === true) parts.push("port-forward");
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 32);
}

export const cacheFileName = (key: string) => `exec-credential-${key}.json`;
const fileOf = (dir: string, key: string) => join(dir, cacheFileName(key));

/** The cached ExecCredential's text, if there is one of ours (0600, this user's) with time left. */
export function readCached(dir: string, key: string, now = Date.now()): string | undefined {
  const file = fileOf(dir, key);
  try {
    const st = statSync(file);
    if ((st.mode & 0o077) !== 0 || (process.getuid && st.uid !== process.getuid())) return undefined;
    const text = readFileSync(file, "utf8");
    const exp = Date.parse(
      (JSON.parse(text) as { status?: { expirationTimestamp?: string } }).status?.expirationTimestamp ?? "",
    );
    return Number.isFinite(exp) && exp - REFRESH_BEFORE_MS > now ? text : undefined;
  } catch {
    return undefined;
  }
}

/** Keep a credential (written whole: a temporary file renamed over the old one), and beside it `<file>.fresh`, an
 * empty file whose mtime is when the entry stops being served (REFRESH_BEFORE_MS before the credential expires):
 * the kubeconfig's sh guard compares it with the time its own process started. Failing to cache is not an error. */
export function writeCached(dir: string, key: string, text: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = fileOf(dir, key);
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${text.trim()}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
    const exp = Date.parse(
      (JSON.parse(text) as { status?: { expirationTimestamp?: string } }).status?.expirationTimestamp ?? "",
    );
    if (!Number.isFinite(exp)) return;
    writeFileSync(`${file}.fresh`, "", { mode: 0o600 });
    const until = (exp - REFRESH_BEFORE_MS) / 1000;
    utimesSync(`${file}.fresh`, until, until);
  } catch {}
}
