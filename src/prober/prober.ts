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
  newest,
  resultsOf,
  tickWorkers,
  workerRefs,
  type PodProbeState,
  type PodWorkers,
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
  /** The pods with probes, and their workers (made when the pod's spec object changes). */
  const probedPods = new Map<string, PodWorkers>();
  const statuses = new Map<string, PodStatus>();
  const inFlight = new Set<string>();

  function upsert(pod: Pod) {
    const uid = pod.metadata.uid;
    // The same spec object again (a loop sync hands over the stored pod): its workers stand.
    if (pods.get(uid) === pod) return;
    pods.set(uid, pod);
    const refs = workerRefs(pod);
    if (refs.length === 0) {
      probedPods.delete(uid);
      store.delete(uid);
      return;
    }
    probedPods.set(uid, { pod, refs });
    const prev = store.get(uid) ?? {};
    const next: PodProbeState = {};
    // A new worker's ticker fires at once (kubelet adds jitter only in the first period after it starts).
    for (const { t, key } of refs)
      next[key] = prev[key] ?? {
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
    probedPods.delete(uid);
    statuses.delete(uid);
    store.delete(uid);
  }

  function needsSync(uid: string): boolean {
    const state = store.get(uid);
    const workers = probedPods.get(uid);
    if (!state || !workers) return false;
    for (const { c, t, key } of workers.refs) {
      if (t === "readiness") continue;
      const w = state[key];
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
    nextDue() {
      let min: number | undefined;
      for (const [uid, { refs }] of probedPods) {
        const state = store.get(uid);
        if (state)
          for (const { key } of refs) {
            const at = state[key]?.nextAt;
            if (at !== undefined && (min === undefined || at < min)) min = at;
          }
      }
      return min;
    },
    async tick(now) {
      const r = await tickWorkers({ o, store, pods: probedPods, statuses, inFlight }, now);
      const needs: string[] = [];
      for (const uid of probedPods.keys()) if (needsSync(uid) || r.sidecarStarted.has(uid)) needs.push(uid);
      return { ran: r.ran, changed: r.changed, needsSync: needs };
    },
    results: (uid) => resultsOf(store.get(uid) ?? {}),
    needsSync,
  };
}
