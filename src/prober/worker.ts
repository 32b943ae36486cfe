// The prober's workers (kubelet's pkg/kubelet/prober/worker.go: doProbe, and its results manager): one worker per
// container and probe type, its state in the prober's store; a tick runs every worker that is due.
import type { CriClient } from "../cri/client.js";
import { isRestartableInitContainer, type Container, type Pod } from "../pod/schema.js";
import type { PodProbeResults, ProbeResult } from "../status/api-status.js";
import type { ProbeResults } from "../kuberuntime/compute-actions.js";
import type { ContainerStatus, PodStatus } from "../container/types.js";
import { runProbe, type ProbeNetwork, type ProbeOutcome } from "./probe.js";

export type ProbeType = "liveness" | "readiness" | "startup";
export const PROBE_FIELD = { liveness: "livenessProbe", readiness: "readinessProbe", startup: "startupProbe" } as const;
/** worker.go initialValue: readiness starts Failure, liveness Success, startup Unknown. */
export const INITIAL: Record<ProbeType, ProbeResult> = {
  liveness: "Success",
  readiness: "Failure",
  startup: "Unknown",
};
/** prober.go maxProbeRetries: a probe that errors is retried this many times before the result is thrown away. */
const MAX_PROBE_RETRIES = 3;

/** One worker's state: kubelet's worker fields plus the published result. */
export interface WorkerState {
  /** The instance being probed ("" before the first). */
  containerId: string;
  /** Published result for containerId (kubelet's results manager). */
  result: ProbeResult;
  /** When `result` last changed (ms). */
  changedAt: number;
  /** The last raw result and how many times in a row it came. */
  lastResult: ProbeResult | undefined;
  resultRun: number;
  /** After a liveness/startup failure: stop probing until a new instance appears. */
  onHold: boolean;
  /** When the worker's ticker next fires (ms). */
  nextAt: number;
}

/** Workers of one pod, keyed `<container>/<type>`. */
export type PodProbeState = Record<string, WorkerState>;

/** One probe run, for logs and tests (kubelet records these as events). */
export interface ProbeEvent {
  uid: string;
  container: string;
  type: ProbeType;
  containerId: string;
  result: ProbeResult;
  output: string;
  /** The published result changed. */
  changed: boolean;
}

export const keyOf = (container: string, type: ProbeType) => `${container}/${type}`;
/** The containers kubelet probes: sidecars (restartable init containers) and the app containers. */
export const probed = (pod: Pod): Container[] => [
  ...(pod.spec.initContainers ?? []).filter(isRestartableInitContainer),
  ...pod.spec.containers,
];
export const TYPES: ProbeType[] = ["startup", "liveness", "readiness"];

/** What a worker needs of the prober: the runtime, the pods' network, and who hears each probe run. */
export interface WorkerOptions {
  cri: CriClient;
  network?: ProbeNetwork | undefined;
  /** The node's IP: a hostNetwork pod's IP when the runtime reports none. */
  hostIP?: string | undefined;
  onProbe?: ((e: ProbeEvent) => void) | undefined;
}

export function newest(status: PodStatus | undefined, name: string): ContainerStatus | undefined {
  // A loop, not `find`: the prober asks this for every worker on every tick.
  if (status) for (const c of status.containerStatuses) if (c.name === name) return c;
  return undefined;
}

function setResult(w: WorkerState, r: ProbeResult, now: number): boolean {
  if (w.result === r) return false;
  w.result = r;
  w.changedAt = now;
  return true;
}

/** isContainerStarted for one instance: its startup probe succeeded, or it has none. */
function started(state: PodProbeState, c: Container, id: string): boolean {
  if (!c.startupProbe) return true;
  const s = state[keyOf(c.name, "startup")];
  return s !== undefined && s.containerId === id && s.result === "Success";
}

/** worker.doProbe. Returns whether the published result changed. */
async function doProbe(
  o: WorkerOptions,
  status: PodStatus | undefined,
  uid: string,
  pod: Pod,
  c: Container,
  t: ProbeType,
  state: PodProbeState,
  now: number,
): Promise<{ changed: boolean; ran: boolean; started?: boolean }> {
  const w = state[keyOf(c.name, t)]!;
  const inst = newest(status, c.name);
  if (!inst) return { changed: false, ran: false };
  let changed = false;
  if (w.containerId !== inst.id) {
    // A new instance: results start over, probing resumes.
    w.containerId = inst.id;
    changed = setResult(w, INITIAL[t], now) || changed;
    w.onHold = false;
  }
  if (w.onHold) return { changed, ran: false };
  // A container that ran and stopped is a Failure (worker.go's non-running case). One created but not yet
  // started is waited for, like one not created yet: podsync's relist sees a container between its
  // CreateContainer and StartContainer (kubelet's status, generated after its SyncPod, practically never does),
  // and a Failure published then would stand for that same container once it runs, so the loop would kill a
  // healthy container before its first probe (a startup probe with failureThreshold 60 restarted it at once).
  if (inst.state !== "running")
    return inst.state === "exited"
      ? { changed: setResult(w, "Failure", now) || changed, ran: false }
      : { changed, ran: false };
  const probe = c[PROBE_FIELD[t]]!;
  if (inst.startedAt > 0 && now - inst.startedAt < probe.initialDelaySeconds * 1000) return { changed, ran: false };
  // Startup probes stop once the container has started; the others wait for it.
  if (t === "startup" ? w.result === "Success" : !started(state, c, inst.id)) return { changed, ran: false };

  const podIP = status?.ips[0] ?? (pod.spec.hostNetwork ? (o.hostIP ?? "") : "");
  let outcome: ProbeOutcome | undefined;
  for (let i = 0; i < MAX_PROBE_RETRIES && !outcome; i++) {
    try {
      outcome = await runProbe(o.cri, o.network, probe, c, inst.id, podIP);
    } catch {
      // ProbeError (or a CRI failure): try again, then give up on this run.
    }
  }
  // Prober error: the result is thrown away.
  if (!outcome) return { changed, ran: true };
  const result: ProbeResult = outcome.result === "Success" || outcome.result === "Warning" ? "Success" : "Failure";
  // kubelet's resultRun counts on without end, but is only ever compared below a threshold: held at the larger
  // threshold it decides the same, and a steady probe leaves the state it persists unchanged (no write per probe).
  if (w.lastResult === result)
    w.resultRun = Math.min(w.resultRun + 1, Math.max(probe.failureThreshold, probe.successThreshold));
  else {
    w.lastResult = result;
    w.resultRun = 1;
  }
  let published = false;
  if (
    !(
      (result === "Failure" && w.resultRun < probe.failureThreshold) ||
      (result === "Success" && w.resultRun < probe.successThreshold)
    )
  ) {
    published = setResult(w, result, now);
    changed = published || changed;
    // A liveness or startup failure means a restart: stop probing until the new instance shows up.
    if (t !== "readiness" && result === "Failure") {
      w.onHold = true;
      w.resultRun = 0;
    }
  }
  o.onProbe?.({
    uid,
    container: c.name,
    type: t,
    containerId: inst.id,
    result,
    output: outcome.output,
    changed: published,
  });
  return {
    changed,
    ran: true,
    started: published && t === "startup" && result === "Success" && isRestartableInitContainer(c),
  };
}

/** One worker of a pod: its container and probe type, with the keys a tick uses, made once per pod spec so an
 * idle tick allocates nothing for the workers that are not due. */
export interface WorkerRef {
  c: Container;
  t: ProbeType;
  /** `<container>/<type>`: the worker's entry in the pod's PodProbeState. */
  key: string;
  /** `<uid>/<container>/<type>`: the worker in the prober's in-flight set. */
  flight: string;
  periodMs: number;
}

/** A probed pod's spec and its workers. */
export interface PodWorkers {
  pod: Pod;
  refs: readonly WorkerRef[];
}

/** The workers of `pod`'s probes (sidecars and app containers; init containers are not probed). */
export function workerRefs(pod: Pod): WorkerRef[] {
  const refs: WorkerRef[] = [];
  for (const c of probed(pod))
    for (const t of TYPES) {
      const probe = c[PROBE_FIELD[t]];
      if (!probe) continue;
      const key = keyOf(c.name, t);
      refs.push({ c, t, key, flight: `${pod.metadata.uid}/${key}`, periodMs: probe.periodSeconds * 1000 });
    }
  return refs;
}

/** The prober's maps, as a tick reads them. */
export interface Workers {
  o: WorkerOptions;
  store: { get(uid: string): PodProbeState | undefined; set(uid: string, state: PodProbeState): void };
  /** The pods with at least one probe. */
  pods: ReadonlyMap<string, PodWorkers>;
  statuses: ReadonlyMap<string, PodStatus>;
  /** Workers whose probe is running (`uid/container/type`). */
  inFlight: Set<string>;
}

/** Run every worker due at `now` (each worker's ticker: every periodSeconds). */
export async function tickWorkers(
  x: Workers,
  now: number,
): Promise<{ ran: number; changed: string[]; sidecarStarted: Set<string> }> {
  const { store, pods, inFlight } = x;
  const changed = new Set<string>();
  const sidecarStarted = new Set<string>();
  let ran = 0;
  const runs: Promise<void>[] = [];
  for (const [uid, { pod, refs }] of pods) {
    const state = store.get(uid);
    if (!state) continue;
    for (const { c, t, key, flight, periodMs } of refs) {
      const w = state[key];
      if (!w || w.nextAt > now) continue;
      // The worker's ticker: every periodSeconds. A tick that finds the worker's last probe still running is
      // dropped. kubelet's worker (worker.go `run`) probes in its own goroutine between reads of a Go ticker,
      // whose channel keeps one tick: it probes once more right after a probe that outlived its period. podsync
      // waits for the next period instead, so slow probes under load do not come back to back (a deliberate
      // difference, small: at most one period later).
      w.nextAt = w.nextAt + periodMs > now ? w.nextAt + periodMs : now + periodMs;
      if (inFlight.has(flight)) continue;
      inFlight.add(flight);
      runs.push(
        doProbe(x.o, x.statuses.get(uid), uid, pod, c, t, state, now)
          .then((r) => {
            if (r.ran) ran++;
            if (r.changed) changed.add(uid);
            if (r.started) sidecarStarted.add(uid);
          })
          .finally(() => {
            inFlight.delete(flight);
            // The worker's state object is shared with any newer state of the pod (a changed spec keeps the
            // workers that stay), so the result is in whatever the store holds now: write that back, never the
            // state this tick began with (it would drop workers a new spec added, or bring back a pod's state
            // after its probes were removed).
            const current = store.get(uid);
            if (current) store.set(uid, current);
          }),
      );
    }
  }
  await Promise.all(runs);
  return { ran, changed: [...changed], sidecarStarted };
}

/** The published results of a pod's workers: ProbeResults for computePodActions and the v1 status. */
export function resultsOf(state: PodProbeState): ProbeResults & PodProbeResults {
  const liveness = new Map<string, "Success" | "Failure">();
  const startup = new Map<string, "Success" | "Failure">();
  const readiness = new Map<string, ProbeResult>();
  const changedAt = new Map<string, number>();
  for (const [key, w] of Object.entries(state)) {
    if (!w.containerId) continue;
    const t = key.slice(key.lastIndexOf("/") + 1) as ProbeType;
    if (t === "readiness") {
      readiness.set(w.containerId, w.result);
      if (w.changedAt) changedAt.set(w.containerId, Math.max(changedAt.get(w.containerId) ?? 0, w.changedAt));
    } else if (w.result !== "Unknown") (t === "liveness" ? liveness : startup).set(w.containerId, w.result);
    if (t === "startup" && w.changedAt)
      changedAt.set(w.containerId, Math.max(changedAt.get(w.containerId) ?? 0, w.changedAt));
  }
  return { liveness, startup, readiness, changedAt };
}
