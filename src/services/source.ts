// The node's Services as the data plane, cluster DNS, the env vars and the Kubernetes API read them: the stored
// Services, the node's pods as the Kubernetes API shows them (their readiness from the prober, through the
// loop's relist), and the EndpointSlices and Endpoints computed from both (endpointslice/). The source is fed:
// each change of either feed recomputes once (coalesced to one pass per turn of the event loop), and
// subscribers are told only when the snapshot changed. A pod whose readiness probe fails leaves its Service's
// ready endpoints as soon as the relist that follows the probe result has fed the pods (the loop relists at once
// on a changed result: src/syncloop/).
//
// The data plane (src/services/proxy, src/services/dns) subscribes: `subscribe(cb)` then `snapshot()` in cb.
// Everything in a snapshot is upstream's JSON shape (v1.Service, discovery.k8s.io/v1 EndpointSlice, v1.Endpoints,
// v1.Pod), never mutated after it is handed out.
import type { Service } from "../pod/workloads/service.js";
import { computeEndpointSlices, type EndpointPod, type EndpointSlice } from "./endpointslice/slices.js";
import { endpointsFromSlices, type V1Endpoints } from "./endpointslice/endpoints.js";

/** One kind of object, as the node holds it now, and a way to hear that it changed. */
export interface ObjectFeed<T> {
  list(): readonly T[] | Promise<readonly T[]>;
  /** cb is called after each change; returns the unsubscribe. */
  subscribe(cb: () => void): () => void;
}

export interface ServiceSnapshot {
  /** Increases with every change of the snapshot. */
  version: number;
  services: readonly Service[];
  endpointSlices: readonly EndpointSlice[];
  endpoints: readonly V1Endpoints[];
  pods: readonly EndpointPod[];
}

export interface ServiceSource {
  snapshot(): ServiceSnapshot;
  /** Told after each change of the snapshot (its Services, slices or pods); returns the unsubscribe. */
  subscribe(cb: () => void): () => void;
  /** Recompute now (at start, and in tests); resolves when the snapshot is current. */
  refresh(): Promise<void>;
  stop(): void;
}

export interface ServiceSourceOptions<P extends EndpointPod> {
  services: ObjectFeed<Service>;
  pods: ObjectFeed<P>;
  onError?: (e: unknown) => void;
}

/** The Services' EndpointSlices and Endpoints over the pods: the pure part of a pass. */
export function computeAll(
  services: readonly Service[],
  pods: readonly EndpointPod[],
): { endpointSlices: EndpointSlice[]; endpoints: V1Endpoints[] } {
  const endpointSlices: EndpointSlice[] = [];
  const endpoints: V1Endpoints[] = [];
  for (const s of services) {
    const slices = computeEndpointSlices(s, pods);
    endpointSlices.push(...slices);
    const ep = endpointsFromSlices(s, slices);
    if (ep) endpoints.push(ep);
  }
  return { endpointSlices, endpoints };
}

export function createServiceSource<P extends EndpointPod>(o: ServiceSourceOptions<P>): ServiceSource {
  let snap: ServiceSnapshot = { version: 0, services: [], endpointSlices: [], endpoints: [], pods: [] };
  let lastJson = "";
  const subscribers = new Set<() => void>();
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;

  const pass = async () => {
    const [services, pods] = await Promise.all([o.services.list(), o.pods.list()]);
    const { endpointSlices, endpoints } = computeAll(services, pods);
    const json = JSON.stringify([services, endpointSlices]);
    // The pods' objects are rebuilt only when they change (the pods hub keeps each one until then): a new object
    // or a changed set is a change of the snapshot's pods, without comparing their contents.
    const podsSame = pods.length === snap.pods.length && pods.every((p, i) => p === snap.pods[i]);
    if (json === lastJson && podsSame) return;
    lastJson = json;
    snap = { version: snap.version + 1, services: [...services], endpointSlices, endpoints, pods: [...pods] };
    for (const cb of [...subscribers])
      try {
        cb();
      } catch (e) {
        o.onError?.(e);
      }
  };
  /** One pass at a time; a change during a pass brings one more after it. */
  const refresh = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await pass();
        } while (again && !stopped);
      } catch (e) {
        o.onError?.(e);
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  let scheduled = false;
  const changed = () => {
    if (scheduled || stopped) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      void refresh();
    });
  };
  const unsubscribe = [o.services.subscribe(changed), o.pods.subscribe(changed)];
  return {
    snapshot: () => snap,
    subscribe(cb) {
      subscribers.add(cb);
      return () => subscribers.delete(cb);
    },
    refresh,
    stop() {
      stopped = true;
      for (const u of unsubscribe) u();
      subscribers.clear();
    },
  };
}
