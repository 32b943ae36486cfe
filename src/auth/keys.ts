// Key material: generate signing keys (CLI keygen, the dev key), write a private JWK and its public JWKS.
import { exportJWK, generateKeyPair, calculateJwkThumbprint, type JWK, type JSONWebKeySet } from "jose";

export type SigningAlg = "EdDSA" | "ES256";

export interface KeyFiles {
  /** Private JWK with kid and alg, for signing. */
  privateJwk: JWK;
  /** Public JWK set, for the node's PODSYNC_JWKS_FILE. */
  jwks: JSONWebKeySet;
}

export async function generateSigningKey(alg: SigningAlg = "EdDSA", kid?: string): Promise<KeyFiles> {
  const { publicKey, privateKey } = await generateKeyPair(alg === "EdDSA" ? "Ed25519" : alg, { extractable: true });
  const pub = await exportJWK(publicKey);
  const id = kid ?? (await calculateJwkThumbprint(pub)).slice(0, 16);
  const priv = await exportJWK(privateKey);
  return {
    privateJwk: { ...priv, kid: id, alg, use: "sig" },
    jwks: { keys: [{ ...pub, kid: id, alg, use: "sig" }] },
  };
}
