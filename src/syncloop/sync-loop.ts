// Package syncloop/ — kubelet's syncLoop: a thin loop that takes the PLEG's events and views and dispatches each pod's
// sync to its pod worker, with the probe tick, eviction step and controllers trigger as its parts. Imports pleg/,
// podworkers/, prober/, eviction/, metrics/ and the front door; never HTTP or an entry point.
//
// The node agent's sync loop (kubelet's syncLoop / syncLoopIteration, pkg/kubelet/kubelet.go), for the pods in the
// node's desired state. Every relist interval the PLEG lists the node (2 CRI calls, see pleg/relist.ts), and for each
// desired pod whose worker is idle the pass decides, purely (decide.ts), whether it needs a sync and whether now is
// the time; those it dispatches to the pod's worker (src/podworkers/: one serial worker per pod, which requests feed
// too, so a request and the loop never act on one pod at once). It also drives the prober (probe-tick.ts).
//
//   start-up        every desired pod is synced once (after a reboot or a containerd restart that brings
//                   them back as new sandbox attempts)
//   each relist     pods whose runtime state (fingerprint) or spec changed and need action; pods whose crash-
//                   loop back-off just ended; pods whose failed sync is due for a retry (10 s, kubelet's
//                   backOffPeriod); pods due for the full resync (PODSYNC_RESYNC_INTERVAL_MS)     (pass.ts)
//   runtime events  with an event stream (src/cri/container-events.ts), a container's or sandbox's exit syncs
//                   its pod at once (pleg/, coalesced per pod), and the relist becomes the safety net: every
//                   eventedRelistIntervalMs (or sooner, when a pod's resync, retry or back-off end is due) while
//                   the stream is up; at once and then every relist interval while it is down (kubelet's Evented
//                   PLEG, pkg/kubelet/pleg/evented.go, which slows the generic relist to 300 s the same way)
//                                                                                                  (relist-timer.ts)
//   eviction        with the eviction manager, its pass on its own interval after a relist (eviction-step.ts);
//                   in evented mode the relist comes that often while it has anything to watch
//   controllers     the workload controllers' pass at the start of every pass (controllers-step.ts)
//   probes          ticked when due, against the last relist; a liveness/startup failure syncs the pod
//   every sync      in the pod's worker, with the spec as stored when it runs (pod-sync.ts; checked again under the
//                   pod's lock: a spec a request replaced meanwhile is not applied); a pod that left the desired
//                   state meanwhile is not synced, and one that left while its sync ran is deleted again
//
// Pods the desired state does not hold are never synced, whatever labels they carry. One pod's failure never
// stops the loop; each distinct error is logged once (and its recovery once), never on every tick.
import { createPleg } from "../pleg/pleg.js";
import { createEvictionStep } from "./eviction-step.js";
import { syncPass } from "./pass.js";
import { createPodSyncer, hookRequests } from "./pod-sync.js";
import { loopMetricsSource } from "./pod-status-view.js";
import { createProbeTick } from "./probe-tick.js";
import { createRelistTimer } from "./relist-timer.js";
import { failure } from "./report.js";
import { createLoopState } from "./state.js";
import type { ReconcileLoop, ReconcileLoopOptions } from "./types.js";

export type { LoopControllers, ReconcileLoop, ReconcileLoopOptions, TickReport } from "./types.js";

export function startReconcileLoop(o: ReconcileLoopOptions): ReconcileLoop {
  const s = createLoopState(o);
  const eviction = createEvictionStep(s);
  const pass = () => syncPass(s, { pleg, syncer, probes, eviction });
  const timer = createRelistTimer(s, {
    pass: () => pass().then(() => probes.kick()),
    evictionWatchUntil: eviction.watchUntil,
  });
  // The PLEG's events (runtime events; the relist is the pass's): an exit syncs its pod, through its worker.
  const pleg = createPleg({
    cri: o.cri,
    events: o.events,
    metrics: o.metrics,
    now: s.now,
    stopped: () => s.stopped,
    manual: o.manual,
    on: {
      exited: async (uid, reason, exited) => {
        // A sync already running may have read the pod before this exit: this one follows it.
        while (s.inFlight.has(uid)) await s.inFlight.get(uid);
        // A pod a request stored since the last relist is not in `specs` yet: the store says whether it is desired.
        if (s.stopped || (!s.specs.has(uid) && !(await o.desired.get(uid).catch(() => undefined)))) return false;
        await syncer.sync(uid, reason, exited);
        return true;
      },
      relist: timer.relistNow,
      stream: timer.streamState,
    },
  });
  const syncer = createPodSyncer(s, pleg, timer.afterLoopSync);
  const probes = createProbeTick(s, { sync: syncer.sync, relistNow: timer.relistNow });
  hookRequests(s, pleg, timer.relistNow);

  timer.schedule(0);

  return {
    pods: s.pods,
    async tick() {
      const r = await pass();
      await Promise.all(r.syncs);
      const probeSyncs = await probes.probe().catch((e) => (s.reporter.report("probes", undefined, failure(e)), []));
      for (let i = 0; i < probeSyncs.length; i++) r.synced.push({ uid: "", reason: "probe failed" });
      await Promise.all(probeSyncs);
      const { syncs: _, ...rest } = r;
      return rest;
    },
    kick: timer.relistNow,
    async stop() {
      s.stopped = true;
      pleg.close();
      await pleg.idle();
      timer.stop();
      probes.stop();
      await timer.running();
      await probes.running();
      await Promise.all([...s.inFlight.values()]);
    },
    ...loopMetricsSource(s),
  };
}
