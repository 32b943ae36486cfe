// Package controllers/replicaset/ — the ReplicaSet controller's pure step (replica_set.go).
// Imports ../ (the controllers' types and pods) and pod/workloads/; never I/O, HTTP or the runtime.
//
// The ReplicaSet controller's sync on one node (pkg/controller/replicaset/replica_set.go: syncReplicaSet,
// manageReplicas, getPodsToDelete; replica_set_utils.go: calculateStatus): pods `<rs>-<5 chars>` from the
// template, with a controller reference; too many are deleted in kubelet's ActivePodsWithRanks order (not ready
// before ready, shorter-ready before longer, more restarts before fewer, newer before older).
import type { ReplicaSet } from "../../pod/workloads/schema.js";
import { derivedUid } from "../../pod/workloads/uid.js";
import { makePod } from "../../pod/workloads/template.js";
import { selectorMatches } from "../../pod/workloads/selector.js";
import {
  availableAt,
  controllerRef,
  generatedName,
  isActive,
  isAvailable,
  isReady,
  phaseOf,
  type ObservedPod,
} from "../pods.js";
import { creatable, type ControllerContext, type ControllerResult } from "../types.js";

export interface ReplicaSetStatus {
  replicas: number;
  fullyLabeledReplicas: number;
  readyReplicas: number;
  availableReplicas: number;
  [k: string]: unknown;
}

/** calculateStatus: counts over the active pods. */
export function replicaSetStatus(rs: ReplicaSet, pods: readonly ObservedPod[], now: number): ReplicaSetStatus {
  const active = pods.filter(isActive);
  return {
    replicas: active.length,
    fullyLabeledReplicas: active.filter((p) =>
      selectorMatches({ matchLabels: rs.spec.template.metadata.labels ?? {} }, p.pod.metadata.labels),
    ).length,
    readyReplicas: active.filter(isReady).length,
    availableReplicas: active.filter((p) => isAvailable(p, rs.spec.minReadySeconds, now)).length,
  };
}

const PHASE_RANK: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };
const readySince = (p: ObservedPod) => {
  const c = p.status?.conditions.find((x) => x.type === "Ready" && x.status === "True");
  return c?.lastTransitionTime ? Date.parse(c.lastTransitionTime) : 0;
};
const restarts = (p: ObservedPod) => (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0);

/** ActivePodsWithRanks' Less: the pods to delete first come first. */
export function deletionOrder(a: ObservedPod, b: ObservedPod): number {
  const pa = PHASE_RANK[phaseOf(a)] ?? 1;
  const pb = PHASE_RANK[phaseOf(b)] ?? 1;
  if (pa !== pb) return pa - pb;
  const ra = isReady(a);
  const rb = isReady(b);
  if (ra !== rb) return ra ? 1 : -1;
  if (ra && rb && readySince(a) !== readySince(b)) return readySince(b) - readySince(a); // ready for less time first
  if (restarts(a) !== restarts(b)) return restarts(b) - restarts(a);
  return b.createdAt - a.createdAt; // newer first
}

export function syncReplicaSet(rs: ReplicaSet, pods: readonly ObservedPod[], ctx: ControllerContext): ControllerResult {
  const active = pods.filter(isActive);
  const diff = active.length - rs.spec.replicas;
  const out: ControllerResult = { create: [], delete: [], status: {} };
  if (diff < 0) {
    const taken = new Set(pods.map((p) => p.pod.metadata.name));
    for (let i = 0; i < creatable(-diff, ctx); i++) {
      let name: string;
      do name = generatedName(rs.metadata.name, ctx.suffix());
      while (taken.has(name));
      taken.add(name);
      out.create.push(
        makePod(rs.spec.template, {
          name,
          namespace: rs.metadata.namespace,
          uid: derivedUid(ctx.nodeName, rs.metadata.namespace, name),
          ownerReferences: [controllerRef(rs)],
        }),
      );
    }
  } else if (diff > 0) {
    for (const p of [...active].sort(deletionOrder).slice(0, diff))
      out.delete.push({
        uid: p.pod.metadata.uid,
        name: p.pod.metadata.name,
        reason: `ReplicaSet ${rs.metadata.name} scaled down to ${rs.spec.replicas}`,
      });
  }
  out.status = replicaSetStatus(rs, pods, ctx.now);
  const soon = active
    .map((p) => availableAt(p, rs.spec.minReadySeconds))
    .filter((t): t is number => t !== undefined && t > ctx.now);
  if (soon.length) out.requeueAt = Math.min(...soon);
  return out;
}
