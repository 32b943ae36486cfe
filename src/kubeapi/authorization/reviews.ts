// Package kubeapi/authorization/ — SelfSubjectAccessReview and SelfSubjectRulesReview, JSON and protobuf.
// Imports ../ (status), auth/'s read scopes and the generated protobuf types; never the runtime or an entry.
//
// SelfSubjectAccessReview and SelfSubjectRulesReview (authorization.k8s.io/v1), so `kubectl auth can-i` prints
// yes or no and `--list` the rules: the truth for the token presented, as the API server's registry answers them
// (pkg/registry/authorization/selfsubjectaccessreview/rest.go: the spec back, the authorizer's decision in
// status). A read token may get, list and watch what the node serves, and get pods/log; it may exec
// (pods/exec, create or get) only where the owner allows exec and the token was minted with it; it may write
// nothing. kubectl 1.32+ sends the review as protobuf and does not retry with JSON after a 415: both are read,
// and the answer is in the type the client accepts first.
import type { Context, Hono } from "hono";
import { z } from "zod";
import type { ReadScope } from "../../auth/read-token.js";
import { isProtobuf, PROTOBUF_TYPE, wantsProtobuf } from "./media.js";
import { badRequest } from "../status.js";

/** The protobuf side (the generated messages), loaded at the first protobuf review. */
const proto = () => import("./reviews-proto.js");

const GROUP = "authorization.k8s.io";
const API_VERSION = `${GROUP}/v1`;
const READ_VERBS = ["get", "list", "watch"];
/** Subresources whose get is a stream the owner gates, not a read. */
const STREAMS = ["pods/exec", "pods/portforward"];
/** The non-resource paths a read token may GET. */
const NON_RESOURCE = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/"];

/** What the node serves, by group: each resource (subresources as `pods/log`) and its verbs (discovery's). */
export interface ServedResources {
  groups: readonly { group: string; resources: readonly { name: string; verbs: readonly string[] }[] }[];
}

export interface ReviewContext {
  served: ServedResources;
  /** The owner's PODSYNC_ALLOW_EXEC. */
  allowExec: boolean;
  /** The owner's PODSYNC_ALLOW_PORT_FORWARD. */
  allowPortForward?: boolean | undefined;
  scope: ReadScope;
}

export interface ResourceAttributes {
  namespace?: string | undefined;
  verb?: string | undefined;
  group?: string | undefined;
  resource?: string | undefined;
  subresource?: string | undefined;
  name?: string | undefined;
}

export interface Decision {
  allowed: boolean;
  reason: string;
}

const READ_ONLY =
  "this node's Kubernetes API is read-only: podsync takes changes only as signed requests (podsync apply FILE, podsync sync FILE, podsync delete TYPE/NAME)";

/** The decision for one request's attributes (pure). */
export function decideResource(a: ResourceAttributes, ctx: ReviewContext): Decision {
  const verb = a.verb ?? "";
  const group = a.group ?? "";
  const full = a.subresource ? `${a.resource ?? ""}/${a.subresource}` : (a.resource ?? "");
  const entry = ctx.served.groups
    .find((g) => g.group === group || group === "*")
    ?.resources.find((r) => r.name === full);
  if (full === "pods/exec" && (verb === "create" || verb === "get")) {
    if (!ctx.allowExec)
      return {
        allowed: false,
        reason: "exec is off on this node (the node owner enables it with PODSYNC_ALLOW_EXEC=true)",
      };
    if (!ctx.scope.exec)
      return {
        allowed: false,
        reason: "this read token does not allow exec: make the kubeconfig with podsync kubeconfig --exec",
      };
    return { allowed: true, reason: "a read token minted with exec, on a node that allows exec" };
  }
  if (full === "pods/portforward" && (verb === "create" || verb === "get")) {
    if (!ctx.allowPortForward)
      return {
        allowed: false,
        reason: "port-forward is off on this node (the node owner enables it with PODSYNC_ALLOW_PORT_FORWARD=true)",
      };
    if (!ctx.scope.portForward)
      return {
        allowed: false,
        reason:
          "this read token does not allow port-forward: make the kubeconfig with podsync kubeconfig --port-forward",
      };
    return { allowed: true, reason: "a read token minted with port-forward, on a node that allows it" };
  }
  if (
    group === GROUP &&
    verb === "create" &&
    (a.resource === "selfsubjectaccessreviews" || a.resource === "selfsubjectrulesreviews")
  )
    return { allowed: true, reason: "every token may review itself" };
  if (!READ_VERBS.includes(verb)) return { allowed: false, reason: READ_ONLY };
  if (!entry) return { allowed: false, reason: `this node does not serve ${group ? `${full}.${group}` : full}` };
  if (!entry.verbs.includes(verb)) return { allowed: false, reason: `${full} does not answer ${verb} here` };
  return { allowed: true, reason: "a read token may get, list and watch what the node serves" };
}

/** A non-resource request: GET (or HEAD) on discovery, /version and /openapi. */
export function decideNonResource(path: string, verb: string): Decision {
  const known = NON_RESOURCE.some((p) => (p.endsWith("*") ? path.startsWith(p.slice(0, -1)) : path === p));
  if (!known) return { allowed: false, reason: `this node serves nothing at ${path}` };
  if (verb !== "get" && verb !== "head") return { allowed: false, reason: READ_ONLY };
  return { allowed: true, reason: "discovery, /version and /openapi are open to every read token" };
}

/** SelfSubjectRulesReview's status: what the token may do (the same rules as decideResource). */
export function rulesFor(ctx: ReviewContext) {
  const resourceRules: { verbs: string[]; apiGroups: string[]; resources: string[] }[] = [
    { verbs: ["create"], apiGroups: [GROUP], resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"] },
  ];
  for (const g of ctx.served.groups) {
    const reads = g.resources.filter((r) => !STREAMS.includes(r.name) && READ_VERBS.some((v) => r.verbs.includes(v)));
    const byVerbs = new Map<string, string[]>();
    for (const r of reads) {
      const verbs = r.verbs.filter((v) => READ_VERBS.includes(v)).join(",");
      byVerbs.set(verbs, [...(byVerbs.get(verbs) ?? []), r.name]);
    }
    for (const [verbs, resources] of byVerbs)
      resourceRules.push({ verbs: verbs.split(","), apiGroups: [g.group], resources });
  }
  if (ctx.allowExec && ctx.scope.exec)
    resourceRules.push({ verbs: ["create", "get"], apiGroups: [""], resources: ["pods/exec"] });
  if (ctx.allowPortForward && ctx.scope.portForward)
    resourceRules.push({ verbs: ["create", "get"], apiGroups: [""], resources: ["pods/portforward"] });
  return {
    resourceRules,
    nonResourceRules: [{ verbs: ["get"], nonResourceURLs: NON_RESOURCE }],
    incomplete: false,
  };
}

const Attrs = z.object({
  namespace: z.string().optional(),
  verb: z.string().optional(),
  group: z.string().optional(),
  version: z.string().optional(),
  resource: z.string().optional(),
  subresource: z.string().optional(),
  name: z.string().optional(),
});
export type AccessReviewSpec = z.infer<typeof AccessReviewJson>["spec"];
export type Rules = ReturnType<typeof rulesFor>;

const AccessReviewJson = z.object({
  spec: z.object({
    resourceAttributes: Attrs.optional(),
    nonResourceAttributes: z.object({ path: z.string().optional(), verb: z.string().optional() }).optional(),
  }),
});
const RulesReviewJson = z.object({ spec: z.object({ namespace: z.string().optional() }).optional() });

async function jsonBody<T>(c: Context, schema: z.ZodType<T>, kind: string): Promise<T> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw badRequest(`the body is not a ${kind} in JSON`);
  }
  const r = schema.safeParse(raw);
  if (!r.success)
    throw badRequest(`${kind}: ${r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return r.data;
}

/** POST /apis/authorization.k8s.io/v1/selfsubject{access,rules}reviews. Register before the write refusals. */
export function registerReviews<E extends { Variables: { scope: ReadScope } }>(
  app: Hono<E>,
  o: { served: ServedResources; allowExec: boolean; allowPortForward?: boolean | undefined },
): void {
  const base = `/apis/${GROUP}/v1`;
  app.post(`${base}/selfsubjectaccessreviews`, async (c) => {
    const ctx: ReviewContext = { ...o, scope: c.get("scope") };
    const type = { apiVersion: API_VERSION, kind: "SelfSubjectAccessReview" };
    const inProto = isProtobuf(c.req.header("content-type"));
    let spec: z.infer<typeof AccessReviewJson>["spec"];
    if (inProto) spec = (await proto()).decodeAccessReview(new Uint8Array(await c.req.arrayBuffer()));
    else spec = (await jsonBody(c, AccessReviewJson, "SelfSubjectAccessReview")).spec;
    const ra = spec.resourceAttributes;
    const nra = spec.nonResourceAttributes;
    if (!ra === !nra)
      throw badRequest(
        "spec.resourceAttributes: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
      );
    const d = ra ? decideResource(ra, ctx) : decideNonResource(nra!.path ?? "", nra!.verb ?? "");
    const status = { allowed: d.allowed, reason: d.reason };
    if (wantsProtobuf(c.req.header("accept")))
      return c.body((await proto()).encodeAccessReview(spec, status), 201, { "content-type": PROTOBUF_TYPE });
    return c.json({ ...type, metadata: { creationTimestamp: null }, spec, status }, 201);
  });
  app.post(`${base}/selfsubjectrulesreviews`, async (c) => {
    const ctx: ReviewContext = { ...o, scope: c.get("scope") };
    const type = { apiVersion: API_VERSION, kind: "SelfSubjectRulesReview" };
    let namespace: string | undefined;
    if (isProtobuf(c.req.header("content-type")))
      namespace = (await proto()).decodeRulesReview(new Uint8Array(await c.req.arrayBuffer()));
    else namespace = (await jsonBody(c, RulesReviewJson, "SelfSubjectRulesReview")).spec?.namespace;
    const rules = rulesFor(ctx);
    if (wantsProtobuf(c.req.header("accept")))
      return c.body((await proto()).encodeRulesReview(namespace, rules), 201, { "content-type": PROTOBUF_TYPE });
    return c.json({ ...type, metadata: { creationTimestamp: null }, spec: { namespace }, status: rules }, 201);
  });
}
