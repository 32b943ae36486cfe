// The engine's one front door, shaped like kubelet's kubecontainer.Runtime: plan, sync, status and delete
// for one pod, and the runtime's own readiness. The HTTP routes, the Worker, the bench and the tests all
// come through here; nothing above the engine assembles a sync from its parts.
//
// Every call runs under the per-pod lock (plan and status excepted: they only read), so a request and any
// other caller never act on one pod at once; its runtime writes go through the lock's fence. Each result
// carries the number of CRI round trips it cost.
import type { CriClient } from "../cri/client.js";
import { countCalls } from "../cri/counting.js";
import { fenced } from "../cri/fenced.js";
import { PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import type { Pod } from "../pod/schema.js";
import { MemoryPullBackOff, type PullBackOffStore } from "./backoff.js";
import { computePodActions, type ProbeResults } from "./compute-actions.js";
import { deletePod, type PodRef } from "./kill.js";
import { defaultNodeConfig, type NodeConfig } from "./node-config.js";
import { MemoryPodLock, type PodLock } from "./pod-lock.js";
import { getPodStatus } from "./pod-status.js";
import { syncPod } from "./sync-pod.js";
import type { PodActions, PodStatus, SyncStep } from "./types.js";

export interface PodRuntimeOptions {
  node?: NodeConfig;
  now?: () => number;
  /** Deadline for PullImage (ms). */
  pullTimeoutMs?: number;
  /** Image-pull back-off: the one piece of kubelet state with no record in the runtime (a failed pull leaves
   * no container). In memory by default; losing it costs one early retry. */
  pullBackOff?: PullBackOffStore;
  /** Per-pod serialisation; in memory by default (Workers pass a Durable Object lock). */
  lock?: PodLock;
}

export interface Counted {
  /** CRI round trips this call made. */
  criCalls: number;
}

export interface PlanResult extends Counted {
  pod: PodRef;
  actions: PodActions;
  status: PodStatus;
}

export interface SyncResult extends PlanResult {
  /** Every step succeeded. */
  ok: boolean;
  steps: SyncStep[];
}

export interface StatusResult extends Counted {
  pod: PodRef;
  status: PodStatus;
}

export interface DeleteResult extends Counted {
  ok: boolean;
  pod: PodRef;
  steps: SyncStep[];
  /** Whether the runtime held anything of the pod. */
  deleted: boolean;
  /** Whether its newest sandbox was still ready. */
  wasRunning: boolean;
}

export interface RuntimeReadiness extends Counted {
  /** kubelet's runtime health check: the runtime answers and reports RuntimeReady. */
  ok: boolean;
  runtime: { name: string; version: string; apiVersion: string; conditions: Record<string, boolean> };
}

export interface PodRuntime {
  /** computePodActions only: what a sync would do, with no write to the runtime. */
  plan(pod: Pod, probes?: ProbeResults): Promise<PlanResult>;
  /** Read the pod's status, decide and act (kubelet's SyncPod), under the pod's lock. */
  sync(pod: Pod, probes?: ProbeResults): Promise<SyncResult>;
  /** The pod's full status as the runtime reports it; undefined when the runtime holds nothing of it. */
  status(uid: string): Promise<StatusResult | undefined>;
  /** Kill the pod and remove its containers and sandboxes. Without a grace period each container gets the
   * one it was started with. */
  delete(uid: string, gracePeriodSeconds?: number): Promise<DeleteResult>;
  ready(): Promise<RuntimeReadiness>;
}

const ref = (m: PodRef): PodRef => ({ namespace: m.namespace, name: m.name, uid: m.uid });

/** Run fn against a view of the client that counts its round trips, and report the count. */
async function counted<T>(cri: CriClient, fn: (cri: CriClient) => Promise<T>): Promise<T & Counted> {
  const c = countCalls(cri);
  const r = await fn(c.client);
  return { ...r, criCalls: c.calls };
}

export function createPodRuntime(cri: CriClient, o: PodRuntimeOptions = {}): PodRuntime {
  const lock = o.lock ?? new MemoryPodLock();
  const syncOptions = { node: o.node ?? defaultNodeConfig(), now: o.now ?? Date.now, pullTimeoutMs: o.pullTimeoutMs ?? 120_000, pullBackOff: o.pullBackOff ?? new MemoryPullBackOff() };

  return {
    plan: (pod, probes) =>
      counted(cri, async (c) => {
        const status = await getPodStatus(c, pod.metadata);
        return { pod: ref(pod.metadata), actions: computePodActions(pod, status, probes), status };
      }),

    sync: (pod, probes) =>
      lock.run(pod.metadata.uid, (fence) =>
        counted(fenced(cri, fence), async (c) => {
          const status = await getPodStatus(c, pod.metadata);
          const r = await syncPod(c, pod, status, syncOptions, computePodActions(pod, status, probes));
          return { ok: r.ok, pod: ref(pod.metadata), actions: r.actions, steps: r.steps, status };
        }),
      ),

    status: async (uid) => {
      const r = await counted(cri, async (c) => ({ status: await getPodStatus(c, { uid, name: "", namespace: "" }, "full") }));
      if (isEmpty(r.status)) return undefined;
      return { pod: refFromStatus(uid, r.status), status: r.status, criCalls: r.criCalls };
    },

    delete: (uid, gracePeriodSeconds) =>
      lock.run(uid, (fence) =>
        counted(fenced(cri, fence), async (c) => {
          const status = await getPodStatus(c, { uid, name: "", namespace: "" });
          const pod = refFromStatus(uid, status);
          if (isEmpty(status)) return { ok: true, pod, steps: [], deleted: false, wasRunning: false };
          const wasRunning = status.sandboxStatuses.some((s) => s.state === PodSandboxState.SANDBOX_READY);
          const r = await deletePod(c, { metadata: pod, spec: { terminationGracePeriodSeconds: gracePeriodSeconds } }, status);
          return { ok: r.ok, pod, steps: r.steps, deleted: true, wasRunning };
        }),
      ),

    ready: () =>
      counted(cri, async (c) => {
        const [v, st] = await Promise.all([c.version({}), c.status({})]);
        const conditions = Object.fromEntries((st.status?.conditions ?? []).map((k) => [k.type, k.status]));
        // NetworkReady is reported but not required: hostNetwork pods still work without it.
        return { ok: conditions["RuntimeReady"] === true, runtime: { name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion, conditions } };
      }),
  };
}

const isEmpty = (s: PodStatus) => s.sandboxStatuses.length === 0 && s.containerStatuses.length === 0;

/** Without the spec (DELETE, status), the pod's name and namespace come from its newest sandbox's metadata. */
function refFromStatus(uid: string, s: PodStatus): PodRef {
  const meta = s.sandboxStatuses[0]?.metadata;
  return { uid, name: meta?.name ?? "", namespace: meta?.namespace ?? "" };
}
