// The signing key: read it, and sign a token with it. jose is imported only when a token is signed.
import { readFileSync } from "node:fs";
import type { JWK } from "jose";
import { fail } from "./args.js";

export type PrivateKey = JWK & { iss?: string };

export function loadKey(path: string): PrivateKey {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as PrivateKey;
  } catch (e) {
    return fail(`cannot read key ${path}: ${(e as Error).message} (make one with: podsync keygen)`);
  }
}

export async function signToken(key: PrivateKey, claims: Record<string, unknown>, aud: string, ttlSeconds: number, iss: string | undefined): Promise<string> {
  if (!key.alg || !key.d) fail("the key file must be a private JWK with alg (from podsync keygen)");
  const { importJWK, SignJWT } = await import("jose");
  const k = await importJWK(key, key.alg);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, ...(key.kid ? { kid: key.kid } : {}), typ: "JWT" })
    .setIssuer(iss ?? key.iss ?? "podsync-dev")
    .setAudience(aud)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .setJti(crypto.randomUUID())
    .sign(k);
}
