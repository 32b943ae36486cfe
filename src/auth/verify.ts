// Package auth/ — signed requests (JWS verify, replay store), token scopes, the node owner's policy (Pod Security levels, CRI policy).
// Imports pod/ and the engine's constants; never HTTP or an entry point.
//
// Signed requests: compact JWS/JWT verified with jose against a JWK set (file, inline, or remote with
// caching and kid rotation), an algorithm allow-list, required claims, a maximum lifetime, clock skew,
// and replay protection by jti. Nothing reaches the runtime before this has passed.
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from "jose";
import type { ReplayStore } from "./replay.js";

export type Algorithm = "EdDSA" | "Ed25519" | "ES256" | "ES384" | "RS256" | "PS256" | "HS256";
export const DEFAULT_ALGORITHMS: Algorithm[] = ["EdDSA", "Ed25519", "ES256"];

export interface VerifierOptions {
  keys:
    | { jwks: JSONWebKeySet }
    | { url: string; cacheMaxAgeMs?: number; cooldownMs?: number }
    | { getKey: JWTVerifyGetKey };
  /** Accepted issuers; a token must name one of them in `iss`. */
  issuers: string[];
  /** This node's names (node name and/or id); the token's `aud` must contain one. */
  audience: string[];
  algorithms?: Algorithm[];
  /** Longest allowed exp - iat, seconds. */
  maxLifetimeSeconds?: number;
  clockSkewSeconds?: number;
  replay: ReplayStore;
  now?: () => number;
}

export type AuthFailure =
  | "keys-unavailable"
  | "missing"
  | "malformed"
  | "bad-signature"
  | "expired"
  | "not-yet-valid"
  | "wrong-audience"
  | "wrong-issuer"
  | "bad-claims"
  | "unknown-key"
  | "replayed"
  | "too-long-lived";

export class AuthError extends Error {
  constructor(
    readonly failure: AuthFailure,
    message: string,
  ) {
    super(message);
  }
  /** 401 for a bad or missing signature, 403 for a valid one meant for another node, 409 for a replay,
   * 503 when the trusted keys cannot be fetched (the token may be fine: retry). */
  get status(): 401 | 403 | 409 | 503 {
    return this.failure === "wrong-audience"
      ? 403
      : this.failure === "replayed"
        ? 409
        : this.failure === "keys-unavailable"
          ? 503
          : 401;
  }
}

export interface VerifiedToken {
  payload: JWTPayload & Record<string, unknown>;
  kid: string | undefined;
  alg: string;
}

export interface Verifier {
  /** Verify a compact JWS. `check` vets route-specific claims before the jti is recorded (its error is
   * thrown as is, so a refused request never spends its token); `consume` records the jti (a token that
   * acts may be used once); reads pass false. */
  verify(
    token: string,
    opts?: { consume?: boolean; check?: (payload: Record<string, unknown>) => Error | undefined },
  ): Promise<VerifiedToken>;
}

const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export function createVerifier(o: VerifierOptions): Verifier {
  if ((o.algorithms ?? []).some((a) => (a as string).toLowerCase() === "none"))
    throw new Error('algorithm "none" is never allowed');
  const algorithms = o.algorithms ?? DEFAULT_ALGORITHMS;
  const getKey: JWTVerifyGetKey =
    "jwks" in o.keys
      ? createLocalJWKSet(o.keys.jwks)
      : "url" in o.keys
        ? createRemoteJWKSet(new URL(o.keys.url), {
            cacheMaxAge: o.keys.cacheMaxAgeMs ?? 10 * 60_000,
            cooldownDuration: o.keys.cooldownMs ?? 30_000,
          })
        : o.keys.getKey;
  const skew = o.clockSkewSeconds ?? 30;
  const maxLifetime = o.maxLifetimeSeconds ?? 300;
  const now = o.now ?? Date.now;

  return {
    async verify(token, opts = {}) {
      token = token.trim();
      if (!token) throw new AuthError("missing", "no signed token in the request");
      if (!COMPACT.test(token))
        throw new AuthError("malformed", "the token is not a compact JWS (three base64url parts)");
      let result;
      try {
        result = await jwtVerify(token, getKey, {
          algorithms,
          issuer: o.issuers,
          audience: o.audience,
          clockTolerance: skew,
          currentDate: new Date(now()),
          requiredClaims: ["iss", "aud", "exp", "iat", "jti"],
        });
      } catch (e) {
        throw mapJoseError(e, token, o.audience, now());
      }
      const p = result.payload;
      const nowS = now() / 1000;
      if (p.iat! > nowS + skew) throw new AuthError("not-yet-valid", '"iat" is in the future');
      if (p.exp! - p.iat! > maxLifetime)
        throw new AuthError("too-long-lived", `token lifetime (exp - iat) is over the allowed ${maxLifetime} s`);
      if (typeof p.jti !== "string" || p.jti.length === 0 || p.jti.length > 256)
        throw new AuthError("bad-claims", '"jti" must be a non-empty string of at most 256 characters');
      const bad = opts.check?.(p as Record<string, unknown>);
      if (bad) throw bad;
      if (opts.consume !== false) {
        const fresh = await o.replay.claim(`${p.iss}\u0000${p.jti}`, (p.exp! + skew) * 1000);
        if (!fresh) throw new AuthError("replayed", `token jti "${p.jti}" was already used`);
      }
      return {
        payload: p as VerifiedToken["payload"],
        kid: result.protectedHeader.kid,
        alg: result.protectedHeader.alg,
      };
    },
  };
}

/** jose's error as an AuthError whose message says what was wrong with this token: the node it was for, its kid,
 * when it expired (read from the token without trusting it: only the message uses them). */
function mapJoseError(e: unknown, token: string, audience: readonly string[], nowMs: number): AuthError {
  const claim = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  if (e instanceof errors.JWTExpired) {
    const exp = claim(() => decodeJwt(token).exp);
    return new AuthError(
      "expired",
      exp === undefined
        ? "token has expired"
        : `token expired at ${new Date(exp * 1000).toISOString()} (${Math.max(0, Math.round(nowMs / 1000 - exp))} s ago; the node's clock says ${new Date(nowMs).toISOString()})`,
    );
  }
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.claim === "aud") {
      const aud = claim(() => decodeJwt(token).aud);
      return new AuthError(
        "wrong-audience",
        `token is signed for another node: ${JSON.stringify(aud ?? null)} (aud); this node is ${audience.map((a) => JSON.stringify(a)).join(" or ")}`,
      );
    }
    if (e.claim === "iss")
      return new AuthError(
        "wrong-issuer",
        `token issuer (iss) ${JSON.stringify(claim(() => decodeJwt(token).iss) ?? null)} is not trusted`,
      );
    if (e.claim === "nbf") return new AuthError("not-yet-valid", "token is not yet valid (nbf)");
    return new AuthError("bad-claims", `claim "${e.claim}": ${e.reason === "missing" ? "missing" : e.message}`);
  }
  if (e instanceof errors.JWKSNoMatchingKey) {
    const h = claim(() => decodeProtectedHeader(token));
    return new AuthError(
      "unknown-key",
      `no trusted key matches the token's kid ${JSON.stringify(h?.kid ?? null)} (alg ${h?.alg ?? "none"})`,
    );
  }
  if (e instanceof errors.JOSEAlgNotAllowed) return new AuthError("bad-signature", "token algorithm is not allowed");
  if (e instanceof errors.JWSSignatureVerificationFailed)
    return new AuthError("bad-signature", "signature verification failed");
  if (e instanceof errors.JWSInvalid || e instanceof errors.JWTInvalid)
    return new AuthError("malformed", `malformed token: ${(e as Error).message}`);
  if (e instanceof errors.JOSENotSupported)
    return new AuthError("bad-signature", `unsupported token: ${(e as Error).message}`);
  if (e instanceof errors.JWKSTimeout)
    return new AuthError("keys-unavailable", "the trusted key set did not answer in time");
  if (e instanceof errors.JWKSInvalid)
    return new AuthError("keys-unavailable", `the trusted key set is invalid: ${e.message}`);
  if (e instanceof errors.JOSEError) return new AuthError("bad-signature", `token could not be verified: ${e.message}`);
  // Not jose's own: the remote key set fetch failed (network).
  return new AuthError("keys-unavailable", `the trusted key set could not be fetched: ${(e as Error)?.message ?? e}`);
}
