// The Node entry's keys and small pieces every constructor shares: the signing keys (configured, or a dev key made
// on first run), the verifier's options, a file a setting names, podsync's version, the JSON log line.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { JSONWebKeySet } from "jose";
import { generateSigningKey } from "../auth/keys.js";
import type { Algorithm, VerifierOptions } from "../auth/verify.js";
import { SettingsError, type Settings } from "../settings/node.js";

export const DEV_ISSUER = "podsync-dev";

export interface Keys {
  keys: { jwks: JSONWebKeySet } | { url: string };
  issuers: string[];
  dev?: { keyFile: string };
}

export async function loadKeys(s: Settings): Promise<Keys> {
  const issuers = s.PODSYNC_ISSUERS ?? [];
  if (s.PODSYNC_JWKS_URL) return { keys: { url: s.PODSYNC_JWKS_URL }, issuers };
  if (s.PODSYNC_JWKS) return { keys: { jwks: parseJwks(s.PODSYNC_JWKS, "PODSYNC_JWKS") }, issuers };
  if (s.PODSYNC_JWKS_FILE)
    return {
      keys: { jwks: parseJwks(readSettingFile(s.PODSYNC_JWKS_FILE, "PODSYNC_JWKS_FILE"), "PODSYNC_JWKS_FILE") },
      issuers,
    };
  // Dev mode: a key pair kept in PODSYNC_DEV_DIR, made once.
  const dir = resolve(s.PODSYNC_DEV_DIR);
  const keyFile = join(dir, "dev-key.json");
  const jwksFile = join(dir, "dev-jwks.json");
  if (!existsSync(keyFile) || !existsSync(jwksFile)) {
    const k = await generateSigningKey("EdDSA");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(keyFile, `${JSON.stringify({ ...k.privateJwk, iss: DEV_ISSUER }, null, 2)}\n`, { mode: 0o600 });
    writeFileSync(jwksFile, `${JSON.stringify(k.jwks, null, 2)}\n`);
  }
  return {
    keys: { jwks: parseJwks(readFileSync(jwksFile, "utf8"), jwksFile) },
    issuers: [DEV_ISSUER, ...issuers],
    dev: { keyFile },
  };
}

/** The verifier's options but its replay store (the fleet link makes its own verifier from them). */
export function verifierOptionsFor(s: Settings, keys: Keys): Omit<VerifierOptions, "replay"> {
  return {
    keys: keys.keys,
    issuers: keys.issuers,
    audience: [s.PODSYNC_NODE_NAME, ...s.PODSYNC_NODE_ALIASES],
    algorithms: s.PODSYNC_ALGORITHMS as Algorithm[],
    maxLifetimeSeconds: s.PODSYNC_MAX_TOKEN_LIFETIME_S,
    clockSkewSeconds: s.PODSYNC_CLOCK_SKEW_S,
  };
}

/** podsync's own version (package.json beside src/ and dist/), for /version. */
export function podsyncVersion(): string {
  try {
    return String(
      (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown })
        .version ?? "unknown",
    );
  } catch {
    return "unknown";
  }
}

/** A file a setting names; a settings error naming it when it cannot be read. */
export function readSettingFile(path: string, setting: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    throw new SettingsError(`${setting}: cannot read ${path}: ${(e as Error).message}`);
  }
}

function parseJwks(text: string, setting: string): JSONWebKeySet {
  try {
    const j = JSON.parse(text) as JSONWebKeySet;
    if (!Array.isArray(j.keys) || j.keys.length === 0)
      throw new Error('expected {"keys": [...]} with at least one key');
    if (j.keys.some((k) => "d" in k && k.kty !== "oct"))
      throw new Error("a JWKS for verification must hold public keys only");
    return j;
  } catch (e) {
    throw new SettingsError(`${setting}: not a usable JWK set: ${(e as Error).message}`);
  }
}

/** The node's JSON log line on stderr (one record, with its time and the part that says it); nothing when quiet. */
export function jsonLog(quiet: boolean, loop?: string): (rec: object) => void {
  return (rec) =>
    void (
      quiet ||
      console.error(JSON.stringify({ time: new Date().toISOString(), ...(loop === undefined ? {} : { loop }), ...rec }))
    );
}

/** Dev mode keeps the pods' volumes and claims beside its state (<PODSYNC_DEV_DIR>/root), not machine-wide in
 * /var/lib/podsync, unless PODSYNC_ROOT_DIR says where. */
export function withDevRoot(s: Settings, env: Record<string, string | undefined>, keys: Keys): Settings {
  if (env["PODSYNC_ROOT_DIR"] !== undefined || !keys.dev) return s;
  return { ...s, PODSYNC_ROOT_DIR: join(resolve(s.PODSYNC_DEV_DIR), "root") };
}
