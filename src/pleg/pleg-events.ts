// The PLEG's event half: the runtime's event stream turned into pod lifecycle events (a pod's container or sandbox
// exited, settled in CRI; an exit of an id no pod is known to own; the stream up or down). It syncs nothing itself:
// the sync loop dispatches what it hears to the pod's worker, as kubelet's Evented PLEG sends PodLifecycleEvents on
// its channel for syncLoopIteration (pkg/kubelet/pleg/evented.go; the per-pod coalescing is evented.ts).
import type { CriClient } from "../cri/client.js";
import type { ContainerEvent, EventStreamState } from "../cri/container-events.js";
import { GrpcCode, isCriError } from "../cri/errors.js";
import { ContainerState, PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import type { ReportedExits } from "../kuberuntime/reported-exits.js";
import type { NodeMetrics } from "../metrics/metrics.js";
import { createEventTrigger, type Owner } from "./evented.js";

/** What the PLEG tells the sync loop. */
export interface PodLifecycleHandler {
  /** A pod's container or sandbox exited: sync it (resolves once that sync is over; false: not synced, the pod is not
   * desired). `exited`: the exits the runtime reported that CRI may not show yet, by container id. */
  exited(uid: string, reason: string, exited: ReportedExits | undefined): Promise<boolean>;
  /** Something happened that only a relist can see: relist now (one for a burst). */
  relist(): void;
  /** The event stream went up or down. */
  stream(st: EventStreamState): void;
}

export interface EventedPlegOptions {
  cri: CriClient;
  /** Subscribe to the runtime's events; none: no events (the relist alone). */
  events?:
    | ((on: { event(e: ContainerEvent): void; state(s: EventStreamState): void }) => { close(): void })
    | undefined;
  metrics?: NodeMetrics | undefined;
  /** Which pod a container or sandbox id belongs to (the last relist's, plus what syncs made since). */
  ownerOf(id: string): Owner | undefined;
  stopped(): boolean;
  on: PodLifecycleHandler;
}

export interface EventedPleg {
  close(): void;
  /** Resolves when no exit's sync is running. */
  idle(): Promise<void>;
}

export function startEventedPleg(o: EventedPlegOptions): EventedPleg {
  const gone = (e: unknown) => {
    if (isCriError(e, GrpcCode.NOT_FOUND)) return undefined;
    throw e;
  };
  // An exit syncs its pod now (once CRI shows it, or with the exit its event carries), coalesced per pod.
  const trigger = createEventTrigger({
    ownerOf: o.ownerOf,
    stopped: async (id, sandbox) =>
      sandbox
        ? (await o.cri.podSandboxStatus({ podSandboxId: id }).catch(gone))?.status?.state !==
          PodSandboxState.SANDBOX_READY
        : (await o.cri.containerStatus({ containerId: id }).catch(gone))?.status?.state !==
          ContainerState.CONTAINER_RUNNING,
    sync: async (uid, reason, exited) => {
      if (o.stopped() || !(await o.on.exited(uid, reason, exited))) return;
      // A relist after it: what reads the relist (the prober's view, the Kubernetes API's pods and watches) sees
      // the restart now, not a whole evented period later. One for a burst: asked while one runs, it runs after.
      // Exits the sync took from their events are waited for in CRI first, so the relist reads them recorded.
      if (exited) await Promise.all([...exited.keys()].map((id) => trigger.settle(id, false)));
      o.on.relist();
    },
    unknown: () => o.on.relist(),
  });
  const watch = o.events?.({
    event: (e) => {
      o.metrics?.runtimeEvent?.(e.kind);
      if (!o.stopped()) trigger.handle(e);
    },
    state: (st) => {
      o.metrics?.eventStream?.(st.up, st.source ?? "");
      o.on.stream(st);
    },
  });
  return { close: () => watch?.close(), idle: () => trigger.idle() };
}
