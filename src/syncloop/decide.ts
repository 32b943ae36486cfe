// The sync loop's decisions, pure: whether a desired pod needs a sync (from its relisted status, through the same
// computePodActions a sync runs), and whether to sync it now (kubelet's pod workers: a PLEG event, the periodic
// resync, a retry after an error). No I/O, no clock but the `now` passed in.
import type { Container, Pod } from "../pod/schema.js";
import { crashLoopBackOff } from "../container/backoff.js";
import { podActionsAt, type ProbeResults } from "../kuberuntime/compute-actions.js";
import { activeDeadlineAt } from "../lifecycle/active-deadline.js";
import type { PodStatus } from "../container/types.js";
import { PodSandboxState } from "../gen/runtime/v1/api_pb.js";

export type Decision =
  /** Nothing to do: a sync would change nothing (until `until`, ms: the pod's active deadline). `finished`: the
   * pod is done (every container ended for good, nothing of it runs): kubelet's pod worker stops syncing a
   * terminated pod, so it gets no periodic resync either (a Job's finished pods cost nothing while they stay). */
  | { kind: "converged"; until?: number; finished?: true }
  /** Something to do. `backOffExpiredAt`: a crash-looping container's back-off ended then (it may restart);
   * `dueAt`: the time made it due (the pod's active deadline passed then). */
  | { kind: "act"; why: string; backOffExpiredAt?: number; dueAt?: number }
  /** Only containers in crash-loop back-off would start; not before `until` (ms). */
  | { kind: "back-off"; until: number };

/** Whether anything of the pod still runs or holds a ready sandbox (a kill then has work to do). */
function alive(status: PodStatus): boolean {
  return (
    status.sandboxStatuses.some((s) => s.state === PodSandboxState.SANDBOX_READY) ||
    status.containerStatuses.some((c) => c.state !== "exited")
  );
}

export function decide(pod: Pod, status: PodStatus, probes: ProbeResults | undefined, now: number): Decision {
  const deadline = activeDeadlineAt(pod, status);
  if (deadline !== undefined && now >= deadline)
    return alive(status)
      ? { kind: "act", why: "active deadline exceeded", dueAt: deadline }
      : { kind: "converged", finished: true };
  const d = decideActions(pod, status, probes, now);
  // The decision stands until the active deadline, which changes it.
  if (deadline === undefined) return d;
  if (d.kind === "converged") return { kind: "converged", until: deadline };
  if (d.kind === "back-off") return { kind: "back-off", until: Math.min(d.until, deadline) };
  return d;
}

function decideActions(pod: Pod, status: PodStatus, probes: ProbeResults | undefined, now: number): Decision {
  const a = podActionsAt(pod, status, probes, now);
  if (a.createSandbox) return { kind: "act", why: a.sandboxId ? "sandbox changed" : "no sandbox" };
  if (Object.keys(a.containersToKill).length > 0) return { kind: "act", why: "containers to kill" };
  if (a.killPod) return alive(status) ? { kind: "act", why: "pod to kill" } : { kind: "converged", finished: true };
  const starts: Container[] = [
    ...a.initContainersToStart.map((i) => pod.spec.initContainers![i]!),
    ...a.containersToStart.map((i) => pod.spec.containers[i]!),
  ];
  if (starts.length === 0) return { kind: "converged" };
  // startContainer's back-off check (sync-pod.ts), made here so that a sync that would only report
  // CrashLoopBackOff is not made at all; the loop comes back when the first back-off ends.
  let until = Infinity;
  let expiredAt = 0;
  let free = false;
  for (const c of starts) {
    const bo = crashLoopBackOff(c, status, now);
    const finishedAt = status.containerStatuses.find((s) => s.name === c.name && s.state === "exited")?.finishedAt ?? 0;
    if (bo.inBackOff) until = Math.min(until, finishedAt + bo.delayMs);
    else {
      free = true;
      if (bo.delayMs > 0) expiredAt = Math.max(expiredAt, finishedAt + bo.delayMs);
    }
  }
  if (!free) return { kind: "back-off", until };
  return expiredAt > 0
    ? { kind: "act", why: "back-off expired", backOffExpiredAt: expiredAt }
    : { kind: "act", why: "containers to start" };
}

/** The loop's memory of one desired pod (kubelet's pod worker state). Times in ms. */
export interface PodRecord {
  /** The relisted fingerprint the last decision saw. */
  fingerprint: string | undefined;
  /** When the loop's last sync of it started and ended (ms; 0 / -Infinity: never). */
  lastSyncStart: number;
  lastSyncEnd: number;
  /** Not before this is a pod that still needs action retried without a new event. */
  retryAt: number;
  /** The last decision and what it was made from: it stands while neither changed (and a back-off holds). */
  decided?: { fingerprint: string; spec: unknown; decision: Decision } | undefined;
}

/** Whether a decision made from the same runtime state and spec still holds at `now` (the pure decision only
 * moves with time when a back-off ends). */
export function decisionHolds(d: Decision, now: number): boolean {
  return (
    (d.kind === "converged" && (d.until === undefined || now < d.until)) || (d.kind === "back-off" && now < d.until)
  );
}

export interface Timing {
  now: number;
  resyncIntervalMs: number;
}

/** Why to sync the pod now, or undefined to leave it. `changed`: its fingerprint or its spec changed since the
 * last decision (kubelet's PLEG event or pod update). */
export function syncReason(rec: PodRecord, d: Decision, changed: boolean, t: Timing): string | undefined {
  // kubelet's pod workers requeue every pod at the resync interval whatever happened, but a finished one.
  if (t.now - rec.lastSyncEnd >= t.resyncIntervalMs && !(d.kind === "converged" && d.finished)) return "resync";
  if (d.kind !== "act") return undefined;
  if (changed) return d.why;
  if (d.backOffExpiredAt !== undefined && d.backOffExpiredAt > rec.lastSyncStart) return d.why;
  if (d.dueAt !== undefined && d.dueAt > rec.lastSyncStart) return d.why;
  if (t.now >= rec.retryAt) return `retry: ${d.why}`;
  return undefined;
}

/** kubelet's pod workers after a sync: an error requeues after backOffPeriod (10 s); success at the pod's next
 * resync (`resyncAt`, on the loop's slot grid, state.ts, so it shares that relist). A sync whose only failures are
 * CrashLoopBackOff steps is a success here: the loop comes back when the back-off ends, not sooner. */
export function retryAfter(
  outcome: "ok" | "failed" | "error",
  end: number,
  errorBackOffMs: number,
  resyncAt: number,
): number {
  return outcome === "ok" ? resyncAt : end + errorBackOffMs;
}
