// The documents of a body, sorted before anything is validated: each read as Go reads JSON (a null field is an
// absent one: nulls.ts) and given its generateName'd name (generate-name.ts); pods (cleaned of what a cluster
// export carries, given a uid when they have none), ConfigMaps and Secrets, workloads (parsed and checked here; an
// HPA of another version read as autoscaling/v2: hpa-versions.ts), and the Kubernetes kinds a node has no part in
// and custom resources (skipped, each with a warning; PODSYNC_UNKNOWN_KINDS=refuse refuses a custom resource). A document of no Kubernetes kind, or with
// no kind where its place does not make it a Pod, is an error naming it. Every error of every document at once (InvalidPodError), and nothing is stored on a refusal:
// the caller stores only what comes back.
import type { z } from "zod";
import { fieldErrors, type FieldError } from "../validate.js";
import type { PodObjects } from "../objects.js";
import type { Pod } from "../schema.js";
import { objectExpansionErrors } from "../env-objects-size.js";
import { referenceErrors } from "../references.js";
import { derivedUid } from "./uid.js";
import { withoutNulls } from "../nulls.js";
import { completeGenerateName } from "./generate-name.js";
import { hpaAsV2 } from "./hpa-versions.js";
import { cleanPod, cleanWorkload, type ServiceAccountTokens } from "./export.js";
import {
  isWorkloadKind,
  templateOf,
  WORKLOAD_API_VERSIONS,
  WORKLOAD_SCHEMAS,
  type Workload,
  type WorkloadKind,
} from "./schema.js";
import { selectorEmpty, selectorMatches, type LabelSelector } from "./selector.js";
import { templatePod } from "./template.js";
import { jobSelectorDefaults } from "./job-labels.js";
import { workloadBoundErrors, type WorkloadLimits } from "./bounds.js";
import type { Body } from "../bundle.js";

/** PODSYNC_UNKNOWN_KINDS: a document of a kind podsync does not know (a custom resource) is skipped with a
 * warning, as kubectl apply reports it and applies the rest (`warn`), or refuses the body (`refuse`). */
export const UNKNOWN_KIND_MODES = ["warn", "refuse"] as const;
export type UnknownKinds = (typeof UNKNOWN_KIND_MODES)[number];

export interface IntakeOptions {
  /** This node's name: a uid-less pod's uid is derived from it (uid.ts). */
  nodeName: string;
  serviceAccountTokens: ServiceAccountTokens;
  /** The node owner's bounds (bounds.ts); none: the schema's alone. */
  limits?: WorkloadLimits | undefined;
  /** Default `warn`. */
  unknownKinds?: UnknownKinds | undefined;
  /** The node's validated bodies, remembered by input (bundle.ts rememberedBody, src/util/memo.ts): a converged
   * sync is not validated again. None: every body is validated. */
  bodies?: { get(input: unknown, validate: () => Body): Body } | undefined;
}

export interface Item {
  input: unknown;
  /** Its path in the body (`items[2]`, `documents[0]`, or "" for a lone document). */
  at: string;
  /** Its place in the body says it is a Pod (the signed payload's `pod` and `pods[i]`, a body that is one lone
   * document): only there may a Pod leave out `kind`, as pod bodies always could. */
  podByPlace?: boolean;
}

export interface Sorted {
  pods: Item[];
  configMaps: Item[];
  secrets: Item[];
  workloads: Item[];
  warnings: string[];
  errors: FieldError[];
}

/** Kubernetes API groups: core ("v1") and the built-in groups; any `*.k8s.io` group is Kubernetes' own. */
const BUILT_IN_GROUPS = new Set(["apps", "batch", "autoscaling", "policy", "extensions"]);
function isKubernetesApiVersion(v: unknown): boolean {
  if (typeof v !== "string") return false;
  if (v === "v1") return true;
  const [group, version, extra] = v.split("/");
  return (
    extra === undefined &&
    version !== undefined &&
    version !== "" &&
    (BUILT_IN_GROUPS.has(group!) || group!.endsWith(".k8s.io"))
  );
}

/** A custom resource's apiVersion: `<group>/<version>` with a dotted group that is not Kubernetes' own
 * (`monitoring.coreos.com/v1`). Anything else (no apiVersion, a bare word) is not a Kubernetes object at all. */
function isCustomApiVersion(v: unknown): boolean {
  if (typeof v !== "string") return false;
  const [group, version, extra] = v.split("/");
  return (
    extra === undefined && !!version && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(group!)
  );
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const join = (at: string, f: string) => (at ? `${at}.${f}` : f);

/** Sort the documents of a body (v1.Lists already unpacked by the caller). */
export function sortDocuments(items: readonly Item[], o: IntakeOptions): Sorted {
  const out: Sorted = { pods: [], configMaps: [], secrets: [], workloads: [], warnings: [], errors: [] };
  for (const { input: sent, at, podByPlace } of items) {
    if (sent === null || sent === undefined) continue;
    const input = withoutNulls(sent);
    if (isObject(input)) completeGenerateName(input, o.nodeName);
    if (!isObject(input)) {
      out.errors.push({
        path: at || "(root)",
        message: "each document must be an object (a Kubernetes object such as a Pod or a Deployment)",
      });
      continue;
    }
    const kind = input["kind"];
    const name =
      isObject(input["metadata"]) && typeof input["metadata"]["name"] === "string"
        ? input["metadata"]["name"]
        : undefined;
    const what = `${String(kind)}${name ? ` "${name}"` : ""}`;
    if (kind === undefined) {
      const missing = kindlessError(input, at, podByPlace ?? false);
      if (missing) {
        out.errors.push(missing);
        continue;
      }
    }
    const otherVersion = hpaAsV2(input, at ? `${at}: ${what}` : what);
    if (kind === "Pod" || kind === undefined) {
      const { doc, warnings } = cleanPod(input, at, o.serviceAccountTokens);
      withUid(doc, o.nodeName);
      out.pods.push({ input: doc, at });
      out.warnings.push(...warnings);
    } else if (kind === "ConfigMap") out.configMaps.push({ input, at });
    else if (otherVersion) {
      const h = otherVersion;
      if ("skip" in h) out.warnings.push(h.skip);
      else {
        const { doc, warnings } = cleanWorkload(h.doc, at, o.serviceAccountTokens);
        out.workloads.push({ input: doc, at });
        out.warnings.push(...(h.warning ? [h.warning] : []), ...warnings);
      }
    } else if (kind === "Secret") out.secrets.push({ input, at });
    else if (isWorkloadKind(kind)) {
      const { doc, warnings } = cleanWorkload(input, at, o.serviceAccountTokens);
      out.workloads.push({ input: doc, at });
      out.warnings.push(...warnings);
    } else if (typeof kind === "string" && isKubernetesApiVersion(input["apiVersion"]))
      out.warnings.push(
        `${at ? `${at}: ` : ""}${input["apiVersion"]} ${what} skipped: a node has no part in a ${kind} (podsync runs Pods, Deployments, ReplicaSets, ReplicationControllers, StatefulSets, DaemonSets, Jobs, CronJobs, HorizontalPodAutoscalers and Services, and keeps ConfigMaps, Secrets, PersistentVolumeClaims and PodDisruptionBudgets)`,
      );
    else if (
      typeof kind === "string" &&
      kind !== "" &&
      isCustomApiVersion(input["apiVersion"]) &&
      o.unknownKinds !== "refuse"
    )
      // kubectl apply sends each document on its own: the API server's 404 for a kind it does not serve fails that
      // one, and the rest is applied. A node serves no custom resource, so it says so and applies the rest.
      out.warnings.push(
        `${at ? `${at}: ` : ""}skipped: custom resource ${input["apiVersion"]} ${kind}${name ? ` "${name}"` : ""} (a node runs no operator for it; PODSYNC_UNKNOWN_KINDS=refuse refuses such a file)`,
      );
    else
      out.errors.push({
        path: join(at, "kind"),
        message: `${typeof input["apiVersion"] === "string" ? `${input["apiVersion"]} ` : ""}${what} is not a Kubernetes kind podsync knows: send Pods, ConfigMaps, Secrets, PersistentVolumeClaims, Services, Deployments, ReplicaSets, ReplicationControllers, StatefulSets, DaemonSets, Jobs, CronJobs, HorizontalPodAutoscalers or PodDisruptionBudgets (other Kubernetes kinds are skipped with a warning${o.unknownKinds === "refuse" ? "; custom resources are refused on this node: PODSYNC_UNKNOWN_KINDS=refuse" : ", and so are custom resources"})`,
      });
  }
  return out;
}

/** The pod selector of a workload with a template (a ReplicationController's map is matchLabels). */
function selectorOf(w: Workload): LabelSelector | undefined {
  switch (w.kind) {
    case "CronJob":
      return w.spec.jobTemplate.spec.selector;
    case "ReplicationController":
      return { matchLabels: w.spec.selector };
    case "PersistentVolumeClaim":
    case "HorizontalPodAutoscaler":
    case "PodDisruptionBudget":
      return undefined;
    default:
      return w.spec.selector;
  }
}

/** Fields only a workload's spec has: a kind-less document carrying one is not a Pod. */
const WORKLOAD_SPEC_FIELDS = ["template", "jobTemplate", "replicas", "selector", "schedule", "volumeClaimTemplates"];

/** Why a document without `kind` cannot be read as a Pod, or undefined when it can. A pod body has always been
 * accepted without apiVersion/kind (docs/pod-fields.md), so a document whose place says it is a Pod (`podByPlace`)
 * and whose fields are a pod's still is. Anywhere else in a body of several objects (a YAML stream, a v1.List's
 * items, the payload's `items`) kind is what says what a document is, and its absence is a 400 naming the
 * document. */
function kindlessError(input: Record<string, unknown>, at: string, podByPlace: boolean): FieldError | undefined {
  const meta = isObject(input["metadata"]) ? input["metadata"] : {};
  const what = `the document${typeof meta["name"] === "string" ? ` "${meta["name"]}"` : ""}${at ? ` at ${at}` : ""}`;
  const spec = isObject(input["spec"]) ? input["spec"] : {};
  const workloadField = WORKLOAD_SPEC_FIELDS.find((f) => f in spec);
  if (workloadField)
    return {
      path: join(at, "kind"),
      message: `${what} has no kind, and its spec.${workloadField} is a workload's field, not a Pod's: set kind (Deployment, StatefulSet, Job, ...) and apiVersion`,
    };
  if (!podByPlace)
    return {
      path: join(at, "kind"),
      message: `${what} has no kind: in a body of several objects each names its kind (Pod, Deployment, ConfigMap, ...) and apiVersion; only a body that is one pod may leave them out`,
    };
  return undefined;
}

/** A pod without metadata.uid gets the one derived from the node, its namespace and its name. */
function withUid(doc: Record<string, unknown>, node: string): void {
  const meta = doc["metadata"];
  if (!isObject(meta) || meta["uid"] !== undefined || typeof meta["name"] !== "string") return;
  const ns = typeof meta["namespace"] === "string" ? meta["namespace"] : "default";
  meta["uid"] = derivedUid(node, ns, meta["name"]);
}

/** A validated workload and the ConfigMaps and Secrets of its namespace that its pods see. */
export interface WorkloadItem {
  workload: Workload;
  objects: PodObjects;
  at: string;
  /** The pod template validated as a pod, and its path (for the node owner's policy and the runtime's checks). */
  template?: { pod: Pod; at: string } | undefined;
}

/** Parse and check the workloads of a body against its (already validated) objects: each template as a pod (its
 * errors under the template's path), the selector against the template's labels, one object per kind and name. */
export function validateWorkloads(
  items: readonly Item[],
  objects: {
    configMaps: { value: PodObjects["configMaps"][number]; at: string }[];
    secrets: { value: PodObjects["secrets"][number]; at: string }[];
  },
  o: IntakeOptions,
): { workloads: WorkloadItem[]; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const workloads: WorkloadItem[] = [];
  const seen = new Map<string, string>();
  for (const { input, at } of items) {
    const kind = (input as { kind: WorkloadKind }).kind;
    const schema = WORKLOAD_SCHEMAS[kind] as z.ZodType<Workload>;
    const raw = structuredClone(input) as Record<string, unknown>;
    if (raw["apiVersion"] !== WORKLOAD_API_VERSIONS[kind]) {
      errors.push({
        path: join(at, "apiVersion"),
        message: `a ${kind} is apiVersion "${WORKLOAD_API_VERSIONS[kind]}"`,
      });
      continue;
    }
    const r = schema.safeParse(raw);
    if (!r.success) {
      errors.push(...fieldErrors(r.error, at));
      // The node's bounds on what parsed, so every bad number is named at once.
      const named = new Set(errors.map((e) => e.path));
      if (o.limits)
        errors.push(
          ...workloadBoundErrors({ kind, spec: raw["spec"] }, o.limits, at).filter((e) => !named.has(e.path)),
        );
      continue;
    }
    const w = r.data;
    if (o.limits) errors.push(...workloadBoundErrors(w, o.limits, at));
    const m = w.metadata;
    m.uid ??= derivedUid(o.nodeName, m.namespace, `${kind}/${m.name}`);
    const key = `${kind}/${m.namespace}/${m.name}`;
    const dup = seen.get(key);
    if (dup !== undefined)
      errors.push({
        path: join(at, "metadata.name"),
        message: `duplicate ${kind} ${m.namespace}/${m.name} (also ${dup || "the body"}): a body holds each object once`,
      });
    seen.set(key, at);
    const ns = m.namespace;
    const mine = <T extends { metadata: { namespace?: string | undefined } }>(list: { value: T; at: string }[]) =>
      list.filter((x) => (x.value.metadata.namespace ?? ns) === ns).map((x) => x.value);
    const objs: PodObjects = { configMaps: mine(objects.configMaps), secrets: mine(objects.secrets) };
    if (w.kind === "Job") jobSelectorDefaults(w);
    const t = templateOf(w);
    let template: WorkloadItem["template"];
    if (t) {
      const tat = join(at, w.kind === "CronJob" ? "spec.jobTemplate.spec.template" : "spec.template");
      // A StatefulSet's pods mount its claim templates as volumes (the API server validates them so too).
      const claims = w.kind === "StatefulSet" ? (w.spec.volumeClaimTemplates ?? []).map((c) => c.metadata.name) : [];
      const vols = (t.spec["volumes"] as { name?: string }[] | undefined) ?? [];
      const tv = claims.length
        ? {
            ...t,
            spec: {
              ...t.spec,
              volumes: [
                ...vols,
                ...claims
                  .filter((n) => !vols.some((v) => v.name === n))
                  .map((n) => ({ name: n, persistentVolumeClaim: { claimName: `${n}-${m.name}-0` } })),
              ],
            },
          }
        : t;
      const tp = templatePod(tv, ns, tat);
      if (!tp.ok) errors.push(...tp.errors);
      else {
        template = { pod: tp.pod, at: tat };
        const refs = referenceErrors(tp.pod, objs, tat);
        errors.push(...refs);
        if (refs.length === 0) errors.push(...objectExpansionErrors(tp.pod, objs, tat));
        if (w.kind !== "Job" && w.kind !== "CronJob" && tp.pod.spec.restartPolicy !== "Always")
          errors.push({
            path: join(tat, "spec.restartPolicy"),
            message: `a ${w.kind}'s pods must have restartPolicy "Always"`,
          });
      }
      const sel = selectorOf(w);
      if (sel) {
        const sat = join(at, w.kind === "CronJob" ? "spec.jobTemplate.spec.selector" : "spec.selector");
        if (w.kind !== "Job" && w.kind !== "CronJob" && selectorEmpty(sel))
          errors.push({ path: sat, message: `empty selector is invalid for a ${w.kind}` });
        else if (!selectorMatches(sel, t.metadata.labels))
          errors.push({ path: sat, message: "`selector` does not match template `labels`" });
      }
    }
    workloads.push({ workload: w, objects: objs, at, template });
  }
  return { workloads, errors };
}
