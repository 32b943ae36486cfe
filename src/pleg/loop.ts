// Package pleg/ — the node agent's reconcile: the PLEG (relist.ts, pleg-events.ts), decide (pure), the sync loop,
// the desired-state port. Imports the front door, podworkers/, prober/, status/, metrics/ and below; never HTTP.
//
// The node agent's sync loop (kubelet's syncLoop), for the pods in the node's desired state. Every relist interval
// it lists the node (2 CRI calls, see relist.ts), and for each desired pod whose worker is idle decides, purely
// (decide.ts), whether it needs a sync and whether now is the time; those it dispatches to the pod's worker
// (src/podworkers/: one serial worker per pod, which requests feed too, so a request and the loop never act on one
// pod at once). It also drives the prober (prober.ts: update/observe/tick/results/needsSync).
//
//   start-up        every desired pod is synced once (after a reboot or a containerd restart that brings
//                   them back as new sandbox attempts)
//   each relist     pods whose runtime state (fingerprint) or spec changed and need action; pods whose crash-
//                   loop back-off just ended; pods whose failed sync is due for a retry (10 s, kubelet's
//                   backOffPeriod); pods due for the full resync (PODSYNC_RESYNC_INTERVAL_MS)
//   runtime events  with an event stream (src/cri/container-events.ts), a container's or sandbox's exit syncs
//                   its pod at once (evented.ts, coalesced per pod), and the relist becomes the safety net: every
//                   eventedRelistIntervalMs (or sooner, when a pod's resync, retry or back-off end is due) while
//                   the stream is up; at once and then every relist interval while it is down (kubelet's Evented
//                   PLEG, pkg/kubelet/pleg/evented.go, which slows the generic relist to 300 s the same way)
//   eviction        with the eviction manager, its pass on its own interval after a relist (eviction/manager.ts);
//                   in evented mode the relist comes that often while it has anything to watch
//   probes          ticked when due, against the last relist; a liveness/startup failure syncs the pod
//   every sync      in the pod's worker, with the spec as stored when it runs (checked again under the pod's
//                   lock: a spec a request replaced meanwhile is not applied); a pod that left the desired state
//                   meanwhile is not synced, and one that left while its sync ran is deleted again
//
// Pods the desired state does not hold are never synced, whatever labels they carry. One pod's failure never
// stops the loop; each distinct error is logged once (and its recovery once), never on every tick.
import type { Pod } from "../pod/schema.js";
import type { CriClient } from "../cri/client.js";
import { errorMessage, isCriError } from "../cri/errors.js";
import type { ContainerEvent, EventStreamState } from "../cri/container-events.js";
import type { Owner } from "./evented.js";
import { startEventedPleg } from "./pleg-events.js";
import { sameEntry, stillStored, storeView, type DesiredPod, type DesiredState } from "./desired-state.js";
import { objectsFromStored } from "../pod/bundle.js";
import { SupersededError, type GuardOptions, type PodRuntime, type SyncResult } from "../kubelet/pod-runtime.js";
import { createPodDispatch, slots, type PodDispatch } from "../podworkers/dispatch.js";
import type { Prober } from "../prober/prober.js";
import type { MetricsSource, NodeMetrics } from "../metrics/metrics.js";
import { generateAPIPodStatus, type PodPhase, type V1PodStatus } from "../status/api-status.js";
import type { PodStatus } from "../container/types.js";
import { createRelister, fingerprintOf, type Relist, type Relister } from "./relist.js";
import { decide, decisionHolds, retryAfter, syncReason, type Decision, type PodRecord } from "./decide.js";
import { EVICTION_INTERVAL_DEFAULT_MS, evictionPass, type EvictionOptions } from "../eviction/manager.js";
import { hasLocalStorageLimits } from "../eviction/local-storage.js";

export interface ReconcileLoopOptions {
  /** The engine's front door; loop syncs go through it (and its lock). */
  runtime: PodRuntime;
  /** For the relist's list calls and its one-off detail reads. */
  cri: CriClient;
  desired: DesiredState;
  prober?: Prober | undefined;
  metrics?: NodeMetrics | undefined;
  /** Default 1000 (kubelet's PLEG relist period). */
  relistIntervalMs?: number;
  /** Default 60000 (kubelet's syncFrequency). */
  resyncIntervalMs?: number;
  /** A failed sync is retried after this long without a new event. Default 10000 (kubelet's backOffPeriod). */
  errorBackOffMs?: number;
  /** Loop syncs running at once. Default 8. */
  maxConcurrentSyncs?: number;
  /** The pod workers every source dispatches to (requests too); default: the loop's own. */
  pods?: PodDispatch<DesiredPod> | undefined;
  now?: () => number;
  /** One JSON-able record per event worth a line (errors once per change, recoveries, start-up). */
  log?: (rec: Record<string, unknown>) => void;
  /** Handed every relist's desired entries and view (undefined when nothing needed a relist): the Kubernetes
   * API's pods are fed from it, so a watch costs no runtime call of its own. */
  onRelist?: (entries: readonly DesiredPod[], view: Relist | undefined) => void;
  /** No timers: the caller drives the loop with tick() (the Workers node object's alarm, tests, bench). */
  manual?: boolean;
  /** Subscribe to the runtime's events (Node: watchContainerEvents over the CRI socket); returns the unsubscribe. */
  events?:
    | ((on: { event(e: ContainerEvent): void; state(s: EventStreamState): void }) => { close(): void })
    | undefined;
  /** The relist period while the event stream is up. Default 300000 (kubelet's eventedPlegRelistPeriod). */
  eventedRelistIntervalMs?: number;
  /** The eviction manager's local storage pass (eviction/manager.ts); without it no pod is held to its
   * ephemeral-storage limits or disk emptyDir sizeLimit (the runtime then refuses such pods). */
  eviction?: EvictionOptions | undefined;
  /** The node's workload controllers (src/controllers/run.ts), run at the start of every pass on the last relist's
   * view; the pods they create are synced in the same pass. */
  controllers?: LoopControllers | undefined;
}

/** What the loop needs of the workload controllers (the port; src/controllers/run.ts implements it). */
export interface LoopControllers {
  pass(
    now: number,
    observe: (uid: string) => V1PodStatus | undefined,
  ): Promise<{ created: string[]; deleted: string[] }>;
  /** Whether workloads were stored at the last pass: the controllers watch their pods through the relist, so the
   * loop relists at its interval then, runtime events or not (no event says a pod became ready or a back-off or
   * schedule came due). */
  watching(): boolean;
}

export interface TickReport {
  relisted: boolean;
  /** CRI calls the relist made. */
  relistCalls: number;
  /** Pods synced in this tick, with why. */
  synced: { uid: string; reason: string }[];
}

export interface ReconcileLoop extends MetricsSource {
  /** One relist, its syncs and the due probes, all awaited. */
  tick(): Promise<TickReport>;
  /** Relist soon (e.g. after the desired set changed). */
  kick(): void;
  /** The pod workers: requests dispatch their syncs and teardowns here, as the loop does. A pod whose worker is
   * busy is left to it (no relist decides it meanwhile); a request's sync read-back is the relist's too. */
  readonly pods: PodDispatch<DesiredPod>;
  stop(): Promise<void>;
}

const emptyStatus = (uid: string): PodStatus => ({
  id: uid,
  name: "",
  namespace: "",
  ips: [],
  sandboxStatuses: [],
  containerStatuses: [],
});
const PHASES: PodPhase[] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];

export function startReconcileLoop(o: ReconcileLoopOptions): ReconcileLoop {
  const now = o.now ?? Date.now;
  const interval = o.relistIntervalMs ?? 1000;
  const resync = o.resyncIntervalMs ?? 60_000;
  /** A resync's relist waits for the next slot of a grid of resync / 6 (10 s at the default 60 s): the pods due
   * within one slot share one relist, so an idle node with 30 pods relists about 6 times a minute instead of once
   * per pod. A resync is so up to a sixth late; kubelet's pod workers requeue a synced pod at
   * wait.Jitter(resyncInterval, 0.5), 1 to 1.5 intervals (pkg/kubelet/pod_workers.go,
   * workerResyncIntervalJitterFactor). Retries, back-off ends and deadlines keep their own times. */
  const slot = resync / 6;
  const resyncSlot = (at: number) => Math.ceil(at / slot) * slot;
  const errorBackOff = o.errorBackOffMs ?? 10_000;
  const eventedInterval = Math.max(interval, o.eventedRelistIntervalMs ?? 300_000);
  const maxSyncs = o.maxConcurrentSyncs ?? 8;
  const log = o.log ?? (() => undefined);
  const relister: Relister = createRelister(o.cri);
  const prober = o.prober;

  const records = new Map<string, PodRecord>();
  const specs = new Map<string, DesiredPod>();
  const errors = new Map<string, string>();
  const inFlight = new Map<string, Promise<void>>();
  const pods = o.pods ?? createPodDispatch(storeView(o.desired));
  const busy = (uid: string) => inFlight.has(uid) || pods.workers.busy(uid);
  /** When the probe path last synced a pod. */
  const probeSyncedAt = new Map<string, number>();
  /** The fingerprint each prober pod was last shown from a relist. */
  const observed = new Map<string, string>();
  let started = false;
  let nextEvictionAt = 0;
  let diskPressure: boolean | undefined;
  let stopped = false;
  let generation = 0;
  let last: Relist | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let probeTimer: ReturnType<typeof setTimeout> | undefined;
  let probeAt = 0;
  let current: Promise<unknown> | undefined;
  let probing: Promise<void> | undefined;
  let nextRelistAt = 0;
  /** When the last timed relist began (the anchor of the period after it). */
  let relistStartedAt = 0;
  /** The event stream is up: the relist is only the safety net. */
  let eventsUp = false;
  /** Which pod each sandbox and container id belongs to: the last relist's, plus what syncs made since. */
  let owners = new Map<string, Owner>();
  /** Owners a sync (the loop's or a request's) made known, with when: a relist whose lists went out before then
   * has not seen them, and must not drop them (the exit of a container made meanwhile would have no owner). */
  const learnt = new Map<string, Owner & { at: number }>();
  /** Each pod's objects (ids and states) as the loop last saw them, from a relist or a request's read-back: a
   * request whose read-back differs acted on the pod, and its release asks for a relist (below). */
  const lastSeen = new Map<string, string>();
  const acted = new Set<string>();
  const own = (status: PodStatus) => {
    const at = now();
    for (const sb of status.sandboxStatuses) {
      owners.set(sb.id, { uid: status.id, sandbox: true });
      learnt.set(sb.id, { uid: status.id, sandbox: true, at });
    }
    for (const c of status.containerStatuses) {
      owners.set(c.id, { uid: status.id, sandbox: false });
      learnt.set(c.id, { uid: status.id, sandbox: false, at });
    }
  };

  /** What a sync read back (the pod's objects and their details): the relist needs not read them again. A read-back
   * that differs from what the loop last saw means the sync acted (a request's end then asks for a relist). */
  const learn = (status: PodStatus) => {
    relister.learn(status);
    own(status);
    const fp = fingerprintOf(status);
    if (lastSeen.get(status.id) !== fp) acted.add(status.id);
    lastSeen.set(status.id, fp);
  };

  // Loop syncs beyond maxSyncs wait their turn (still pending in their pod's worker: a request replaces them).
  const loopSlot = slots(maxSyncs);

  /** Log an error for `key` only when its identity (`same`: what failed, not the wording, which can carry
   * addresses or times) differs from the last one logged; log its recovery once. */
  const report = (
    key: string,
    uid: string | undefined,
    error: { same: string; text: string } | undefined,
    extra: Record<string, unknown> = {},
  ) => {
    const prev = errors.get(key);
    if (error?.same === prev) return;
    const what = key.startsWith("pod:") ? "sync" : key;
    if (error === undefined) {
      errors.delete(key);
      log({ event: "recovered", ...(uid ? { podUid: uid } : {}), what });
      return;
    }
    errors.set(key, error.same);
    log({ event: "error", ...(uid ? { podUid: uid } : {}), what, error: error.text.slice(0, 300), ...extra });
  };
  const failure = (e: unknown) => ({
    same: isCriError(e) ? e.codeName : errorMessage(e),
    text: isCriError(e) ? e.message : errorMessage(e),
  });

  const feed = (entries: readonly DesiredPod[], view: Relist | undefined) => {
    try {
      o.onRelist?.(entries, view);
    } catch (e) {
      report("relist feed", undefined, failure(e));
    }
  };

  /** The loop's sync of a desired pod, dispatched to the pod's worker (kubelet's HandlePodSyncs → UpdatePod). */
  function sync(uid: string, reason: string, exited?: GuardOptions["exited"]): Promise<void> {
    const job = pods.workers
      .update(uid, { type: "sync", slot: loopSlot, run: () => syncStored(uid, reason, exited) })
      .then(
        () => undefined,
        () => undefined, // syncStored reports its own failures
      )
      .finally(() => {
        if (inFlight.get(uid) === job) inFlight.delete(uid);
        afterLoopSync();
      });
    inFlight.set(uid, job);
    return job;
  }

  /** The work of a loop sync, run by the pod's worker: the spec as stored now, through the front door. */
  async function syncStored(uid: string, reason: string, exited: GuardOptions["exited"]): Promise<void> {
    const rec = records.get(uid);
    const t0 = now();
    if (rec) rec.lastSyncStart = t0;
    let outcome: "ok" | "failed" | "error" = "error";
    try {
      if (stopped) return;
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
          { current: async () => stillStored(await o.desired.get(uid), entry), fresh: true, exited },
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
      observed.delete(uid); // the next relist shows it again
      // What the loop's own sync read back (not `learn`: that marks a request's acting, for its relist).
      relister.learn(r.after);
      own(r.after);
      countRestarts(r);
      outcome = reportSync(uid, reason, r, rec);
    } catch (e) {
      // A pod dropped from the desired set while this sync ran is not reported into `errors`: updateDesired
      // already forgot it, and nothing would remove its key again (a leak, and its next error, should it
      // come back, would be taken for this one and not logged). Its failure is logged once all the same.
      if (specs.has(uid)) report(`pod:${uid}`, uid, failure(e), { reason });
      else
        log({
          event: "error",
          podUid: uid,
          what: "sync",
          error: failure(e).text.slice(0, 300),
          reason,
          desired: false,
        });
    } finally {
      const end = now();
      if (rec) {
        rec.lastSyncEnd = end;
        rec.retryAt = retryAfter(outcome, end, errorBackOff, resync);
      }
    }
  }

  /** A loop sync's steps: its outcome, its error logged once (CrashLoopBackOff steps are the back-off holding, not a
   * failure: the loop returns when it ends). */
  function reportSync(uid: string, reason: string, r: SyncResult, rec: PodRecord | undefined): "ok" | "failed" {
    const failed = r.steps.filter((s) => !s.ok && s.error !== "CrashLoopBackOff");
    const outcome = failed.length === 0 ? "ok" : "failed";
    // A failed sync's own doing is not news at the next relist (it waits for its retry, or a later event). After a
    // good one the next relist decides afresh: a container that already crashed again is seen there.
    if (rec && outcome === "failed") rec.fingerprint = fingerprintOf(r.after);
    const f = failed[0];
    const same = f && `${f.action} ${f.target}: ${f.error ?? "failed"}${f.grpcCode ? ` (${f.grpcCode})` : ""}`;
    report(`pod:${uid}`, uid, f ? { same: same!, text: `${same}${f.message ? `: ${f.message}` : ""}` } : undefined, {
      reason,
    });
    return outcome;
  }

  /** A container the loop started again (it had an instance before this sync): counted, and one log line naming
   * the pod, the container, and how its last instance ended (as kubelet's BackOff/Started events would tell). */
  function countRestarts(r: SyncResult) {
    for (const st of r.steps) {
      if (!st.ok || (st.action !== "StartContainer" && st.action !== "InitContainer")) continue;
      const before = r.status.containerStatuses
        .filter((c) => c.name === st.target)
        .sort((a, b) => b.createdAt - a.createdAt)[0];
      if (!before) continue;
      o.metrics?.loopRestart();
      log({
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

  /** The desired set → the loop's records and the prober's pods. */
  function updateDesired(entries: DesiredPod[]): Set<string> {
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
        observed.delete(uid);
      }
      if (!records.has(uid))
        // A pod new to the loop after start-up was just synced by the request that stored it: as if the loop
        // had synced it now (a needed action still runs: it counts as changed).
        records.set(uid, {
          fingerprint: undefined,
          lastSyncStart: started ? now() : 0,
          lastSyncEnd: started ? now() : -Infinity,
          retryAt: 0,
        });
    }
    for (const uid of [...specs.keys()])
      if (!seen.has(uid)) {
        specs.delete(uid);
        records.delete(uid);
        lastSeen.delete(uid);
        acted.delete(uid);
        errors.delete(`pod:${uid}`);
        prober?.remove(uid);
      }
    return changed;
  }

  async function relistAndSync(): Promise<TickReport & { syncs: Promise<void>[] }> {
    const report0 = {
      relisted: false,
      relistCalls: 0,
      synced: [] as { uid: string; reason: string }[],
      syncs: [] as Promise<void>[],
    };
    const scheduled = nextRelistAt;
    const t0 = now();
    let view: Relist;
    let entries: DesiredPod[];
    try {
      [entries, generation] = await Promise.all([o.desired.list(), o.desired.generation()]);
      let specChanged = updateDesired(entries);
      // Housekeeping (kubelet's SyncKnownPods): the terminated workers of pods no longer desired go.
      pods.workers.syncKnownPods(new Set(specs.keys()));
      if (o.controllers) {
        // The controllers see the pods as the last relist showed them; what they create is synced in this pass.
        const c = await o.controllers
          .pass(t0, apiStatusOf)
          .catch((e) => (report("controllers", undefined, failure(e)), { created: [], deleted: [] }));
        if (c.created.length || c.deleted.length) {
          entries = await o.desired.list();
          specChanged = new Set([...specChanged, ...updateDesired(entries)]);
          for (const uid of c.created)
            Object.assign(records.get(uid) ?? {}, { lastSyncStart: 0, lastSyncEnd: -Infinity });
        }
      }
      // Nothing desired and no probe to run: no relist could lead to anything, so none is made (an idle node
      // costs no CRI call, and a refused request stays the only thing near the runtime).
      if (specs.size === 0 && prober?.nextDue() === undefined) {
        last = undefined;
        feed(entries, undefined);
        return report0;
      }
      view = await relister.relist(
        {
          wants: (uid) => specs.has(uid) || prober?.spec(uid) !== undefined,
          wantsStartTimes: (uid) => hasProbes(specs.get(uid)?.pod ?? prober?.spec(uid)),
        },
        now,
      );
      o.metrics?.relist((now() - t0) / 1000, scheduled > 0 ? Math.max(0, t0 - scheduled) / 1000 : 0, true);
      report("relist", undefined, undefined);
      last = view;
      owners = view.owners;
      for (const [id, l] of learnt) {
        if (l.at <= view.at)
          learnt.delete(id); // listed after it was learnt: the view has it if it still exists
        else if (!owners.has(id)) owners.set(id, { uid: l.uid, sandbox: l.sandbox });
      }
      feed(entries, view);
      report0.relisted = true;
      report0.relistCalls = view.criCalls;

      const t = now();
      for (const e of entries) {
        const uid = e.pod.metadata.uid;
        const rec = records.get(uid)!;
        // A pod whose worker runs or holds work (a request's, or the loop's own) is left to it.
        if (busy(uid)) continue;
        // A sync that ended after this relist began is not in the view: decide on the next one.
        if (rec.lastSyncEnd > view.at) continue;
        const pv = view.pods.get(uid);
        // The runtime fails to report this pod (a broken sandbox): nothing is decided from half a status (a
        // missing sandbox would read as "make a new one"); the relist reads it again with back-off, and the
        // other pods go on. Logged once, and its recovery once.
        if (pv?.error) {
          report(`pod:${uid}`, uid, {
            same: `status: ${pv.error.replace(/:.*\(/, " (")}`,
            text: `the runtime failed to report the pod's status: ${pv.error}`,
          });
          continue;
        }
        const fp = pv?.fingerprint ?? fingerprintOf(emptyStatus(uid));
        lastSeen.set(uid, fp);
        const changed = rec.fingerprint !== fp || specChanged.has(uid);
        rec.fingerprint = fp;
        let reason: string | undefined;
        // Evicted (eviction/): nothing of it runs again unless the eviction manager makes it anew.
        if (o.runtime.eviction(uid)) continue;
        if (!started) reason = "start-up";
        else {
          // A converged pod whose objects and spec are as last time needs no new decision (nor its status).
          let d: Decision;
          const prev = rec.decided;
          if (prev && prev.fingerprint === fp && prev.spec === specs.get(uid) && decisionHolds(prev.decision, t))
            d = prev.decision;
          else {
            try {
              d = decide(e.pod, pv?.status ?? emptyStatus(uid), prober?.results(uid), t);
            } catch (err) {
              report(`pod:${uid}`, uid, { same: `decide: ${errorMessage(err)}`, text: `decide: ${errorMessage(err)}` });
              continue;
            }
            rec.decided = { fingerprint: fp, spec: specs.get(uid), decision: d };
          }
          reason = syncReason(rec, d, changed, { now: t, resyncIntervalMs: resync });
        }
        if (reason) {
          report0.synced.push({ uid, reason });
          report0.syncs.push(sync(uid, reason));
        }
      }
      started = true;
      // The prober reads container ids and states from the relist (again only when they changed).
      if (prober)
        for (const [uid, pv] of view.pods)
          if (!pv.error && observed.get(uid) !== pv.fingerprint && prober.spec(uid)) {
            prober.observe(uid, pv.status);
            observed.set(uid, pv.fingerprint);
          }
      for (const uid of observed.keys()) if (!view.pods.has(uid)) observed.delete(uid);
      // The eviction manager's local storage pass, on its own interval, from this relist's statuses.
      if (o.eviction && t >= nextEvictionAt) await evictionStep(o.eviction, entries, view, t);
    } catch (e) {
      o.metrics?.relist((now() - t0) / 1000, scheduled > 0 ? Math.max(0, t0 - scheduled) / 1000 : 0, false);
      report("relist", undefined, failure(e));
    }
    return report0;
  }

  /** The eviction manager's pass (eviction/manager.ts) over the desired pods no loop sync is acting on. */
  async function evictionStep(opts: EvictionOptions, entries: readonly DesiredPod[], view: Relist, t: number) {
    nextEvictionAt = t + (opts.intervalMs ?? EVICTION_INTERVAL_DEFAULT_MS);
    const pods = entries
      .filter((e) => !inFlight.has(e.pod.metadata.uid))
      .map((e) => ({ pod: e.pod, status: view.pods.get(e.pod.metadata.uid)?.status }));
    try {
      const r = await evictionPass(opts, o.runtime, pods, t);
      for (const ev of r.evicted) o.log?.({ loop: "eviction", uid: ev.uid, evicted: ev.message });
      for (const uid of r.recreated)
        o.log?.({ loop: "eviction", uid, recreated: "evicted under restartPolicy Always: made anew" });
      if (r.diskPressure !== undefined && r.diskPressure !== diskPressure)
        o.log?.({ loop: "eviction", condition: "DiskPressure", status: r.diskPressure ? "True" : "False" });
      diskPressure = r.diskPressure;
      report("eviction", undefined, undefined);
    } catch (e) {
      report("eviction", undefined, failure(e));
    }
  }

  /** Run due probes; sync the pods whose liveness or startup probe failed, or whose sidecar just started. */
  async function probe(): Promise<Promise<void>[]> {
    if (!prober || !last) return [];
    const r = await prober.tick(now());
    const syncs: Promise<void>[] = [];
    const t = now();
    // A published result changed: the pod's decision may have (a sidecar's startup success lets the next init
    // container start), so the next relist decides it again as if its runtime state had changed, and comes now.
    for (const uid of r.changed) {
      const rec = records.get(uid);
      if (rec) {
        rec.fingerprint = undefined;
        rec.decided = undefined;
      }
    }
    if (r.changed.length) relistNow();
    for (const uid of r.needsSync) {
      // A restart that did not happen (its sync failed) is tried again after the error back-off, not per tick.
      if (inFlight.has(uid) || t < (probeSyncedAt.get(uid) ?? -Infinity) + errorBackOff) continue;
      // Only desired pods: the loop acts on nothing else.
      if (!specs.has(uid)) continue;
      probeSyncedAt.set(uid, t);
      syncs.push(sync(uid, "probe failed"));
    }
    for (const uid of probeSyncedAt.keys()) if (!specs.has(uid)) probeSyncedAt.delete(uid);
    return syncs;
  }

  function scheduleRelist(delay: number) {
    if (stopped || o.manual) return;
    clearTimeout(timer);
    nextRelistAt = now() + delay;
    timer = setTimeout(() => {
      relistStartedAt = nextRelistAt;
      current = relistAndSync()
        .then(() => kickProbes())
        .finally(() => {
          current = undefined;
          // wait.Until: the next relist a full period after this one began (never two at once), or at once when
          // something asked for one while this one ran.
          scheduleRelist(again ? 0 : Math.max(0, nextRelistAt + period() - now()));
          again = false;
        });
    }, delay);
    (timer as { unref?: () => void }).unref?.();
  }

  /** A loop sync ended after its pass: the relist waiting for the evented period comes sooner if this pod's next
   * resync, retry or back-off end now falls before it (the pass, which does not wait for its syncs, left it out). */
  function afterLoopSync() {
    if (stopped || o.manual || current || !eventsUp) return;
    const at = relistStartedAt + period(relistStartedAt);
    if (at < nextRelistAt) scheduleRelist(Math.max(0, at - now()));
  }

  /** The relist period: the interval; while the event stream is up, the evented one, or less when a pod's
   * resync, error retry or back-off end comes sooner (no event announces those), never under the interval. */
  function period(from = nextRelistAt): number {
    if (!eventsUp || o.controllers?.watching()) return interval;
    let due = Infinity;
    for (const [uid, rec] of records) {
      // A pod a request's work holds is the request's to sync (its end makes it due at the resync). A pod the loop
      // is syncing has no next time yet: its sync's end asks again (afterLoopSync). Counted now, its last end
      // would be taken for due and bring a relist one interval later that finds nothing to do.
      if (busy(uid)) continue;
      const d = rec.decided?.decision;
      // A finished pod is not resynced (decide.ts), so its resync brings no relist either.
      if (!(d?.kind === "converged" && d.finished)) due = Math.min(due, resyncSlot(rec.lastSyncEnd + resync));
      if (d?.kind === "back-off") due = Math.min(due, d.until);
      else if (d?.kind === "act") due = Math.min(due, rec.retryAt);
      // A converged pod's active deadline.
      else if (d?.kind === "converged" && d.until !== undefined) due = Math.min(due, d.until);
    }
    // The eviction manager's next pass, when it has anything to watch.
    if (o.eviction && (o.eviction.diskPressure || [...specs.values()].some((e) => hasLocalStorageLimits(e.pod))))
      due = Math.min(due, nextEvictionAt);
    return Math.min(eventedInterval, Math.max(interval, due - from));
  }

  /** Relist now; while one runs (it may have listed before what asked for this), once more right after it. */
  let again = false;
  const relistNow = () => {
    if (!current) scheduleRelist(0);
    else again = true;
  };

  // The PLEG's events (runtime events; the relist is relistAndSync's): an exit syncs its pod, through its worker.
  const pleg = o.manual
    ? undefined
    : startEventedPleg({
        cri: o.cri,
        events: o.events,
        metrics: o.metrics,
        ownerOf: (id) => owners.get(id),
        stopped: () => stopped,
        on: {
          exited: async (uid, reason, exited) => {
            // A sync already running may have read the pod before this exit: this one follows it.
            while (inFlight.has(uid)) await inFlight.get(uid);
            // A pod a request stored since the last relist is not in `specs` yet: the store says whether it is desired.
            if (stopped || (!specs.has(uid) && !(await o.desired.get(uid).catch(() => undefined)))) return false;
            await sync(uid, reason, exited);
            return true;
          },
          relist: relistNow,
          stream: streamState,
        },
      });

  /** The event stream went up (the relist becomes the safety net) or down (the relist at its interval). */
  function streamState(st: EventStreamState) {
    const was = eventsUp;
    eventsUp = st.up;
    if (st.up) {
      report("events", undefined, undefined);
      log({
        event: "runtime events",
        up: true,
        source: st.source,
        reconnects: st.reconnects,
        relistIntervalMs: eventedInterval,
      });
      // Whatever happened while the stream was not open is seen by a relist now.
      relistNow();
      return;
    }
    report("events", undefined, {
      same: st.error ?? "down",
      text: `runtime event stream down (relisting every ${interval} ms): ${st.error ?? "down"}`,
    });
    // Back to the relist at its interval, starting now.
    if (was) relistNow();
  }

  /** Probes run on their own timer (a slow exec probe never holds up a relist). */
  function kickProbes() {
    if (stopped || o.manual || !prober || probing) return;
    const next = prober.nextDue();
    const delay = next === undefined ? interval : Math.min(interval, Math.max(20, next - now()));
    // A timer already set to fire no later stays.
    if (probeTimer !== undefined && probeAt <= now() + delay) return;
    clearTimeout(probeTimer);
    probeAt = now() + delay;
    probeTimer = setTimeout(() => {
      probeTimer = undefined;
      probing = probe()
        .then(
          () => undefined,
          (e) => report("probes", undefined, failure(e)),
        )
        .finally(() => {
          probing = undefined;
          kickProbes();
        });
    }, delay);
    (probeTimer as { unref?: () => void }).unref?.();
  }

  /** A desired pod's v1.PodStatus from the last relist (the controllers' view of their pods). */
  function apiStatusOf(uid: string): V1PodStatus | undefined {
    const e = specs.get(uid);
    const pv = last?.pods.get(uid);
    if (!e || !pv) return undefined;
    try {
      return generateAPIPodStatus({
        pod: e.pod,
        status: pv.status,
        now: now(),
        runtimeName: "",
        hostIPs: [],
        probes: prober?.results(uid),
        reasons: undefined,
      });
    } catch {
      return undefined;
    }
  }

  // A request's work, dispatched to the same pod workers: what its sync read back is the relist's too, and once it
  // is over the pod is as if the loop had synced it then (as for a pod new to the loop): the next relist decides it
  // afresh, and a needed action (the request's sync failed) still runs there.
  pods.hooks = {
    synced: (_uid, r) => learn(r.after),
    requestDone: (uid) => {
      const t = now();
      const rec = records.get(uid);
      if (rec) Object.assign(rec, { lastSyncStart: t, lastSyncEnd: t, fingerprint: undefined, decided: undefined });
      // A pod new to the loop, or one the request acted on: a relist now, so the loop knows it (its exits' syncs,
      // its resync, its probes on the new containers) without waiting for the evented period, as kubelet's
      // HandlePodAdditions puts a new pod in its pod manager and prober at once (pkg/kubelet/kubelet.go). A
      // converged request asks for none.
      const relistAfter = !specs.has(uid) || acted.has(uid);
      acted.delete(uid);
      if (relistAfter && !stopped) relistNow();
    },
  };

  scheduleRelist(0);

  return {
    pods,
    async tick() {
      const r = await relistAndSync();
      await Promise.all(r.syncs);
      const probeSyncs = await probe().catch((e) => (report("probes", undefined, failure(e)), []));
      for (let i = 0; i < probeSyncs.length; i++) r.synced.push({ uid: "", reason: "probe failed" });
      await Promise.all(probeSyncs);
      const { syncs: _, ...rest } = r;
      return rest;
    },
    kick: relistNow,
    async stop() {
      stopped = true;
      pleg?.close();
      await pleg?.idle();
      clearTimeout(timer);
      clearTimeout(probeTimer);
      await current;
      await probing;
      await Promise.all([...inFlight.values()]);
    },
    podPhases() {
      const counts = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<PodPhase, number>;
      const t = now();
      for (const [uid, e] of specs) {
        const status = last?.pods.get(uid)?.status ?? emptyStatus(uid);
        try {
          counts[
            generateAPIPodStatus({
              pod: e.pod,
              status,
              now: t,
              runtimeName: "",
              hostIPs: [],
              probes: prober?.results(uid),
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
      if (!last) return 0;
      let n = 0;
      for (const uid of last.uids) if (!specs.has(uid)) n++;
      return n;
    },
    generation: () => generation,
  };
}

function hasProbes(pod: Pod | undefined): boolean {
  return [...(pod?.spec.initContainers ?? []), ...(pod?.spec.containers ?? [])].some(
    (c) => c.livenessProbe || c.readinessProbe || c.startupProbe,
  );
}
