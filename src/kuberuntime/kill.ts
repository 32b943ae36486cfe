// Killing: kubelet's killPodWithSyncResult (every running container, then every sandbox) and the DELETE
// route's kill-and-remove.
import type { CriClient } from "../cri/client.js";
import { errorMessage, GrpcCode, isCriError } from "../cri/errors.js";
import { MAX_GRACE_PERIOD_SECONDS } from "../pod/schema.js";
import { elapsedMs, StepError, Steps } from "../container/steps.js";
import type { ContainerStatus, PodRef, PodStatus, PodSyncResult } from "../container/types.js";

/** kubelet's format.Pod: name_namespace(uid). */
export const formatPod = (pod: { metadata: PodRef }) => `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;

/** What killing a pod needs: who it is and how long its containers get to stop. */
export interface KillTarget {
  metadata: PodRef;
  /** Without a grace period each container gets the one it was started with (its annotation), else 30 s. */
  spec: { terminationGracePeriodSeconds: number | undefined };
}


const MIN_GRACE_SECONDS = 2; // kuberuntime_container.go minimumGracePeriodInSeconds

/** The grace a kill gives, a whole number of seconds in [2, MAX_GRACE_PERIOD_SECONDS]: a container's
 * annotation was written by whoever made the container, so it is bounded like a spec value. */
export function gracePeriodSeconds(pod: KillTarget, c?: ContainerStatus): number {
  const g = pod.spec.terminationGracePeriodSeconds ?? c?.gracePeriodSeconds ?? 30;
  if (!Number.isFinite(g)) return MAX_GRACE_PERIOD_SECONDS;
  return Math.min(MAX_GRACE_PERIOD_SECONDS, Math.max(MIN_GRACE_SECONDS, Math.ceil(g)));
}

export async function stopContainer(cri: CriClient, id: string, graceSeconds: number): Promise<void> {
  try {
    // The call takes up to the grace period; give its deadline room beyond it.
    await cri.stopContainer({ containerId: id, timeout: BigInt(graceSeconds) }, { timeoutMs: (graceSeconds + 10) * 1000 });
  } catch (e) {
    if (!isCriError(e, GrpcCode.NOT_FOUND)) throw e;
  }
}

/** killPodWithSyncResult: stop every running container concurrently, then every sandbox. */
export async function killPod(cri: CriClient, pod: KillTarget, status: PodStatus, steps: Steps): Promise<boolean> {
  const t0 = performance.now();
  const running = status.containerStatuses.filter((c) => c.state === "running");
  // Nothing to kill (a pod seen for the first time): kubelet records empty kill results; podsync leaves them out.
  if (running.length === 0 && status.sandboxStatuses.length === 0) return true;
  const killSteps = new Steps();
  await Promise.all(
    running.map((c) => killSteps.run("KillContainer", c.name, () => stopContainer(cri, c.id, gracePeriodSeconds(pod, c)).then(() => `stopped ${c.id}`), "KillContainerError")),
  );
  await killSteps.run(
    "KillPodSandbox",
    pod.metadata.uid,
    async () => {
      const errors: string[] = [];
      await Promise.all(
        status.sandboxStatuses.map((s) =>
          cri.stopPodSandbox({ podSandboxId: s.id }).catch((e) => {
            if (!isCriError(e, GrpcCode.NOT_FOUND)) errors.push(errorMessage(e));
          }),
        ),
      );
      if (errors.length) throw new StepError("KillPodSandboxError", errors.join("; "));
      return `stopped ${status.sandboxStatuses.length} sandbox(es)`;
    },
    "KillPodSandboxError",
  );
  const ok = killSteps.steps.every((s) => s.ok);
  steps.steps.push(...killSteps.steps, {
    action: "KillPod",
    target: formatPod(pod),
    ok,
    ...(ok ? { message: `killed ${running.length} container(s)` } : { error: "KillPodError", message: "see the KillContainer/KillPodSandbox steps" }),
    durationMs: elapsedMs(t0),
  });
  return ok;
}


/** DELETE: kill the pod (KillPod path), then remove its containers, then (once they are all gone) its node
 * data (`removeDirs`, when the deployment can), then its sandboxes. A failed removal keeps the sandboxes, so
 * the pod is still found and a second DELETE tries again. */
export async function deletePod(cri: CriClient, pod: KillTarget, status: PodStatus, removeDirs?: () => Promise<string>): Promise<PodSyncResult> {
  const steps = new Steps();
  if (await killPod(cri, pod, status, steps)) {
    await Promise.all(
      status.containerStatuses.map((c) =>
        steps.run("RemoveContainer", c.name, () => cri.removeContainer({ containerId: c.id }).then(() => `removed ${c.id}`).catch(ignoreNotFound), "RemoveContainerError"),
      ),
    );
    if (!steps.steps.every((s) => s.ok)) return { ok: false, steps: steps.steps };
    if (removeDirs && !(await steps.run("RemovePodDirs", pod.metadata.uid, removeDirs, "RemovePodDirsError"))) return { ok: false, steps: steps.steps };
    await Promise.all(
      status.sandboxStatuses.map((s) =>
        steps.run("RemovePodSandbox", s.id, () => cri.removePodSandbox({ podSandboxId: s.id }).then(() => `removed ${s.id}`).catch(ignoreNotFound), "RemovePodSandboxError"),
      ),
    );
  }
  return { ok: steps.steps.every((s) => s.ok), steps: steps.steps };
}

function ignoreNotFound(e: unknown): string {
  if (isCriError(e, GrpcCode.NOT_FOUND)) return "already gone";
  throw e;
}

