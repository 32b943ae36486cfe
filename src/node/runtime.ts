// The container runtime: the CRI connection (every call counted for /metrics), the runtime's Version as kubelet
// reads it at start, the pod status cache the event stream vouches for, and the engine (createPodRuntime) on them.
import { PodStatusCache } from "../container/cache.js";
import type { ServiceLister } from "../container/service-env.js";
import { createCriClient } from "../cri/client.js";
import { GrpcTransport } from "../cri/grpc-transport.js";
import type { VersionResponse } from "../gen/runtime/v1/api_pb.js";
import { startLogRotation } from "../host/logs/container-log-rotation.js";
import { nodeLogFiles } from "../host/logs/log-files.js";
import type { PromMetrics } from "../host/metrics/metrics.js";
import { nodeProbeNetwork } from "../host/probe-network.js";
import { nodePodDirs } from "../host/volumes/pod-dirs.js";
import { nodeTerminationFiles } from "../host/volumes/termination-files.js";
import { nodeVolumeFiles } from "../host/volumes/volume-files.js";
import { nodeVolumeHost } from "../host/volumes/volume-host.js";
import { createPodRuntime } from "../kubelet/pod-runtime.js";
import { MemoryPodLock } from "../kuberuntime/pod-lock.js";
import type { Pod } from "../pod/schema.js";
import type { Settings } from "../settings/node.js";
import type { NodeFacts } from "./facts.js";

export function connectRuntime(s: Settings, metrics: PromMetrics | undefined) {
  const transport = new GrpcTransport({
    endpoint: s.PODSYNC_CRI_ENDPOINT,
    timeoutMs: s.PODSYNC_CRI_TIMEOUT_MS,
    token: s.PODSYNC_CRI_TOKEN,
    tls: s.PODSYNC_CRI_TLS
      ? { ca: s.PODSYNC_CRI_TLS_CA, cert: s.PODSYNC_CRI_TLS_CERT, key: s.PODSYNC_CRI_TLS_KEY }
      : undefined,
  });
  const cri = createCriClient(transport, metrics?.criCall);
  return { transport, cri };
}
export type RuntimeConnection = ReturnType<typeof connectRuntime>;

export interface EngineDeps {
  /** The node's Services as a container starts (its Service env vars). */
  services: ServiceLister;
  /** kubelet's Pulling event while the pull runs. */
  onPulling: (pod: Pod, container: string, image: string) => void;
}

/** The engine with the node's filesystem behind it. The runtime's Version is read at start as kubelet reads it:
 * the event stream takes its source from it (and reads it again when it opens anew), and the engine its name for
 * container ids, so no pod's first sync asks for it. (With the stream off, or its read failed, the engine's first
 * sync reads it, counted in that sync's calls.) With runtime events on, a sync's decision reads the status the
 * stream vouches for (container/cache.ts). */
export function createNodeEngine(
  s: Settings,
  { cri }: RuntimeConnection,
  node: NodeFacts,
  metrics: PromMetrics | undefined,
  deps: EngineDeps,
) {
  let version: Promise<VersionResponse> | undefined;
  const readVersion = () => {
    const p: Promise<VersionResponse> = cri.version({}).catch((e: unknown) => {
      if (version === p) version = undefined;
      throw e;
    });
    return (version = p);
  };
  const statusCache =
    s.PODSYNC_RUNTIME_EVENTS === "on" ? new PodStatusCache(Date.now, s.PODSYNC_EVENTED_RELIST_INTERVAL_MS) : undefined;
  if (statusCache) metrics?.setStatusCache?.(() => statusCache.stats);
  const engine = createPodRuntime(cri, {
    services: deps.services,
    version: () => version,
    statusCache,
    terminationFiles: nodeTerminationFiles,
    podDirs: nodePodDirs,
    hostIPs: node.hostIPs,
    pullTimeoutMs: s.PODSYNC_CRI_PULL_TIMEOUT_MS,
    lock: new MemoryPodLock(s.PODSYNC_LOCK_WAIT_MS),
    node: node.nodeConfig,
    logFiles: nodeLogFiles,
    volumeHost: nodeVolumeHost,
    volumeFiles: nodeVolumeFiles,
    hookNetwork: nodeProbeNetwork,
    localStorageLimits: true,
    onPulling: deps.onPulling,
  });
  return { engine, readVersion, statusCache };
}

/** kubelet's container log manager: containerLogMaxSize / containerLogMaxFiles (host/logs/container-log-rotation.ts).
 * Returns its stop. */
export function startNodeLogRotation(s: Settings, { cri }: RuntimeConnection): () => void {
  return startLogRotation({
    cri,
    maxSize: s.PODSYNC_CONTAINER_LOG_MAX_SIZE,
    maxFiles: s.PODSYNC_CONTAINER_LOG_MAX_FILES,
    intervalMs: s.PODSYNC_CONTAINER_LOG_MONITOR_INTERVAL_MS,
    onError: (e, id) =>
      process.stderr.write(`podsync: rotating the log of container ${id}: ${(e as Error)?.message ?? e}\n`),
  });
}
