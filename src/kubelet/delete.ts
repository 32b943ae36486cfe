// The front door's delete (kill, then the pod's node data and its sandboxes) and the eviction manager's verdicts.
import { NamespaceMode, PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import type { Pod } from "../pod/schema.js";
import { deletePod, effectiveGracePeriod, killPod } from "../kuberuntime/kill.js";
import { getPodStatus, getPodStatusOrListed } from "../kuberuntime/pod-status.js";
import { Steps } from "../container/steps.js";
import { podDataPaths, podVolumesDir, removePodData } from "../volumemanager/pod-dirs.js";
import { FILE_VOLUME_PLUGINS } from "../volumemanager/object-volumes.js";
import { checkCurrent, counted, isEmpty, refFromStatus, type RuntimeContext } from "./context.js";
import type { GuardOptions, PodDeletion, PodRuntime } from "./types.js";

export function createDelete(ctx: RuntimeContext): Pick<PodRuntime, "delete" | "deleting" | "terminating"> {
  const { cri, o, cache, syncOptions, lockedRun, reasons, evictions, deletions, syncing } = ctx;
  /** The pod's file volumes (their tmpfs unmounted first, so no secret is left in memory), then its node data
   * (`paths`: pod dir, log dirs). Any failure is the step's error: DELETE answers 207 and a later one retries. */
  const removeNodeData =
    (o.volumeFiles || o.podDirs) &&
    (async (uid: string, paths: string[]) => {
      syncOptions.volumeBackOff.forget(`${podVolumesDir(syncOptions.node.rootDir, uid)}/`);
      if (o.volumeFiles)
        for (const plugin of FILE_VOLUME_PLUGINS)
          await o.volumeFiles.removeAll(`${podVolumesDir(syncOptions.node.rootDir, uid)}/${plugin}`);
      return o.podDirs ? removePodData(o.podDirs, paths) : "removed the pod's file volumes";
    });

  /** DELETE's kill under the pod's lock. */
  const deleteLocked = (uid: string, gracePeriodSeconds?: number, guard?: GuardOptions, spec?: Pod) =>
    lockedRun(uid, (fence) =>
      counted(
        cri,
        async (c) => {
          await checkCurrent(guard, `the delete of pod ${uid}`);
          cache?.forget(uid);
          // Best effort: a sandbox whose status the runtime cannot report is still stopped and removed by its id
          // from the list (its steps say what could not be; the answer is then 207 with statusError).
          const status = await getPodStatusOrListed(c, { uid, name: "", namespace: "" });
          const pod = refFromStatus(uid, status);
          if (isEmpty(status)) {
            // No sandbox, yet its volumes may have been set up (a tmpfs emptyDir mounted before a later volume
            // failed, or a sandbox removed by hand): its node data goes as on the normal path, as kubelet's
            // cleanupOrphanedPodDirs removes a pod dir no pod owns (kubelet_pods.go).
            const steps = new Steps();
            if (removeNodeData)
              await steps.run(
                "RemovePodDirs",
                uid,
                () => removeNodeData(uid, podDataPaths(syncOptions.node, uid, status)),
                "RemovePodDirsError",
              );
            return {
              ok: steps.steps.every((st) => st.ok),
              pod,
              steps: steps.steps,
              deleted: false,
              wasRunning: false,
            };
          }
          const wasRunning = status.sandboxStatuses.some((s) => s.state === PodSandboxState.SANDBOX_READY);
          // The file volumes, the pod dir (emptyDirs, termination-message files, subPath binds) and its log dir go
          // with it, before its sandboxes (a failure keeps them, so the next DELETE finds the pod and retries).
          const removeDirs = removeNodeData && (() => removeNodeData(uid, podDataPaths(syncOptions.node, uid, status)));
          const known = spec?.metadata.uid === uid ? spec.spec : undefined;
          const target = {
            metadata: pod,
            spec: {
              terminationGracePeriodSeconds: gracePeriodSeconds,
              initContainers: known?.initContainers,
              containers: known?.containers,
              hostNetwork:
                known?.hostNetwork ??
                status.sandboxStatuses[0]?.linux?.namespaces?.options?.network === NamespaceMode.NODE,
            },
          };
          const r = await deletePod(c, target, status, removeDirs, { network: o.hookNetwork, hostIPs: o.hostIPs });
          reasons.delete(uid);
          evictions.delete(uid);
          return {
            ok: r.ok,
            pod,
            steps: r.steps,
            deleted: true,
            wasRunning,
            ...(status.statusError ? { statusError: status.statusError } : {}),
          };
        },
        fence,
      ),
    );

  /** Terminating from the ask on (the API server sets deletionTimestamp before kubelet's kill starts). */
  const terminating = (uid: string, gracePeriodSeconds?: number, spec?: Pod): PodDeletion => {
    const grace = gracePeriodSeconds ?? spec?.spec.terminationGracePeriodSeconds ?? 30;
    const mark: PodDeletion = {
      deletionTimestamp: syncOptions.now() + grace * 1000,
      deletionGracePeriodSeconds: grace,
      spec: deletions.get(uid)?.spec ?? spec,
    };
    deletions.set(uid, mark);
    // kubelet's pod worker cancels the running sync of a pod that became terminating (pod_workers.go UpdatePod:
    // `if (becameTerminating || wasGracePeriodShortened) && status.cancelFn != nil { status.cancelFn() }`): the
    // delete waits for the lock no longer than the sync takes to notice.
    syncing.get(uid)?.abort(new Error(`pod ${uid} is being deleted`));
    return mark;
  };

  return {
    delete: (uid, gracePeriodSeconds, guard, spec) => {
      const mark = terminating(uid, gracePeriodSeconds, spec);
      return deleteLocked(uid, gracePeriodSeconds, guard, spec).finally(() => {
        if (deletions.get(uid) === mark) deletions.delete(uid);
      });
    },

    terminating: (uid, gracePeriodSeconds, spec) => void terminating(uid, gracePeriodSeconds, spec),

    deleting: () => deletions,
  };
}

/** The eviction manager's verdicts: kept by uid until DELETE or forgetEviction, the kill under the pod's lock. */
export function createEviction(ctx: RuntimeContext): Pick<PodRuntime, "evict" | "eviction" | "forgetEviction"> {
  const { cri, o, cache, lockedRun, evictions } = ctx;
  return {
    evict: (pod, eviction) => {
      // The verdict holds at once (the loop starts nothing of it, its status says Failed); the kill waits its turn.
      evictions.set(pod.metadata.uid, eviction);
      return lockedRun(pod.metadata.uid, (fence) =>
        counted(
          cri,
          async (c) => {
            cache?.invalidate(pod.metadata.uid);
            const status = await getPodStatus(c, pod.metadata);
            const steps = new Steps();
            // evictPod's gracePeriodOverride 0, through the pod worker (pod_workers.go calculateEffectiveGracePeriod).
            const target = { metadata: pod.metadata, spec: pod.spec };
            await killPod(
              c,
              target,
              status,
              steps,
              { network: o.hookNetwork, hostIPs: o.hostIPs },
              effectiveGracePeriod(target, 0),
            );
            return { ok: steps.steps.every((s) => s.ok), steps: steps.steps };
          },
          fence,
        ),
      );
    },

    eviction: (uid) => evictions.get(uid),

    forgetEviction: (uid) => void evictions.delete(uid),
  };
}
