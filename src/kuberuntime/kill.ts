// Killing: kubelet's killContainer (the preStop hook, the sidecars' turn, StopContainer), killPodWithSyncResult
// (every running container, then every sandbox) and the DELETE route's kill-and-remove.
import type { CriClient } from "../cri/client.js";
import { errorMessage, GrpcCode, isCriError } from "../cri/errors.js";
import { LifecycleHandler, MAX_GRACE_PERIOD_SECONDS, type Container } from "../pod/schema.js";
import { runHandler, type HookNetwork } from "../lifecycle/handlers.js";
import { newTerminationOrdering, type TerminationOrdering } from "./termination-order.js";
import { elapsedMs, StepError, Steps } from "../container/steps.js";
import type { ContainerStatus, PodRef, PodStatus, PodSyncResult } from "../container/types.js";

/** kubelet's format.Pod: name_namespace(uid). */
export const formatPod = (pod: { metadata: PodRef }) =>
  `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;

/** What killing a pod needs: who it is and how long its containers get to stop; with its containers' specs
 * when known (their preStop hooks, the sidecars' order), else what the containers' annotations kept. */
export interface KillTarget {
  metadata: PodRef;
  /** Without a grace period each container gets the one it was started with (its annotation), else 30 s. */
  spec: {
    terminationGracePeriodSeconds: number | undefined;
    initContainers?: Container[] | undefined;
    containers?: Container[] | undefined;
    hostNetwork?: boolean | undefined;
  };
}

/** What running a preStop hook needs beyond the CRI client: the connection to the pod (httpGet hooks) and the
 * node's IP (a hostNetwork pod's). */
export interface KillHooks {
  network?: HookNetwork | undefined;
  hostIPs?: readonly string[] | undefined;
}

const MIN_GRACE_SECONDS = 2; // kuberuntime_container.go minimumGracePeriodInSeconds

/** The grace a kill gives, a whole number of seconds in [0, MAX_GRACE_PERIOD_SECONDS] before the preStop hook
 * and the sidecars' wait take their share (StopContainer then gets at least 2): a container's annotation was
 * written by whoever made the container, so it is bounded like a spec value. */
export function gracePeriodSeconds(
  pod: Pick<KillTarget, "spec">,
  c?: Pick<ContainerStatus, "gracePeriodSeconds">,
): number {
  const g = pod.spec.terminationGracePeriodSeconds ?? c?.gracePeriodSeconds ?? 30;
  if (!Number.isFinite(g)) return MAX_GRACE_PERIOD_SECONDS;
  return Math.min(MAX_GRACE_PERIOD_SECONDS, Math.max(0, Math.ceil(g)));
}

export async function stopContainer(cri: CriClient, id: string, graceSeconds: number): Promise<void> {
  try {
    // The call takes up to the grace period; its deadline is the runtime request timeout beyond it (kubelet's
    // StopContainer: `r.timeout + timeout`, "to leave extra time for SIGKILL container and request latency").
    await cri.stopContainer({ containerId: id, timeout: BigInt(graceSeconds) }, { workMs: graceSeconds * 1000 });
  } catch (e) {
    if (!isCriError(e, GrpcCode.NOT_FOUND)) throw e;
  }
}

/** The container's preStop hook: from its spec when the pod's spec is known, else from its annotation. */
function preStopOf(pod: KillTarget, c: Pick<ContainerStatus, "name" | "preStopHandler">): LifecycleHandler | undefined {
  const spec = [...(pod.spec.initContainers ?? []), ...(pod.spec.containers ?? [])].find((s) => s.name === c.name);
  if (spec) return spec.lifecycle?.preStop;
  if (!c.preStopHandler) return undefined;
  try {
    const h = LifecycleHandler.safeParse(JSON.parse(c.preStopHandler));
    return h.success ? h.data : undefined;
  } catch {
    return undefined;
  }
}

/** pod_workers.go calculateEffectiveGracePeriod for a pod's first termination with no deletion grace period (an
 * internal kill: the eviction manager's): the override when it is set and not 0, else the pod's own
 * terminationGracePeriodSeconds; never below 1. So an eviction's override of 0 gives the pod its own grace. */
export function effectiveGracePeriod(pod: Pick<KillTarget, "spec">, override: number | undefined): number {
  let g = 0;
  if (override !== undefined) g = override;
  if (g === 0) g = gracePeriodSeconds(pod);
  return Math.max(1, g);
}

/** killContainer: the grace period (the pod's, or the override the pod worker passes, which kubelet applies
 * before the hook); the preStop hook (if any, and if there is grace left), bounded by it and its time taken off
 * it (executePreStopHook, in whole seconds as kubelet counts); then a sidecar's wait for its turn; then
 * StopContainer with what is left, at least 2 s. Returns what the preStop hook did ("" without one), for the
 * step's message. */
export async function killContainer(
  cri: CriClient,
  pod: KillTarget,
  c: Pick<ContainerStatus, "id" | "name" | "preStopHandler">,
  graceSeconds: number,
  o: {
    hooks?: KillHooks | undefined;
    podIPs?: readonly string[] | undefined;
    ordering?: TerminationOrdering | undefined;
    gracePeriodOverride?: number | undefined;
  } = {},
): Promise<string> {
  let grace = o.gracePeriodOverride ?? graceSeconds;
  const notes: string[] = [];
  const preStop = preStopOf(pod, c);
  if (preStop && grace > 0) {
    const start = performance.now();
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const podIP = o.podIPs?.[0] ?? (pod.spec.hostNetwork ? (o.hooks?.hostIPs?.[0] ?? "") : "");
    const hook = runHandler(
      { cri, network: o.hooks?.network },
      { pod: formatPod(pod), container: { name: c.name, ports: specOf(pod, c.name)?.ports }, containerId: c.id, podIP },
      preStop,
      { deadlineMs: grace * 1000, signal: ac.signal },
    );
    const outcome = await Promise.race([
      hook,
      new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), grace * 1000))),
    ]);
    clearTimeout(timer);
    ac.abort();
    const took = Math.floor((performance.now() - start) / 1000);
    grace -= took;
    notes.push(
      outcome === "timeout"
        ? `preStop hook not completed in grace period (${o.gracePeriodOverride ?? graceSeconds}s)`
        : outcome === undefined
          ? `preStop hook completed (${took}s)`
          : `FailedPreStopHook: ${outcome}`,
    );
  }
  if (o.ordering && grace > 0) grace -= Math.floor(await o.ordering.waitForTurn(c.name, grace));
  grace = Math.max(MIN_GRACE_SECONDS, grace);
  await stopContainer(cri, c.id, grace);
  o.ordering?.containerTerminated(c.name);
  return notes.join("; ");
}

const specOf = (pod: KillTarget, name: string) =>
  [...(pod.spec.initContainers ?? []), ...(pod.spec.containers ?? [])].find((s) => s.name === name);

/** killPodWithSyncResult: stop every running container concurrently (each after its preStop hook; with
 * sidecars, the regular containers first and then the sidecars in reverse order), then every sandbox. With a
 * grace period override (the eviction manager's, through effectiveGracePeriod) every container gets it. */
export async function killPod(
  cri: CriClient,
  pod: KillTarget,
  status: PodStatus,
  steps: Steps,
  hooks?: KillHooks,
  gracePeriodOverride?: number,
): Promise<boolean> {
  const t0 = performance.now();
  const running = status.containerStatuses.filter((c) => c.state === "running");
  // Nothing to kill (a pod seen for the first time): kubelet records empty kill results; podsync leaves them out.
  if (running.length === 0 && status.sandboxStatuses.length === 0) return true;
  const killSteps = new Steps();
  const ordering = newTerminationOrdering(
    pod.spec,
    running.map((c) => c.name),
  );
  await Promise.all(
    running.map((c) =>
      killSteps.run(
        "KillContainer",
        c.name,
        () =>
          killContainer(cri, pod, c, gracePeriodSeconds(pod, c), {
            hooks,
            podIPs: status.ips,
            ordering,
            gracePeriodOverride,
          }).then((hook) => [`stopped ${c.id}`, hook].filter(Boolean).join("; ")),
        "KillContainerError",
      ),
    ),
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
    ...(ok
      ? { message: `killed ${running.length} container(s)` }
      : { error: "KillPodError", message: "see the KillContainer/KillPodSandbox steps" }),
    durationMs: elapsedMs(t0),
  });
  return ok;
}

/** DELETE: kill the pod (KillPod path), then remove its containers, then (once they are all gone) its node
 * data (`removeDirs`, when the deployment can), then its sandboxes. A failed removal keeps the sandboxes, so
 * the pod is still found and a second DELETE tries again. */
export async function deletePod(
  cri: CriClient,
  pod: KillTarget,
  status: PodStatus,
  removeDirs?: () => Promise<string>,
  hooks?: KillHooks,
): Promise<PodSyncResult> {
  const steps = new Steps();
  if (await killPod(cri, pod, status, steps, hooks)) {
    await Promise.all(
      status.containerStatuses.map((c) =>
        steps.run(
          "RemoveContainer",
          c.name,
          () =>
            cri
              .removeContainer({ containerId: c.id })
              .then(() => `removed ${c.id}`)
              .catch(ignoreNotFound),
          "RemoveContainerError",
        ),
      ),
    );
    if (!steps.steps.every((s) => s.ok)) return { ok: false, steps: steps.steps };
    if (removeDirs && !(await steps.run("RemovePodDirs", pod.metadata.uid, removeDirs, "RemovePodDirsError")))
      return { ok: false, steps: steps.steps };
    await Promise.all(
      status.sandboxStatuses.map((s) =>
        steps.run(
          "RemovePodSandbox",
          s.id,
          () =>
            cri
              .removePodSandbox({ podSandboxId: s.id })
              .then(() => `removed ${s.id}`)
              .catch(ignoreNotFound),
          "RemovePodSandboxError",
        ),
      ),
    );
  }
  return { ok: steps.steps.every((s) => s.ok), steps: steps.steps };
}

function ignoreNotFound(e: unknown): string {
  if (isCriError(e, GrpcCode.NOT_FOUND)) return "already gone";
  throw e;
}
