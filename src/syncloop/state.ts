// What the sync loop's parts share (kubelet keeps the same in the Kubelet struct): its settings with defaults, the
// desired pods as last listed and each one's record (kubelet's pod worker state), the loop syncs running, the last
// relist's view, and the error log.
import type { Pod } from "../pod/schema.js";
import type { PodStatus } from "../container/types.js";
import { storeView, type DesiredPod } from "../pleg/desired-state.js";
import type { Relist } from "../pleg/relist.js";
import { createPodDispatch } from "../podworkers/dispatch.js";
import type { PodRecord } from "./decide.js";
import { createReporter } from "./report.js";
import type { ReconcileLoopOptions } from "./types.js";
import { CONTROLLERS_QUIET_MS } from "./relist-timer.js";

export function createLoopState(o: ReconcileLoopOptions) {
  const interval = o.relistIntervalMs ?? 1000;
  const resync = o.resyncIntervalMs ?? 60_000;
  /** A resync's relist waits for the next slot of a grid of resync / 2 (30 s at the default 60 s): the pods due
   * within one slot share one relist, so an idle node relists twice a minute instead of once per pod. A resync so
   * comes 1 to 1.5 intervals after the pod's last sync, the range kubelet's pod workers requeue a synced pod in:
   * wait.Jitter(resyncInterval, 0.5) (pkg/kubelet/pod_workers.go, workerResyncIntervalJitterFactor). Retries,
   * back-off ends and deadlines keep their own times. */
  const slot = resync / 2;
  const log = o.log ?? (() => undefined);
  const pods = o.pods ?? createPodDispatch(storeView(o.desired));
  /** The loop's own syncs running, by pod. */
  const inFlight = new Map<string, Promise<void>>();
  return {
    o,
    now: o.now ?? Date.now,
    log,
    interval,
    resync,
    resyncSlot: (at: number) => Math.ceil(at / slot) * slot,
    errorBackOff: o.errorBackOffMs ?? 10_000,
    eventedInterval: Math.max(interval, o.eventedRelistIntervalMs ?? 300_000),
    controllersQuiet: o.controllersQuietMs ?? CONTROLLERS_QUIET_MS,
    maxSyncs: o.maxConcurrentSyncs ?? 8,
    prober: o.prober,
    pods,
    inFlight,
    /** A pod whose worker runs or holds work (a request's, or the loop's own) is left to it. */
    busy: (uid: string) => inFlight.has(uid) || pods.workers.busy(uid),
    records: new Map<string, PodRecord>(),
    /** The desired pods as the last pass listed them. */
    specs: new Map<string, DesiredPod>(),
    /** The fingerprint each prober pod was last shown from a relist. */
    observed: new Map<string, string>(),
    /** Each pod's objects (ids and states) as the loop last saw them, from a relist or a request's read-back: a
     * request whose read-back differs acted on the pod, and its release asks for a relist. */
    lastSeen: new Map<string, string>(),
    acted: new Set<string>(),
    reporter: createReporter(log),
    started: false,
    stopped: false,
    generation: 0,
    last: undefined as Relist | undefined,
    /** When the next timed relist is due. */
    nextRelistAt: 0,
    /** The event stream is up: the relist is only the safety net. */
    eventsUp: false,
    /** When a relist last saw a desired pod change (its objects or its spec), a loop sync acted, or the
     * controllers last made or deleted pods: while this is recent, the controllers' pods are relisted at the
     * interval. */
    changedAt: -Infinity,
    /** The earliest time the controllers asked to look again (a rollout's minReadySeconds, a Job's deadline, a
     * CronJob's schedule, an HPA's next sync). */
    controllersDue: Infinity,
  };
}

export type LoopState = ReturnType<typeof createLoopState>;

export const emptyStatus = (uid: string): PodStatus => ({
  id: uid,
  name: "",
  namespace: "",
  ips: [],
  sandboxStatuses: [],
  containerStatuses: [],
});

export function hasProbes(pod: Pod | undefined): boolean {
  return [...(pod?.spec.initContainers ?? []), ...(pod?.spec.containers ?? [])].some(
    (c) => c.livenessProbe || c.readinessProbe || c.startupProbe,
  );
}
