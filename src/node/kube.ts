// The Kubernetes API's state and its lazy front: one resourceVersion clock, the pods (fed by the loop's relist and
// by every sync's read-back), the events, this node's object; the routes and the Metrics API's sampler loaded at the
// first Kubernetes request, so a node that only takes signed syncs never holds their code.
import { cpus, totalmem } from "node:os";
import type { Verifier } from "../auth/verify.js";
import type { CriClient } from "../cri/client.js";
import type { machineFacts } from "../host/node-facts.js";
import type { RequestLog } from "../http/request-log.js";
import type { StreamBudget } from "../usecases/streams/budget.js";
import { EventRecorder } from "../kubeapi/events.js";
import type { EndpointsFeed } from "../kubeapi/kinds/endpoints-feed.js";
import type { WorkloadFeed } from "../kubeapi/kinds/workload-feed.js";
import { nodeObject, type V1Node } from "../kubeapi/node-object.js";
import { createPodFeed, type PodFeed } from "../kubeapi/pod-feed.js";
import { RvClock, WatchHub } from "../kubeapi/watch-hub.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { Settings } from "../settings/node.js";
import type { V1Pod } from "../status/api-status.js";
import { jsonLog, podsyncVersion } from "./config.js";
import type { DiskPressure, NodeFacts } from "./facts.js";

export function createKubeState(s: Settings) {
  const startedAt = Date.now();
  const clock = new RvClock(startedAt);
  const podsHub = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
  const recorder = new EventRecorder(clock, s.PODSYNC_NODE_NAME);
  const nodeHub = new WatchHub<V1Node>(clock, { key: (n) => n.metadata.name });
  /** CRI Version's runtimeName (container ids are <name>://<id>), "" until learnt (refreshNode). */
  const runtime = { name: "" };
  return { startedAt, clock, podsHub, recorder, nodeHub, runtime };
}
export type KubeState = ReturnType<typeof createKubeState>;

/** The Kubernetes API's pods, fed by the loop's relist and by what every sync read back and every delete did. */
export function feedKubePods(s: Settings, kube: KubeState, hostIPs: string[], engine: PodRuntime): PodFeed {
  return createPodFeed(kube.podsHub, {
    nodeName: s.PODSYNC_NODE_NAME,
    hostIPs,
    runtimeName: () => kube.runtime.name,
    recorder: kube.recorder,
    eviction: (uid) => engine.eviction(uid),
    deletion: (uid) => engine.deleting().get(uid),
  });
}

/** This node's object read again (CRI Version and Status), with the eviction manager's DiskPressure. */
export function nodeRefresher(
  s: Settings,
  kube: KubeState,
  o: {
    node: NodeFacts;
    machine: ReturnType<typeof machineFacts>;
    runtime: PodRuntime;
    feedPods: PodFeed;
    disk: DiskPressure;
  },
): () => Promise<void> {
  return async () => {
    const r = await o.runtime.ready().catch(() => undefined);
    if (r && r.runtime.name !== kube.runtime.name) {
      kube.runtime.name = r.runtime.name;
      o.feedPods.again();
    }
    kube.nodeHub.replaceAll([
      nodeObject(
        {
          info: o.node.nodeInfo,
          cpus: cpus().length,
          memoryBytes: totalmem(),
          hostIPs: o.node.hostIPs,
          ...o.machine,
          startedAt: kube.startedAt,
          port: s.PODSYNC_PORT,
        },
        r,
        Date.now(),
        { disk: o.disk.current },
      ),
    ]);
  };
}

export interface KubeApiDeps {
  verifier: Verifier;
  cri: CriClient;
  runtime: PodRuntime;
  refreshNode: () => Promise<void>;
  arch: string;
  requestLog: (rec: RequestLog) => void;
  workloads: WorkloadFeed;
  endpoints: EndpointsFeed;
  streams: StreamBudget;
}

/** The Kubernetes API's fetch, its routes loaded at the first request (idle RSS 97.6 -> 91.8 MiB,
 * bench/results/log-2026-12-issue21.md). */
export function lazyKubeApi(s: Settings, kube: KubeState, d: KubeApiDeps, quiet: boolean) {
  let api: Promise<{ fetch: (req: Request, env: object) => Response | Promise<Response> }> | undefined;
  const load = async () =>
    (await import("../kubeapi/routes.js")).createKubeApi({
      verifier: d.verifier,
      pods: kube.podsHub,
      events: kube.recorder,
      node: { hub: kube.nodeHub, refresh: d.refreshNode },
      // The runtime's name (container ids are <name>://<id>) is learnt at the first Kubernetes API request: a node
      // nobody asks costs no extra runtime call.
      prepare: d.refreshNode,
      runtime: d.runtime,
      podsyncVersion: podsyncVersion(),
      arch: d.arch,
      followMaxMs: s.PODSYNC_LOG_FOLLOW_MAX_S * 1000,
      allowExec: s.PODSYNC_ALLOW_EXEC,
      allowPortForward: s.PODSYNC_ALLOW_PORT_FORWARD,
      log: d.requestLog,
      workloads: d.workloads,
      endpoints: d.endpoints,
      metrics: await resourceMetrics(d.cri, quiet),
      streams: d.streams,
    });
  return async (req: Request, env: object) => (await (api ??= load())).fetch(req, env);
}

/** kubectl top's Metrics API: CRI stats sampled on a timer while someone reads them (never on the sync path);
 * loaded with the Kubernetes API. */
async function resourceMetrics(cri: CriClient, quiet: boolean) {
  const [{ createResourceSampler }, { readNodeUsage }] = await Promise.all([
    import("../stats/resource-metrics.js"),
    import("../host/metrics/node-usage.js"),
  ]);
  const log = jsonLog(quiet, "metrics");
  return createResourceSampler({
    cri,
    node: readNodeUsage,
    onFallback: (why) => log({ warning: `ListPodSandboxStats refused, ListContainerStats from now on: ${why}` }),
  });
}
