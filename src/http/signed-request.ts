// Turning a request into (verified token, validated pod), or a problem. Two ways to carry a pod:
//   1. the token is the body (`application/jose`, or JSON `{"jws": "..."}`) and its payload has `pod`;
//   2. the body is the pod (JSON or YAML) and the `Podsync-Signature` header holds a token whose
//      `body_sha256` claim is the base64url SHA-256 of the exact body bytes.
// Either way every byte acted on is signed, and the token's `act` must name the route.
import { MAX_GRACE_PERIOD_SECONDS } from "../pod/schema.js";
import { bodyFromDocuments, rememberedBody, type Body } from "../pod/bundle.js";
import type { IntakeOptions, Item } from "../pod/workloads/intake.js";
import { ProblemError } from "../usecases/problems.js";
import { parseJsonBody } from "./parse-body.js";
import { AuthError, type Verifier, type VerifiedToken } from "../auth/verify.js";

export type Act = "sync" | "plan" | "delete" | "status" | "logs" | "exec" | "apply" | "metrics";
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
  // A declared length within the limit bounds the body (HTTP framing: the server reads no more than it), so it is
  // read whole. On Node this is @hono/node-server's direct read of the socket's chunks: no web Request, stream or
  // AbortSignal is made (they were ~3 % of a converged sync's CPU). A body without a length is read in chunks below.
  if (declared >= 0) {
    try {
      return new Uint8Array(await req.arrayBuffer());
    } catch {
      throw unread(new ProblemError("bad-request", "the client closed the request before its body was complete"));
    }
  }
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let next: ReadableStreamReadResult<Uint8Array>;
    try {
      next = await reader.read();
    } catch {
      // The client went away mid-body: its request, not podsync, failed (nobody is left to read the answer).
      throw unread(new ProblemError("bad-request", "the client closed the request before its body was complete"));
    }
    const { done, value } = next;
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

const unread = (p: ProblemError) => Object.assign(p, { closeConnection: true });
const tooLarge = (max: number) =>
  unread(new ProblemError("body-too-large", `the body is larger than the limit of ${max} bytes`));

const utf8 = new TextDecoder("utf-8", { fatal: true });
function text(body: Uint8Array): string {
  try {
    return utf8.decode(body);
  } catch {
    throw new ProblemError("bad-request", "the body is not valid UTF-8");
  }
}

const parseJson = (body: Uint8Array) => parseJsonBody(text(body));
/** A YAML stream's documents; the parser is loaded at the first YAML body (parse-yaml.ts). */
const parseYaml = async (body: Uint8Array) => {
  const t = text(body);
  return (await import("./parse-yaml.js")).parseYamlStream(t);
};

async function sha256b64url(body: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body as Uint8Array<ArrayBuffer>));
  let s = "";
  for (const b of digest) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const actCheck = (act: Act) => (payload: Record<string, unknown>) =>
  payload["act"] === act
    ? undefined
    : new AuthError(
        "bad-claims",
        `token "act" claim must be "${act}" for this route (got ${JSON.stringify(payload["act"] ?? null)})`,
      );

function bodyCheck(payload: Record<string, unknown>, digest: string): AuthError | undefined {
  const want = payload["body_sha256"];
  if (typeof want !== "string")
    return new AuthError("bad-claims", 'a detached signature must carry the "body_sha256" claim');
  return want === digest ? undefined : new AuthError("bad-signature", "the body does not match the signed body_sha256");
}

/** A signed request whose body is one or more documents: the verified token and either the documents of the
 * body (a detached signature) or the token's payload (the token is the body). */
async function readSigned(
  req: Request,
  verifier: Verifier,
  act: Act,
  maxBody: number,
): Promise<{ token: VerifiedToken; docs: unknown[] } | { token: VerifiedToken; payload: Record<string, unknown> }> {
  const type = mediaType(req.headers.get("content-type") ?? undefined);
  const header = req.headers.get(SIGNATURE_HEADER);
  if (!JOSE_TYPES.has(type) && !JSON_TYPES.has(type) && !YAML_TYPES.has(type))
    throw new ProblemError(
      "unsupported-media-type",
      `send application/jose (a compact JWS), application/json or application/yaml, not "${type || "none"}"`,
    );
  const body = await readBody(req, maxBody);

  if (header !== null) {
    if (JOSE_TYPES.has(type))
      throw new ProblemError(
        "bad-request",
        `with a ${SIGNATURE_HEADER} header the body must be the pod (JSON or YAML), not a token`,
      );
    // The body is compared inside the check, before the jti is spent: a wrong body must not burn the
    // token that the genuine request carries.
    const digest = await sha256b64url(body);
    const token = await verifier.verify(header, { check: (p) => actCheck(act)(p) ?? bodyCheck(p, digest) });
    // The body: one pod, a v1.List of a pod and its objects, or (YAML) a stream of such documents.
    return { token, docs: JSON_TYPES.has(type) ? [parseJson(body)] : await parseYaml(body) };
  }
  let compact: string;
  if (JOSE_TYPES.has(type)) compact = text(body);
  else if (JSON_TYPES.has(type)) {
    const j = parseJson(body);
    // No wrapper at all is an unsigned body (a bare pod), refused like an unsigned YAML pod; a wrapper
    // that is there but malformed is a bad request.
    if (typeof j !== "object" || j === null || Array.isArray(j) || !("jws" in j))
      throw new AuthError(
        "missing",
        `a JSON pod needs its signature in the ${SIGNATURE_HEADER} header (or send {"jws": "<compact JWS>"})`,
      );
    if (typeof (j as { jws?: unknown }).jws !== "string" || Object.keys(j).length !== 1)
      throw new ProblemError(
        "bad-request",
        `a JSON body must be {"jws": "<compact JWS>"}, or the pod itself with a ${SIGNATURE_HEADER} header`,
      );
    compact = (j as { jws: string }).jws;
  } else throw new AuthError("missing", `a YAML body needs its signature in the ${SIGNATURE_HEADER} header`);
  const token = await verifier.verify(compact, { check: actCheck(act) });
  return { token, payload: token.payload };
}

/** What a sync or plan body holds (at most one Pod, any number of workloads), with its warnings. */
export interface SignedBody extends Body {
  token: VerifiedToken;
}

/** A sync or plan body: the documents of a detached body, or a token payload's `pod` and `items` (workloads, objects) beside or
 * instead of `pod`. */
export async function readSignedBody(
  req: Request,
  verifier: Verifier,
  act: Act,
  maxBody: number,
  o: IntakeOptions,
): Promise<SignedBody> {
  const r = await readSigned(req, verifier, act, maxBody);
  if ("docs" in r) return { ...bodyFromDocuments(r.docs, o), token: r.token };
  const p = r.payload;
  const items: Item[] = [];
  if (p["pod"] !== undefined) items.push({ input: p["pod"], at: "pod", podByPlace: true });
  if (p["items"] !== undefined) {
    if (!Array.isArray(p["items"]))
      throw new ProblemError("bad-request", 'the signed payload\'s "items" must be an array', {
        errors: [{ path: "items", message: "must be an array of Kubernetes objects" }],
      });
    p["items"].forEach((input, i) => items.push({ input, at: `items[${i}]` }));
  }
  if (items.length === 0)
    throw new ProblemError("bad-request", 'the signed payload has no "pod" object and no "items"');
  // A body validated before (a converged sync: the same signed pod again) is not validated again.
  const body = rememberedBody(items, p, o);
  if (body.pods.length > 1)
    throw new ProblemError("bad-request", "send one pod per request (PUT /v1/node/pods takes a set)", {
      errors: [{ path: body.pods[1]!.at, message: "a second Pod" }],
    });
  if (body.pods.length === 0 && body.workloads.length === 0) {
    // Say what it did hold, and what was skipped, so a file of only ConfigMaps (or of kinds a node skips) reads
    // as such.
    const found = items.map(({ input }) => {
      const o = (typeof input === "object" && input !== null ? input : {}) as {
        kind?: unknown;
        metadata?: { name?: unknown };
      };
      return `${typeof o.kind === "string" ? o.kind : "an object without kind"}${typeof o.metadata?.name === "string" ? ` "${o.metadata.name}"` : ""}`;
    });
    throw new ProblemError(
      "bad-request",
      `the signed payload holds no Pod and no workload to run; it holds ${found.join(", ")}${body.warnings.length ? `; ${body.warnings.join("; ")}` : ""}`,
    );
  }
  return { ...body, token: r.token };
}

/** A node-wide set, unvalidated: the items and the path prefix that names each one in errors. */
export interface SignedList {
  /** undefined for an empty YAML document (no pod). */
  items: unknown[];
  /** "pods" (a token's `pods` claim) or "items" (a v1.List, or the documents of a YAML stream, counted from 0). */
  prefix: "pods" | "items";
  token: VerifiedToken;
}

/** PUT /v1/node/pods: the same two carrying modes as a pod. A compact JWS whose payload has `pods: [...]`; or
 * a detached signature (body_sha256) over a JSON v1.List (`{"apiVersion": "v1", "kind": "List", "items": [...]}`)
 * or a YAML stream of pods (one per document; a single document may also be a v1.List). `check` vets the
 * route's own claims before the jti is spent. Items are validated by the caller, each named by its index. */
export async function readSignedList(
  req: Request,
  verifier: Verifier,
  act: Act,
  maxBody: number,
  check: (p: Record<string, unknown>) => Error | undefined,
): Promise<SignedList> {
  const type = mediaType(req.headers.get("content-type") ?? undefined);
  const header = req.headers.get(SIGNATURE_HEADER);
  if (!JOSE_TYPES.has(type) && !JSON_TYPES.has(type) && !YAML_TYPES.has(type))
    throw new ProblemError(
      "unsupported-media-type",
      `send application/jose (a compact JWS), application/json (a v1.List) or application/yaml (a stream of pods), not "${type || "none"}"`,
    );
  const body = await readBody(req, maxBody);
  if (header !== null) {
    if (JOSE_TYPES.has(type))
      throw new ProblemError(
        "bad-request",
        `with a ${SIGNATURE_HEADER} header the body must be the pods (a JSON v1.List or a YAML stream), not a token`,
      );
    const digest = await sha256b64url(body);
    const token = await verifier.verify(header, { check: (p) => actCheck(act)(p) ?? bodyCheck(p, digest) ?? check(p) });
    if (JSON_TYPES.has(type)) return { items: listItems(parseJson(body)), prefix: "items", token };
    const docs = await parseYaml(body);
    const nonEmpty = docs.filter((d) => d !== null && d !== undefined);
    if (nonEmpty.length === 1 && isList(nonEmpty[0])) return { items: listItems(nonEmpty[0]), prefix: "items", token };
    // An empty document (a stray `---`) is no pod: undefined, skipped by the caller, so that the others keep
    // their place in the stream for errors.
    return { items: docs.map((d) => (d === null ? undefined : d)), prefix: "items", token };
  }
  let compact: string;
  if (JOSE_TYPES.has(type)) compact = text(body).trim();
  else if (JSON_TYPES.has(type)) {
    const j = parseJson(body);
    if (typeof j !== "object" || j === null || Array.isArray(j) || !("jws" in j))
      throw new AuthError(
        "missing",
        `a JSON list needs its signature in the ${SIGNATURE_HEADER} header (or send {"jws": "<compact JWS>"})`,
      );
    if (typeof (j as { jws?: unknown }).jws !== "string" || Object.keys(j).length !== 1)
      throw new ProblemError(
        "bad-request",
        `a JSON body must be {"jws": "<compact JWS>"}, or a v1.List with a ${SIGNATURE_HEADER} header`,
      );
    compact = (j as { jws: string }).jws;
  } else throw new AuthError("missing", `a YAML body needs its signature in the ${SIGNATURE_HEADER} header`);
  const token = await verifier.verify(compact, { check: (p) => actCheck(act)(p) ?? check(p) });
  const pods = token.payload["pods"];
  if (!Array.isArray(pods))
    throw new ProblemError("bad-request", 'the signed payload has no "pods" array', {
      errors: [{ path: "pods", message: "must be an array of pods" }],
    });
  return { items: pods, prefix: "pods", token };
}

const isList = (v: unknown): boolean =>
  typeof v === "object" && v !== null && (v as { kind?: unknown }).kind === "List";

function listItems(v: unknown): unknown[] {
  const bad = (message: string, path = "(root)") =>
    new ProblemError("bad-request", `the body must be a v1.List of pods: ${message}`, { errors: [{ path, message }] });
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw bad('must be an object {"apiVersion": "v1", "kind": "List", "items": [...]}');
  const l = v as Record<string, unknown>;
  for (const k of Object.keys(l))
    if (!["apiVersion", "kind", "metadata", "items"].includes(k)) throw bad(`unknown field "${k}"`, k);
  if (l["kind"] !== "List") throw bad('must be "List"', "kind");
  if (l["apiVersion"] !== undefined && l["apiVersion"] !== "v1") throw bad('must be "v1"', "apiVersion");
  if (!Array.isArray(l["items"])) throw bad("must be an array of pods", "items");
  return l["items"];
}

/** DELETE and GET status: `Authorization: Bearer <compact JWS>` with `act` and the pod `uid` (a status
 * token may leave `uid` out to read any pod on the node; a metrics token names none). `check` vets the route's own claims. */
export async function readBearer(
  req: Request,
  verifier: Verifier,
  act: Act,
  uid: string,
  consume: boolean,
  check?: (p: Record<string, unknown>) => Error | undefined,
): Promise<VerifiedToken> {
  const auth = req.headers.get("authorization") ?? "";
  const m = /^Bearer\s+(\S+)$/i.exec(auth);
  if (!m) throw new AuthError("missing", "send Authorization: Bearer <compact JWS>");
  return verifier.verify(m[1]!, {
    consume,
    check: (p) =>
      actCheck(act)(p) ??
      (p["uid"] === uid || ((act === "status" || act === "metrics") && p["uid"] === undefined)
        ? undefined
        : new AuthError("bad-claims", `token "uid" claim must be the pod uid in the path (${uid})`)) ??
      check?.(p),
  });
}

/** A node-wide read (GET /v1/pods, GET /v1/workloads): `Authorization: Bearer` with act "status" and no uid (a
 * token scoped to one pod may not read the node's whole set). Not consumed. */
export async function readNodeWideBearer(req: Request, verifier: Verifier, what: string): Promise<VerifiedToken> {
  const m = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
  if (!m) throw new AuthError("missing", "send Authorization: Bearer <compact JWS>");
  return verifier.verify(m[1]!, {
    consume: false,
    check: (p) =>
      p["act"] !== "status"
        ? new AuthError(
            "bad-claims",
            `token "act" claim must be "status" for this route (got ${JSON.stringify(p["act"] ?? null)})`,
          )
        : p["uid"] !== undefined
          ? new AuthError("bad-claims", `a token for the node's ${what} must not carry "uid" (it is scoped to one pod)`)
          : undefined,
  });
}

/** A body that is only a token (`application/jose`, or JSON `{"jws": "..."}`): exec, where the signed payload
 * is the whole request. `check` vets the payload before the jti is spent. */
export async function readSignedToken(
  req: Request,
  verifier: Verifier,
  act: Act,
  maxBody: number,
  check: (payload: Record<string, unknown>) => void,
): Promise<VerifiedToken> {
  const type = mediaType(req.headers.get("content-type") ?? undefined);
  if (!JOSE_TYPES.has(type) && !JSON_TYPES.has(type))
    throw new ProblemError("unsupported-media-type", `send application/jose (a compact JWS), not "${type || "none"}"`);
  const body = await readBody(req, maxBody);
  let compact: string;
  if (JOSE_TYPES.has(type)) compact = text(body).trim();
  else {
    const j = parseJson(body);
    if (
      typeof j !== "object" ||
      j === null ||
      Array.isArray(j) ||
      typeof (j as { jws?: unknown }).jws !== "string" ||
      Object.keys(j).length !== 1
    )
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

/** DELETE's optional `gracePeriodSeconds` claim: whole seconds within the pod model's bound, like
 * terminationGracePeriodSeconds (a fraction or a huge number is refused, never rounded or left to crash). */
export function checkGraceClaim(p: Record<string, unknown>): ProblemError | undefined {
  const g = p["gracePeriodSeconds"];
  if (g === undefined || (Number.isInteger(g) && (g as number) >= 0 && (g as number) <= MAX_GRACE_PERIOD_SECONDS))
    return undefined;
  const message = `must be a whole number of seconds from 0 to ${MAX_GRACE_PERIOD_SECONDS}`;
  return new ProblemError("bad-request", `the token's gracePeriodSeconds ${message}`, {
    errors: [{ path: "gracePeriodSeconds", message }],
  });
}
