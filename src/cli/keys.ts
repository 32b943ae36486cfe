// The signing key: where it is looked for, read, and used to sign a token. jose is imported only when a token
// is signed.
//   1. --key PATH    2. $PODSYNC_KEY    3. the user's config dir: $XDG_CONFIG_HOME/podsync/key.json, else
//   ~/.config/podsync/key.json (where `podsync keygen` writes)    4. the dev key the node made on its first start
//   in its working directory: ./.podsync/dev-key.json ($PODSYNC_DEV_DIR/dev-key.json when that is set).
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { JWK } from "jose";
import { fail } from "./args.js";

export type PrivateKey = JWK & { iss?: string };
export const DEV_ISSUER = "podsync-dev";

/** The user's podsync config dir (XDG base directory spec), where keygen writes by default. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env["XDG_CONFIG_HOME"] || join(env["HOME"] || homedir(), ".config");
  return join(base, "podsync");
}

/** How a node comes to trust a key made by `podsync keygen`. */
export function trustHint(jwksPath: string, iss: string): string {
  return `the node trusts a key when started with PODSYNC_JWKS_FILE=${jwksPath} PODSYNC_ISSUERS=${iss}`;
}

export interface FoundKey {
  path: string;
  /** Where the path came from, for messages. */
  source: string;
  key: PrivateKey;
}

/** The key to sign with, in the lookup order above; an error names every place looked at. */
export function findKey(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): FoundKey {
  if (explicit !== undefined) return { path: explicit, source: "--key", key: readKey(explicit, "--key") };
  if (env["PODSYNC_KEY"])
    return { path: env["PODSYNC_KEY"], source: "$PODSYNC_KEY", key: readKey(env["PODSYNC_KEY"], "$PODSYNC_KEY") };
  const user = join(configDir(env), "key.json");
  if (existsSync(user)) return { path: user, source: "the config dir", key: readKey(user, "the config dir") };
  const dev = join(env["PODSYNC_DEV_DIR"] || ".podsync", "dev-key.json");
  if (existsSync(dev)) return { path: dev, source: "the dev key", key: readKey(dev, "the dev key") };
  return fail(
    [
      "no signing key found; looked at:",
      "  --key          (not given)",
      "  $PODSYNC_KEY   (not set)",
      `  ${user}   (no such file)`,
      `  ${dev}   (no such file: a node started here with no keys configured makes it, e.g. npm start)`,
      `Make your own with \`podsync keygen\` (writes ${user} and jwks.json beside it); ${trustHint(join(configDir(env), "jwks.json"), DEV_ISSUER)}.`,
    ].join("\n"),
  );
}

function readKey(path: string, source: string): PrivateKey {
  let key: PrivateKey;
  try {
    key = JSON.parse(readFileSync(path, "utf8")) as PrivateKey;
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message;
    return fail(
      `cannot read the signing key ${path} (from ${source}): ${why}. Make one with \`podsync keygen\`; ${trustHint("DIR/jwks.json", DEV_ISSUER)}.`,
    );
  }
  if (typeof key !== "object" || key === null || !key.alg || !key.d)
    fail(`${path} (from ${source}) is not a private JWK with "alg" (podsync keygen writes one)`);
  return key;
}

export async function signToken(
  key: PrivateKey,
  claims: Record<string, unknown>,
  aud: string | string[],
  ttlSeconds: number,
  iss: string | undefined,
): Promise<string> {
  const { importJWK, SignJWT } = await import("jose");
  const k = await importJWK(key, key.alg);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg!, ...(key.kid ? { kid: key.kid } : {}), typ: "JWT" })
    .setIssuer(iss ?? key.iss ?? DEV_ISSUER)
    .setAudience(aud)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .setJti(crypto.randomUUID())
    .sign(k);
}
