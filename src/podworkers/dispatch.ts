// The node's pod work as the pod workers run it: a request's sync of the entry it stored, the teardown of a pod that
// left the desired state (a PUT's dropped pods, a controller's deletes, DELETE), and the eviction manager's kills and
// re-creations. Callers await their own work's outcome.
//
// Each piece of work still hands the runtime a guard it checks under the pod's lock (GuardOptions.current): on Node
// the pod's worker is the only writer, so the check only finds a newer request's entry (kubelet's pod manager
// always gives the worker the latest pod; a podsync request carries its own); on Workers the lock is the node's
// Durable Object, shared by isolates that each have their own pod workers, and the check is what keeps an older
// request from rolling back a newer one there. A check that fails is StaleWorkError to the workers (superseded).
import type { Pod } from "../pod/schema.js";
import type { PodObjects } from "../pod/objects.js";
import type { ProbeResults } from "../kuberuntime/compute-actions.js";
import type { PodEviction, PodProbeResults } from "../status/api-status.js";
import {
  SupersededError,
  type DeleteResult,
  type GuardOptions,
  type PodRuntime,
  type SyncResult,
} from "../kubelet/pod-runtime.js";
import { PodWorkers, StaleWorkError, type PodWork, type WorkOutcome } from "./pod-workers.js";

/** What the work asks of the desired state (the store is podsync's pod manager). */
export interface StoreView<E> {
  /** `entry` (what a request stored) is still stored, or an entry with the same spec is. */
  stillStored(uid: string, entry: E): Promise<boolean>;
  /** The store holds no entry of the pod. */
  absent(uid: string): Promise<boolean>;
  /** Two entries with one key ask for the same (a request replaced by one with its spec gets that one's result). */
  specKey(entry: E): string;
}

export interface PodDispatchHooks {
  /** A request's sync read the pod back (the loop's relist needs not read it again). */
  synced?: (uid: string, r: SyncResult) => void;
  /** A request's sync is over, whatever became of it. */
  requestDone?: (uid: string) => void;
}

export interface SyncRequest<E> {
  runtime: Pick<PodRuntime, "sync" | "delete">;
  entry: E;
  pod: Pod;
  objects?: PodObjects | undefined;
  /** Read when the work runs (the prober learnt the pod before it was dispatched). */
  probes?: (() => (ProbeResults & PodProbeResults) | undefined) | undefined;
  slot?: PodWork<unknown>["slot"];
  /** The request ran the pod through the admission pipeline: the runtime does not admit it again. */
  admitted?: boolean | undefined;
}

/** A request's sync: what it did, and the teardown it ran when the pod left the store while it ran. */
export type RequestSyncResult = SyncResult & { left?: DeleteResult | undefined };

export interface KillRequest {
  runtime: Pick<PodRuntime, "delete" | "terminating">;
  uid: string;
  gracePeriodSeconds?: number | undefined;
  /** The pod as last desired (its preStop hooks). */
  spec?: Pod | undefined;
  slot?: PodWork<unknown>["slot"];
  /** Kill whatever the store says, even on a terminated worker (DELETE, the eviction manager's re-creation): the
   * pod is marked Terminating and its running sync cancelled at once. Default: only if still out of the store. */
  always?: boolean | undefined;
}

export interface EvictRequest {
  runtime: PodRuntime;
  pod: Pod;
  eviction: PodEviction;
}

export interface PodDispatch<E> {
  readonly workers: PodWorkers;
  /** The loop's hooks, set once it starts. */
  hooks: PodDispatchHooks;
  sync(r: SyncRequest<E>): Promise<WorkOutcome<RequestSyncResult>>;
  kill(r: KillRequest): Promise<WorkOutcome<DeleteResult>>;
  /** `runtime`'s delete, dispatched as a kill to the pod's worker (the controllers' deletes). */
  killing(runtime: PodRuntime): Pick<PodRuntime, "delete">;
  /** The eviction manager's kill (kubelet's evictPod → UpdatePod with a kill), dispatched to the pod's worker. */
  evict(r: EvictRequest): Promise<WorkOutcome<EvictResult>>;
  /** What the eviction manager acts through: its evictions and re-creations dispatched to the pods' workers. */
  evicting(runtime: PodRuntime): Evicting;
}

type EvictResult = Awaited<ReturnType<PodRuntime["evict"]>>;
export type Evicting = Pick<PodRuntime, "evict" | "delete" | "eviction" | "forgetEviction">;

/** The runtime's guard failed: the work was moot. */
function stale(e: unknown): never {
  if (e instanceof SupersededError) throw new StaleWorkError(e.message);
  throw e;
}

/** `shared: false`: every call gets a worker of its own, so no work is queued across requests. On Workers an isolate
 * must not resolve one request's promise from another's (workerd cancels it): there the runtime's Durable Object
 * lock, with each work's guard, orders a pod's callers, as before the pod workers. */
export function createPodDispatch<E>(
  store: StoreView<E>,
  shared: PodWorkers | false = new PodWorkers(),
): PodDispatch<E> {
  const workers = shared || new PodWorkers();
  const of = () => shared || new PodWorkers();
  const kill = (k: KillRequest) => {
    const guard: GuardOptions | undefined = k.always ? undefined : { current: () => store.absent(k.uid) };
    const w = of();
    // kubelet's UpdatePod with a kill: the pod is terminating from now, and its running sync is cancelled.
    if (k.always) k.runtime.terminating?.(k.uid, k.gracePeriodSeconds, k.spec);
    const done = w.update(k.uid, {
      type: "kill",
      slot: k.slot,
      always: k.always,
      run: () => k.runtime.delete(k.uid, k.gracePeriodSeconds, guard, k.spec).catch(stale),
    });
    // Cleanup (kubelet's SyncKnownPods, here at once): a terminated pod the store no longer holds loses its worker
    // (only if idle: a request's restart may follow; the loop's housekeeping catches any left).
    void done.then(
      async () => (await store.absent(k.uid)) && w.forget(k.uid),
      () => undefined,
    );
    return done;
  };
  const d: PodDispatch<E> = {
    workers,
    hooks: {},
    sync(q) {
      const uid = q.pod.metadata.uid;
      const guard: GuardOptions = { current: () => store.stillStored(uid, q.entry), admitted: q.admitted === true };
      const w = of();
      const run = async (): Promise<RequestSyncResult> => {
        const r = await q.runtime.sync(q.pod, q.probes?.(), q.objects, guard).catch(stale);
        d.hooks.synced?.(uid, r);
        if (!(await store.absent(uid))) return r;
        // It left the store while this sync ran. A kill waiting behind this work (the DELETE that removed it, a
        // PUT's teardown) removes what it made, and tells its own caller what it removed (a DELETE's `deleted`);
        // with none waiting, nothing else will, so what it made goes again here.
        if (w.killPending(uid))
          return { ...r, left: { ok: true, pod: r.pod, steps: [], deleted: false, wasRunning: false, criCalls: 0 } };
        return { ...r, left: await q.runtime.delete(uid) };
      };
      let key: string | undefined;
      const keyOf = () => (key ??= store.specKey(q.entry));
      return w.update(uid, { type: "update", key: keyOf, slot: q.slot, run }).finally(() => d.hooks.requestDone?.(uid));
    },
    kill,
    evict: (r) =>
      of().update(r.pod.metadata.uid, { type: "kill", evict: true, run: () => r.runtime.evict(r.pod, r.eviction) }),
    evicting(runtime) {
      return {
        // An eviction the worker ignored (the pod is being torn down) had nothing left to kill.
        evict: async (pod, eviction) => {
          const o = await d.evict({ runtime, pod, eviction });
          return o.kind === "done" ? o.value : { ok: true, steps: [], criCalls: 0 };
        },
        delete: async (uid, grace, _guard, spec) => {
          const o = await kill({ runtime, uid, gracePeriodSeconds: grace, spec, always: true });
          if (o.kind === "done") return o.value;
          throw new Error(`the delete of pod ${uid} was ${o.kind}`);
        },
        eviction: (uid) => runtime.eviction(uid),
        forgetEviction: (uid) => runtime.forgetEviction(uid),
      };
    },
    killing(runtime) {
      return {
        delete: async (uid, grace, _guard, spec) => {
          const o = await kill({ runtime, uid, gracePeriodSeconds: grace, spec });
          if (o.kind === "done") return o.value;
          throw new SupersededError(`the delete of pod ${uid} was superseded: the pod is desired again`);
        },
      };
    },
  };
  return d;
}

/** A counting semaphore: at most `n` holders at once, the others in order (a PUT's concurrency, the loop's). */
export function slots(n: number): () => Promise<() => void> {
  let free = n;
  const waiting: (() => void)[] = [];
  const release = () => {
    free++;
    waiting.shift()?.();
  };
  return () =>
    new Promise((resolve) => {
      const grant = () => {
        free--;
        resolve(release);
      };
      if (free > 0) grant();
      else waiting.push(grant);
    });
}
