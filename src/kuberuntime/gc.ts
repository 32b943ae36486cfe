// What kubelet's garbage collector would remove, done at the end of a sync because a stateless function
// has no GC loop: kubelet's defaults (MaxPerPodContainer = 1 dead instance per container name; the newest
// sandbox kept; older non-ready sandboxes removed once they hold no containers).
import type { CriClient } from "../cri/client.js";
import { PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import type { Steps } from "./steps.js";
import type { ContainerStatus, PodStatus } from "./types.js";

/** What kubelet's container and sandbox GC would remove, given the status read before this sync. */
export function garbage(status: PodStatus, startedNames: ReadonlySet<string>): { containers: ContainerStatus[]; sandboxes: string[] } {
  const deadKept = new Set<string>();
  const containers: ContainerStatus[] = [];
  for (const c of status.containerStatuses) {
    if (c.state !== "exited" && c.state !== "created") continue;
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

export async function collectGarbage(cri: CriClient, status: PodStatus, startedNames: ReadonlySet<string>, removed: ReadonlySet<string>, steps: Steps): Promise<void> {
  const g = garbage({ ...status, containerStatuses: status.containerStatuses.filter((c) => !removed.has(c.id)) }, startedNames);
  await Promise.all(
    g.containers.map((c) =>
      steps.run("RemoveContainer", c.name, () => cri.removeContainer({ containerId: c.id }).then(() => `removed ${c.id}`), "RemoveContainerError"),
    ),
  );
  await Promise.all(
    g.sandboxes.map((id) => steps.run("RemovePodSandbox", id, () => cri.removePodSandbox({ podSandboxId: id }).then(() => `removed ${id}`), "RemovePodSandboxError")),
  );
}

