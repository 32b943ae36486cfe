// The node agent, composed in order: the node's facts, the Services data plane, the engine, the Kubernetes API's
// state, the prober, the workloads, the Service model, the controllers, the loop and log rotation.
import { notifying } from "../controllers/store.js";
import { storeView } from "../pleg/desired-state.js";
import { createPodDispatch } from "../podworkers/dispatch.js";
import type { PromMetrics } from "../host/metrics/metrics.js";
import { recordingEvents } from "../kubeapi/events.js";
import { createWorkloadFeed } from "../kubeapi/kinds/workload-feed.js";
import { listClaimDirs } from "../volumemanager/claims.js";
import { nodeVolumeHost } from "../host/volumes/volume-host.js";
import type { SyncResult } from "../kubelet/pod-runtime.js";
import { instrumentRuntime } from "../metrics/metrics.js";
import type { Pod } from "../pod/schema.js";
import type { ServiceSource } from "../services/source.js";
import type { Settings } from "../settings/node.js";
import { createNodeControllers } from "./controllers.js";
import { type DiskPressure, describeNode } from "./facts.js";
import { createKubeState, feedKubePods } from "./kube.js";
import { startNodeLoop } from "./loop.js";
import { createNodeEngine, type RuntimeConnection, startNodeLogRotation } from "./runtime.js";
import { startServiceModel, startServicesDataplane } from "./services.js";
import { type NodeState, openProber, openWorkloadState } from "./state.js";

export async function startAgent(
  s: Settings,
  conn: RuntimeConnection,
  st: NodeState,
  metrics: PromMetrics | undefined,
  quiet: boolean,
) {
  const { cri } = conn;
  const disk: DiskPressure = { current: undefined };
  const node = await describeNode(s, disk);
  const plane = await startServicesDataplane(s, cri, quiet);
  if (plane.dataplane) node.nodeConfig.clusterDNS = plane.dataplane.clusterDNS;
  // The Kubernetes API's state: one resourceVersion clock, the pods, the events, this node.
  const kube = createKubeState(s);
  // The node's Services (made below, with the stores): a container's Service env vars read them as it starts.
  let serviceSource: ServiceSource | undefined;
  const { engine, readVersion, statusCache } = createNodeEngine(s, conn, node, metrics, {
    services: () => serviceSource?.snapshot().services ?? [],
    // kubelet's Pulling event while the pull runs.
    onPulling: (pod, container, image) => kube.recorder.pulling(pod, container, image),
  });
  const feedPods = feedKubePods(s, kube, node.hostIPs, engine);
  // Requests and the loop share the engine (and so its per-pod lock); their syncs are counted apart. Every sync's
  // read-back and every delete also updates the Kubernetes API's pods (between relists, which runtime events make
  // minutes apart). An eviction's verdict shows at once.
  const podsAfter = {
    synced: (pod: Pod, r: SyncResult) => {
      feedPods.synced(pod, r.after, prober.results(pod.metadata.uid));
    },
    deleted: (uid: string) => feedPods.removed(uid),
    deleting: (uid: string) => feedPods.deleting(uid),
    evicted: () => feedPods.again(),
  };
  const runtime = recordingEvents(instrumentRuntime(engine, metrics, "request"), kube.recorder, podsAfter);
  const { probeStore, probeStoreError, prober } = await openProber(st, cri, node.hostIPs, quiet);
  const { workloadFiles, workloadsError } = await openWorkloadState(st, node.nodeConfig.rootDir, quiet);
  // Every change to the workloads (a request's, a controller's) feeds the Kubernetes API's workload kinds; a
  // request's change kicks the loop, so their controllers run at once.
  // A claim directory a StatefulSet left (Retain) still lists in get pvc.
  const workloadFeed = createWorkloadFeed(kube.clock, workloadFiles, undefined, () =>
    listClaimDirs(nodeVolumeHost, node.nodeConfig.rootDir),
  );
  let kickLoop = () => undefined as void;
  const workloads = notifying(workloadFeed.store, () => kickLoop());
  const { services, endpointsFeed, podsRelisted } = startServiceModel(
    kube.clock,
    workloadFeed,
    kube.podsHub,
    plane,
    quiet,
  );
  serviceSource = services;
  // The loop and the controllers act through one runtime view: counted as the loop's, and recording events.
  const loopRuntime = recordingEvents(instrumentRuntime(engine, metrics, "loop"), kube.recorder, podsAfter);
  // kubelet's pod workers: every source (requests, the loop, the controllers' deletes) dispatches a pod's work here.
  const pods = createPodDispatch(storeView(st.desired));
  const controllers = createNodeControllers(
    s,
    node,
    {
      workloads: workloadFeed.store,
      desired: st.desired,
      runtime: pods.killing(loopRuntime),
      engine,
      cri,
      recorder: kube.recorder,
    },
    quiet,
  );
  // The eviction manager's DiskPressure changes the Node object (once the front can read it: onNodeChanged).
  let nodeChanged = () => undefined as void;
  const loop = startNodeLoop(
    s,
    node,
    {
      pods,
      controllers,
      runtime: loopRuntime,
      cri,
      transport: conn.transport,
      readVersion,
      statusCache,
      disk,
      desired: st.desired,
      prober,
      metrics,
      feedPods,
      podsRelisted,
      nodeChanged: () => nodeChanged(),
    },
    quiet,
  );
  const stopLogRotation = startNodeLogRotation(s, conn);
  kickLoop = () => loop.kick();
  const onNodeChanged = (fn: () => void) => void (nodeChanged = fn);
  // biome-ignore format: the agent's parts, listed
  return { disk, node, plane, kube, engine, feedPods, runtime, probeStore, probeStoreError, prober, workloadFiles,
    workloadsError, workloadFeed, workloads, services, endpointsFeed, controllers, loop, stopLogRotation,
    onNodeChanged, quiet };
}
export type Agent = Awaited<ReturnType<typeof startAgent>>;
