// computePodActions: what must change to bring the pod's runtime state to its spec. Pure: no I/O, no clock.
// Follows pkg/kubelet/kuberuntime/kuberuntime_manager.go (v1.22 onward; read at the v1.33 cycle) for pods
// without ephemeral containers, restartable (sidecar) init containers or in-place resize: those are not in
// podsync's pod schema, so their branches are absent rather than stubbed. podsync runs no prober; liveness
// and startup results may be passed in (ProbeResults) and are honoured as kubelet does.
// Where the seed excerpt (an older SyncPod) and kubelet differ, this follows kubelet: see "v1.22" below.
import { NamespaceMode, PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import type { Container, Pod } from "../pod/schema.js";
import { hashContainer } from "./hash.js";
import { findContainerStatusByName } from "./pod-status.js";
import type { ContainerStatus, ContainerToKill, PodActions, PodStatus } from "./types.js";

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

/** containerSucceeded */
function containerSucceeded(c: Container, status: PodStatus): boolean {
  const s = findContainerStatusByName(status, c.name);
  if (!s || s.state === "running") return false;
  return s.exitCode === 0;
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

/** findNextInitContainerToRun: [status of the last failed init container, next to run, done]. */
export function findNextInitContainerToRun(
  pod: Pod,
  status: PodStatus,
): [ContainerStatus | undefined, Container | undefined, boolean] {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return [undefined, undefined, true];
  // A running app container means init ran at some point, even if its instances were removed since.
  for (const c of pod.spec.containers) {
    if (findContainerStatusByName(status, c.name)?.state === "running") return [undefined, undefined, true];
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const s = findContainerStatusByName(status, inits[i]!.name);
    if (s && isInitContainerFailed(s)) return [s, inits[i], false];
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const s = findContainerStatusByName(status, inits[i]!.name);
    if (!s) continue;
    if (s.state === "running") return [undefined, undefined, false];
    if (s.state === "exited") {
      if (i === inits.length - 1) return [undefined, undefined, true];
      return [undefined, inits[i + 1], false];
    }
  }
  return [undefined, inits[0], false];
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
    nextInitContainerToStart: undefined,
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
    // kubelet v1.22+ as well: initialization done and nothing to start (all succeeded under OnFailure): just
    // kill the pod, do not create a sandbox.
    if (toStart.length === 0 && findNextInitContainerToRun(pod, status)[2]) {
      changes.createSandbox = false;
      return changes;
    }
    const inits = pod.spec.initContainers ?? [];
    if (inits.length !== 0) {
      changes.nextInitContainerToStart = inits[0];
      return changes;
    }
    changes.containersToStart = toStart;
    return changes;
  }

  const [initLast, next, done] = findNextInitContainerToRun(pod, status);
  if (!done) {
    if (next) {
      const initFailed = initLast !== undefined && isInitContainerFailed(initLast);
      if (initFailed && !shouldRestartOnFailure(pod)) {
        changes.killPod = true;
      } else {
        if (initLast?.state === "unknown") {
          changes.containersToKill[initLast.id] = {
            name: next.name,
            container: next,
            message: `Init container is in "${initLast.state}" state, try killing it before restart`,
            reason: "Unknown",
          };
        }
        changes.nextInitContainerToStart = next;
      }
    }
    // Initialization failed or still in progress: app containers are not looked at.
    return changes;
  }

  let keepCount = 0;
  pod.spec.containers.forEach((container, idx) => {
    const s = findContainerStatusByName(status, container.name);
    if (!s || s.state !== "running") {
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
    if (s.hash !== hashContainer(container)) {
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

  if (keepCount === 0 && changes.containersToStart.length === 0) changes.killPod = true;
  return changes;
}
