// Engine shapes → response JSON: enum names instead of numbers, ISO times, container names instead of indexes.
import { PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import type { Pod } from "../pod/schema.js";
import type { PodActions, PodStatus } from "../container/types.js";
import { nsToMs } from "../kuberuntime/pod-status.js";

const iso = (ms: number) => (ms > 0 ? new Date(ms).toISOString() : null);

export function actionsJSON(pod: Pod, a: PodActions) {
  return {
    killPod: a.killPod,
    createSandbox: a.createSandbox,
    sandboxId: a.sandboxId,
    attempt: a.attempt,
    initContainersToStart: a.initContainersToStart.map((i) => pod.spec.initContainers![i]!.name),
    containersToStart: a.containersToStart.map((i) => pod.spec.containers[i]!.name),
    containersToKill: Object.entries(a.containersToKill).map(([containerId, k]) => ({
      containerId,
      name: k.name,
      message: k.message,
      reason: k.reason,
    })),
  };
}

export function statusJSON(s: PodStatus) {
  return {
    ips: s.ips,
    sandboxes: s.sandboxStatuses.map((b) => ({
      id: b.id,
      state: PodSandboxState[b.state] ?? String(b.state),
      attempt: b.metadata?.attempt ?? 0,
      createdAt: iso(nsToMs(b.createdAt)),
      ip: b.network?.ip ?? "",
    })),
    containers: s.containerStatuses.map((c) => ({
      id: c.id,
      name: c.name,
      state: c.state,
      image: c.image,
      imageRef: c.imageRef,
      restartCount: c.restartCount,
      exitCode: c.exitCode,
      reason: c.reason,
      message: c.message,
      createdAt: iso(c.createdAt),
      startedAt: iso(c.startedAt),
      finishedAt: iso(c.finishedAt),
      hash: c.hash,
    })),
  };
}
