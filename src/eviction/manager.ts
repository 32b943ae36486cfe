// Package eviction/ — kubelet's eviction manager for local storage and DiskPressure (agent layer), run by the loop.
// Imports the front door's types (kubelet/), cri/, container/ and pod/; never HTTP, the loop or an entry point.
//
// The eviction manager's local storage pass (kubelet's synchronize → localStorageEviction), as the node
// agent's loop runs it: every interval, for the desired pods that declare a local storage limit and are not
// evicted already, one ListContainerStats for the node and du for each pod's logs and hosts file, with its disk
// emptyDirs' use from the volume stats cache (measured once per volumeStatsAggPeriodMs, as kubelet's
// fsResourceAnalyzer: volume-stats.ts); a pod over a limit is evicted through the runtime's front door (killed,
// Failed, reason Evicted, with kubelet's message). A pod evicted for its own limit under restartPolicy Always is made anew after a back-off,
// as its controller would (kubelet itself never restarts an evicted pod; here no controller stands behind a
// node's desired pod): its containers, sandboxes and pod directory go, its claims and desired entry stay.
// With a hard threshold on the root dir's filesystem (nodefs.available), a node under disk pressure evicts one
// pod per pass by kubelet's ranking (rankDiskPressureFunc), with its message and the DisruptionTarget condition
// (reason TerminationByKubelet) as synchronize sets it; such a pod is not made anew, and no other is chosen
// while it is still being killed (kubelet waits for the evicted pod's cleanup before the next pass).
// The kill is evictPod's (grace period override 0, which the pod worker turns into the pod's own grace: the
// preStop hooks run; src/kubelet/pod-runtime.ts evict), through the pod's worker when the sync loop runs the pass
// (src/podworkers/dispatch.ts evicting). It runs beside the loop, not in it: kubelet's eviction
// manager blocks its own goroutine on the kill, never the sync loop, so a 30 s preStop holds up no other pod.
import type { CriClient } from "../cri/client.js";
import type { Pod } from "../pod/schema.js";
import type { NodeConfig } from "../container/node-config.js";
import type { PodStatus } from "../container/types.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import {
  diskPressureMessage,
  EVICTED_REASON,
  hasLocalStorageLimits,
  localStorageEviction,
  rankForDiskPressure,
} from "./local-storage.js";
import { podStorageUsage, writableLayers, type DiskUsage, type StatsSources } from "./stats.js";
import { createVolumeStatsCache, type VolumeStatsCache } from "./volume-stats.js";

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
  /** kubelet's --volume-stats-agg-period: how often a pod's emptyDirs are measured again (default 1 minute). */
  volumeStatsAggPeriodMs?: number;
  recreateAfterMs?: number;
  /** kubelet's hard eviction threshold on nodefs.available (the filesystem of the root dir): below it the node
   * is under disk pressure and one pod is evicted per pass, by kubelet's ranking. Unset: not watched. */
  diskPressure?:
    | { threshold: { percent: number } | { bytes: number }; fs: () => Promise<{ capacity: number; available: number }> }
    | undefined;
  /** The node's DiskPressure as each pass finds it (the Node object's condition); only when watched. */
  onDiskPressure?: ((underPressure: boolean) => void) | undefined;
  /** An eviction's kill ended (its steps), or failed. */
  onKilled?: ((uid: string, r: { ok: boolean; error?: string }) => void) | undefined;
}

/** kubelet's pod condition for a node-pressure eviction (eviction_manager.go synchronize). */
export const DISRUPTION_TARGET = "DisruptionTarget";
export const TERMINATION_BY_KUBELET = "TerminationByKubelet";

/** Evictions whose kill is still running, per manager (the loop passes the same options every pass). */
const killing = new WeakMap<EvictionOptions, Map<string, Promise<void>>>();
/** The volume stats cache, per manager. */
const volumeCaches = new WeakMap<EvictionOptions, VolumeStatsCache>();

export interface EvictionPassResult {
  /** CRI calls the stats pass made (one ListContainerStats when any pod was measured). */
  statsCalls: number;
  evicted: { uid: string; message: string }[];
  recreated: string[];
  /** The node's DiskPressure condition in this pass (undefined: not watched). */
  diskPressure?: boolean;
  /** This pass's kills, settled (they run beside the loop; tests await them). */
  killed: Promise<void>;
}

/** One pass over the desired pods with their relisted status (undefined: nothing of it on the node). */
export async function evictionPass(
  o: EvictionOptions,
  runtime: Pick<PodRuntime, "evict" | "delete" | "eviction" | "forgetEviction">,
  pods: readonly { pod: Pod; status: PodStatus | undefined }[],
  now: number,
): Promise<EvictionPassResult> {
  const out: EvictionPassResult = { statsCalls: 0, evicted: [], recreated: [], killed: Promise.resolve() };
  const inFlight = killing.get(o) ?? new Map<string, Promise<void>>();
  killing.set(o, inFlight);
  const kills: Promise<void>[] = [];
  const volumeStats = volumeCaches.get(o) ?? createVolumeStatsCache(o.volumeStatsAggPeriodMs);
  volumeCaches.set(o, volumeStats);
  const running = pods.filter(
    ({ pod, status }) =>
      !runtime.eviction(pod.metadata.uid) && status?.containerStatuses.some((c) => c.state === "running"),
  );
  volumeStats.keepOnly(new Set(running.map(({ pod }) => pod.metadata.uid)));
  let sources: StatsSources | undefined;
  const stats = async () => {
    if (!sources) {
      sources = { rootfs: await writableLayers(o.cri), disk: o.disk, volumeStats, node: o.node, now };
      out.statsCalls = 1;
    }
    return sources;
  };
  const evict = (pod: Pod, message: string, ownLimit: boolean) => {
    const uid = pod.metadata.uid;
    const condition = ownLimit
      ? undefined
      : ({ type: DISRUPTION_TARGET, reason: TERMINATION_BY_KUBELET, message } as const);
    const done = runtime
      .evict(pod, { reason: EVICTED_REASON, message, at: now, ownLimit, ...(condition ? { condition } : {}) })
      .then(
        (r) => o.onKilled?.(uid, { ok: r.ok }),
        (e: unknown) => o.onKilled?.(uid, { ok: false, error: String((e as Error)?.message ?? e) }),
      );
    const tracked = done.finally(() => inFlight.delete(uid));
    inFlight.set(uid, tracked);
    kills.push(tracked);
    out.evicted.push({ uid, message });
  };
  for (const { pod, status } of running.filter(({ pod }) => hasLocalStorageLimits(pod))) {
    const message = localStorageEviction(pod, await podStorageUsage(await stats(), pod, status!));
    if (message !== undefined) evict(pod, message, true);
  }
  // Node disk pressure: one pod per pass, the first by kubelet's ranking (a hard threshold: at once).
  if (o.diskPressure) {
    const fs = await o.diskPressure.fs();
    const t = o.diskPressure.threshold;
    out.diskPressure = fs.available < ("percent" in t ? (fs.capacity * t.percent) / 100 : t.bytes);
    o.onDiskPressure?.(out.diskPressure);
    // waitForPodsCleanup: the next pod is chosen once the last one evicted is gone.
    if (out.diskPressure && inFlight.size === 0) {
      const candidates = running.filter(({ pod }) => !runtime.eviction(pod.metadata.uid));
      const measured = await Promise.all(
        candidates.map(async ({ pod, status }) => ({ pod, usage: await podStorageUsage(await stats(), pod, status!) })),
      );
      const first = rankForDiskPressure(measured)[0];
      if (first) evict(first.pod, diskPressureMessage(first.pod, first.usage), false);
    }
  }
  for (const { pod } of pods) {
    const e = runtime.eviction(pod.metadata.uid);
    if (
      !e ||
      e.reason !== EVICTED_REASON ||
      !e.ownLimit ||
      pod.spec.restartPolicy !== "Always" ||
      now < e.at + (o.recreateAfterMs ?? EVICTED_RECREATE_AFTER_MS) ||
      inFlight.has(pod.metadata.uid)
    )
      continue;
    await runtime.delete(pod.metadata.uid, 0, undefined, pod);
    runtime.forgetEviction(pod.metadata.uid);
    out.recreated.push(pod.metadata.uid);
  }
  out.killed = Promise.all(kills).then(() => undefined);
  return out;
}
