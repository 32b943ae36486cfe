// The node agent's loop: it keeps every pod in the desired state running, with nobody calling. Relist plus the
// runtime's event stream (the status cache hears each event first), the eviction manager, the controllers' pass.
import type { PodDispatch } from "../podworkers/dispatch.js";
import type { DesiredPod } from "../pleg/desired-state.js";
import type { PodStatusCache } from "../container/cache.js";
import { watchContainerEvents } from "../cri/container-events.js";
import type { GrpcTransport } from "../cri/grpc-transport.js";
import type { CriClient } from "../cri/client.js";
import type { VersionResponse } from "../gen/runtime/v1/api_pb.js";
import { nodeDiskUsage } from "../host/metrics/disk-usage.js";
import type { PromMetrics } from "../host/metrics/metrics.js";
import type { PodFeed } from "../kubeapi/pod-feed.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { DesiredState } from "../pleg/desired-state.js";
import { type LoopControllers, startReconcileLoop } from "../syncloop/sync-loop.js";
import { bytes } from "../pod/quantity.js";
import type { Prober } from "../prober/prober.js";
import { RELIST_INTERVAL_DEFAULT_MS } from "../settings/common.js";
import type { Settings } from "../settings/node.js";
import { statfs } from "node:fs/promises";
import { jsonLog } from "./config.js";
import type { DiskPressure, NodeFacts } from "./facts.js";

export interface NodeLoopDeps {
  controllers: LoopControllers;
  /** The loop's runtime view (counted as the loop's, recording events). */
  runtime: PodRuntime;
  cri: CriClient;
  transport: GrpcTransport;
  readVersion: () => Promise<VersionResponse>;
  statusCache: PodStatusCache | undefined;
  desired: DesiredState;
  /** The pod workers every source dispatches to. */
  pods: PodDispatch<DesiredPod>;
  prober: Prober;
  metrics: PromMetrics | undefined;
  feedPods: PodFeed;
  /** Told after each relist: the Services data plane waits for the first. */
  podsRelisted: () => void;
  /** The eviction manager's DiskPressure, kept for the Node object and admission. */
  disk: DiskPressure;
  /** The Node object is read again when DiskPressure changes. */
  nodeChanged: () => void;
}

export function startNodeLoop(s: Settings, node: NodeFacts, d: NodeLoopDeps, quiet: boolean) {
  const { cri, statusCache } = d;
  const evictionLog = jsonLog(quiet, "eviction");
  const loop = startReconcileLoop({
    pods: d.pods,
    controllers: d.controllers,
    runtime: d.runtime,
    cri,
    desired: d.desired,
    prober: d.prober,
    metrics: d.metrics,
    relistIntervalMs: s.PODSYNC_RELIST_INTERVAL_MS ?? RELIST_INTERVAL_DEFAULT_MS.node,
    // Exits restart containers at once; the relist stays as the safety net (and takes over while the stream is down).
    // The status cache hears each event before the loop acts on it.
    events:
      s.PODSYNC_RUNTIME_EVENTS === "on"
        ? (on) =>
            watchContainerEvents({
              transport: d.transport,
              version: d.readVersion,
              onEvent: (e) => {
                statusCache?.event(e);
                on.event(e);
              },
              onState: (st) => {
                statusCache?.streamUp(st.up);
                on.state(st);
              },
            })
        : undefined,
    statusChanged: (uid) => statusCache?.invalidate(uid),
    eventedRelistIntervalMs: s.PODSYNC_EVENTED_RELIST_INTERVAL_MS,
    resyncIntervalMs: s.PODSYNC_RESYNC_INTERVAL_MS,
    log: jsonLog(quiet, "reconcile"),
    eviction: {
      cri,
      disk: nodeDiskUsage,
      node: node.nodeConfig,
      ...(s.PODSYNC_EVICTION_INTERVAL_MS !== undefined ? { intervalMs: s.PODSYNC_EVICTION_INTERVAL_MS } : {}),
      ...(s.PODSYNC_VOLUME_STATS_AGG_PERIOD_MS !== undefined
        ? { volumeStatsAggPeriodMs: s.PODSYNC_VOLUME_STATS_AGG_PERIOD_MS }
        : {}),
      ...(s.PODSYNC_EVICTION_HARD_NODEFS_AVAILABLE !== undefined
        ? {
            diskPressure: {
              threshold: evictionThreshold(s.PODSYNC_EVICTION_HARD_NODEFS_AVAILABLE),
              fs: () => nodeFs(node.nodeConfig.rootDir),
            },
          }
        : {}),
      onDiskPressure: (pressure) => {
        if (pressure === d.disk.current?.pressure) return;
        d.disk.current = { pressure, since: Date.now() };
        d.nodeChanged();
      },
      // The kill runs beside the loop; a failed one is said once, as the loop says its errors.
      onKilled: (uid, r) =>
        r.ok || evictionLog({ uid, error: `the evicted pod's kill failed: ${r.error ?? "a step failed"}` }),
    },
    onRelist: (entries, view) => {
      d.feedPods(entries, view, (uid) => d.prober.results(uid));
      d.podsRelisted();
    },
  });
  d.metrics?.setSource(loop);
  return loop;
}

/** PODSYNC_EVICTION_HARD_NODEFS_AVAILABLE: a percentage of the filesystem, or a size. */
function evictionThreshold(v: string): { percent: number } | { bytes: number } {
  return v.endsWith("%") ? { percent: Number(v.slice(0, -1)) } : { bytes: bytes(v) };
}

/** nodefs: the filesystem of the root dir, its size and what is free to unprivileged users (statfs bavail). */
async function nodeFs(dir: string): Promise<{ capacity: number; available: number }> {
  const st = await statfs(dir);
  return { capacity: st.blocks * st.bsize, available: st.bavail * st.bsize };
}
