// The desired set → the sync loop's records (kubelet's pod manager updates and pod worker state) and the
// prober's pods (kubelet's probeManager.AddPod / RemovePod as syncLoop sees pods come and go).
import { sameEntry, type DesiredPod } from "../pleg/desired-state.js";
import type { LoopState } from "./state.js";

/** Take the listed desired pods: returns the uids whose entry changed (or is new). */
export function updateDesired(s: LoopState, entries: readonly DesiredPod[]): Set<string> {
  const { specs, records, prober } = s;
  const changed = new Set<string>();
  const seen = new Set<string>();
  for (const e of entries) {
    const uid = e.pod.metadata.uid;
    seen.add(uid);
    if (!sameEntry(specs.get(uid), e)) {
      changed.add(uid);
      specs.set(uid, e);
      prober?.upsert(e.pod);
    } else if (prober && !prober.spec(uid)) {
      // A desired pod the prober no longer holds (a request dropped it): its workers come back, and it is shown
      // the next relist's status again (kubelet's prober manager adds a pod's workers whenever it is desired).
      prober.upsert(e.pod);
      s.observed.delete(uid);
    }
    if (!records.has(uid))
      // A pod new to the loop after start-up was just synced by the request that stored it: as if the loop
      // had synced it now (a needed action still runs: it counts as changed).
      records.set(uid, {
        fingerprint: undefined,
        lastSyncStart: s.started ? s.now() : 0,
        lastSyncEnd: s.started ? s.now() : -Infinity,
        retryAt: 0,
      });
  }
  for (const uid of [...specs.keys()])
    if (!seen.has(uid)) {
      specs.delete(uid);
      records.delete(uid);
      s.lastSeen.delete(uid);
      s.acted.delete(uid);
      s.reporter.forget(`pod:${uid}`);
      prober?.remove(uid);
    }
  return changed;
}
