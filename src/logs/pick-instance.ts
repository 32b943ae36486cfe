// Which container instance `logs` reads: kubelet's validateContainerLogStatus (pkg/kubelet/kubelet_pods.go),
// over the runtime's instances instead of the API status. The current instance is the running one, else the
// newest that ran; `previous` is the last terminated instance before the current one. Messages are kubelet's.
import { ContainerChoiceError } from "../container/container-choice.js";
import type { ContainerStatus, PodStatus } from "../container/types.js";

/** The instance whose log to read. */
export function pickInstance(status: PodStatus, podName: string, name: string, previous: boolean): ContainerStatus {
  const instances = status.containerStatuses.filter((c) => c.name === name); // newest first
  const ran = instances.filter((c) => c.state === "running" || c.state === "exited");
  const current = instances.find((c) => c.state === "running") ?? ran[0];
  if (previous) {
    const prev = ran.find(
      (c) => c !== current && c.state === "exited" && (!current || c.createdAt < current.createdAt),
    );
    if (!prev)
      throw new ContainerChoiceError(
        "bad-request",
        `previous terminated container ${JSON.stringify(name)} in pod ${JSON.stringify(podName)} not found`,
      );
    return prev;
  }
  if (!current) {
    const waiting = instances[0]?.reason || "ContainerCreating";
    throw new ContainerChoiceError(
      "bad-request",
      `container ${JSON.stringify(name)} in pod ${JSON.stringify(podName)} is waiting to start: ${waiting}`,
    );
  }
  return current;
}
