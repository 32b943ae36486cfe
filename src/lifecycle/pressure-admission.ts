// kubelet's eviction manager as a pod admit handler (pkg/kubelet/eviction/eviction_manager.go Admit), for the
// one node condition podsync's eviction manager reports: while the node has DiskPressure a new pod is refused,
// reason `Evicted`, with nodeConditionMessageFmt ("The node had condition: %v. ", the conditions as Go prints a
// slice: `[DiskPressure]`), unless it is critical (kubelettypes.IsCriticalPod: a static or mirror pod, or
// priority at least SystemCriticalPriority; podsync has no static or mirror pods). kubelet registers this handler
// first and stops at the first refusal, so such a pod is refused for this alone.
// kubelet admits a pod once, when it is added (HandlePodAdditions → canAdmitPod); HandlePodUpdates does not
// admit again, so a pod already admitted is not refused while the pressure lasts: here, a pod already in the
// node's desired set (a re-sync, a PUT that keeps it).
// Not ported: MemoryPressure (kubelet then refuses only BestEffort pods that do not tolerate the memory-pressure
// taint); podsync's eviction manager does not watch memory.
import type { Pod } from "../pod/schema.js";

/** The node conditions the eviction manager reports (kubelet's m.nodeConditions). */
export type PressureCondition = "DiskPressure";

/** scheduling.SystemCriticalPriority. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** The eviction manager's Reason. */
const EVICTED = "Evicted";

/** Admit for a pod not yet admitted: kubelet's refusal, or undefined when the pod may be admitted. */
export function admitUnderPressure(
  pod: Pod,
  conditions: readonly PressureCondition[],
): { reason: string; message: string } | undefined {
  if (conditions.length === 0) return undefined;
  if ((pod.spec.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY) return undefined;
  return { reason: EVICTED, message: `The node had condition: [${conditions.join(" ")}]. ` };
}
