// The read scope, for kubectl: a token with `act: "read"` may get, list and watch pods, events and the node,
// and read logs; with `exec: true` as well (minted with `podsync token --exec`) it may also exec, where the
// node owner allows exec. It is reusable within its lifetime (at most PODSYNC_MAX_TOKEN_LIFETIME_S, 300 s by
// default; its jti is not spent), like a status token, and it can never sync, apply or delete: those routes
// each demand their own act.
import { AuthError, type Verifier, type VerifiedToken } from "./verify.js";

export const READ_ACT = "read";

export interface ReadScope {
  token: VerifiedToken;
  /** Minted with --exec. */
  exec: boolean;
  /** Minted with --port-forward (`portForward: true`): kubectl port-forward, where the node owner allows it. */
  portForward: boolean;
}

function readCheck(p: Record<string, unknown>): AuthError | undefined {
  if (p["act"] !== READ_ACT)
    return new AuthError(
      "bad-claims",
      `token "act" claim must be "${READ_ACT}" for the Kubernetes API (got ${JSON.stringify(p["act"] ?? null)}); kubectl gets one from the plugin podsync kubeconfig sets up`,
    );
  if (p["exec"] !== undefined && typeof p["exec"] !== "boolean")
    return new AuthError("bad-claims", 'token "exec" claim must be true or false');
  if (p["portForward"] !== undefined && typeof p["portForward"] !== "boolean")
    return new AuthError("bad-claims", 'token "portForward" claim must be true or false');
  if (p["uid"] !== undefined)
    return new AuthError("bad-claims", 'a read token must not carry "uid" (it reads the whole node)');
  return undefined;
}

/** `Authorization: Bearer <compact JWS>` with the read scope; nothing is answered without one. */
export async function verifyReadToken(verifier: Verifier, authorization: string | undefined): Promise<ReadScope> {
  const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? "");
  if (!m)
    throw new AuthError(
      "missing",
      "send Authorization: Bearer <read token> (kubectl sends it only over https; see docs/kubectl.md)",
    );
  const token = await verifier.verify(m[1]!, { consume: false, check: readCheck });
  return { token, exec: token.payload["exec"] === true, portForward: token.payload["portForward"] === true };
}
