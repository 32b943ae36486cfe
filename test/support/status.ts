// A kubecontainer.Status fixture with zero values, like the kubelet tests' struct literals.
import type { ContainerState, ContainerStatus } from "../../src/container/types.js";

export function containerStatus(id: string, name: string, state: ContainerState, hash: string, over: Partial<ContainerStatus> = {}): ContainerStatus {
  return {
    id, name, state, hash,
    createdAt: 0, startedAt: 0, finishedAt: 0, exitCode: 0, image: "", imageRef: "", restartCount: 0, reason: "", message: "",
    attempt: 0, sandboxId: "sandboxID", backoffStreak: 0, gracePeriodSeconds: undefined,
    ...over,
  };
}
