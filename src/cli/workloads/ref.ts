// Package cli/workloads/ — the CLI's workload helpers: references, multi-get, their pods, delete and prune.
// Imports the CLI's client and the workload model (pod/workloads/); never the node's controllers.
//
// Workloads addressed as kubectl addresses them: TYPE/NAME or TYPE NAME in -n's namespace (a uid is accepted too),
// resolved against GET /v1/workloads?kind=. Named in kubectl's words: `deployment.apps "web"` (the resource with
// its API group, as kubectl's delete and scale print it: cmd/delete/delete.go, printers.go's "%s.%s").
import type { WorkloadKind } from "../../pod/workloads/schema.js";
import { fail, usage } from "../args.js";
import { workloadKindNamed } from "../resources/index.js";
import type { Ctx } from "../client.js";
import { notFound } from "../output.js";
import type { KubeObject } from "../resources/resource.js";

export interface WorkloadRef {
  kind: WorkloadKind;
  uid: string;
  namespace: string;
  name: string;
  obj: KubeObject;
}

/** The API group of each kind ("" for the core group). */
const GROUP: Record<WorkloadKind, string> = {
  Deployment: "apps",
  ReplicaSet: "apps",
  StatefulSet: "apps",
  DaemonSet: "apps",
  Job: "batch",
  CronJob: "batch",
  PersistentVolumeClaim: "",
  ReplicationController: "",
  HorizontalPodAutoscaler: "autoscaling",
  PodDisruptionBudget: "policy",
  Service: "",
};

/** kubectl's singular resource with its group: `deployment.apps`, `job.batch`, `persistentvolumeclaim`. */
export function qualifiedKind(kind: WorkloadKind): string {
  const g = GROUP[kind];
  return `${kind.toLowerCase()}${g ? `.${g}` : ""}`;
}

/** kubectl's plural with its group, as its NotFound says it: `deployments.apps`. */
export function qualifiedPlural(kind: WorkloadKind): string {
  const g = GROUP[kind];
  return `${kind.toLowerCase()}s${g ? `.${g}` : ""}`;
}

export async function listWorkloads(ctx: Ctx, kind?: WorkloadKind): Promise<KubeObject[]> {
  const q = kind ? `?kind=${kind}` : "";
  return (await ctx.call<{ items?: KubeObject[] }>("GET", `/v1/workloads${q}`, { act: "status" })).items ?? [];
}

export async function resolveWorkload(ctx: Ctx, kind: WorkloadKind, name: string): Promise<WorkloadRef> {
  const all = await listWorkloads(ctx, kind);
  const w =
    all.find((w) => w.metadata.namespace === ctx.namespace && w.metadata.name === name) ??
    all.find((w) => w.metadata.uid === name);
  if (w)
    return { kind, uid: w.metadata.uid ?? "", namespace: w.metadata.namespace ?? "", name: w.metadata.name, obj: w };
  return fail(
    notFound(
      qualifiedPlural(kind),
      name,
      ctx.namespace,
      all.filter((w) => w.metadata.name === name).map((w) => w.metadata.namespace ?? ""),
    ),
  );
}

/** One workload named as kubectl names it, TYPE/NAME or TYPE NAME, of the kinds `verb` takes. */
export function workloadArg(
  args: readonly string[],
  kinds: readonly WorkloadKind[],
  verb: string,
  command: string,
): { kind: WorkloadKind; name: string } {
  const m = args.length === 1 ? /^([^/]+)\/(.+)$/.exec(args[0]!) : undefined;
  const [type, name] = m ? [m[1]!, m[2]!] : args.length === 2 ? [args[0]!, args[1]!] : [undefined, undefined];
  const names = kinds.map((k) => k.toLowerCase()).join(", ");
  if (type === undefined || name === undefined)
    return usage(`${verb} needs one TYPE/NAME or TYPE NAME (e.g. deployment/web); it takes ${names}`, command);
  const kind = workloadKindNamed(type);
  if (!kind || !kinds.includes(kind))
    return usage(
      kind
        ? `${verb} does not take a ${kind} (it takes ${names})`
        : `the server doesn't have a resource type "${type}" (${verb} takes ${names})`,
      command,
    );
  return { kind, name };
}
