// A pod and the ConfigMaps and Secrets signed with it, the way `podman kube play` takes them: from a YAML
// stream of documents, a v1.List, or (in a JWS payload) `pod` with `configMaps: [...]` and `secrets: [...]`.
// Everything is validated together: the pod, each object, and every reference from the pod to an object,
// and all failing fields are reported at once (InvalidPodError), before any runtime call.
import { z } from "zod";
import type { Pod } from "./schema.js";
import { fieldErrors, InvalidPodError, validatePod, type FieldError } from "./validate.js";
import { ConfigMap, Secret, type PodObjects } from "./objects.js";
// (ConfigMap and Secret are both the schemas and, below, their output types.)
import { objectErrors, referenceErrors } from "./references.js";
import { objectExpansionErrors } from "./env-objects-size.js";

export interface PodBundle {
  pod: Pod;
  objects: PodObjects;
}

type Parsed<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

function parse<S extends z.ZodType>(schema: S, input: unknown, at: string): Parsed<z.output<S>> {
  const r = schema.safeParse(input);
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
function assemble(podInput: unknown, podPrefix: string, cms: { input: unknown; at: string }[], secrets: { input: unknown; at: string }[]): PodBundle {
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
      errors.push({ path: field, message: `must be an array of v1.${field === "configMaps" ? "ConfigMap" : "Secret"} objects` });
      return [];
    }
    return v.map((input, i) => ({ input, at: `${field}[${i}]` }));
  };
  const cms = list("configMaps");
  const secrets = list("secrets");
  if (errors.length) throw new InvalidPodError(errors);
  return assemble(payload["pod"], "pod", cms, secrets);
}

const KINDS = "Pod, ConfigMap, Secret, or a v1 List of them";

/** The documents of a body: one document (a Pod, or a v1.List of a Pod and its objects), or the documents of a
 * YAML stream (`---` separated; empty documents are skipped). `name(i)` names document i in error paths. A
 * lone pod keeps its own paths (`spec.containers[0]...`), as a pod body always has. */
export function bundleFromDocuments(docs: readonly unknown[], name: (i: number) => string = (i) => `documents[${i}]`): PodBundle {
  const errors: FieldError[] = [];
  const pods: { input: unknown; at: string }[] = [];
  const cms: { input: unknown; at: string }[] = [];
  const secrets: { input: unknown; at: string }[] = [];
  const visit = (doc: unknown, at: string, inList: boolean) => {
    if (doc === null || doc === undefined) return;
    if (!isObject(doc)) {
      errors.push({ path: at, message: `each document must be an object (${KINDS})` });
      return;
    }
    const kind = doc["kind"];
    // A pod body without apiVersion/kind has always been accepted as a pod.
    if (kind === "Pod" || kind === undefined) pods.push({ input: doc, at });
    else if (kind === "ConfigMap") cms.push({ input: doc, at });
    else if (kind === "Secret") secrets.push({ input: doc, at });
    else if (kind === "List" && !inList) {
      if (doc["apiVersion"] !== "v1") errors.push({ path: `${at}.apiVersion`, message: 'a List must be apiVersion "v1"' });
      const items = doc["items"];
      if (!Array.isArray(items)) errors.push({ path: `${at}.items`, message: "a List needs an items array" });
      else items.forEach((item, i) => visit(item, at ? `${at}.items[${i}]` : `items[${i}]`, true));
      for (const k of Object.keys(doc)) if (!["apiVersion", "kind", "items", "metadata"].includes(k)) errors.push({ path: `${at ? `${at}.` : ""}${k}`, message: `unknown field "${k}" (not supported by podsync; remove it)` });
    } else errors.push({ path: `${at ? `${at}.` : ""}kind`, message: `unsupported kind ${JSON.stringify(kind)}: podsync takes ${KINDS}` });
  };
  // One document (empty ones aside) keeps the pod's own paths; in a stream each is named by its place.
  const present = docs.filter((d) => d !== null && d !== undefined);
  if (present.length === 1) visit(present[0], "", false);
  else docs.forEach((d, i) => visit(d, name(i), false));
  if (pods.length !== 1)
    errors.push({ path: pods[1]?.at || "(root)", message: pods.length === 0 ? "the body holds no Pod" : `the body holds ${pods.length} Pods; send one pod per request (PUT /v1/node/pods takes a set)` });
  if (errors.length) throw new InvalidPodError(errors);
  return assemble(pods[0]!.input, pods[0]!.at, cms, secrets);
}

/** One pod of a node-wide set, with the objects it sees. */
export interface SetMember extends PodBundle {
  /** Where the pod is in the body (`pods[2]`, `items[0]`): the prefix of its error paths. */
  at: string;
}

/** A node-wide set (PUT /v1/node/pods): the items (pods, and ConfigMaps and Secrets among them in a v1.List or a
 * YAML stream; undefined for an empty YAML document), and the payload's `configMaps`/`secrets` claims. A pod sees
 * the objects of its namespace and those that name none; its references are checked against them. `check` adds a
 * deployment's own rules per pod (InvalidPodError). Every error of every item at once. */
export function bundlesFromSet(items: readonly unknown[], prefix: string, payload: Record<string, unknown>, check: (pod: Pod, at: string) => void = () => undefined): SetMember[] {
  const errors: FieldError[] = [];
  const cms: { value: ConfigMap; at: string }[] = [];
  const secrets: { value: Secret; at: string }[] = [];
  const pods: { input: unknown; at: string }[] = [];
  const addObject = (kind: unknown, input: unknown, at: string) => {
    const r = kind === "ConfigMap" ? parse(ConfigMap, input, at) : parse(Secret, input, at);
    if (!r.ok) errors.push(...r.errors);
    else if (kind === "ConfigMap") cms.push({ value: r.value as ConfigMap, at });
    else secrets.push({ value: r.value as Secret, at });
  };
  items.forEach((item, i) => {
    if (item === undefined || item === null) return;
    const at = `${prefix}[${i}]`;
    const kind = isObject(item) ? item["kind"] : undefined;
    if (kind === "ConfigMap" || kind === "Secret") addObject(kind, item, at);
    else pods.push({ input: item, at });
  });
  for (const field of ["configMaps", "secrets"] as const) {
    const v = payload[field];
    if (v === undefined) continue;
    if (!Array.isArray(v)) errors.push({ path: field, message: `must be an array of v1.${field === "configMaps" ? "ConfigMap" : "Secret"} objects` });
    else v.forEach((input, i) => addObject(field === "configMaps" ? "ConfigMap" : "Secret", input, `${field}[${i}]`));
  }
  const members: SetMember[] = [];
  const seen = new Set<string>();
  const report = (e: FieldError) => {
    const key = `${e.path}\u0000${e.message}`;
    if (!seen.has(key)) errors.push(e);
    seen.add(key);
  };
  for (const { input, at } of pods) {
    const pod = tryPod(input, at);
    if (!pod.ok) {
      errors.push(...pod.errors);
      continue;
    }
    try {
      check(pod.value, at);
    } catch (e) {
      if (!(e instanceof InvalidPodError)) throw e;
      errors.push(...e.errors.map((f) => (f.path.startsWith(at) ? f : { ...f, path: `${at}.${f.path}` })));
    }
    const ns = pod.value.metadata.namespace;
    const mine = <T extends { metadata: { namespace?: string | undefined } }>(list: { value: T; at: string }[]) => list.filter((o) => (o.value.metadata.namespace ?? ns) === ns);
    const myCms = mine(cms);
    const mySecrets = mine(secrets);
    const objects: PodObjects = { configMaps: myCms.map((o) => o.value), secrets: mySecrets.map((o) => o.value) };
    for (const e of objectErrors(objects, ns, { configMaps: (i) => myCms[i]!.at, secrets: (i) => mySecrets[i]!.at })) report(e);
    const refs = referenceErrors(pod.value, objects, at);
    for (const e of refs) report(e);
    if (refs.length === 0) for (const e of objectExpansionErrors(pod.value, objects, at)) report(e);
    members.push({ pod: pod.value, objects, at });
  }
  if (errors.length) throw new InvalidPodError(errors);
  return members;
}

/** A stored pod's objects (DesiredPod.objects, as v1 objects) validated again against the (already validated)
 * pod, for a sync from the desired state: the store is trusted, yet nothing is acted on unvalidated. */
export function objectsFromStored(pod: Pod, stored: { configMaps?: unknown[]; secrets?: unknown[] } | undefined): PodObjects {
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
    errors.push(...objectErrors(objects, pod.metadata.namespace, { configMaps: (i) => `objects.configMaps[${i}]`, secrets: (i) => `objects.secrets[${i}]` }));
    errors.push(...referenceErrors(pod, objects));
    if (errors.length === 0) errors.push(...objectExpansionErrors(pod, objects));
  }
  if (errors.length) throw new InvalidPodError(errors);
  return objects;
}
