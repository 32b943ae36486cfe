// The sync loop's pods as the last relist showed them, as v1 statuses: the controllers' view of their pods, and the
// metrics source's phases and orphans (kubelet's status manager is fed the same way, from the PLEG's cache).
import type { MetricsSource } from "../metrics/metrics.js";
import { generateAPIPodStatus, type PodPhase, type V1PodStatus } from "../status/api-status.js";
import { emptyStatus, type LoopState } from "./state.js";

const PHASES: PodPhase[] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];

/** A desired pod's v1.PodStatus from the last relist (the controllers' view of their pods). */
export function apiStatusOf(s: LoopState, uid: string): V1PodStatus | undefined {
  const e = s.specs.get(uid);
  const pv = s.last?.pods.get(uid);
  if (!e || !pv) return undefined;
  try {
    return generateAPIPodStatus({
      pod: e.pod,
      status: pv.status,
      now: s.now(),
      runtimeName: "",
      hostIPs: [],
      probes: s.prober?.results(uid),
      reasons: undefined,
    });
  } catch {
    return undefined;
  }
}

export function loopMetricsSource(s: LoopState): MetricsSource {
  return {
    podPhases() {
      const counts = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<PodPhase, number>;
      const t = s.now();
      for (const [uid, e] of s.specs) {
        const status = s.last?.pods.get(uid)?.status ?? emptyStatus(uid);
        try {
          counts[
            generateAPIPodStatus({
              pod: e.pod,
              status,
              now: t,
              runtimeName: "",
              hostIPs: [],
              probes: s.prober?.results(uid),
              reasons: undefined,
            }).phase
          ]++;
        } catch {
          counts.Unknown++;
        }
      }
      return counts;
    },
    orphanPods() {
      if (!s.last) return 0;
      let n = 0;
      for (const uid of s.last.uids) if (!s.specs.has(uid)) n++;
      return n;
    },
    generation: () => s.generation,
  };
}
