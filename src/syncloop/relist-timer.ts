// When the sync loop relists (kubelet's PLEG relist period, wait.Until, and the Evented PLEG's slower safety-net
// relist, pkg/kubelet/pleg/evented.go): at the interval; while the runtime's event stream is up, at the evented
// period, or sooner when a pod's resync, retry, back-off end or deadline, or the eviction pass, comes before it (no
// event announces those), never under the interval; at once when something asks.
//
// The workload controllers watch their pods through the relist (kube-controller-manager's informers are told of
// every change; here the relist is what tells them). While workloads are stored and their pods or the workloads
// change, the loop relists at the interval; once nothing changed for CONTROLLERS_QUIET_MS, at the controllers' own
// requeue time, at most CONTROLLERS_QUIET_MS apart. What changes a quiet node asks for a relist itself: a runtime
// event's sync, a probe result that changed, a request.
import type { EventStreamState } from "../cri/container-events.js";
import type { LoopState } from "./state.js";

export interface RelistTimer {
  /** Relist now; while one runs (it may have listed before what asked for this), once more right after it. */
  relistNow(): void;
  /** The next relist in `delay` ms. */
  schedule(delay: number): void;
  /** A loop sync ended after its pass: the relist waiting for the evented period comes sooner if this pod's next
   * resync, retry or back-off end now falls before it (the pass, which does not wait for its syncs, left it out). */
  afterLoopSync(): void;
  /** The event stream went up (the relist becomes the safety net) or down (the relist at its interval). */
  streamState(st: EventStreamState): void;
  /** The timed relist running now, if any. */
  running(): Promise<unknown> | undefined;
  stop(): void;
}

/** How long nothing must change before the controllers' pods are relisted at their requeue time instead of the
 * interval; also the longest a quiet node with workloads goes between relists (the loop's default; a loop option
 * sets another). */
export const CONTROLLERS_QUIET_MS = 10_000;

export function createRelistTimer(
  s: LoopState,
  deps: { pass(): Promise<unknown>; evictionWatchUntil(): number },
): RelistTimer {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let current: Promise<unknown> | undefined;
  /** When the last timed relist began (the anchor of the period after it). */
  let relistStartedAt = 0;
  let again = false;

  function schedule(delay: number) {
    if (s.stopped || s.o.manual) return;
    clearTimeout(timer);
    s.nextRelistAt = s.now() + delay;
    timer = setTimeout(() => {
      relistStartedAt = s.nextRelistAt;
      current = deps.pass().finally(() => {
        current = undefined;
        // wait.Until: the next relist a full period after this one began (never two at once), or at once when
        // something asked for one while this one ran.
        schedule(again ? 0 : Math.max(0, s.nextRelistAt + period() - s.now()));
        again = false;
      });
    }, delay);
    (timer as { unref?: () => void }).unref?.();
  }

  /** The relist period from `from`. */
  function period(from = s.nextRelistAt): number {
    if (!s.eventsUp) return s.interval;
    let due = Infinity;
    if (s.o.controllers?.watching()) {
      if (from - s.changedAt < s.controllersQuiet || s.o.controllers.deleting?.()) return s.interval;
      due = Math.min(s.controllersDue, from + s.controllersQuiet);
    }
    for (const [uid, rec] of s.records) {
      // A pod a request's work holds is the request's to sync (its end makes it due at the resync). A pod the loop
      // is syncing has no next time yet: its sync's end asks again (afterLoopSync). Counted now, its last end
      // would be taken for due and bring a relist one interval later that finds nothing to do.
      if (s.busy(uid)) continue;
      const d = rec.decided?.decision;
      // A finished pod is not resynced (decide.ts), so its resync brings no relist either.
      if (!(d?.kind === "converged" && d.finished)) due = Math.min(due, s.resyncSlot(rec.lastSyncEnd + s.resync));
      if (d?.kind === "back-off") due = Math.min(due, d.until);
      else if (d?.kind === "act") due = Math.min(due, rec.retryAt);
      // A converged pod's active deadline.
      else if (d?.kind === "converged" && d.until !== undefined) due = Math.min(due, d.until);
    }
    // The eviction manager's next pass, when it has anything to watch.
    due = Math.min(due, deps.evictionWatchUntil());
    return Math.min(s.eventedInterval, Math.max(s.interval, due - from));
  }

  const relistNow = () => {
    if (!current) schedule(0);
    else again = true;
  };

  return {
    relistNow,
    schedule,
    afterLoopSync() {
      if (s.stopped || s.o.manual || current || !s.eventsUp) return;
      const at = relistStartedAt + period(relistStartedAt);
      if (at < s.nextRelistAt) schedule(Math.max(0, at - s.now()));
    },
    streamState(st) {
      const was = s.eventsUp;
      s.eventsUp = st.up;
      if (st.up) {
        s.reporter.report("events", undefined, undefined);
        s.log({
          event: "runtime events",
          up: true,
          source: st.source,
          reconnects: st.reconnects,
          relistIntervalMs: s.eventedInterval,
        });
        // Whatever happened while the stream was not open is seen by a relist now.
        relistNow();
        return;
      }
      s.reporter.report("events", undefined, {
        same: st.error ?? "down",
        text: `runtime event stream down (relisting every ${s.interval} ms): ${st.error ?? "down"}`,
      });
      // Back to the relist at its interval, starting now.
      if (was) relistNow();
    },
    running: () => current,
    stop: () => clearTimeout(timer),
  };
}
