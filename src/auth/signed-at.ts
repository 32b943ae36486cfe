// The verifier for desired sets a node pulls from its fleet (docs/fleet.md): every check of verify.ts (the node's
// own trusted keys and issuers, its name as audience, the algorithm list, the longest lifetime, the route's claims)
// made as of the token's own `iat`. A set the owner signed reaches an offline node late, long after its token
// expired; its freshness is its generation, which must be above the node's (rollback protection, as a PUT's), not
// the clock. Never used for requests a client sends the node directly.
import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, type JWTVerifyGetKey } from "jose";
import { AuthError, createVerifier, type Verifier, type VerifierOptions } from "./verify.js";

export function createSignedAtVerifier(o: Omit<VerifierOptions, "now">): Verifier {
  const getKey: JWTVerifyGetKey =
    "jwks" in o.keys
      ? createLocalJWKSet(o.keys.jwks)
      : "url" in o.keys
        ? createRemoteJWKSet(new URL(o.keys.url), { cacheMaxAge: o.keys.cacheMaxAgeMs ?? 10 * 60_000 })
        : o.keys.getKey;
  return {
    verify(token, opts) {
      let iat: unknown;
      try {
        iat = decodeJwt(token.trim()).iat;
      } catch {
        return Promise.reject(new AuthError("malformed", "the desired set's token is not a compact JWS"));
      }
      if (typeof iat !== "number" || !Number.isFinite(iat))
        return Promise.reject(new AuthError("bad-claims", 'the desired set\'s token needs "iat" (when it was signed)'));
      return createVerifier({ ...o, keys: { getKey }, now: () => iat * 1000 }).verify(token, opts);
    },
  };
}
