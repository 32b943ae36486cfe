// Package cli/resources/ — the resource types `podsync get` knows (pods, the workload kinds) and how each is listed.
// Imports the CLI's client and printers; never the node's code.
//
// The types `podsync get` knows: kubectl's names for each (plural, singular, short) → its module.
import type { WorkloadKind } from "../../pod/workloads/schema.js";
import type { Resource } from "./resource.js";

/** The workload kinds (GET /v1/workloads), kubectl's names for each, plural first. */
const WORKLOADS: [kind: WorkloadKind, names: string[]][] = [
  ["Deployment", ["deployments", "deployment", "deploy"]],
  ["ReplicaSet", ["replicasets", "replicaset", "rs"]],
  ["StatefulSet", ["statefulsets", "statefulset", "sts"]],
  ["DaemonSet", ["daemonsets", "daemonset", "ds"]],
  ["Job", ["jobs", "job"]],
  ["CronJob", ["cronjobs", "cronjob", "cj"]],
  ["PersistentVolumeClaim", ["persistentvolumeclaims", "persistentvolumeclaim", "pvc"]],
  ["Service", ["services", "service", "svc"]],
  ["ReplicationController", ["replicationcontrollers", "replicationcontroller", "rc"]],
  ["HorizontalPodAutoscaler", ["horizontalpodautoscalers", "horizontalpodautoscaler", "hpa"]],
  ["PodDisruptionBudget", ["poddisruptionbudgets", "poddisruptionbudget", "pdb"]],
];

const types: { names: string[]; load: () => Promise<{ default: Resource }> }[] = [
  { names: ["pods", "pod", "po"], load: () => import("./pods.js") },
  ...WORKLOADS.map(([kind, names]) => ({
    names,
    load: async () => ({ default: (await import("../print/workload-print.js")).workloadResource(kind) }),
  })),
];

/** The resource type named (case-insensitive), or undefined. */
export async function findResource(name: string): Promise<Resource | undefined> {
  const t = types.find((t) => t.names.includes(name.toLowerCase()));
  return t ? (await t.load()).default : undefined;
}

export const resourceNames = (): string[] => types.map((t) => t.names[0]!);

/** The singular names of the kinds `delete TYPE/NAME` takes, pods first (for messages). */
export const deletableTypeNames = (): string[] => ["pod", ...WORKLOADS.map(([, names]) => names[1]!)];

/** The workload kind a type name names (`deploy`, `deployments`, `Deployment`), or undefined (pods included). */
export function workloadKindNamed(name: string): WorkloadKind | undefined {
  const n = name.toLowerCase();
  return WORKLOADS.find(([kind, names]) => names.includes(n) || kind.toLowerCase() === n)?.[0];
}
