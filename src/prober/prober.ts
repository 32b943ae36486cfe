// Package prober/ (kubelet's pkg/kubelet/prober) — probe workers and results, driven by the loop.
// Imports kuberuntime/, status/ and below; never pleg/ or HTTP.
//
// The prober: kubelet's prober manager and its workers (pkg/kubelet/prober/prober_manager.go, worker.go,
// results/) as a module a loop drives. It keeps no timer of its own: whoever owns the node loop calls
//   prober.update(pods)           the desired pods (specs): workers are made for their probes, dropped for the rest
//   prober.observe(uid, status)   the pod's latest runtime status (a relist, or a sync's read-back)
//   prober.tick(now)              run every probe that is due; returns what changed and which pods need a sync
//   prober.results(uid)           ProbeResults for computePodActions (liveness/startup) and for the v1 status
//                                 (readiness, startup, when each result changed)
// The node agent's reconcile loop (../reconcile/loop.ts) is that owner: it observes each relist, ticks when
// probes are due and syncs the pods whose liveness or startup failed.
//
// Worker state (consecutive counts, last and published results, hold, next run) lives in a ProbeStateStore,
// so a store that persists it carries probing across a restart of podsync. Results are keyed by container id,
// as kubelet's results managers are: a new instance starts over from the probe type's initial result.
import type { CriClient } from "../cri/client.js";
import { isRestartableInitContainer, type Container, type Pod } from "../pod/schema.js";
import type { PodProbeResults, ProbeResult } from "../status/api-status.js";
import type { ProbeResults } from "../kuberuntime/compute-actions.js";
import type { ContainerStatus, PodStatus } from "../container/types.js";
import { runProbe, type ProbeNetwork, type ProbeOutcome } from "./probe.js";

export type ProbeType = "liveness" | "readiness" | "startup";
const PROBE_FIELD = { liveness: "livenessProbe", readiness: "readinessProbe", startup: "startupProbe" } as const;
/** worker.go initialValue: readiness starts Failure, liveness Success, startup Unknown. */
const INITIAL: Record<ProbeType, ProbeResult> = { liveness: "Success", readiness: "Failure", startup: "Unknown" };
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

/** Where probe state lives. In memory here; on Node, files under the state dir (src/state/probe-state.ts). */
export interface ProbeStateStore {
  get(uid: string): PodProbeState | undefined;
  set(uid: string, state: PodProbeState): void;
  delete(uid: string): void;
}

export class MemoryProbeStateStore implements ProbeStateStore {
  private readonly m = new Map<string, PodProbeState>();
  get(uid: string) {
    return this.m.get(uid);
  }
  set(uid: string, state: PodProbeState) {
    this.m.set(uid, state);
  }
  delete(uid: string) {
    this.m.delete(uid);
  }
}

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

export interface TickResult {
  /** Probes run in this tick. */
  ran: number;
  /** Pods whose published results changed. */
  changed: string[];
  /** Pods with a running container whose liveness or startup probe failed, or with a sidecar whose startup
   * probe just succeeded (the next init container may start): sync them with results(uid). */
  needsSync: string[];
}

export interface ProberOptions {
  cri: CriClient;
  /** Connections to pods (httpGet, tcpSocket, grpc); absent where the pod cannot be reached (Workers). */
  network?: ProbeNetwork;
  store?: ProbeStateStore;
  /** The node's IP: a hostNetwork pod's IP when the runtime reports none. */
  hostIP?: string;
  onProbe?: (e: ProbeEvent) => void;
}

export interface Prober {
  /** The desired pods: workers for their probes; pods not listed are forgotten. */
  update(pods: readonly Pod[]): void;
  /** Add or replace one pod (a sync route's pod). */
  upsert(pod: Pod): void;
  remove(uid: string): void;
  /** The pod's latest runtime status; workers read container ids, states and start times from it. */
  observe(uid: string, status: PodStatus): void;
  /** The pod spec the prober holds. */
  spec(uid: string): Pod | undefined;
  /** Pods with a probe due at `now` (a loop refreshes their status before tick). */
  due(now: number): string[];
  /** The earliest time a probe is due, if any. */
  nextDue(): number | undefined;
  tick(now: number): Promise<TickResult>;
  results(uid: string): ProbeResults & PodProbeResults;
  /** Whether a pod has a running container with a failed liveness/startup result. */
  needsSync(uid: string): boolean;
}

const keyOf = (container: string, type: ProbeType) => `${container}/${type}`;
/** The containers kubelet probes: sidecars (restartable init containers) and the app containers. */
const probed = (pod: Pod): Container[] => [
  ...(pod.spec.initContainers ?? []).filter(isRestartableInitContainer),
  ...pod.spec.containers,
];
const TYPES: ProbeType[] = ["startup", "liveness", "readiness"];

export function createProber(o: ProberOptions): Prober {
  const store = o.store ?? new MemoryProbeStateStore();
  const pods = new Map<string, Pod>();
  const statuses = new Map<string, PodStatus>();
  const inFlight = new Set<string>();

  const probesOf = (pod: Pod) =>
    probed(pod).flatMap((c) => TYPES.filter((t) => c[PROBE_FIELD[t]] !== undefined).map((t) => ({ c, t })));

  function upsert(pod: Pod) {
    const uid = pod.metadata.uid;
    pods.set(uid, pod);
    const want = probesOf(pod);
    if (want.length === 0) {
      store.delete(uid);
      return;
    }
    const prev = store.get(uid) ?? {};
    const next: PodProbeState = {};
    // A new worker's ticker fires at once (kubelet adds jitter only in the first period after it starts).
    for (const { c, t } of want)
      next[keyOf(c.name, t)] = prev[keyOf(c.name, t)] ?? {
        containerId: "",
        result: INITIAL[t],
        changedAt: 0,
        lastResult: undefined,
        resultRun: 0,
        onHold: false,
        nextAt: 0,
      };
    store.set(uid, next);
  }

  function remove(uid: string) {
    pods.delete(uid);
    statuses.delete(uid);
    store.delete(uid);
  }

  const newest = (status: PodStatus | undefined, name: string): ContainerStatus | undefined =>
    status?.containerStatuses.find((c) => c.name === name);

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
    uid: string,
    pod: Pod,
    c: Container,
    t: ProbeType,
    state: PodProbeState,
    now: number,
  ): Promise<{ changed: boolean; ran: boolean; started?: boolean }> {
    const w = state[keyOf(c.name, t)]!;
    const status = statuses.get(uid);
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
    if (w.lastResult === result) w.resultRun++;
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

  function needsSync(uid: string): boolean {
    const state = store.get(uid);
    const pod = pods.get(uid);
    if (!state || !pod) return false;
    for (const c of probed(pod))
      for (const t of ["liveness", "startup"] as const) {
        const w = state[keyOf(c.name, t)];
        const inst = newest(statuses.get(uid), c.name);
        if (w && inst && inst.state === "running" && w.containerId === inst.id && w.result === "Failure") return true;
      }
    return false;
  }

  return {
    update(list) {
      const keep = new Set(list.map((p) => p.metadata.uid));
      for (const uid of [...pods.keys()]) if (!keep.has(uid)) remove(uid);
      for (const p of list) upsert(p);
    },
    upsert,
    remove,
    observe(uid, status) {
      if (pods.has(uid)) statuses.set(uid, status);
    },
    spec: (uid) => pods.get(uid),
    due(now) {
      const out: string[] = [];
      for (const uid of pods.keys()) {
        const state = store.get(uid);
        if (state && Object.values(state).some((w) => w.nextAt <= now)) out.push(uid);
      }
      return out;
    },
    nextDue() {
      let min: number | undefined;
      for (const uid of pods.keys())
        for (const w of Object.values(store.get(uid) ?? {})) if (min === undefined || w.nextAt < min) min = w.nextAt;
      return min;
    },
    async tick(now) {
      const changed = new Set<string>();
      const sidecarStarted = new Set<string>();
      let ran = 0;
      const runs: Promise<void>[] = [];
      for (const [uid, pod] of pods) {
        const state = store.get(uid);
        if (!state) continue;
        for (const c of probed(pod))
          for (const t of TYPES) {
            const key = keyOf(c.name, t);
            const w = state[key];
            if (!w || w.nextAt > now || inFlight.has(`${uid}/${key}`)) continue;
            // The worker's ticker: every periodSeconds.
            const period = c[PROBE_FIELD[t]]!.periodSeconds * 1000;
            w.nextAt = w.nextAt + period > now ? w.nextAt + period : now + period;
            inFlight.add(`${uid}/${key}`);
            runs.push(
              doProbe(uid, pod, c, t, state, now)
                .then((r) => {
                  if (r.ran) ran++;
                  if (r.changed) changed.add(uid);
                  if (r.started) sidecarStarted.add(uid);
                })
                .finally(() => {
                  inFlight.delete(`${uid}/${key}`);
                  if (pods.has(uid)) store.set(uid, state);
                }),
            );
          }
      }
      await Promise.all(runs);
      return {
        ran,
        changed: [...changed],
        needsSync: [...pods.keys()].filter((uid) => needsSync(uid) || sidecarStarted.has(uid)),
      };
    },
    results(uid) {
      const liveness = new Map<string, "Success" | "Failure">();
      const startup = new Map<string, "Success" | "Failure">();
      const readiness = new Map<string, ProbeResult>();
      const changedAt = new Map<string, number>();
      const state = store.get(uid) ?? {};
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
    },
    needsSync,
  };
}
