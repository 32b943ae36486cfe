// The sync loop's eviction step: the eviction manager's local storage pass (src/eviction/manager.ts) on its own
// interval, after a relist, from that relist's statuses (kubelet runs its eviction manager's synchronize on a
// monitoring interval beside the sync loop). The kills run beside the loop, never in it.
import { EVICTION_INTERVAL_DEFAULT_MS, evictionPass, type EvictionOptions } from "../eviction/manager.js";
import { hasLocalStorageLimits } from "../eviction/local-storage.js";
import type { DesiredPod } from "../pleg/desired-state.js";
import type { Relist } from "../pleg/relist.js";
import { failure } from "./report.js";
import type { LoopState } from "./state.js";

export interface EvictionStep {
  /** The pass is due at `t`. */
  due(t: number): boolean;
  /** Run the pass over the desired pods no loop sync is acting on. */
  run(entries: readonly DesiredPod[], view: Relist, t: number): Promise<void>;
  /** When the next pass comes, while it has anything to watch (a disk threshold, a pod with a local storage
   * limit); Infinity otherwise. */
  watchUntil(): number;
}

export function createEvictionStep(s: LoopState): EvictionStep {
  const { o } = s;
  let nextEvictionAt = 0;
  let diskPressure: boolean | undefined;
  return {
    due: (t) => !!o.eviction && t >= nextEvictionAt,
    run: (entries, view, t) => (o.eviction ? run(o.eviction, entries, view, t) : Promise.resolve()),
    watchUntil: () =>
      o.eviction && (o.eviction.diskPressure || [...s.specs.values()].some((e) => hasLocalStorageLimits(e.pod)))
        ? nextEvictionAt
        : Infinity,
  };

  async function run(opts: EvictionOptions, entries: readonly DesiredPod[], view: Relist, t: number) {
    nextEvictionAt = t + (opts.intervalMs ?? EVICTION_INTERVAL_DEFAULT_MS);
    const pods = entries
      .filter((e) => !s.inFlight.has(e.pod.metadata.uid))
      .map((e) => ({ pod: e.pod, status: view.pods.get(e.pod.metadata.uid)?.status }));
    try {
      // Its kills and re-creations go through the pods' workers (kubelet's killPodFunc → UpdatePod).
      const r = await evictionPass(opts, s.pods.evicting(o.runtime), pods, t);
      for (const ev of r.evicted) o.log?.({ loop: "eviction", uid: ev.uid, evicted: ev.message });
      for (const uid of r.recreated)
        o.log?.({ loop: "eviction", uid, recreated: "evicted under restartPolicy Always: made anew" });
      if (r.diskPressure !== undefined && r.diskPressure !== diskPressure)
        o.log?.({ loop: "eviction", condition: "DiskPressure", status: r.diskPressure ? "True" : "False" });
      diskPressure = r.diskPressure;
      s.reporter.report("eviction", undefined, undefined);
    } catch (e) {
      s.reporter.report("eviction", undefined, failure(e));
    }
  }
}
