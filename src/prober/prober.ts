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
// The node agent's sync loop (../syncloop/probe-tick.ts) is that owner: it observes each relist, ticks when
// probes are due and syncs the pods whose liveness or startup failed.
//
// Worker state (consecutive counts, last and published results, hold, next run) lives in a ProbeStateStore,
// so a store that persists it carries probing across a restart of podsync. Results are keyed by container id,
// as kubelet's results managers are: a new instance starts over from the probe type's initial result.
import type { CriClient } from "../cri/client.js";
import type { Pod } from "../pod/schema.js";
import type { PodProbeResults } from "../status/api-status.js";
import type { ProbeResults } from "../kuberuntime/compute-actions.js";
import type { PodStatus } from "../container/types.js";
import type { ProbeNetwork } from "./probe.js";
import {
  INITIAL,
  keyOf,
  newest,
  PROBE_FIELD,
  probed,
  resultsOf,
  tickWorkers,
  TYPES,
  type PodProbeState,
  type ProbeEvent,
} from "./worker.js";

export type { PodProbeState, ProbeEvent, ProbeType, WorkerState } from "./worker.js";

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
      const r = await tickWorkers({ o, store, pods, statuses, inFlight }, now);
      const needs = [...pods.keys()].filter((uid) => needsSync(uid) || r.sidecarStarted.has(uid));
      return { ran: r.ran, changed: r.changed, needsSync: needs };
    },
    results: (uid) => resultsOf(store.get(uid) ?? {}),
    needsSync,
  };
}
