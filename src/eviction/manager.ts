// The eviction manager's local storage pass (kubelet's synchronize → localStorageEviction), as the node
// agent's loop runs it: every interval, for the desired pods that declare a local storage limit and are not
// evicted already, one ListContainerStats for the node and du for each pod's logs, disk emptyDirs and hosts
// file; a pod over a limit is evicted through the runtime's front door (killed, Failed, reason Evicted, with
// kubelet's message). A pod evicted for its own limit under restartPolicy Always is made anew after a back-off,
// as its controller would (kubelet itself never restarts an evicted pod; here no controller stands behind a
// node's desired pod): its containers, sandboxes and pod directory go, its claims and desired entry stay.
import type { CriClient } from "../cri/client.js";
import type { Pod } from "../pod/schema.js";
import type { NodeConfig } from "../container/node-config.js";
import type { PodStatus } from "../container/types.js";
import type { PodRuntime } from "../kuberuntime/runtime.js";
import { EVICTED_REASON, hasLocalStorageLimits, localStorageEviction } from "./local-storage.js";
import { podStorageUsage, writableLayers, type DiskUsage } from "./stats.js";

/** kubelet's housekeeping/eviction monitoring interval. */
export const EVICTION_INTERVAL_DEFAULT_MS = 10_000;
/** How long an evicted restartPolicy Always pod stays down before it is made anew (kubelet's initial crash
 * loop back-off). */
export const EVICTED_RECREATE_AFTER_MS = 10_000;

export interface EvictionOptions {
  cri: CriClient;
  disk: DiskUsage;
  node: NodeConfig;
  intervalMs?: number;
  recreateAfterMs?: number;
}

export interface EvictionPassResult {
  /** CRI calls the stats pass made (one ListContainerStats when any pod was measured). */
  statsCalls: number;
  evicted: { uid: string; message: string }[];
  recreated: string[];
}

/** One pass over the desired pods with their relisted status (undefined: nothing of it on the node). */
export async function evictionPass(o: EvictionOptions, runtime: PodRuntime, pods: readonly { pod: Pod; status: PodStatus | undefined }[], now: number): Promise<EvictionPassResult> {
  const out: EvictionPassResult = { statsCalls: 0, evicted: [], recreated: [] };
  const measured = pods.filter(({ pod, status }) => hasLocalStorageLimits(pod) && !runtime.eviction(pod.metadata.uid) && status?.containerStatuses.some((c) => c.state === "running"));
  if (measured.length) {
    const rootfs = await writableLayers(o.cri);
    out.statsCalls = 1;
    for (const { pod, status } of measured) {
      const message = localStorageEviction(pod, await podStorageUsage(rootfs, o.disk, pod, status!, o.node));
      if (message === undefined) continue;
      await runtime.evict(pod, { reason: EVICTED_REASON, message, at: now });
      out.evicted.push({ uid: pod.metadata.uid, message });
    }
  }
  for (const { pod } of pods) {
    const e = runtime.eviction(pod.metadata.uid);
    if (!e || e.reason !== EVICTED_REASON || pod.spec.restartPolicy !== "Always" || now < e.at + (o.recreateAfterMs ?? EVICTED_RECREATE_AFTER_MS)) continue;
    await runtime.delete(pod.metadata.uid, 0, undefined, pod);
    runtime.forgetEviction(pod.metadata.uid);
    out.recreated.push(pod.metadata.uid);
  }
  return out;
}
