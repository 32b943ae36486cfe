// The sync loop's pod syncs (kubelet's HandlePodSyncs → podWorkers.UpdatePod, and the work the worker runs,
// kubelet's SyncPod): a desired pod's spec as stored when the work runs, synced through the front door in the pod's
// worker; its outcome logged once and its restarts counted. Also the hooks a request's work calls back.
import { objectsFromStored } from "../pod/bundle.js";
import { SupersededError, type GuardOptions, type SyncResult } from "../kubelet/pod-runtime.js";
import { stillStored } from "../pleg/desired-state.js";
import type { Pleg } from "../pleg/pleg.js";
import { fingerprintOf } from "../pleg/relist.js";
import { slots } from "../podworkers/dispatch.js";
import { retryAfter, type PodRecord } from "./decide.js";
import { failure } from "./report.js";
import type { LoopState } from "./state.js";

export interface PodSyncer {
  /** Dispatch the loop's sync of a desired pod to its worker; resolves when it is over (never rejects). */
  sync(uid: string, reason: string, exited?: GuardOptions["exited"]): Promise<void>;
}

export function createPodSyncer(s: LoopState, pleg: Pleg, afterSync: () => void): PodSyncer {
  // Loop syncs beyond maxSyncs wait their turn (still pending in their pod's worker: a request replaces them).
  const loopSlot = slots(s.maxSyncs);
  return {
    sync(uid, reason, exited) {
      const job = s.pods.workers
        .update(uid, { type: "sync", slot: loopSlot, run: () => syncStored(s, pleg, uid, reason, exited) })
        .then(
          () => undefined,
          () => undefined, // syncStored reports its own failures
        )
        .finally(() => {
          if (s.inFlight.get(uid) === job) s.inFlight.delete(uid);
          // The worker is idle by now (it settles its work's waiters after it marks itself so): the pod's next
          // resync counts in the next relist's time.
          afterSync();
        });
      s.inFlight.set(uid, job);
      return job;
    },
  };
}

/** The work of a loop sync, run by the pod's worker: the spec as stored now, through the front door. */
async function syncStored(
  s: LoopState,
  pleg: Pleg,
  uid: string,
  reason: string,
  exited: GuardOptions["exited"],
): Promise<void> {
  const { o, prober } = s;
  const rec = s.records.get(uid);
  const t0 = s.now();
  if (rec) rec.lastSyncStart = t0;
  let outcome: "ok" | "failed" | "error" = "error";
  try {
    if (s.stopped) return;
    // The spec as stored now (a request may have stored a newer one since the relist); a pod that has
    // left the desired state (a DELETE or PUT) is not brought back.
    const entry = await o.desired.get(uid);
    if (!entry) return;
    // With the ConfigMaps and Secrets stored beside it (opened by the store), validated again with the pod.
    // Synced only if that entry is still the stored one under the pod's lock (on Workers the lock is shared
    // by isolates, each with its own pod workers).
    let r: SyncResult;
    try {
      r = await o.runtime.sync(
        entry.pod,
        prober?.results(uid),
        entry.objects ? objectsFromStored(entry.pod, entry.objects) : undefined,
        // A periodic resync reads the status cache, as kubelet's pod workers do (the cache serves only while the
        // event stream is up, and a relist that saw the pod change emptied its entry); any other reason for the
        // loop's sync (a change, a retry, a back-off's end) reads the runtime.
        { current: async () => stillStored(await o.desired.get(uid), entry), fresh: reason !== "resync", exited },
      );
    } catch (e) {
      if (!(e instanceof SupersededError)) throw e;
      outcome = "ok";
      return;
    }
    // It left while this sync ran: a DELETE may have run its delete first, so what this sync made goes again.
    if (!(await o.desired.get(uid))) {
      prober?.remove(uid);
      await o.runtime.delete(uid);
      outcome = "ok";
      return;
    }
    prober?.observe(uid, r.after);
    s.observed.delete(uid); // the next relist shows it again
    // It acted: the controllers watching its pods see the result at the next relist, at the interval.
    if (r.steps.length) s.changedAt = s.now();
    // What the loop's own sync read back (not the request hook's `synced`: that marks a request's acting).
    pleg.learn(r.after);
    countRestarts(s, r);
    outcome = reportSync(s, uid, reason, r, rec);
  } catch (e) {
    // A pod dropped from the desired set while this sync ran is not reported into the error log: updateDesired
    // already forgot it, and nothing would remove its key again (a leak, and its next error, should it
    // come back, would be taken for this one and not logged). Its failure is logged once all the same.
    if (s.specs.has(uid)) s.reporter.report(`pod:${uid}`, uid, failure(e), { reason });
    else
      s.log({
        event: "error",
        podUid: uid,
        what: "sync",
        error: failure(e).text.slice(0, 300),
        reason,
        desired: false,
      });
  } finally {
    const end = s.now();
    if (rec) {
      rec.lastSyncEnd = end;
      rec.retryAt = retryAfter(outcome, end, s.errorBackOff, s.resyncSlot(end + s.resync));
    }
  }
}

/** A loop sync's steps: its outcome, its error logged once (CrashLoopBackOff steps are the back-off holding, not a
 * failure: the loop returns when it ends). */
function reportSync(
  s: LoopState,
  uid: string,
  reason: string,
  r: SyncResult,
  rec: PodRecord | undefined,
): "ok" | "failed" {
  const failed = r.steps.filter((st) => !st.ok && st.error !== "CrashLoopBackOff");
  const outcome = failed.length === 0 ? "ok" : "failed";
  // A failed sync's own doing is not news at the next relist (it waits for its retry, or a later event). After a
  // good one the next relist decides afresh: a container that already crashed again is seen there.
  if (rec && outcome === "failed") rec.fingerprint = fingerprintOf(r.after);
  const f = failed[0];
  const same = f && `${f.action} ${f.target}: ${f.error ?? "failed"}${f.grpcCode ? ` (${f.grpcCode})` : ""}`;
  s.reporter.report(
    `pod:${uid}`,
    uid,
    f ? { same: same!, text: `${same}${f.message ? `: ${f.message}` : ""}` } : undefined,
    { reason },
  );
  return outcome;
}

/** A container the loop started again (it had an instance before this sync): counted, and one log line naming
 * the pod, the container, and how its last instance ended (as kubelet's BackOff/Started events would tell). */
function countRestarts(s: LoopState, r: SyncResult) {
  for (const st of r.steps) {
    if (!st.ok || (st.action !== "StartContainer" && st.action !== "InitContainer")) continue;
    const before = r.status.containerStatuses
      .filter((c) => c.name === st.target)
      .sort((a, b) => b.createdAt - a.createdAt)[0];
    if (!before) continue;
    s.o.metrics?.loopRestart();
    s.log({
      event: "restart",
      pod: `${r.pod.namespace}/${r.pod.name}`,
      podUid: r.pod.uid,
      container: st.target,
      exitCode: before.exitCode,
      reason: before.reason || before.state,
      restartCount: before.restartCount + 1,
    });
  }
}

/** A request's work, dispatched to the same pod workers: what its sync read back is the relist's too, and once it
 * is over the pod is as if the loop had synced it then (as for a pod new to the loop): the next relist decides it
 * afresh, and a needed action (the request's sync failed) still runs there. */
export function hookRequests(s: LoopState, pleg: Pleg, relistNow: () => void): void {
  s.pods.hooks = {
    synced: (_uid, r) => {
      // A read-back that differs from what the loop last saw means the request acted (its end asks for a relist).
      pleg.learn(r.after);
      const fp = fingerprintOf(r.after);
      if (s.lastSeen.get(r.after.id) !== fp) s.acted.add(r.after.id);
      s.lastSeen.set(r.after.id, fp);
    },
    requestDone: (uid) => {
      const t = s.now();
      const rec = s.records.get(uid);
      if (rec) Object.assign(rec, { lastSyncStart: t, lastSyncEnd: t, fingerprint: undefined, decided: undefined });
      // A pod new to the loop, or one the request acted on: a relist now, so the loop knows it (its exits' syncs,
      // its resync, its probes on the new containers) without waiting for the evented period, as kubelet's
      // HandlePodAdditions puts a new pod in its pod manager and prober at once (pkg/kubelet/kubelet.go). A
      // converged request asks for none.
      const relistAfter = !s.specs.has(uid) || s.acted.has(uid);
      s.acted.delete(uid);
      if (relistAfter && !s.stopped) relistNow();
    },
  };
}
