// Turning a request into (verified token, validated pod), or a problem. Two ways to carry a pod:
//   1. the token is the body (`application/jose`, or JSON `{"jws": "..."}`) and its payload has `pod`;
//   2. the body is the pod (JSON or YAML) and the `Podsync-Signature` header holds a token whose
//      `body_sha256` claim is the base64url SHA-256 of the exact body bytes.
// Either way every byte acted on is signed, and the token's `act` must name the route.
import { parse as parseYaml } from "yaml";
import type { Pod } from "../pod/schema.js";
import { validatePod } from "../pod/validate.js";
import { ProblemError } from "./problems.js";
import { AuthError, type Verifier, type VerifiedToken } from "../auth/verify.js";

export type Act = "sync" | "plan" | "delete" | "status" | "logs" | "exec";
export const SIGNATURE_HEADER = "podsync-signature";

const JOSE_TYPES = new Set(["application/jose", "application/jwt"]);
const JSON_TYPES = new Set(["application/json"]);
const YAML_TYPES = new Set(["application/yaml", "application/x-yaml", "text/yaml"]);

export function mediaType(header: string | undefined): string {
  return (header ?? "").split(";")[0]!.trim().toLowerCase();
}

/** Read at most `max` bytes: a declared or actual larger body is a 413 before anything is parsed. */
export async function readBody(req: Request, max: number): Promise<Uint8Array> {
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (declared > max) throw tooLarge(max);
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(max);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

const tooLarge = (max: number) => new ProblemError("body-too-large", `the body is larger than the limit of ${max} bytes`);

const utf8 = new TextDecoder("utf-8", { fatal: true });
function text(body: Uint8Array): string {
  try {
    return utf8.decode(body);
  } catch {
    throw new ProblemError("bad-request", "the body is not valid UTF-8");
  }
}

function parseJson(body: Uint8Array): unknown {
  try {
    return JSON.parse(text(body));
  } catch (e) {
    if (e instanceof ProblemError) throw e;
    throw new ProblemError("bad-json", `the body is not valid JSON: ${(e as Error).message}`);
  }
}

function parseYamlBody(body: Uint8Array): unknown {
  try {
    return parseYaml(text(body), { maxAliasCount: 100 });
  } catch (e) {
    if (e instanceof ProblemError) throw e;
    throw new ProblemError("bad-yaml", `the body is not valid YAML: ${(e as Error).message}`);
  }
}

async function sha256b64url(body: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body as Uint8Array<ArrayBuffer>));
  let s = "";
  for (const b of digest) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const actCheck = (act: Act) => (payload: Record<string, unknown>) =>
  payload["act"] === act ? undefined : new AuthError("bad-claims", `token "act" claim must be "${act}" for this route (got ${JSON.stringify(payload["act"] ?? null)})`);

export interface SignedPod {
  pod: Pod;
  token: VerifiedToken;
}

export async function readSignedPod(req: Request, verifier: Verifier, act: Act, maxBody: number): Promise<SignedPod> {
  const type = mediaType(req.headers.get("content-type") ?? undefined);
  const header = req.headers.get(SIGNATURE_HEADER);
  if (!JOSE_TYPES.has(type) && !JSON_TYPES.has(type) && !YAML_TYPES.has(type))
    throw new ProblemError("unsupported-media-type", `send application/jose (a compact JWS), application/json or application/yaml, not "${type || "none"}"`);
  const body = await readBody(req, maxBody);

  if (header !== null) {
    if (JOSE_TYPES.has(type)) throw new ProblemError("bad-request", `with a ${SIGNATURE_HEADER} header the body must be the pod (JSON or YAML), not a token`);
    const token = await verifier.verify(header, { check: actCheck(act) });
    const want = token.payload["body_sha256"];
    if (typeof want !== "string") throw new AuthError("bad-claims", 'a detached signature must carry the "body_sha256" claim');
    if ((await sha256b64url(body)) !== want) throw new AuthError("bad-signature", "the body does not match the signed body_sha256");
    return { pod: validatePod(JSON_TYPES.has(type) ? parseJson(body) : parseYamlBody(body)), token };
  }
  let compact: string;
  if (JOSE_TYPES.has(type)) compact = text(body);
  else if (JSON_TYPES.has(type)) {
    const j = parseJson(body);
    if (typeof j !== "object" || j === null || Array.isArray(j) || typeof (j as { jws?: unknown }).jws !== "string" || Object.keys(j).length !== 1)
      throw new ProblemError("bad-request", `a JSON body must be {"jws": "<compact JWS>"}, or the pod itself with a ${SIGNATURE_HEADER} header`);
    compact = (j as { jws: string }).jws;
  } else throw new AuthError("missing", `a YAML body needs its signature in the ${SIGNATURE_HEADER} header`);
  const token = await verifier.verify(compact, { check: actCheck(act) });
  const pod = token.payload["pod"];
  if (typeof pod !== "object" || pod === null) throw new ProblemError("bad-request", 'the signed payload has no "pod" object');
  return { pod: validatePod(pod, "pod"), token };
}

/** DELETE and GET status: `Authorization: Bearer <compact JWS>` with `act` and the pod `uid` (a status
 * token may leave `uid` out to read any pod on the node). */
export async function readBearer(req: Request, verifier: Verifier, act: Act, uid: string, consume: boolean): Promise<VerifiedToken> {
  const auth = req.headers.get("authorization") ?? "";
  const m = /^Bearer\s+(\S+)$/i.exec(auth);
  if (!m) throw new AuthError("missing", "send Authorization: Bearer <compact JWS>");
  return verifier.verify(m[1]!, {
    consume,
    check: (p) =>
      actCheck(act)(p) ??
      (p["uid"] === uid || (act === "status" && p["uid"] === undefined)
        ? undefined
        : new AuthError("bad-claims", `token "uid" claim must be the pod uid in the path (${uid})`)),
  });
}

/** A body that is only a token (`application/jose`, or JSON `{"jws": "..."}`): exec, where the signed payload
 * is the whole request. `check` vets the payload before the jti is spent. */
export async function readSignedToken(req: Request, verifier: Verifier, act: Act, maxBody: number, check: (payload: Record<string, unknown>) => void): Promise<VerifiedToken> {
  const type = mediaType(req.headers.get("content-type") ?? undefined);
  if (!JOSE_TYPES.has(type) && !JSON_TYPES.has(type)) throw new ProblemError("unsupported-media-type", `send application/jose (a compact JWS), not "${type || "none"}"`);
  const body = await readBody(req, maxBody);
  let compact: string;
  if (JOSE_TYPES.has(type)) compact = text(body).trim();
  else {
    const j = parseJson(body);
    if (typeof j !== "object" || j === null || Array.isArray(j) || typeof (j as { jws?: unknown }).jws !== "string" || Object.keys(j).length !== 1)
      throw new ProblemError("bad-request", 'a JSON body must be {"jws": "<compact JWS>"}');
    compact = (j as { jws: string }).jws;
  }
  return verifier.verify(compact, {
    check: (p) => {
      const bad = actCheck(act)(p);
      if (bad) return bad;
      check(p);
      return undefined;
    },
  });
}
