// One pass of the sync loop (kubelet's syncLoopIteration with its housekeeping): the desired set listed and taken,
// the pod workers' housekeeping, the controllers' trigger, one relist of the PLEG, and for each desired pod whose
// worker is idle the pure decision (decide.ts) of whether to sync it now, dispatched to its worker. Then the
// prober is shown the relist, and the eviction step runs when due. The pass does not wait for its syncs.
import type { DesiredPod } from "../pleg/desired-state.js";
import type { Pleg } from "../pleg/pleg.js";
import { fingerprintOf, type PodView, type Relist } from "../pleg/relist.js";
import { decide, decisionHolds, syncReason, type Decision, type PodRecord } from "./decide.js";
import { controllersStep } from "./controllers-step.js";
import type { EvictionStep } from "./eviction-step.js";
import { errorMessage } from "../cri/errors.js";
import { updateDesired } from "./pod-records.js";
import type { PodSyncer } from "./pod-sync.js";
import type { ProbeTick } from "./probe-tick.js";
import { failure } from "./report.js";
import { emptyStatus, hasProbes, type LoopState } from "./state.js";
import type { TickReport } from "./types.js";

export type PassReport = TickReport & { syncs: Promise<void>[] };

export interface PassParts {
  pleg: Pleg;
  syncer: PodSyncer;
  probes: ProbeTick;
  eviction: EvictionStep;
}

export async function syncPass(s: LoopState, p: PassParts): Promise<PassReport> {
  const { o } = s;
  const report: PassReport = { relisted: false, relistCalls: 0, synced: [], syncs: [] };
  const scheduled = s.nextRelistAt;
  const t0 = s.now();
  const lateness = scheduled > 0 ? Math.max(0, t0 - scheduled) / 1000 : 0;
  try {
    const { entries, specChanged } = await takeDesired(s, t0);
    // Nothing desired and no probe to run: no relist could lead to anything, so none is made (an idle node
    // costs no CRI call, and a refused request stays the only thing near the runtime).
    if (s.specs.size === 0 && s.prober?.nextDue() === undefined) {
      s.last = undefined;
      feed(s, entries, undefined);
      return report;
    }
    const view = await p.pleg.relist({
      wants: (uid) => s.specs.has(uid) || s.prober?.spec(uid) !== undefined,
      wantsStartTimes: (uid) => hasProbes(s.specs.get(uid)?.pod ?? s.prober?.spec(uid)),
    });
    o.metrics?.relist((s.now() - t0) / 1000, lateness, true);
    s.reporter.report("relist", undefined, undefined);
    s.last = view;
    feed(s, entries, view);
    report.relisted = true;
    report.relistCalls = view.criCalls;

    const t = s.now();
    for (const e of entries) {
      const uid = e.pod.metadata.uid;
      const reason = reasonFor(s, e, view, specChanged.has(uid), t);
      if (reason) {
        report.synced.push({ uid, reason });
        report.syncs.push(p.syncer.sync(uid, reason));
      }
    }
    s.started = true;
    p.probes.observe(view);
    // The eviction manager's local storage pass, on its own interval, from this relist's statuses.
    if (p.eviction.due(t)) await p.eviction.run(entries, view, t);
  } catch (e) {
    o.metrics?.relist((s.now() - t0) / 1000, lateness, false);
    s.reporter.report("relist", undefined, failure(e));
  }
  return report;
}

/** The desired set listed and taken, the terminated workers of pods no longer desired gone (kubelet's
 * SyncKnownPods), and the controllers' pass. */
async function takeDesired(s: LoopState, t0: number): Promise<{ entries: DesiredPod[]; specChanged: Set<string> }> {
  let entries: DesiredPod[];
  [entries, s.generation] = await Promise.all([s.o.desired.list(), s.o.desired.generation()]);
  const specChanged = updateDesired(s, entries);
  // Housekeeping (kubelet's SyncKnownPods): the terminated workers of pods no longer desired go.
  s.pods.workers.syncKnownPods(new Set(s.specs.keys()));
  return controllersStep(s, t0, entries, specChanged);
}

function feed(s: LoopState, entries: readonly DesiredPod[], view: Relist | undefined) {
  try {
    s.o.onRelist?.(entries, view);
  } catch (e) {
    s.reporter.report("relist feed", undefined, failure(e));
  }
}

/** Why to sync a desired pod after this relist, or undefined to leave it (kubelet's syncLoopIteration: a PLEG
 * event, the periodic resync, a retry). */
function reasonFor(s: LoopState, e: DesiredPod, view: Relist, specChanged: boolean, t: number): string | undefined {
  const uid = e.pod.metadata.uid;
  const rec = s.records.get(uid)!;
  // A pod whose worker runs or holds work (a request's, or the loop's own) is left to it.
  if (s.busy(uid)) return undefined;
  // A sync that ended after this relist began is not in the view: decide on the next one.
  if (rec.lastSyncEnd > view.at) return undefined;
  const pv = view.pods.get(uid);
  // The runtime fails to report this pod (a broken sandbox): nothing is decided from half a status (a
  // missing sandbox would read as "make a new one"); the relist reads it again with back-off, and the
  // other pods go on. Logged once, and its recovery once.
  if (pv?.error) {
    s.reporter.report(`pod:${uid}`, uid, {
      same: `status: ${pv.error.replace(/:.*\(/, " (")}`,
      text: `the runtime failed to report the pod's status: ${pv.error}`,
    });
    return undefined;
  }
  const fp = pv?.fingerprint ?? fingerprintOf(emptyStatus(uid));
  s.lastSeen.set(uid, fp);
  const moved = rec.fingerprint !== fp;
  if (moved) s.o.statusChanged?.(uid);
  const changed = moved || specChanged;
  if (changed) s.changedAt = t;
  rec.fingerprint = fp;
  // Evicted (eviction/): nothing of it runs again unless the eviction manager makes it anew.
  if (s.o.runtime.eviction(uid)) return undefined;
  if (!s.started) return "start-up";
  const d = decision(s, e, rec, pv, fp, t);
  return d && syncReason(rec, d, changed, { now: t, resyncIntervalMs: s.resync });
}

/** The pure decision, or the last one while it holds: a converged pod whose objects and spec are as last time
 * needs no new decision (nor its status). A decision that throws is the pod's error, logged once. */
function decision(
  s: LoopState,
  e: DesiredPod,
  rec: PodRecord,
  pv: PodView | undefined,
  fp: string,
  t: number,
): Decision | undefined {
  const uid = e.pod.metadata.uid;
  const prev = rec.decided;
  if (prev && prev.fingerprint === fp && prev.spec === s.specs.get(uid) && decisionHolds(prev.decision, t))
    return prev.decision;
  let d: Decision;
  try {
    d = decide(e.pod, pv?.status ?? emptyStatus(uid), s.prober?.results(uid), t);
  } catch (err) {
    s.reporter.report(`pod:${uid}`, uid, {
      same: `decide: ${errorMessage(err)}`,
      text: `decide: ${errorMessage(err)}`,
    });
    return undefined;
  }
  rec.decided = { fingerprint: fp, spec: s.specs.get(uid), decision: d };
  return d;
}
