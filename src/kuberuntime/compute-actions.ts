// computePodActions: what must change to bring the pod's runtime state to its spec. Pure: no I/O, no clock.
// Follows pkg/kubelet/kuberuntime/kuberuntime_manager.go (v1.22 onward; read at the v1.33 cycle), restartable
// (sidecar) init containers included, for pods without ephemeral containers or in-place resize: those are not
// in podsync's pod schema, so their branches are absent rather than stubbed. podsync runs no prober; liveness
// and startup results may be passed in (ProbeResults) and are honoured as kubelet does.
// Where the seed excerpt (an older SyncPod) and kubelet differ, this follows kubelet: see "v1.22" below. Init
// containers follow v1.33's computeInitContainerActions (LegacySidecarContainers off), not findNextInitContainerToRun.
import { NamespaceMode, PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import { isRestartableInitContainer, type Container, type Pod } from "../pod/schema.js";
import { containerChanged } from "../container/hash.js";
import { findContainerStatusByName } from "./pod-status.js";
import { pastActiveDeadline } from "../lifecycle/active-deadline.js";
import type { ContainerStatus, ContainerToKill, PodActions, PodStatus } from "../container/types.js";

/** runtimeutil.NetworkNamespaceForPod */
export function networkNamespaceForPod(pod: Pod): NamespaceMode {
  return pod.spec.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD;
}

/** runtimeutil.PodSandboxChanged: [createSandbox, attempt, sandboxId]. */
export function podSandboxChanged(pod: Pod, status: PodStatus): [boolean, number, string] {
  const sandboxes = status.sandboxStatuses;
  if (sandboxes.length === 0) return [true, 0, ""];
  let ready = 0;
  for (const s of sandboxes) if (s.state === PodSandboxState.SANDBOX_READY) ready++;
  const newest = sandboxes[0]!;
  const attempt = newest.metadata?.attempt ?? 0;
  // More than one ready sandbox, or the newest not ready: start over with a new one.
  if (ready > 1) return [true, attempt + 1, newest.id];
  if (newest.state !== PodSandboxState.SANDBOX_READY) return [true, attempt + 1, newest.id];
  // kubelet returns an empty sandbox id when only the network namespace changed.
  const netns = newest.linux?.namespaces?.options?.network ?? NamespaceMode.POD;
  if (netns !== networkNamespaceForPod(pod)) return [true, attempt + 1, ""];
  if (!pod.spec.hostNetwork && newest.network !== undefined && newest.network.ip === "")
    return [true, attempt + 1, newest.id];
  return [false, attempt, newest.id];
}

/** shouldRestartOnFailure */
export function shouldRestartOnFailure(pod: Pod): boolean {
  return pod.spec.restartPolicy !== "Never";
}

/** containerSucceeded (v1.31+, PR #126420): exited with code 0. A created-never-started or unknown-state instance
 * reports exit code 0 too, but has not succeeded. */
function containerSucceeded(c: Container, status: PodStatus): boolean {
  const s = findContainerStatusByName(status, c.name);
  return s !== undefined && s.state === "exited" && s.exitCode === 0;
}

/** kubecontainer.ShouldContainerBeRestarted (pods here are never marked for deletion: DELETE is its own route). */
export function shouldContainerBeRestarted(container: Container, pod: Pod, status: PodStatus): boolean {
  const s = findContainerStatusByName(status, container.name);
  if (!s) return true;
  if (s.state === "running") return false;
  if (s.state === "unknown" || s.state === "created") return true;
  if (pod.spec.restartPolicy === "Never") return false;
  if (pod.spec.restartPolicy === "OnFailure" && s.exitCode === 0) return false;
  return true;
}

/** isInitContainerFailed */
export function isInitContainerFailed(s: ContainerStatus): boolean {
  if (s.reason === "OOMKilled") return true;
  if (s.state === "exited" && s.exitCode !== 0) return true;
  return s.state === "unknown";
}

/** hasAnyRegularContainerCreated: a regular container was created, runs or ran, so initialization happened. */
export function hasAnyRegularContainerCreated(pod: Pod, status: PodStatus): boolean {
  return pod.spec.containers.some((c) => {
    const st = findContainerStatusByName(status, c.name)?.state;
    return st === "created" || st === "running" || st === "exited";
  });
}

/** computeInitContainerActions, the path kubelet v1.33 takes for every pod (LegacySidecarContainers is off by
 * default), restartable (sidecar) init containers included (kuberuntime_container.go). Returns whether the pod
 * is initialized. Sets the init containers to start (in spec order): the first one not yet started, every
 * sidecar that has started but is not running, and the next one after a sidecar that has started (its
 * startupProbe, if any, succeeded); kills sidecars that failed their liveness or startup probe, or whose spec
 * changed; kills an unknown-state init container before restarting it; kills the pod when a regular init
 * container failed under restartPolicy Never. A restartable init container's liveness does not hold up the next
 * one. In-place resize is not in podsync (no computePodResizeAction). */
export function computeInitContainerActions(
  pod: Pod,
  status: PodStatus,
  changes: PodActions,
  probes?: ProbeResults,
): boolean {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return true;
  // A regular container created or running means initialization ran, even if its init records were removed
  // since. An exited one does not count: after a node reboot every container has exited and the new sandbox
  // must run initialization again.
  let podHasInitialized = false;
  for (const c of pod.spec.containers) {
    const st = findContainerStatusByName(status, c.name)?.state;
    if (st === "created" || st === "running") {
      podHasInitialized = true;
      break;
    }
  }
  let isPreviouslyInitialized = podHasInitialized;
  const restartOnFailure = shouldRestartOnFailure(pod);
  const toStart: number[] = [];
  const kill = (id: string, container: Container, message: string, reason: ContainerToKill["reason"]) => {
    changes.containersToKill[id] = { name: container.name, container, message, reason };
  };

  // Backwards from the last init container: completed ones may have been removed from the runtime, so the
  // newest record decides; on the way, the sidecars to restart are found.
  for (let i = inits.length - 1; i >= 0; i--) {
    const container = inits[i]!;
    const restartable = isRestartableInitContainer(container);
    const s = findContainerStatusByName(status, container.name);
    if (!s) {
      // Initialized before, but its record is gone: a sidecar is started again.
      if (isPreviouslyInitialized && restartable) toStart.push(i);
      continue;
    }
    // After initialization only the sidecars are kept running.
    if (isPreviouslyInitialized && !restartable) continue;

    switch (s.state) {
      case "created": // the runtime likely failed to start it: start it again
        toStart.push(i);
        break;
      case "running": {
        if (!restartable) break; // wait for it to finish
        if (container.startupProbe) {
          const startup = probes?.startup?.get(s.id);
          // Not probed yet (or still Unknown): wait for it.
          if (startup !== "Success") {
            if (startup === "Failure") {
              kill(s.id, container, `Init container ${container.name} failed startup probe`, "StartupProbe");
              toStart.push(i);
            }
            break;
          }
        }
        if (i === inits.length - 1) podHasInitialized = true;
        // Initialized for the first time: start the next one.
        else if (!isPreviouslyInitialized) toStart.push(i + 1);
        if (containerChanged(container, s)) {
          kill(s.id, container, `Init container ${container.name} definition changed`, "");
          toStart.push(i);
          break;
        }
        // Its liveness does not hold up the next init container, but a failure restarts it.
        if (container.livenessProbe && probes?.liveness?.get(s.id) === "Failure") {
          kill(s.id, container, `Init container ${container.name} failed liveness probe`, "LivenessProbe");
          toStart.push(i);
        }
        break;
      }
      case "exited":
        if (restartable) toStart.push(i);
        else if (isInitContainerFailed(s)) {
          if (!restartOnFailure) {
            changes.killPod = true;
            changes.initContainersToStart = [];
            return false;
          }
          toStart.push(i);
        } else if (i === inits.length - 1) podHasInitialized = true;
        else toStart.push(i + 1);
        break;
      default: // unknown
        if (!restartable) {
          if (!restartOnFailure) {
            changes.killPod = true;
            changes.initContainersToStart = [];
            return false;
          }
        }
        kill(s.id, container, `Init container is in "${s.state}" state, try killing it before restart`, "Unknown");
        toStart.push(i);
    }
    isPreviouslyInitialized = true;
  }
  // No init container has started yet: the first one.
  if (!isPreviouslyInitialized) toStart.push(0);
  // The loop went backwards; they start in spec order.
  changes.initContainersToStart = toStart.reverse();
  return podHasInitialized;
}

/** Probe results by container id, as kubelet's liveness/startup managers hold them. podsync runs no prober;
 * a caller that does can pass them in, and the kubelet test table's probe cases use them. */
export interface ProbeResults {
  liveness?: ReadonlyMap<string, "Success" | "Failure">;
  startup?: ReadonlyMap<string, "Success" | "Failure">;
}

export function computePodActions(pod: Pod, status: PodStatus, probes?: ProbeResults): PodActions {
  const [createSandbox, attempt, sandboxId] = podSandboxChanged(pod, status);
  const changes: PodActions = {
    killPod: createSandbox,
    createSandbox,
    sandboxId,
    attempt,
    initContainersToStart: [],
    containersToStart: [],
    containersToKill: {},
  };

  if (createSandbox) {
    // kubelet v1.22+ (not in the seed's older SyncPod): a pod that must not restart and has run before is only
    // killed, not given a new sandbox. With no container statuses at all we assume no container was ever
    // created and retry the sandbox.
    if (!shouldRestartOnFailure(pod) && attempt !== 0 && status.containerStatuses.length !== 0) {
      changes.createSandbox = false;
      return changes;
    }
    const toStart: number[] = [];
    pod.spec.containers.forEach((c, idx) => {
      if (pod.spec.restartPolicy === "OnFailure" && containerSucceeded(c, status)) return;
      toStart.push(idx);
    });
    // Nothing to start (all succeeded under OnFailure) and initialization done: just kill the pod, no sandbox.
    // v1.33 judges "done" by hasAnyRegularContainerCreated, which counts exited containers too.
    if (toStart.length === 0 && hasAnyRegularContainerCreated(pod, status)) {
      changes.createSandbox = false;
      return changes;
    }
    if ((pod.spec.initContainers ?? []).length !== 0) {
      changes.initContainersToStart = [0];
      return changes;
    }
    changes.containersToStart = toStart;
    return changes;
  }

  // Initialization failed or still in progress: app containers are not looked at.
  if (!computeInitContainerActions(pod, status, changes, probes) || changes.killPod) return changes;

  let keepCount = 0;
  pod.spec.containers.forEach((container, idx) => {
    const s = findContainerStatusByName(status, container.name);
    if (s?.state !== "running") {
      if (shouldContainerBeRestarted(container, pod, status)) {
        changes.containersToStart.push(idx);
        // Unknown state: it may still run; kill it first so two instances never run at once.
        if (s?.state === "unknown") {
          changes.containersToKill[s.id] = {
            name: s.name,
            container,
            message: `Container is in "${s.state}" state, try killing it before restart`,
            reason: "Unknown",
          };
        }
      }
      return;
    }
    // Running: kill it if its spec changed (restart regardless of policy) or a probe says so.
    let message: string;
    let reason: ContainerToKill["reason"] = "";
    let restart = shouldRestartOnFailure(pod);
    if (containerChanged(container, s)) {
      message = `Container ${container.name} definition changed`;
      restart = true;
    } else if (probes?.liveness?.get(s.id) === "Failure") {
      message = `Container ${container.name} failed liveness probe`;
      reason = "LivenessProbe";
    } else if (probes?.startup?.get(s.id) === "Failure") {
      message = `Container ${container.name} failed startup probe`;
      reason = "StartupProbe";
    } else {
      keepCount++;
      return;
    }
    if (restart) {
      message = `${message}, will be restarted`;
      changes.containersToStart.push(idx);
    }
    changes.containersToKill[s.id] = { name: s.name, container, message, reason };
  });

  if (keepCount === 0 && changes.containersToStart.length === 0) {
    changes.killPod = true;
    // Sidecars must not keep a pod alive whose regular containers are done: they are not restarted.
    changes.initContainersToStart = [];
  }
  return changes;
}

/** What a sync does for a pod an internal module evicted (kubelet's PodSyncHandlers: the active deadline):
 * kill it and start nothing, not even a new sandbox. */
export function evictedPodActions(status: PodStatus): PodActions {
  return {
    killPod: true,
    createSandbox: false,
    sandboxId: status.sandboxStatuses[0]?.id ?? "",
    attempt: status.sandboxStatuses[0]?.metadata?.attempt ?? 0,
    initContainersToStart: [],
    containersToStart: [],
    containersToKill: {},
  };
}

/** computePodActions, unless the pod's active deadline has passed (then evictedPodActions). */
export function podActionsAt(pod: Pod, status: PodStatus, probes: ProbeResults | undefined, now: number): PodActions {
  return pastActiveDeadline(pod, status, now) ? evictedPodActions(status) : computePodActions(pod, status, probes);
}
