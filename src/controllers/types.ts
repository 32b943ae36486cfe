// Package controllers/ — node-local workload controllers (agent layer), one folder per kind as kube-controller-
// manager has them, each a pure step run by run.ts. Imports kubelet/'s types, lifecycle/, pod/, pleg's port; no HTTP.
//
// What a controller's pure step takes and returns: the workload, the pods it controls (observed), the node's
// clock; and the pods to create and delete, the workloads it makes or retires, its status, and when it wants
// to look again. The runner (run.ts) does the I/O.
import type { Pod } from "../pod/schema.js";
import type { Workload } from "../pod/workloads/schema.js";

export interface ControllerContext {
  now: number;
  /** This node's name: derived pods' uids come from it (src/pod/workloads/uid.ts). */
  nodeName: string;
  /** A generateName suffix (randomSuffix; tests pass a fixed one). */
  suffix: () => string;
  /** The most pods one step may build in this pass (the room left on the node, plus one for admission to refuse
   * and say why): a controller never builds a pod per replica or completion beyond what the node can hold.
   * Unset: no bound (the pure steps' tests). */
  maxCreate?: number;
}

/** How many of `want` new pods a step builds now. */
export const creatable = (want: number, ctx: ControllerContext): number =>
  Math.max(0, Math.min(want, ctx.maxCreate ?? want));

export interface ControllerResult {
  create: Pod[];
  delete: { uid: string; name: string; reason: string }[];
  status: Record<string, unknown>;
  /** Workloads it makes or changes (a Deployment's ReplicaSets, a CronJob's Jobs), stored with it as owner. */
  putChildren?: Workload[];
  /** Workloads it retires (old ReplicaSets past revisionHistoryLimit, a CronJob's old Jobs), with their pods. */
  removeChildren?: Workload[];
  /** The workload itself is done and goes (a Job past ttlSecondsAfterFinished). */
  removeSelf?: boolean;
  /** Look again at this time (ms) even if nothing changes (a back-off, a deadline, minReadySeconds, a schedule). */
  requeueAt?: number;
}

export const emptyResult = (status: Record<string, unknown>): ControllerResult => ({ create: [], delete: [], status });

/** metav1.Condition-like conditions as the apps and batch APIs have them. */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime: string;
  lastUpdateTime?: string;
  lastProbeTime?: string;
}

/** Set a condition, keeping lastTransitionTime when the status did not change (SetDeploymentCondition,
 * the Job controller's ensureJobConditionStatus). */
export function setCondition(
  list: Condition[],
  c: Omit<Condition, "lastTransitionTime"> & { lastTransitionTime?: string },
  nowIso: string,
): Condition[] {
  const prev = list.find((x) => x.type === c.type);
  if (prev && prev.status === c.status && prev.reason === c.reason && prev.message === c.message) return list;
  const next: Condition = {
    ...c,
    lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : (c.lastTransitionTime ?? nowIso),
  } as Condition;
  return [...list.filter((x) => x.type !== c.type), next];
}
