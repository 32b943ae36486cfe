// kubelet's activeDeadlineHandler (pkg/kubelet/active_deadline.go): a pod with activeDeadlineSeconds that has
// been active on the node that long is evicted: its containers are killed, none is started again, and its
// status is Failed with reason DeadlineExceeded. kubelet measures from status.startTime (when it first saw the
// pod); podsync, which keeps no status, from the pod's start as the runtime records it: its oldest sandbox or
// container (the same startTime its v1 status reports).
import type { Pod } from "../pod/schema.js";
import type { PodStatus } from "../container/types.js";

export const DEADLINE_EXCEEDED_REASON = "DeadlineExceeded";
export const DEADLINE_EXCEEDED_MESSAGE = "Pod was active on the node longer than the specified deadline";

/** When the pod started on the node (ms; 0 when nothing of it exists yet). */
export function podStartMs(status: PodStatus): number {
  const times = [
    ...status.sandboxStatuses.map((s) => Number(s.createdAt / 1_000_000n)),
    ...status.containerStatuses.map((c) => c.createdAt),
  ].filter((t) => t > 0);
  return times.length ? Math.min(...times) : 0;
}

/** When the pod's active deadline falls (ms), or undefined without one or before the pod started. */
export function activeDeadlineAt(pod: Pick<Pod, "spec">, status: PodStatus): number | undefined {
  const d = pod.spec.activeDeadlineSeconds;
  if (d === undefined) return undefined;
  const start = podStartMs(status);
  return start > 0 ? start + d * 1000 : undefined;
}

/** pastActiveDeadline */
export function pastActiveDeadline(pod: Pick<Pod, "spec">, status: PodStatus, now: number): boolean {
  const at = activeDeadlineAt(pod, status);
  return at !== undefined && now >= at;
}
