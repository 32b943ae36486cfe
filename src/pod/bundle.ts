// A body's objects, the way `podman kube play` takes them: pods, the ConfigMaps and Secrets signed with them, and
// workloads (src/pod/workloads/intake.ts sorts the documents, cleans cluster exports, gives uid-less pods their uid
// and skips kinds a node has no part in, with warnings), from a YAML stream of documents, a v1.List, or (in a JWS
// payload) `pod` and `items` with `configMaps: [...]` and `secrets: [...]`. Everything is validated together: each
// pod, object and workload, and every reference to an object, and all failing fields are reported at once
// (InvalidPodError), before any runtime call.
import type { z } from "zod";
import type { Pod } from "./schema.js";
import { fieldErrors, InvalidPodError, validatePod, type FieldError } from "./validate.js";
import { ConfigMap, Secret, type PodObjects } from "./objects.js";
// (ConfigMap and Secret are both the schemas and, below, their output types.)
import { missingReferences, objectErrors, referenceErrors } from "./references.js";
import { withoutNulls } from "./nulls.js";
import { objectExpansionErrors } from "./env-objects-size.js";
import {
  sortDocuments,
  validateWorkloads,
  type IntakeOptions,
  type Item,
  type WorkloadItem,
} from "./workloads/intake.js";
import { namedTargetPortErrors } from "./workloads/service.js";

export interface PodBundle {
  pod: Pod;
  objects: PodObjects;
}

type Parsed<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

function parse<S extends z.ZodType>(schema: S, input: unknown, at: string): Parsed<z.output<S>> {
  const r = schema.safeParse(withoutNulls(input));
  return r.success ? { ok: true, value: r.data } : { ok: false, errors: fieldErrors(r.error, at, schema) };
}

function tryPod(input: unknown, prefix: string): Parsed<Pod> {
  try {
    return { ok: true, value: validatePod(input, prefix) };
  } catch (e) {
    if (e instanceof InvalidPodError) return { ok: false, errors: e.errors };
    throw e;
  }
}

/** Validate the pod and its objects together; the pod's field paths start with `podPrefix`. */
function assemble(
  podInput: unknown,
  podPrefix: string,
  cms: { input: unknown; at: string }[],
  secrets: { input: unknown; at: string }[],
): PodBundle {
  const errors: FieldError[] = [];
  const pod = tryPod(podInput, podPrefix);
  if (!pod.ok) errors.push(...pod.errors);
  const objects: PodObjects = { configMaps: [], secrets: [] };
  for (const c of cms) {
    const r = parse(ConfigMap, c.input, c.at);
    if (r.ok) objects.configMaps.push(r.value);
    else errors.push(...r.errors);
  }
  for (const s of secrets) {
    const r = parse(Secret, s.input, s.at);
    if (r.ok) objects.secrets.push(r.value);
    else errors.push(...r.errors);
  }
  if (pod.ok) {
    const at = (list: { at: string }[]) => (i: number) => list[i]!.at;
    errors.push(...objectErrors(objects, pod.value.metadata.namespace, { configMaps: at(cms), secrets: at(secrets) }));
    // References are checked only against objects that are themselves valid (an invalid one is reported above).
    if (errors.length === 0) errors.push(...referenceErrors(pod.value, objects, podPrefix));
    // With every reference resolvable, the env bound again with the objects' values (env-objects-size.ts).
    if (errors.length === 0) errors.push(...objectExpansionErrors(pod.value, objects, podPrefix));
  }
  if (errors.length || !pod.ok) throw new InvalidPodError(errors);
  return { pod: pod.value, objects };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A JWS payload: `pod`, and optionally `configMaps` and `secrets` (arrays of v1 objects). */
export function bundleFromPayload(payload: Record<string, unknown>): PodBundle {
  const errors: FieldError[] = [];
  const list = (field: "configMaps" | "secrets") => {
    const v = payload[field];
    if (v === undefined) return [];
    if (!Array.isArray(v)) {
      errors.push({
        path: field,
        message: `must be an array of v1.${field === "configMaps" ? "ConfigMap" : "Secret"} objects`,
      });
      return [];
    }
    return v.map((input, i) => ({ input, at: `${field}[${i}]` }));
  };
  const cms = list("configMaps");
  const secrets = list("secrets");
  if (errors.length) throw new InvalidPodError(errors);
  return assemble(payload["pod"], "pod", cms, secrets);
}

/** Options of a body's intake when the caller has none (tests): no node name to derive uids from, and named
 * service accounts refused. */
const NO_NODE: IntakeOptions = { nodeName: "", serviceAccountTokens: "refuse" };

/** The documents of a body as items: one document (a v1.List is unpacked into its items), or the documents of a
 * YAML stream (`---` separated; empty documents are skipped). `name(i)` names document i in error paths. A lone
 * document keeps its own paths (`spec.containers[0]...`), as a pod body always has, and is a Pod by its place (it may
 * leave out kind). */
export function itemsFromDocuments(
  docs: readonly unknown[],
  name: (i: number) => string = (i) => `documents[${i}]`,
): { items: Item[]; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const items: Item[] = [];
  const visit = (doc: unknown, at: string, inList: boolean) => {
    if (doc === null || doc === undefined) return;
    if (isObject(doc) && doc["kind"] === "List" && !inList) {
      if (doc["apiVersion"] !== "v1")
        errors.push({ path: `${at ? `${at}.` : ""}apiVersion`, message: 'a List must be apiVersion "v1"' });
      const list = doc["items"];
      if (!Array.isArray(list))
        errors.push({ path: `${at ? `${at}.` : ""}items`, message: "a List needs an items array" });
      else list.forEach((item, i) => visit(item, at ? `${at}.items[${i}]` : `items[${i}]`, true));
      for (const k of Object.keys(doc))
        if (!["apiVersion", "kind", "items", "metadata"].includes(k))
          errors.push({
            path: `${at ? `${at}.` : ""}${k}`,
            message: `unknown field "${k}" (not supported by podsync; remove it)`,
          });
    } else items.push({ input: doc, at, ...(at === "" ? { podByPlace: true } : {}) });
  };
  const present = docs.filter((d) => d !== null && d !== undefined);
  if (present.length === 1) visit(present[0], "", false);
  else docs.forEach((d, i) => visit(d, name(i), false));
  return { items, errors };
}

/** A body's objects: pods (each with the ConfigMaps and Secrets of its namespace), workloads, and the warnings of
 * what was skipped or dropped. */
export interface Body {
  pods: SetMember[];
  workloads: WorkloadItem[];
  warnings: string[];
}

/** Validate the items of a body (and the payload's `configMaps`/`secrets` claims): every error at once
 * (InvalidPodError), nothing partial. `check` adds a deployment's own rules per pod. */
export function bodyFromItems(
  items: readonly Item[],
  payload: Record<string, unknown>,
  o: IntakeOptions,
  check: (pod: Pod, at: string) => void = () => undefined,
  extraErrors: FieldError[] = [],
): Body {
  const sorted = sortDocuments(items, o);
  const errors: FieldError[] = [...extraErrors, ...sorted.errors];
  const cms: { value: ConfigMap; at: string }[] = [];
  const secrets: { value: Secret; at: string }[] = [];
  const addObject = (kind: "ConfigMap" | "Secret", input: unknown, at: string) => {
    const r = kind === "ConfigMap" ? parse(ConfigMap, input, at) : parse(Secret, input, at);
    if (!r.ok) errors.push(...r.errors);
    else if (kind === "ConfigMap") cms.push({ value: r.value as ConfigMap, at });
    else secrets.push({ value: r.value as Secret, at });
  };
  for (const c of sorted.configMaps) addObject("ConfigMap", c.input, c.at);
  for (const c of sorted.secrets) addObject("Secret", c.input, c.at);
  for (const field of ["configMaps", "secrets"] as const) {
    const v = payload[field];
    if (v === undefined) continue;
    if (!Array.isArray(v))
      errors.push({
        path: field,
        message: `must be an array of v1.${field === "configMaps" ? "ConfigMap" : "Secret"} objects`,
      });
    else v.forEach((input, i) => addObject(field === "configMaps" ? "ConfigMap" : "Secret", input, `${field}[${i}]`));
  }
  const pods = podsWithObjects(sorted.pods, cms, secrets, check, errors);
  const w = validateWorkloads(sorted.workloads, { configMaps: cms, secrets }, o);
  errors.push(...w.errors);
  errors.push(
    ...namedTargetPortErrors(
      w.workloads.flatMap((x) => (x.workload.kind === "Service" ? [{ svc: x.workload, at: x.at }] : [])),
      [
        ...pods.map((p) => ({ pod: p.pod, at: p.at })),
        ...w.workloads.flatMap((x) => (x.template ? [{ pod: x.template.pod, at: x.template.at }] : [])),
      ],
    ),
  );
  if (errors.length) throw new InvalidPodError(inBodyOrder(errors, items));
  const waiting = [
    ...pods.flatMap((p) => missingReferences(p.pod, p.objects, p.at)),
    ...w.workloads.flatMap((x) => (x.template ? missingReferences(x.template.pod, x.objects, x.template.at) : [])),
  ];
  return { pods, workloads: w.workloads, warnings: [...sorted.warnings, ...waiting] };
}

/** bodyFromItems, through the node's memo of validated bodies (`o.bodies`) when it has one: validation is a pure
 * function of the items (input and place), the payload's objects and the options, so an input validated before is
 * answered with a copy of its result (a converged sync); a changed or new one is validated in full. */
export function rememberedBody(items: readonly Item[], payload: Record<string, unknown>, o: IntakeOptions): Body {
  if (!o.bodies) return bodyFromItems(items, payload, o);
  const input = {
    items: items.map((i) => [i.at, i.podByPlace === true, i.input]),
    configMaps: payload["configMaps"],
    secrets: payload["secrets"],
    o: { ...o, bodies: undefined },
  };
  return o.bodies.get(input, () => bodyFromItems(items, payload, o));
}

/** Errors in the order of the items they name (stable within an item; errors naming no item last). */
function inBodyOrder(errors: FieldError[], items: readonly Item[]): FieldError[] {
  const index = (path: string) => {
    const i = items.findIndex(
      (it) => it.at !== "" && (path === it.at || path.startsWith(`${it.at}.`) || path.startsWith(`${it.at}[`)),
    );
    return i < 0 ? items.length : i;
  };
  return errors
    .map((e, n) => ({ e, n, i: index(e.path) }))
    .sort((a, b) => a.i - b.i || a.n - b.n)
    .map((x) => x.e);
}

/** A body for the per-pod routes (sync, plan): at most one Pod, and any number of workloads; at least one of
 * them. */
export function bodyFromDocuments(docs: readonly unknown[], o: IntakeOptions, name?: (i: number) => string): Body {
  const { items, errors } = itemsFromDocuments(docs, name);
  const body = bodyFromItems(items, {}, o, undefined, errors);
  if (body.pods.length > 1)
    throw new InvalidPodError([
      {
        path: body.pods[1]!.at || "(root)",
        message: `the body holds ${body.pods.length} Pods; send one pod per request (PUT /v1/node/pods takes a set)`,
      },
    ]);
  if (body.pods.length === 0 && body.workloads.length === 0)
    throw new InvalidPodError([{ path: "(root)", message: "the body holds no Pod and no workload" }]);
  return body;
}

/** One pod (and its objects) from the documents of a body: exactly one Pod, no workload. */
export function bundleFromDocuments(
  docs: readonly unknown[],
  name: (i: number) => string = (i) => `documents[${i}]`,
  o: IntakeOptions = NO_NODE,
): PodBundle & { warnings: string[] } {
  const body = bodyFromDocuments(docs, o, name);
  if (body.pods.length !== 1)
    throw new InvalidPodError([{ path: body.workloads[0]?.at || "(root)", message: "the body holds no Pod" }]);
  return { pod: body.pods[0]!.pod, objects: body.pods[0]!.objects, warnings: body.warnings };
}

/** One pod of a node-wide set, with the objects it sees. */
export interface SetMember extends PodBundle {
  /** Where the pod is in the body (`pods[2]`, `items[0]`): the prefix of its error paths. */
  at: string;
}

/** The pods of a node-wide set's items (PUT /v1/node/pods takes workloads too: bodyFromItems). */
export function bundlesFromSet(
  items: readonly unknown[],
  prefix: string,
  payload: Record<string, unknown>,
  check: (pod: Pod, at: string) => void = () => undefined,
  o: IntakeOptions = NO_NODE,
): SetMember[] {
  return bodyFromItems(setItems(items, prefix), payload, o, check).pods;
}

/** The items of a set, each named `<prefix>[i]`. The signed payload's `pods` claim says its items are Pods (they
 * may leave out kind); a v1.List's or a YAML stream's items name their kinds. */
export const setItems = (items: readonly unknown[], prefix: string): Item[] =>
  items.map((input, i) => ({ input, at: `${prefix}[${i}]`, ...(prefix === "pods" ? { podByPlace: true } : {}) }));

/** Validate pods against the objects of their namespace (errors into `errors`). */
function podsWithObjects(
  podItems: readonly Item[],
  cms: { value: ConfigMap; at: string }[],
  secrets: { value: Secret; at: string }[],
  check: (pod: Pod, at: string) => void,
  errors: FieldError[],
): SetMember[] {
  const members: SetMember[] = [];
  const seen = new Set<string>();
  const report = (e: FieldError) => {
    const key = `${e.path}\u0000${e.message}`;
    if (!seen.has(key)) errors.push(e);
    seen.add(key);
  };
  for (const { input, at } of podItems) {
    const pod = tryPod(input, at);
    if (!pod.ok) {
      errors.push(...pod.errors);
      continue;
    }
    try {
      check(pod.value, at);
    } catch (e) {
      if (!(e instanceof InvalidPodError)) throw e;
      errors.push(...e.errors.map((f) => (!at || f.path.startsWith(at) ? f : { ...f, path: `${at}.${f.path}` })));
    }
    const ns = pod.value.metadata.namespace;
    const mine = <T extends { metadata: { namespace?: string | undefined } }>(list: { value: T; at: string }[]) =>
      list.filter((o) => (o.value.metadata.namespace ?? ns) === ns);
    const myCms = mine(cms);
    const mySecrets = mine(secrets);
    const objects: PodObjects = { configMaps: myCms.map((o) => o.value), secrets: mySecrets.map((o) => o.value) };
    for (const e of objectErrors(objects, ns, { configMaps: (i) => myCms[i]!.at, secrets: (i) => mySecrets[i]!.at }))
      report(e);
    const refs = referenceErrors(pod.value, objects, at);
    for (const e of refs) report(e);
    if (refs.length === 0) for (const e of objectExpansionErrors(pod.value, objects, at)) report(e);
    members.push({ pod: pod.value, objects, at });
  }
  return members;
}

/** A stored pod's objects (DesiredPod.objects, as v1 objects) validated again against the (already validated)
 * pod, for a sync from the desired state: the store is trusted, yet nothing is acted on unvalidated. */
export function objectsFromStored(
  pod: Pod,
  stored: { configMaps?: unknown[]; secrets?: unknown[] } | undefined,
): PodObjects {
  const errors: FieldError[] = [];
  const objects: PodObjects = { configMaps: [], secrets: [] };
  (stored?.configMaps ?? []).forEach((input, i) => {
    const r = parse(ConfigMap, input, `objects.configMaps[${i}]`);
    if (r.ok) objects.configMaps.push(r.value);
    else errors.push(...r.errors);
  });
  (stored?.secrets ?? []).forEach((input, i) => {
    const r = parse(Secret, input, `objects.secrets[${i}]`);
    if (r.ok) objects.secrets.push(r.value);
    else errors.push(...r.errors);
  });
  if (errors.length === 0) {
    errors.push(
      ...objectErrors(objects, pod.metadata.namespace, {
        configMaps: (i) => `objects.configMaps[${i}]`,
        secrets: (i) => `objects.secrets[${i}]`,
      }),
    );
    errors.push(...referenceErrors(pod, objects));
    if (errors.length === 0) errors.push(...objectExpansionErrors(pod, objects));
  }
  if (errors.length) throw new InvalidPodError(errors);
  return objects;
}
