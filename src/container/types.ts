// Package container/ (kubelet's pkg/kubelet/container) — runtime-side shapes, sync results (steps), container hash, back-off,
// env expansion, the downward API, the node's configuration. Imports pod/ and cri/ only.
//
// The kubelet's in-memory shapes (kubecontainer.PodStatus, kubecontainer.Status, podActions), derived
// from CRI on every request because the function keeps no state between requests.
import type { PodSandboxStatus } from "../gen/runtime/v1/api_pb.js";
import type { Container } from "../pod/schema.js";

/** kubecontainer.State */
export type ContainerState = "created" | "running" | "exited" | "unknown";

/** kubecontainer.Status: one container instance as the runtime reports it. Times are ms since epoch (0 = unset). */
export interface ContainerStatus {
  id: string;
  name: string;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image: string;
  imageRef: string;
  /** `io.kubernetes.container.hash` annotation written when the instance was created (kubelet's HashContainer). */
  hash: string;
  /** `io.kubernetes.container.preStopHandler` annotation (JSON), as written; parsed only when a kill needs it. */
  preStopHandler?: string;
  /** `io.podsync.container.specHash` annotation: podsync's full-spec hash; absent on instances podsync did not make. */
  specHash?: string;
  /** `io.kubernetes.container.restartCount` annotation. */
  restartCount: number;
  reason: string;
  message: string;
  /** CRI metadata.attempt */
  attempt: number;
  /** The sandbox it belongs to (from ListContainers). */
  sandboxId: string;
  /** `io.kubernetes.pod.terminationGracePeriod` annotation: lets a kill without the pod spec (DELETE) use the
   * grace the pod was started with, as kubelet restores it from container annotations. */
  gracePeriodSeconds: number | undefined;
  /** Consecutive restarts since crash-loop back-off last reset (`io.podsync.container.backoffStreak`). */
  backoffStreak: number;
  /** From ContainerStatus only ("full" detail, or a container that is not running): where the termination
   * message file is mounted and where the log is, for kubelet's termination-message read. */
  mounts?: { containerPath: string; hostPath: string }[];
  logPath?: string;
  /** `io.kubernetes.container.terminationMessagePath` / `...Policy` annotations. */
  terminationMessagePath?: string;
  terminationMessagePolicy?: string;
}

/** kubecontainer.PodStatus */
export interface PodStatus {
  id: string;
  name: string;
  namespace: string;
  ips: string[];
  /** Newest first. Only the newest is read with PodSandboxStatus; older ones are filled from ListPodSandbox. */
  sandboxStatuses: PodSandboxStatus[];
  /** Newest first (kubelet sorts by CreatedAt, descending). */
  containerStatuses: ContainerStatus[];
  /** A detail read the runtime failed for this pod (its newest sandbox's PodSandboxStatus, a container's
   * ContainerStatus), with the gRPC code: the rest of the status is what the lists show (no pod IP, no exit
   * details). One broken sandbox is that pod's status, not the node's (pod-status.ts podStatusOrListed). */
  statusError?: string;
}

export type ContainerKillReason = "" | "Unknown" | "LivenessProbe" | "StartupProbe";

export interface ContainerToKill {
  name: string;
  container: Container;
  message: string;
  reason: ContainerKillReason;
}

/** kubelet's podActions (the subset without ephemeral containers and in-place resize). */
export interface PodActions {
  killPod: boolean;
  createSandbox: boolean;
  sandboxId: string;
  attempt: number;
  /** Indexes into pod.spec.initContainers, in start order (kubelet's InitContainersToStart). */
  initContainersToStart: number[];
  /** Indexes into pod.spec.containers. */
  containersToStart: number[];
  /** Keyed by runtime container id, in the order they were decided. */
  containersToKill: Record<string, ContainerToKill>;
}

/** kubecontainer.SyncAction names: what each step of a sync did. */
/** `MountVolumes` and `RemovePodDirs` are podsync's own: setting up the pod's volumes before the sandbox
 * (kubelet's volume manager does it before SyncPod) and DELETE removing the pod's directories (kubelet does it
 * in its housekeeping). */
export const SYNC_ACTIONS = [
  "KillPod",
  "KillContainer",
  "KillPodSandbox",
  "MountVolumes",
  "CreatePodSandbox",
  "InitContainer",
  "StartContainer",
  "RemoveContainer",
  "RemovePodSandbox",
  "RemovePodDirs",
] as const;
export type SyncAction = (typeof SYNC_ACTIONS)[number];

/** Why a step failed, in kubelet's words: the waiting reasons of pkg/kubelet/images and kuberuntime
 * (ErrImagePull, CrashLoopBackOff, CreateContainerError, ...) and kubecontainer's SyncResult errors
 * (KillContainerError, CreatePodSandboxError, ...). */
export const STEP_ERROR_REASONS = [
  "CrashLoopBackOff",
  "ErrImagePull",
  "ImagePullBackOff",
  "ErrImageNeverPull",
  "ImageInspectError",
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
  "RunInitContainerError",
  // kuberuntime's ErrPostStartHook: the postStart hook failed and the container was killed.
  "PostStartHookError",
  "KillContainerError",
  "KillPodSandboxError",
  "KillPodError",
  "CreatePodSandboxError",
  "RemoveContainerError",
  "RemovePodSandboxError",
  "RemovePodDirsError",
  // The volume manager's event reason (kubelet waits for volumes before SyncPod; podsync makes it a step).
  "FailedMount",
] as const;
export type StepErrorReason = (typeof STEP_ERROR_REASONS)[number];

export interface SyncStep {
  action: SyncAction;
  target: string;
  ok: boolean;
  /** kubelet error reason, e.g. CrashLoopBackOff, ErrImagePull, CreateContainerError. */
  error?: StepErrorReason;
  message?: string;
  /** gRPC status code name of the CRI call that failed, when one did. */
  grpcCode?: string;
  durationMs: number;
}

export interface PodSyncResult {
  ok: boolean;
  steps: SyncStep[];
}

export interface PodRef {
  uid: string;
  name: string;
  namespace: string;
}
