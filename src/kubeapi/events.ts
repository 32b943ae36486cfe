// core/v1 Events for what podsync did to a pod, with kubelet's reasons and messages
// (pkg/kubelet/events/event.go; kuberuntime_container.go startContainer/killContainer,
// images/image_manager.go, pod_workers' back-off), kept in a bounded ring per node and watched through a
// WatchHub. Events are derived from the results of the engine's front door (the SyncPod steps, a DELETE's
// steps), not recorded from inside it: a sync's steps say what kubelet would have recorded.
//
// As client-go's EventCorrelator does, an event equal to one already held (same object, type, reason,
// message) is not added again: its count goes up and lastTimestamp moves.
import { apiTime } from "../status/api-status.js";
import type { Pod } from "../pod/schema.js";
import type { SyncStep } from "../container/types.js";
import type { PodRuntime, SyncResult } from "../kubelet/pod-runtime.js";
import { type RvClock, WatchHub } from "./watch-hub.js";

export interface ObjectReference {
  /** Pod, Node, or a workload kind (a controller's refusal). */
  kind: string;
  namespace?: string;
  name: string;
  uid: string;
  apiVersion: string;
  fieldPath?: string;
}

export interface V1Event {
  apiVersion: "v1";
  kind: "Event";
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion?: string;
    creationTimestamp: string | null;
  };
  involvedObject: ObjectReference;
  reason: string;
  message: string;
  source: { component: "kubelet"; host: string };
  firstTimestamp: string | null;
  lastTimestamp: string | null;
  count: number;
  type: "Normal" | "Warning";
  eventTime: null;
  reportingComponent: "kubelet";
  reportingInstance: string;
}

export interface EventSpec {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /** spec.containers{main}, spec.initContainers{init} */
  fieldPath?: string;
}

export interface PodRef {
  uid: string;
  name: string;
  namespace: string;
}

export class EventRecorder {
  readonly hub: WatchHub<V1Event>;
  private seq = 0;

  constructor(
    clock: RvClock,
    private readonly nodeName: string,
    /** Events kept (oldest dropped first; kubelet's events live an hour in the API server). */
    private readonly capacity = 1000,
    private readonly now: () => number = Date.now,
  ) {
    this.hub = new WatchHub<V1Event>(clock, {
      key: (e) => `${e.metadata.namespace}/${e.metadata.name}`,
      history: capacity,
    });
    this.hub.replaceAll([]);
  }

  /** Pulling events recorded as their pull started, by `<uid>\0<message>`, until that sync's steps are recorded. */
  private readonly livePulls = new Set<string>();

  /** kubelet's Pulling, recorded as the pull starts (the engine's onPulling), so `kubectl get events -w` and the
   * CLI's progress show it while the pull runs; recordingEvents then leaves the steps' own Pulling out. */
  pulling(pod: Pod, container: string, image: string): void {
    const message = `Pulling image "${image}"`;
    const at = fieldPath(pod, container);
    this.record(pod.metadata, { type: "Normal", reason: "Pulling", message, ...(at ? { fieldPath: at } : {}) });
    this.livePulls.add(`${pod.metadata.uid}\0${message}`);
  }

  /** Whether this Pulling was recorded live; either way it is forgotten. */
  takeLivePull(uid: string, message: string): boolean {
    return this.livePulls.delete(`${uid}\0${message}`);
  }

  /** A sync ended: its live pulls that no step reported (it threw) are forgotten. */
  forgetLivePulls(uid: string): void {
    for (const k of this.livePulls) if (k.startsWith(`${uid}\0`)) this.livePulls.delete(k);
  }

  /** Record against a pod (or, with its kind, a workload), or (podRef undefined) against this node. */
  record(obj: (PodRef & { kind?: string; apiVersion?: string }) | undefined, e: EventSpec): void {
    const involved: ObjectReference = obj
      ? {
          kind: obj.kind ?? "Pod",
          namespace: obj.namespace,
          name: obj.name,
          uid: obj.uid,
          apiVersion: obj.apiVersion ?? "v1",
          ...(e.fieldPath ? { fieldPath: e.fieldPath } : {}),
        }
      : { kind: "Node", name: this.nodeName, uid: this.nodeName, apiVersion: "v1" };
    const at = apiTime(this.now());
    const same = this.hub
      .list()
      .find(
        (x) =>
          x.involvedObject.uid === involved.uid &&
          x.involvedObject.fieldPath === involved.fieldPath &&
          x.reason === e.reason &&
          x.message === e.message &&
          x.type === e.type,
      );
    if (same) {
      this.hub.upsert({ ...same, count: same.count + 1, lastTimestamp: at });
      return;
    }
    const namespace = involved.namespace ?? "default";
    // client-go's name: <object>.<unix nanoseconds, hex>; a sequence keeps two in one millisecond apart.
    const name = `${involved.name}.${(BigInt(this.now()) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`;
    this.hub.upsert({
      apiVersion: "v1",
      kind: "Event",
      metadata: { name, namespace, uid: crypto.randomUUID(), creationTimestamp: at },
      involvedObject: involved,
      reason: e.reason,
      message: e.message,
      source: { component: "kubelet", host: this.nodeName },
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
      type: e.type,
      eventTime: null,
      reportingComponent: "kubelet",
      reportingInstance: this.nodeName,
    });
    const all = this.hub.list();
    if (all.length > this.capacity) {
      const oldest = all.reduce((a, b) =>
        Date.parse(a.lastTimestamp ?? "") <= Date.parse(b.lastTimestamp ?? "") ? a : b,
      );
      this.hub.remove(`${oldest.metadata.namespace}/${oldest.metadata.name}`);
    }
  }
}

/** format.Pod: name_namespace(uid) */
const formatPod = (p: PodRef) => `${p.name}_${p.namespace}(${p.uid})`;

function fieldPath(pod: Pod | undefined, container: string): string | undefined {
  if (!pod) return `spec.containers{${container}}`;
  if (pod.spec.containers.some((c) => c.name === container)) return `spec.containers{${container}}`;
  if (pod.spec.initContainers?.some((c) => c.name === container)) return `spec.initContainers{${container}}`;
  return undefined;
}

/** The events kubelet would have recorded for these SyncPod (or KillPod) steps. */
export function eventsFromSteps(
  ref: PodRef,
  pod: Pod | undefined,
  steps: readonly SyncStep[],
  o: { sandboxChanged?: boolean } = {},
): EventSpec[] {
  const out: EventSpec[] = [];
  if (o.sandboxChanged)
    out.push({
      type: "Normal",
      reason: "SandboxChanged",
      message: "Pod sandbox changed, it will be killed and re-created.",
    });
  for (const s of steps) {
    const fp =
      s.action === "StartContainer" || s.action === "InitContainer" || s.action === "KillContainer"
        ? fieldPath(pod, s.target)
        : undefined;
    const at = fp ? { fieldPath: fp } : {};
    const image =
      pod && fp
        ? [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((c) => c.name === s.target)?.image
        : undefined;
    switch (s.action) {
      case "StartContainer":
      case "InitContainer":
        if (s.ok) {
          // The step's message: "<the image manager's event>; started <id> (restartCount n)".
          const pulled = (s.message ?? "").split("; started ")[0] ?? "";
          if (pulled.startsWith("Successfully pulled image") && image)
            out.push({ type: "Normal", reason: "Pulling", message: `Pulling image "${image}"`, ...at });
          if (pulled) out.push({ type: "Normal", reason: "Pulled", message: pulled, ...at });
          out.push({ type: "Normal", reason: "Created", message: `Created container: ${s.target}`, ...at });
          out.push({ type: "Normal", reason: "Started", message: `Started container ${s.target}`, ...at });
          break;
        }
        switch (s.error) {
          case "CrashLoopBackOff":
            out.push({
              type: "Warning",
              reason: "BackOff",
              message: `Back-off restarting failed container ${s.target} in pod ${formatPod(ref)}`,
              ...at,
            });
            break;
          case "ErrImagePull":
            if (image) out.push({ type: "Normal", reason: "Pulling", message: `Pulling image "${image}"`, ...at });
            out.push({ type: "Warning", reason: "Failed", message: s.message ?? "Failed to pull image", ...at });
            out.push({ type: "Warning", reason: "Failed", message: "Error: ErrImagePull", ...at });
            break;
          case "ImagePullBackOff":
            out.push({
              type: "Normal",
              reason: "BackOff",
              message: s.message ?? `Back-off pulling image "${image ?? ""}"`,
              ...at,
            });
            out.push({ type: "Warning", reason: "Failed", message: "Error: ImagePullBackOff", ...at });
            break;
          case "ErrImageNeverPull":
            out.push({ type: "Warning", reason: "ErrImageNeverPull", message: s.message ?? "", ...at });
            out.push({ type: "Warning", reason: "Failed", message: "Error: ErrImageNeverPull", ...at });
            break;
          case "ImageInspectError":
            out.push({ type: "Warning", reason: "InspectFailed", message: s.message ?? "", ...at });
            break;
          default:
            out.push({
              type: "Warning",
              reason: "Failed",
              message: `Error: ${s.message ?? s.error ?? "failed"}`,
              ...at,
            });
        }
        break;
      case "KillContainer":
        // killContainer's message: the reason it was given ("Container main failed liveness probe, will be
        // restarted"), else "Stopping container <name>" (a DELETE's kill step says only which id it stopped).
        if (s.ok)
          out.push({
            type: "Normal",
            reason: "Killing",
            message: s.message && !s.message.startsWith("stopped ") ? s.message : `Stopping container ${s.target}`,
            ...at,
          });
        else
          out.push({
            type: "Warning",
            reason: "FailedKillPod",
            message: `error killing pod: ${s.message ?? "failed"}`,
          });
        break;
      case "MountVolumes":
        if (!s.ok) out.push({ type: "Warning", reason: "FailedMount", message: s.message ?? "" });
        break;
      case "CreatePodSandbox":
        if (!s.ok)
          out.push({
            type: "Warning",
            reason: "FailedCreatePodSandBox",
            message: `Failed to create pod sandbox: ${s.message ?? ""}`,
          });
        break;
      case "KillPod":
      case "KillPodSandbox":
        if (!s.ok)
          out.push({
            type: "Warning",
            reason: "FailedKillPod",
            message: `error killing pod: ${s.message ?? "failed"}`,
          });
        break;
      default:
        break;
    }
  }
  return out;
}

/** The events of one sync through the front door. */
export function syncEvents(pod: Pod, r: SyncResult): EventSpec[] {
  // A sandbox made again for a pod that had one: kubelet's SandboxChanged.
  const sandboxChanged = r.actions.createSandbox && r.status.sandboxStatuses.length > 0;
  return eventsFromSteps(pod.metadata, pod, r.steps, { sandboxChanged });
}

/** The events of one delete through the front door. */
export const deleteEvents = (r: Awaited<ReturnType<PodRuntime["delete"]>>): EventSpec[] =>
  r.deleted ? eventsFromSteps(r.pod, undefined, r.steps) : [];

/** The engine's front door, recording the events of what each sync, eviction and delete did (for every caller
 * that goes through it: requests and the loop), and telling `after` what they read back (the pod feed). */
export function recordingEvents(
  rt: PodRuntime,
  recorder: EventRecorder,
  after?: {
    synced(pod: Pod, r: SyncResult): void;
    deleted(uid: string): void;
    evicted?(uid: string): void;
    /** The delete was asked (the pod is Terminating from now). */
    deleting?(uid: string): void;
  },
): PodRuntime {
  return {
    ...rt,
    sync: async (pod, probes, objects, guard) => {
      try {
        const r = await rt.sync(pod, probes, objects, guard);
        after?.synced(pod, r);
        for (const e of syncEvents(pod, r))
          if (e.reason !== "Pulling" || !recorder.takeLivePull(pod.metadata.uid, e.message))
            recorder.record(pod.metadata, e);
        return r;
      } finally {
        recorder.forgetLivePulls(pod.metadata.uid);
      }
    },
    // evictPod: the Warning event with the eviction's reason and message first, then what the kill did.
    evict: async (pod, eviction) => {
      recorder.record(pod.metadata, { type: "Warning", reason: eviction.reason, message: eviction.message });
      const r = await rt.evict(pod, eviction);
      after?.evicted?.(pod.metadata.uid);
      for (const e of eventsFromSteps(pod.metadata, pod, r.steps)) recorder.record(pod.metadata, e);
      return r;
    },
    delete: async (uid, grace, guard, spec) => {
      const running = rt.delete(uid, grace, guard, spec);
      after?.deleting?.(uid);
      const r = await running;
      after?.deleted(uid);
      for (const e of deleteEvents(r)) recorder.record(r.pod, e);
      return r;
    },
  };
}
