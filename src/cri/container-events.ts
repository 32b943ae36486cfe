// The runtime's container lifecycle events, as one stream that reconnects: what kubelet's Evented PLEG reads
// (pkg/kubelet/pleg/evented.go). Two sources on the same socket, chosen from CRI Version:
//   - CRI GetContainerEvents (containerd >= 1.7, CRI-O): each event names the container and carries its pod's
//     sandbox status (so its pod uid), and is sent after the runtime's CRI state changed;
//   - containerd < 1.7 has no such CRI method; its own event service (containerd.services.events.v1.Events/
//     Subscribe) publishes the task and container events of the `k8s.io` namespace (container_id, or id for a
//     container's: the CRI container id, or the sandbox id for its pause task). They come before the CRI plugin
//     records them (a TaskExit before it deletes the task, pkg/cri/server/events.go handleContainerExit), so such
//     events are marked `settled: false`: a reader must see the change in CRI's own status before acting on it,
//     or act on the exit the TaskExit itself reports (its status and time: `exit`), which is what the CRI plugin
//     records a moment later (pleg/evented.ts).
//     Exits sync their pods (pleg/evented.ts); every event voids its pod's cached status (container/cache.ts).
// A stream that fails or ends is opened again after a back-off (doubling, capped), and every change of state
// is reported, so the reader can fall back to polling while it is down.
import { create, fromBinary, type DescMessage, type DescMethod, type MessageShape } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import {
  ContainerEventType,
  RuntimeService,
  type ContainerEventResponse,
  type VersionResponse,
} from "../gen/runtime/v1/api_pb.js";
import { Events, type Envelope } from "../gen/containerd/services/events/v1/events_pb.js";
import { TaskExitSchema } from "../gen/containerd/events/task_pb.js";
import { errorMessage, type CriError } from "./errors.js";

export interface StreamHandlers<O> {
  message(m: O): void;
  /** The stream is open (connected, and not refused). */
  ready?(): void;
  /** The stream ended: an error, the runtime closing it, or the connection going. Called once. */
  end(e: CriError): void;
}

/** A transport that can hold a server-streaming call open (grpc-js; gRPC-Web over fetch has none here). */
export interface StreamTransport {
  serverStream<I extends DescMessage, O extends DescMessage>(
    method: DescMethod & { input: I; output: O },
    input: MessageShape<I>,
    on: StreamHandlers<MessageShape<O>>,
  ): () => void;
}

export type EventSource = "cri" | "containerd";

export interface ContainerEvent {
  /** The container's id, or a sandbox's (a sandbox's pause task exiting). */
  id: string;
  /** The pod's uid, when the event carries it (CRI events do; containerd's task events do not). */
  podUid?: string | undefined;
  /** exited: the process stopped; changed: created, started or removed. */
  kind: "exited" | "changed";
  /** Whether CRI's status already shows it (false for containerd's task events, see above). */
  settled: boolean;
  /** How the process ended, from the event itself (containerd's TaskExit). */
  exit?: RuntimeExit | undefined;
}

/** A container's exit as the runtime reported it: the code and the time (ms since epoch), which the CRI plugin
 * records as the container's exitCode and finishedAt. */
export interface RuntimeExit {
  code: number;
  at: number;
}

export interface EventStreamState {
  up: boolean;
  source?: EventSource | undefined;
  /** Why it is down (the last failure), when it is. */
  error?: string | undefined;
  /** Streams opened after a failure, since the watch began. */
  reconnects: number;
}

/** The first containerd release with CRI GetContainerEvents. */
const CRI_EVENTS_SINCE: [number, number] = [1, 7];

/** Which event source a runtime offers, from its CRI Version answer. */
export function eventSourceFor(v: Pick<VersionResponse, "runtimeName" | "runtimeVersion">): EventSource {
  if (v.runtimeName !== "containerd") return "cri";
  const m = /^v?(\d+)\.(\d+)/.exec(v.runtimeVersion);
  if (!m) return "cri";
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major < CRI_EVENTS_SINCE[0] || (major === CRI_EVENTS_SINCE[0] && minor < CRI_EVENTS_SINCE[1])
    ? "containerd"
    : "cri";
}

/** containerd's topic for a task's exit, and the filters (any of them) that keep the stream to the task and container
 * events of the CRI plugin's namespace. */
export const TASK_EXIT_TOPIC = "/tasks/exit";
export const CONTAINERD_EVENT_FILTERS = [
  'topic~="^/tasks/",namespace=="k8s.io"',
  'topic~="^/containers/",namespace=="k8s.io"',
];
/** An exec's (an exec probe's, kubectl exec's) events change nothing of the container. */
const EXEC_TOPICS = new Set(["/tasks/exec-added", "/tasks/exec-started"]);

/** A CRI container event → ours. */
export function fromCriEvent(e: ContainerEventResponse): ContainerEvent {
  return {
    id: e.containerId,
    podUid: e.podSandboxStatus?.metadata?.uid || undefined,
    kind: e.containerEventType === ContainerEventType.CONTAINER_STOPPED_EVENT ? "exited" : "changed",
    settled: true,
  };
}

/** A containerd envelope → ours: an init process's exit is an exit, another task or container event a change;
 * undefined for an exec's events (its exit has the exec's own id) and anything else. */
export function fromContainerdEnvelope(env: Envelope): ContainerEvent | undefined {
  if (!env.event || EXEC_TOPICS.has(env.topic)) return undefined;
  if (env.topic === TASK_EXIT_TOPIC) {
    const e = fromBinary(TaskExitSchema, env.event.value);
    if (!e.containerId || (e.id !== "" && e.id !== e.containerId)) return undefined;
    // Truncated to the ms, as the CRI plugin's finishedAt (ns) reads through nsToMs (protobuf-es's timestampMs rounds).
    const at = e.exitedAt ? Number(e.exitedAt.seconds) * 1000 + Math.floor(e.exitedAt.nanos / 1e6) : 0;
    return { id: e.containerId, kind: "exited", settled: false, ...(at > 0 && { exit: { code: e.exitStatus, at } }) };
  }
  if (!env.topic.startsWith("/tasks/") && !env.topic.startsWith("/containers/")) return undefined;
  const id = firstString(env.event.value);
  return id ? { id, kind: "changed", settled: false } : undefined;
}

/** Field 1 of a message, as a string: the container's id in every task event (container_id) and container
 * event (id) of containerd's api/events, so one reader serves them all without their schemas. */
function firstString(bytes: Uint8Array): string | undefined {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === WireType.LengthDelimited) return r.string();
    r.skip(wire, field);
  }
  return undefined;
}

export interface WatchOptions {
  transport: StreamTransport;
  /** CRI Version, asked before each (re)connection (the runtime may have been upgraded meanwhile). */
  version(): Promise<Pick<VersionResponse, "runtimeName" | "runtimeVersion">>;
  onEvent(e: ContainerEvent): void;
  onState(s: EventStreamState): void;
  /** Reconnect back-off: the first delay and the cap (ms). Default 500 ms doubling to 30 s. */
  backOffMs?: { initial: number; max: number };
}

export interface EventWatch {
  readonly state: EventStreamState;
  close(): void;
}

/** Open the runtime's event stream and keep it open. */
export function watchContainerEvents(o: WatchOptions): EventWatch {
  const initial = o.backOffMs?.initial ?? 500;
  const max = o.backOffMs?.max ?? 30_000;
  let delay = initial;
  let closed = false;
  let cancel: (() => void) | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let everUp = false;
  const state: EventStreamState = { up: false, reconnects: 0 };
  const set = (next: Partial<EventStreamState>) => {
    Object.assign(state, next);
    o.onState({ ...state });
  };

  const retry = (why: string) => {
    cancel = undefined;
    if (closed) return;
    // Reported once per change (up → down), or when the reason of being down changed.
    if (state.up || state.error !== why) set({ up: false, error: why });
    timer = setTimeout(open, delay);
    (timer as { unref?: () => void }).unref?.();
    delay = Math.min(max, delay * 2);
  };

  function subscribe(source: EventSource): () => void {
    const handlers = {
      ready: () => {
        delay = initial;
        if (everUp) state.reconnects++;
        everUp = true;
        set({ up: true, source, error: undefined });
      },
      end: (e: CriError) => retry(`${e.method}: ${e.codeName}: ${e.details}`),
    };
    if (source === "cri")
      return o.transport.serverStream(
        RuntimeService.method.getContainerEvents,
        create(RuntimeService.method.getContainerEvents.input),
        {
          ...handlers,
          message: (m) => o.onEvent(fromCriEvent(m)),
        },
      );
    const input = create(Events.method.subscribe.input, { filters: CONTAINERD_EVENT_FILTERS });
    return o.transport.serverStream(Events.method.subscribe, input, {
      ...handlers,
      message: (m) => {
        let e: ContainerEvent | undefined;
        try {
          e = fromContainerdEnvelope(m);
        } catch {
          return; // an envelope we cannot read changes nothing we would act on; the relist still sees it
        }
        if (e) o.onEvent(e);
      },
    });
  }

  function open() {
    timer = undefined;
    if (closed) return;
    o.version().then(
      (v) => {
        if (closed) return;
        const source = eventSourceFor(v);
        state.source = source;
        cancel = subscribe(source);
      },
      (e) => retry(`Version: ${errorMessage(e)}`),
    );
  }

  open();
  return {
    state,
    close() {
      closed = true;
      clearTimeout(timer);
      cancel?.();
      cancel = undefined;
    },
  };
}
