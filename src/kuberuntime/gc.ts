// What kubelet's garbage collector would remove, done at the end of a sync because a stateless function
// has no GC loop: kubelet's defaults (MaxPerPodContainer = 1 dead instance per container name; the newest
// sandbox kept; older non-ready sandboxes removed once they hold no containers). As in kuberuntime_gc.go
// (evictableContainers, removeOldestN) and pruneInitContainersBeforeStart, every instance that is not running
// counts as dead, unknown-state ones included; those may still run, so they are stopped before removal.
import type { CriClient } from "../cri/client.js";
import { PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import { stopContainer } from "./kill.js";
import type { Steps } from "../container/steps.js";
import type { ContainerStatus, PodStatus } from "../container/types.js";

/** What kubelet's container and sandbox GC would remove, given the status read before this sync. */
export function garbage(
  status: PodStatus,
  startedNames: ReadonlySet<string>,
): { containers: ContainerStatus[]; sandboxes: string[] } {
  const deadKept = new Set<string>();
  const containers: ContainerStatus[] = [];
  for (const c of status.containerStatuses) {
    if (c.state === "running") continue;
    // Newest first: keep the newest dead instance per name (MaxPerPodContainer = 1), it carries the restart count.
    if (!deadKept.has(c.name)) {
      deadKept.add(c.name);
      // A created-but-never-started instance that was just replaced is garbage too.
      if (!(c.state === "created" && startedNames.has(c.name))) continue;
    }
    containers.push(c);
  }
  const removed = new Set(containers.map((c) => c.id));
  const holding = new Set(status.containerStatuses.filter((c) => !removed.has(c.id)).map((c) => c.sandboxId));
  const sandboxes = status.sandboxStatuses
    .slice(1)
    .filter((s) => s.state !== PodSandboxState.SANDBOX_READY && !holding.has(s.id))
    .map((s) => s.id);
  return { containers, sandboxes };
}

export async function collectGarbage(
  cri: CriClient,
  status: PodStatus,
  startedNames: ReadonlySet<string>,
  removed: ReadonlySet<string>,
  steps: Steps,
): Promise<void> {
  const g = garbage(
    { ...status, containerStatuses: status.containerStatuses.filter((c) => !removed.has(c.id)) },
    startedNames,
  );
  await Promise.all(
    g.containers.map((c) =>
      steps.run(
        "RemoveContainer",
        c.name,
        async () => {
          // removeOldestN: "Container is in unknown state, try killing it before removal"; a failed kill skips the
          // removal. Without the pod, killContainer restores the grace period from the annotation (else 2 s).
          if (c.state === "unknown") await stopContainer(cri, c.id, Math.max(2, c.gracePeriodSeconds ?? 2));
          await cri.removeContainer({ containerId: c.id });
          return c.state === "unknown" ? `stopped and removed ${c.id} (unknown state)` : `removed ${c.id}`;
        },
        "RemoveContainerError",
      ),
    ),
  );
  await Promise.all(
    g.sandboxes.map((id) =>
      steps.run(
        "RemovePodSandbox",
        id,
        () => cri.removePodSandbox({ podSandboxId: id }).then(() => `removed ${id}`),
        "RemovePodSandboxError",
      ),
    ),
  );
}
