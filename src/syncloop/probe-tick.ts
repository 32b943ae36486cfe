// The sync loop's probe tick (kubelet's prober workers and syncLoopIteration's livenessManager/startupManager
// updates): due probes run on their own timer against the last relist (a slow exec probe never holds up a relist);
// a liveness or startup failure syncs the pod through its worker, and a changed result has it decided again.
import type { Relist } from "../pleg/relist.js";
import { failure } from "./report.js";
import type { LoopState } from "./state.js";

export interface ProbeTick {
  /** Run due probes; returns the syncs of the pods whose liveness or startup probe failed. */
  probe(): Promise<Promise<void>[]>;
  /** Show the prober a relist's statuses (only those that changed). */
  observe(view: Relist): void;
  /** Set the probe timer for the next due probe (timed mode). */
  kick(): void;
  /** The tick running now, if any. */
  running(): Promise<void> | undefined;
  stop(): void;
}

export function createProbeTick(
  s: LoopState,
  deps: { sync(uid: string, reason: string): Promise<void>; relistNow(): void },
): ProbeTick {
  const { prober } = s;
  /** When the probe path last synced a pod. */
  const probeSyncedAt = new Map<string, number>();
  let probeTimer: ReturnType<typeof setTimeout> | undefined;
  let probeAt = 0;
  /** The ticks still running. They may overlap: each runs the workers due at its start, and a worker whose
   * probe is slow holds only itself (kubelet's workers are goroutines with a ticker each, worker.go), not the
   * next tick's other workers, which would otherwise come due together and probe in one burst. */
  const ticks = new Set<Promise<void>>();

  async function probe(): Promise<Promise<void>[]> {
    if (!prober || !s.last) return [];
    const r = await prober.tick(s.now());
    const syncs: Promise<void>[] = [];
    const t = s.now();
    // A published result changed: the pod's decision may have (a sidecar's startup success lets the next init
    // container start), so the next relist decides it again as if its runtime state had changed, and comes now.
    for (const uid of r.changed) {
      const rec = s.records.get(uid);
      if (rec) {
        rec.fingerprint = undefined;
        rec.decided = undefined;
      }
    }
    if (r.changed.length) deps.relistNow();
    for (const uid of r.needsSync) {
      // A restart that did not happen (its sync failed) is tried again after the error back-off, not per tick.
      if (s.inFlight.has(uid) || t < (probeSyncedAt.get(uid) ?? -Infinity) + s.errorBackOff) continue;
      // Only desired pods: the loop acts on nothing else.
      if (!s.specs.has(uid)) continue;
      probeSyncedAt.set(uid, t);
      syncs.push(deps.sync(uid, "probe failed"));
    }
    for (const uid of probeSyncedAt.keys()) if (!s.specs.has(uid)) probeSyncedAt.delete(uid);
    return syncs;
  }

  function kick() {
    if (s.stopped || s.o.manual || !prober) return;
    const next = prober.nextDue();
    const delay = next === undefined ? s.interval : Math.min(s.interval, Math.max(20, next - s.now()));
    // A timer already set to fire no later stays.
    if (probeTimer !== undefined && probeAt <= s.now() + delay) return;
    clearTimeout(probeTimer);
    probeAt = s.now() + delay;
    probeTimer = setTimeout(() => {
      probeTimer = undefined;
      const tick: Promise<void> = probe()
        .then(
          () => undefined,
          (e) => s.reporter.report("probes", undefined, failure(e)),
        )
        .finally(() => {
          ticks.delete(tick);
          kick();
        });
      ticks.add(tick);
      // The workers this tick started have their next times set (tickWorkers sets them before it awaits).
      kick();
    }, delay);
    (probeTimer as { unref?: () => void }).unref?.();
  }

  return {
    probe,
    observe(view) {
      // The prober reads container ids and states from the relist (again only when they changed).
      if (prober)
        for (const [uid, pv] of view.pods)
          if (!pv.error && s.observed.get(uid) !== pv.fingerprint && prober.spec(uid)) {
            prober.observe(uid, pv.status);
            s.observed.set(uid, pv.fingerprint);
          }
      for (const uid of s.observed.keys()) if (!view.pods.has(uid)) s.observed.delete(uid);
    },
    kick,
    running: () => (ticks.size ? Promise.all(ticks).then(() => undefined) : undefined),
    stop: () => clearTimeout(probeTimer),
  };
}
