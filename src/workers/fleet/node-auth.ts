// A node's connection token: a short-lived JWS signed by the key the node enrolled (sub = the node, aud = the
// fleet), checked against that key as the registry holds it. Revoked or unknown nodes are refused by name.
import { decodeJwt, importJWK, jwtVerify, type JWTPayload } from "jose";
import { AuthError } from "../../auth/verify.js";
import { ProblemError } from "../../usecases/problems.js";
import type { NodeRow } from "./table.js";

/** The longest connection token (exp - iat) taken: it is made fresh at each connect. */
export const NODE_TOKEN_MAX_LIFETIME_S = 300;

export async function verifyNodeToken(
  authorization: string | null,
  rowOf: (node: string) => NodeRow | undefined,
  o: { fleet: string; skewS: number; now: number; spend: (jti: string, untilMs: number) => boolean },
): Promise<NodeRow> {
  const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? "");
  if (!m) throw new AuthError("missing", "send Authorization: Bearer <a JWS signed by the node's enrolled key>");
  let sub: unknown;
  try {
    sub = decodeJwt(m[1]!).sub;
  } catch {
    throw new AuthError("malformed", "the connection token is not a compact JWS");
  }
  if (typeof sub !== "string") throw new AuthError("bad-claims", 'the connection token must name its node in "sub"');
  const row = rowOf(sub);
  if (!row)
    throw new AuthError("unknown-key", `node "${sub}" is not enrolled in this fleet (enroll with a join token)`);
  if (row.revokedAt !== null)
    throw new ProblemError("node-revoked", `node "${sub}" was revoked at ${new Date(row.revokedAt).toISOString()}`);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(m[1]!, await importJWK(row.jwk, "ES256"), {
      algorithms: ["ES256"],
      audience: o.fleet,
      subject: sub,
      clockTolerance: o.skewS,
      currentDate: new Date(o.now),
      requiredClaims: ["sub", "aud", "exp", "iat", "jti"],
    }));
  } catch (e) {
    throw new AuthError("bad-signature", `the connection token of "${sub}" is not valid: ${(e as Error).message}`);
  }
  if (payload.exp! - payload.iat! > NODE_TOKEN_MAX_LIFETIME_S)
    throw new AuthError("too-long-lived", `a connection token lives at most ${NODE_TOKEN_MAX_LIFETIME_S} s`);
  // Each token opens one connection: a captured one cannot open another while it is valid.
  if (!o.spend(String(payload.jti), (payload.exp! + o.skewS) * 1000))
    throw new AuthError("replayed", `the connection token of "${sub}" was already used`);
  return row;
}
