// Package status/ — v1.PodStatus as kubelet's generateAPIPodStatus makes it, and the reason cache.
// Imports kuberuntime/ (status from CRI, restart rules) and below; never the loop, the prober or HTTP.
//
// PodStatus (the runtime's view) → v1.PodStatus, as kubelet's generateAPIPodStatus builds it
// (pkg/kubelet/kubelet_pods.go: convertStatusToAPIStatus, convertToAPIContainerStatuses, getPhase;
// pkg/kubelet/status/generate.go: the conditions; pkg/kubelet/prober/prober_manager.go UpdatePodStatus:
// ready and started). Pure: a function of spec, runtime status, probe results, the last start-failure
// reasons and the clock. No I/O.
//
// Where kubelet uses state podsync does not keep, deliberately:
// - kubelet merges with the previous API status (oldPodStatus: restart counts and last states of removed
//   containers, terminal phases that must not be left). podsync has no previous status: it is derived from
//   the runtime each time (the newest two instances of each container give state and lastState, as in
//   kubelet; GC keeps one dead instance per container, so that is always there).
// - The waiting reason of a container that failed to start comes from kubelet's reasonCache (the last
//   sync's start error). podsync passes the same thing in (`reasons`, kept in memory by the front door);
//   when it has none (a restarted podsync, another replica) a crash loop is derived from the runtime
//   (backoff.ts crashLoopBackOff): CrashLoopBackOff while the back-off runs.
// - lastTransitionTime: kubelet's status manager stamps the time it saw a condition change. podsync derives
//   it from what the runtime and the prober record: sandbox creation, container start and finish times,
//   and the time a readiness/startup result last changed. See conditionTimes().
// - podIsTerminal is false (podsync has no pod worker that finishes a pod); getPhase still gives
//   Succeeded/Failed for restartPolicy Never/OnFailure as kubelet's does for a static pod.
import { PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import { isRestartableInitContainer, type Container, type Pod } from "../pod/schema.js";
import { crashLoopBackOff } from "../container/backoff.js";
import { podSandboxChanged, shouldContainerBeRestarted } from "../kuberuntime/compute-actions.js";
import { withoutCredentials } from "../kuberuntime/images.js";
import { formatPod } from "../kuberuntime/kill.js";
import { nsToMs, sortPodIPs } from "../kuberuntime/pod-status.js";
import { podQOS, type QOSClass } from "../kuberuntime/config/resources.js";
import type { ContainerStatus, PodStatus } from "../container/types.js";
import {
  DEADLINE_EXCEEDED_MESSAGE,
  DEADLINE_EXCEEDED_REASON,
  pastActiveDeadline,
  podStartMs,
} from "../lifecycle/active-deadline.js";

export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";
export type ConditionStatus = "True" | "False" | "Unknown";

export interface V1ContainerStateWaiting {
  reason?: string;
  message?: string;
}
export interface V1ContainerStateRunning {
  startedAt: string | null;
}
export interface V1ContainerStateTerminated {
  exitCode: number;
  reason?: string;
  message?: string;
  startedAt: string | null;
  finishedAt: string | null;
  containerID?: string;
}
export interface V1ContainerState {
  waiting?: V1ContainerStateWaiting;
  running?: V1ContainerStateRunning;
  terminated?: V1ContainerStateTerminated;
}
export interface V1ContainerStatus {
  name: string;
  state: V1ContainerState;
  lastState: V1ContainerState;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
}
export interface V1PodCondition {
  type: "PodReadyToStartContainers" | "Initialized" | "Ready" | "ContainersReady" | "PodScheduled" | "DisruptionTarget";
  status: ConditionStatus;
  reason?: string;
  message?: string;
  lastProbeTime: null;
  lastTransitionTime: string | null;
}
export interface V1PodStatus {
  phase: PodPhase;
  /** Why the pod is in its phase, when an internal module says (DeadlineExceeded, Evicted), or, reason
   * RuntimeError, that the runtime failed part of this pod's status (types.ts statusError). */
  reason?: string;
  message?: string;
  conditions: V1PodCondition[];
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: V1ContainerStatus[];
  containerStatuses: V1ContainerStatus[];
  qosClass: QOSClass;
}

/** status.reason of a pod whose status the runtime failed to report in full (podsync's, not kubelet's: kubelet
 * keeps its last status in its cache; podsync reads the runtime on every request). */
export const RUNTIME_ERROR_REASON = "RuntimeError";

export type ProbeResult = "Success" | "Failure" | "Unknown";

/** What the prober knows of a pod: results by container id (kubelet's results managers), and when each
 * readiness/startup result last changed (ms), for condition transition times. */
export interface PodProbeResults {
  liveness?: ReadonlyMap<string, ProbeResult>;
  readiness?: ReadonlyMap<string, ProbeResult>;
  startup?: ReadonlyMap<string, ProbeResult>;
  changedAt?: ReadonlyMap<string, number>;
}

/** kubelet's reasonCache entry: why the last start of a container failed. */
export interface StartFailure {
  reason: string;
  message: string;
}

export interface ApiStatusInput {
  pod: Pod;
  status: PodStatus;
  now: number;
  /** CRI Version's runtimeName: container ids are `<runtimeName>://<id>`. */
  runtimeName: string;
  /** The node's addresses (status.hostIPs; also podIPs of a hostNetwork pod). */
  hostIPs?: readonly string[];
  probes?: PodProbeResults | undefined;
  /** By container name. */
  reasons?: ReadonlyMap<string, StartFailure> | undefined;
  /** The eviction manager's verdict on the pod, if any (the runtime keeps it). */
  eviction?: PodEviction | undefined;
  /** Set by generateAPIPodStatus when the pod was evicted (its active deadline passed, or the eviction manager). */
  evicted?: boolean;
}

/** An internal module's eviction of the pod (kubelet's ShouldEvict): the pod is Failed with this reason. */
export interface PodEviction {
  reason: string;
  message: string;
  /** When (ms). */
  at: number;
  /** Evicted for going over its own limit (not for the node's disk pressure). */
  ownLimit?: boolean;
  /** The condition the eviction sets (eviction_manager.go: DisruptionTarget, reason TerminationByKubelet, for a
   * node-pressure eviction; a local storage limit's sets none). */
  condition?: { type: "DisruptionTarget"; reason: string; message: string } | undefined;
}

/** Kubernetes' wire form of metav1.Time: RFC 3339 in seconds; the zero time is null. */
export const apiTime = (ms: number): string | null =>
  ms > 0 ? new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z") : null;

const PodInitializing = "PodInitializing";
const ContainerCreating = "ContainerCreating";

// ---- getPhase ------------------------------------------------------------------------------------------

const statusOf = (info: readonly V1ContainerStatus[], name: string) => info.find((s) => s.name === name);

/** getPhase (kubelet_pods.go, with sidecars; without container restart rules, which podsync does not have).
 * `info` holds init and app container statuses together, as in kubelet. `podHasInitialized`: a regular
 * container of the current sandbox has started (kubecontainer.HasAnyActiveRegularContainerStarted), so sidecars
 * restarting do not send the pod back to Pending. A terminated sidecar does not count toward the phase. */
export function getPhase(
  pod: { spec: Pick<Pod["spec"], "initContainers" | "containers" | "restartPolicy"> },
  info: readonly V1ContainerStatus[],
  podIsTerminal = false,
  podHasInitialized = false,
): PodPhase {
  const spec = pod.spec;
  let pendingRegularInit = 0;
  let pendingRestartableInit = 0;
  let failedInitialization = 0;
  for (const c of spec.initContainers ?? []) {
    if (isRestartableInitContainer(c)) continue;
    const s = statusOf(info, c.name);
    if (!s) {
      pendingRegularInit++;
      continue;
    }
    if (s.state.running) pendingRegularInit++;
    else if (s.state.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInitialization++;
    } else if (s.state.waiting) {
      if (s.lastState.terminated) {
        if (s.lastState.terminated.exitCode !== 0) failedInitialization++;
      } else pendingRegularInit++;
    } else pendingRegularInit++;
  }

  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of spec.initContainers ?? []) {
    if (!isRestartableInitContainer(c)) continue;
    const s = statusOf(info, c.name);
    if (!s) {
      unknown++;
      continue;
    }
    if (s.state.running) {
      if (!s.started) pendingRestartableInit++;
      running++;
    } else if (s.state.terminated) {
      // not taken into account
    } else if (s.state.waiting) {
      if (!s.lastState.terminated) {
        pendingRestartableInit++;
        waiting++;
      }
    } else {
      pendingRestartableInit++;
      unknown++;
    }
  }
  for (const c of spec.containers) {
    const s = statusOf(info, c.name);
    if (!s) {
      unknown++;
      continue;
    }
    if (s.state.running) running++;
    else if (s.state.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state.waiting) {
      if (s.lastState.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }

  if (failedInitialization > 0 && spec.restartPolicy === "Never") return "Failed";
  if (pendingRegularInit > 0 || (pendingRestartableInit > 0 && !podHasInitialized) || waiting > 0) return "Pending";
  if (running > 0 && unknown === 0) return "Running";
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (podIsTerminal) return stopped === succeeded ? "Succeeded" : "Failed";
    if (spec.restartPolicy === "Always") return "Running";
    if (stopped === succeeded) return "Succeeded";
    if (spec.restartPolicy === "Never") return "Failed";
    return "Running";
  }
  return "Pending";
}

/** Every regular container has exited and none will be started again (the pod's sidecars are then stopped). */
function regularContainersDone(pod: Pod, status: PodStatus): boolean {
  return pod.spec.containers.every(
    (c) =>
      status.containerStatuses.find((s) => s.name === c.name)?.state === "exited" &&
      !shouldContainerBeRestarted(c, pod, status),
  );
}

/** kubecontainer.HasAnyActiveRegularContainerStarted: a regular container of the newest sandbox has started
 * (it runs or has exited). */
function anyActiveRegularContainerStarted(pod: Pod, status: PodStatus): boolean {
  const sandbox = status.sandboxStatuses[0]?.id;
  if (!sandbox) return false;
  const names = new Set(pod.spec.containers.map((c) => c.name));
  return status.containerStatuses.some(
    (c) => names.has(c.name) && c.sandboxId === sandbox && (c.state === "running" || c.state === "exited"),
  );
}

// ---- container statuses --------------------------------------------------------------------------------

/** convertContainerStatus (no previous status: an unknown state is waiting, as kubelet's default branch). */
function convertContainerStatus(cs: ContainerStatus, runtimeName: string): V1ContainerStatus {
  const containerID = `${runtimeName}://${cs.id}`;
  const out: V1ContainerStatus = {
    name: cs.name,
    state: {},
    lastState: {},
    ready: false,
    restartCount: cs.restartCount,
    image: cs.image,
    imageID: cs.imageRef,
    containerID,
  };
  if (cs.state === "running") out.state.running = { startedAt: apiTime(cs.startedAt) };
  else if (cs.state === "exited")
    out.state.terminated = {
      exitCode: cs.exitCode,
      ...nonEmpty("reason", cs.reason),
      ...nonEmpty("message", cs.message),
      startedAt: apiTime(cs.startedAt),
      finishedAt: apiTime(cs.finishedAt),
      containerID,
    };
  else out.state.waiting = {};
  return out;
}

function nonEmpty<K extends string>(k: K, v: string): { [P in K]?: string } {
  return (v ? { [k]: v } : {}) as { [P in K]?: string };
}

/** The reason a container that should be restarted is waiting: kubelet's reasonCache, else a crash loop
 * derived from the runtime. */
function waitingReason(input: ApiStatusInput, c: Container): StartFailure | undefined {
  const cached = input.reasons?.get(c.name);
  if (cached) return cached;
  const bo = crashLoopBackOff(c, input.status, input.now);
  if (bo.inBackOff)
    return {
      reason: "CrashLoopBackOff",
      message: `back-off ${bo.delayMs / 1000}s restarting failed container=${c.name} pod=${formatPod(input.pod)}`,
    };
  return undefined;
}

/** kubecontainer.HasAnyRegularContainerCreated */
function anyRegularContainerCreated(pod: Pod, status: PodStatus): boolean {
  const names = new Set(pod.spec.containers.map((c) => c.name));
  return status.containerStatuses.some((c) => names.has(c.name) && c.state !== "unknown");
}

/** convertToAPIContainerStatuses */
export function convertToAPIContainerStatuses(
  input: ApiStatusInput,
  containers: readonly Container[],
  isInit: boolean,
): V1ContainerStatus[] {
  const { pod, status } = input;
  const hasInit = (pod.spec.initContainers ?? []).length > 0;
  const statuses = new Map<string, V1ContainerStatus>();
  for (const c of containers)
    statuses.set(c.name, {
      name: c.name,
      state: { waiting: { reason: hasInit ? PodInitializing : ContainerCreating } },
      lastState: {},
      ready: false,
      restartCount: 0,
      image: c.image,
      imageID: "",
    });

  // Newest first; the newest instance is the state, the one before it the last state.
  const seen = new Map<string, number>();
  for (const cs of status.containerStatuses) {
    const cur = statuses.get(cs.name);
    const n = seen.get(cs.name) ?? 0;
    if (!cur || n >= 2) continue;
    const converted = convertContainerStatus(cs, input.runtimeName);
    // image is the spec's (the runtime may report the image id); imageID the runtime's reference.
    if (n === 0) statuses.set(cs.name, { ...converted, image: cur.image });
    else cur.lastState = converted.state;
    seen.set(cs.name, n + 1);
  }

  // Containers that failed to start, or will be restarted: waiting, with the reason (none in an evicted pod:
  // nothing of it starts again).
  for (const c of input.evicted ? [] : containers) {
    const s = status.containerStatuses.find((x) => x.name === c.name);
    if (isInit) {
      if (s?.state === "exited" && s.exitCode === 0) continue;
      const cur = statuses.get(c.name)!;
      if (!s && anyRegularContainerCreated(pod, status) && cur.state.waiting) {
        cur.state = {
          terminated: {
            exitCode: 0,
            reason: "Completed",
            message:
              "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally",
            startedAt: null,
            finishedAt: null,
          },
        };
        continue;
      }
    }
    // A sidecar restarts whatever the pod's restartPolicy, until the regular containers are done for good.
    if (
      isRestartableInitContainer(c) ? regularContainersDone(pod, status) : !shouldContainerBeRestarted(c, pod, status)
    )
      continue;
    const why = waitingReason(input, c);
    if (!why) continue;
    const cur = statuses.get(c.name)!;
    if (cur.state.terminated) cur.lastState = cur.state;
    cur.state = { waiting: { reason: why.reason, ...nonEmpty("message", why.message) } };
  }

  // prober_manager UpdatePodStatus: started and ready.
  const probes = input.probes;
  for (const c of containers) {
    const cur = statuses.get(c.name)!;
    const id = cur.containerID ? cur.containerID.slice(cur.containerID.indexOf("://") + 3) : "";
    const started = cur.state.running !== undefined && (c.startupProbe ? probes?.startup?.get(id) === "Success" : true);
    cur.started = started;
    if (isInit && !isRestartableInitContainer(c)) cur.ready = cur.state.terminated?.exitCode === 0;
    else if (started)
      cur.ready =
        cur.state.running !== undefined && (c.readinessProbe ? probes?.readiness?.get(id) === "Success" : true);
  }

  const list = containers.map((c) => statuses.get(c.name)!);
  // kubetypes.SortedContainerStatuses sorts app containers by name; init containers keep the spec order.
  return isInit ? list : list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

// ---- conditions (status/generate.go) -------------------------------------------------------------------

const fmtList = (names: string[]) => `[${names.join(" ")}]`;

/** GenerateContainersReadyCondition */
export function containersReadyCondition(
  pod: Pod,
  statuses: readonly V1ContainerStatus[] | undefined,
  phase: PodPhase,
): Omit<V1PodCondition, "lastProbeTime" | "lastTransitionTime"> {
  if (statuses === undefined) return { type: "ContainersReady", status: "False", reason: "UnknownContainerStatuses" };
  const unknown: string[] = [];
  const unready: string[] = [];
  // Sidecars count first, then the regular containers.
  for (const c of [...(pod.spec.initContainers ?? []).filter(isRestartableInitContainer), ...pod.spec.containers]) {
    const s = statusOf(statuses, c.name);
    if (!s) unknown.push(c.name);
    else if (!s.ready) unready.push(c.name);
  }
  if (phase === "Succeeded" && unknown.length === 0)
    return { type: "ContainersReady", status: "False", reason: "PodCompleted" };
  if (phase === "Failed") return { type: "ContainersReady", status: "False", reason: "PodFailed" };
  const msgs: string[] = [];
  if (unknown.length) msgs.push(`containers with unknown status: ${fmtList(unknown)}`);
  if (unready.length) msgs.push(`containers with unready status: ${fmtList(unready)}`);
  if (msgs.length)
    return { type: "ContainersReady", status: "False", reason: "ContainersNotReady", message: msgs.join(", ") };
  return { type: "ContainersReady", status: "True" };
}

/** GeneratePodReadyCondition (podsync has no readiness gates). */
export function podReadyCondition(
  pod: Pod,
  statuses: readonly V1ContainerStatus[] | undefined,
  phase: PodPhase,
): Omit<V1PodCondition, "lastProbeTime" | "lastTransitionTime"> {
  const cr = containersReadyCondition(pod, statuses, phase);
  return { ...cr, type: "Ready" };
}

/** GeneratePodInitializedCondition */
export function podInitializedCondition(
  pod: Pod,
  statuses: readonly V1ContainerStatus[] | undefined,
  phase: PodPhase,
): Omit<V1PodCondition, "lastProbeTime" | "lastTransitionTime"> {
  const inits = pod.spec.initContainers ?? [];
  if (statuses === undefined && inits.length > 0)
    return { type: "Initialized", status: "False", reason: "UnknownContainerStatuses" };
  const unknown: string[] = [];
  const incomplete: string[] = [];
  for (const c of inits) {
    const s = statusOf(statuses ?? [], c.name);
    if (!s) unknown.push(c.name);
    // A sidecar is done initializing once it has started.
    else if (isRestartableInitContainer(c) ? !s.started : !s.ready) incomplete.push(c.name);
  }
  if (phase === "Succeeded" && unknown.length === 0)
    return { type: "Initialized", status: "True", reason: "PodCompleted" };
  // HasAnyRegularContainerStarted: an app container that has run means initialization happened.
  if (
    pod.spec.containers.some((c) => {
      const s = statusOf(statuses ?? [], c.name);
      return (
        s !== undefined &&
        (s.state.running !== undefined || s.state.terminated !== undefined || s.lastState.terminated !== undefined)
      );
    })
  )
    return { type: "Initialized", status: "True" };
  const msgs: string[] = [];
  if (unknown.length) msgs.push(`containers with unknown status: ${fmtList(unknown)}`);
  if (incomplete.length) msgs.push(`containers with incomplete status: ${fmtList(incomplete)}`);
  if (msgs.length)
    return { type: "Initialized", status: "False", reason: "ContainersNotInitialized", message: msgs.join(", ") };
  return { type: "Initialized", status: "True" };
}

/** GeneratePodReadyToStartContainersCondition */
export function podReadyToStartContainersCondition(
  pod: Pod,
  status: PodStatus,
): Omit<V1PodCondition, "lastProbeTime" | "lastTransitionTime"> {
  const [newSandboxNeeded] = podSandboxChanged(pod, status);
  return { type: "PodReadyToStartContainers", status: newSandboxNeeded ? "False" : "True" };
}

// ---- transition times ----------------------------------------------------------------------------------

const max = (xs: number[]) => xs.reduce((a, b) => Math.max(a, b), 0);

/** lastTransitionTime from the runtime's and the prober's records (ms; 0 = unknown → null):
 * - PodScheduled: the pod's start (its oldest sandbox or container).
 * - PodReadyToStartContainers: True since the newest sandbox was created; False since the last container
 *   of that sandbox finished (else since it was created).
 * - Initialized: True since the last init container finished (no init containers: the pod's start);
 *   False since the newest sandbox was created.
 * - ContainersReady / Ready: True since the last app container started or its readiness last changed,
 *   whichever is later; False since the last app container finished or a readiness result last changed
 *   (else the newest sandbox's creation). */
function conditionTime(
  type: Exclude<V1PodCondition["type"], "DisruptionTarget">,
  value: ConditionStatus,
  input: ApiStatusInput,
  startMs: number,
): number {
  const { pod, status } = input;
  const sandboxCreated = status.sandboxStatuses[0] ? nsToMs(status.sandboxStatuses[0].createdAt) : 0;
  const appNames = new Set(pod.spec.containers.map((c) => c.name));
  const initNames = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
  const newest = new Map<string, ContainerStatus>();
  for (const c of status.containerStatuses) if (!newest.has(c.name)) newest.set(c.name, c);
  const apps = [...newest.values()].filter((c) => appNames.has(c.name));
  const probeChange = max(
    [...(input.probes?.changedAt?.entries() ?? [])].filter(([id]) => apps.some((c) => c.id === id)).map(([, t]) => t),
  );
  switch (type) {
    case "PodScheduled":
      return startMs;
    case "PodReadyToStartContainers": {
      if (value === "True") return sandboxCreated;
      const sb = status.sandboxStatuses[0]?.id;
      return max(status.containerStatuses.filter((c) => c.sandboxId === sb).map((c) => c.finishedAt)) || sandboxCreated;
    }
    case "Initialized":
      if (value === "True")
        return initNames.size === 0
          ? startMs
          : max([...newest.values()].filter((c) => initNames.has(c.name)).map((c) => c.finishedAt)) || startMs;
      return sandboxCreated;
    case "ContainersReady":
    case "Ready":
      if (value === "True") return Math.max(max(apps.map((c) => c.startedAt)), probeChange);
      return Math.max(max(apps.map((c) => c.finishedAt)), probeChange) || sandboxCreated;
  }
}

// ---- generateAPIPodStatus ------------------------------------------------------------------------------

export function generateAPIPodStatus(input: ApiStatusInput): V1PodStatus {
  const { pod, status } = input;
  // An internal module's eviction (kubelet's PodSyncHandlers: the active deadline) makes the pod Failed.
  const evicted = input.eviction
    ? { reason: input.eviction.reason, message: input.eviction.message }
    : pastActiveDeadline(pod, status, input.now)
      ? { reason: DEADLINE_EXCEEDED_REASON, message: DEADLINE_EXCEEDED_MESSAGE }
      : undefined;
  if (evicted) input = { ...input, evicted: true };
  const containerStatuses = convertToAPIContainerStatuses(input, pod.spec.containers, false);
  const inits = pod.spec.initContainers ?? [];
  const initContainerStatuses = inits.length ? convertToAPIContainerStatuses(input, inits, true) : undefined;
  const all = [...containerStatuses, ...(initContainerStatuses ?? [])];
  const phase = evicted ? "Failed" : getPhase(pod, all, false, anyActiveRegularContainerStarted(pod, status));
  const startMs = podStartMs(status);

  const made = [
    podReadyToStartContainersCondition(pod, status),
    podInitializedCondition(pod, all, phase),
    podReadyCondition(pod, all, phase),
    containersReadyCondition(pod, all, phase),
    { type: "PodScheduled" as const, status: "True" as const },
  ];
  const conditions: V1PodCondition[] = made.map((c) => ({
    ...c,
    lastProbeTime: null,
    lastTransitionTime: apiTime(
      conditionTime(c.type as Exclude<V1PodCondition["type"], "DisruptionTarget">, c.status, input, startMs),
    ),
  }));
  // The eviction's disruption condition, kept from when it was set and listed before the kubelet-owned ones
  // (generateAPIPodStatus copies DisruptionTarget over from the old status first).
  const disruption = input.eviction?.condition;
  if (disruption)
    conditions.unshift({
      ...disruption,
      status: "True",
      lastProbeTime: null,
      lastTransitionTime: apiTime(input.eviction!.at),
    });

  const out: V1PodStatus = { phase, ...evicted, conditions, containerStatuses, qosClass: podQOS(pod) };
  const hostIPs = input.hostIPs ?? [];
  if (hostIPs.length) {
    out.hostIP = hostIPs[0]!;
    out.hostIPs = hostIPs.slice(0, 2).map((ip) => ({ ip }));
  }
  let podIPs = sortPodIPs(status.ips);
  // HostNetwork pods inherit the node's IPs.
  if (
    podIPs.length === 0 &&
    pod.spec.hostNetwork &&
    hostIPs.length &&
    status.sandboxStatuses[0]?.state === PodSandboxState.SANDBOX_READY
  )
    podIPs = hostIPs.slice(0, 2);
  if (podIPs.length) {
    out.podIP = podIPs[0]!;
    out.podIPs = podIPs.map((ip) => ({ ip }));
  }
  const start = apiTime(startMs);
  if (start) out.startTime = start;
  if (initContainerStatuses) out.initContainerStatuses = initContainerStatuses;
  if (status.statusError && !evicted) {
    out.reason = RUNTIME_ERROR_REASON;
    out.message = `the runtime failed to report this pod's status (${status.statusError}); what its lists show is reported`;
  }
  return out;
}

// ---- v1.Pod --------------------------------------------------------------------------------------------

export interface V1Pod {
  apiVersion: "v1";
  kind: "Pod";
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Pod["metadata"]["ownerReferences"];
    creationTimestamp: string | null;
    /** Set while the pod is being deleted (Terminating): when its grace period ends, and that period. */
    deletionTimestamp?: string;
    deletionGracePeriodSeconds?: number;
  };
  spec?: Pod["spec"];
  status: V1PodStatus;
}

/** The v1.Pod object: the spec as it was last given (undefined when only the runtime knows the pod), the
 * status as generated. For the status route and the node agent's list route. */
export function toV1Pod(
  spec: Pod | undefined,
  ref: { uid: string; name: string; namespace: string },
  status: V1PodStatus,
  deletion?: { deletionTimestamp: number; deletionGracePeriodSeconds: number },
): V1Pod {
  const meta = spec?.metadata;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: meta?.name ?? ref.name,
      namespace: meta?.namespace ?? ref.namespace,
      uid: ref.uid,
      ...(meta?.labels ? { labels: meta.labels } : {}),
      ...(meta?.annotations ? { annotations: meta.annotations } : {}),
      // A pod the node's controllers made names its controller (src/controllers).
      ...(meta?.ownerReferences ? { ownerReferences: meta.ownerReferences } : {}),
      creationTimestamp: status.startTime ?? null,
      ...(deletion
        ? {
            deletionTimestamp: apiTime(deletion.deletionTimestamp) ?? "",
            deletionGracePeriodSeconds: deletion.deletionGracePeriodSeconds,
          }
        : {}),
    },
    // The spec as given, but inline pull-secret credentials never leave the node in a response.
    ...(spec
      ? {
          spec: spec.spec.imagePullSecrets
            ? { ...spec.spec, imagePullSecrets: withoutCredentials(spec.spec.imagePullSecrets) }
            : spec.spec,
        }
      : {}),
    status,
  };
}

/** Without a spec (a pod only the runtime knows), the status is generated for a stand-in: one app container
 * per container name the runtime has, restartPolicy Always, no init containers and no probes. */
export function standInPod(ref: { uid: string; name: string; namespace: string }, status: PodStatus): Pod {
  const names: string[] = [];
  const images = new Map<string, string>();
  for (const c of [...status.containerStatuses].reverse()) {
    if (!images.has(c.name)) names.push(c.name);
    images.set(c.name, c.image);
  }
  return {
    metadata: { uid: ref.uid, name: ref.name, namespace: ref.namespace },
    spec: {
      containers: names.sort().map((name) => ({
        name,
        image: images.get(name)!,
        terminationMessagePath: "/dev/termination-log",
        terminationMessagePolicy: "File",
        stdin: false,
        stdinOnce: false,
        tty: false,
      })),
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      dnsPolicy: "ClusterFirst",
    },
  } as Pod;
}
