// The node-local workload controllers (Deployment, ReplicaSet, Job, HPA, ...), run by the loop every pass, with
// the node owner's bounds and policy on the pods they make, as on a pod sent directly.
import { createControllers } from "../controllers/run.js";
import { criPodUsage } from "../controllers/podautoscaler/metrics.js";
import type { WorkloadStore } from "../controllers/store.js";
import type { CriClient } from "../cri/client.js";
import { templateRefusal } from "../usecases/admission/templates.js";
import type { EventRecorder } from "../kubeapi/events.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { DesiredState } from "../pleg/desired-state.js";
import type { Settings } from "../settings/node.js";
import { jsonLog } from "./config.js";
import type { NodeFacts } from "./facts.js";

export interface NodeControllersDeps {
  workloads: WorkloadStore;
  desired: DesiredState;
  /** The loop's runtime view (counted as the loop's, recording events), its deletes through the pod workers. */
  runtime: Pick<PodRuntime, "delete">;
  /** The engine, for admission of the templates. */
  engine: PodRuntime;
  cri: CriClient;
  recorder: EventRecorder;
}

export function createNodeControllers(s: Settings, node: NodeFacts, d: NodeControllersDeps, quiet: boolean) {
  return createControllers({
    workloads: d.workloads,
    desired: d.desired,
    runtime: d.runtime,
    nodeName: s.PODSYNC_NODE_NAME,
    node: node.nodeInfo,
    podUsage: criPodUsage(d.cri),
    autoscaler: {
      syncPeriodMs: s.PODSYNC_HPA_SYNC_PERIOD_MS,
      downscaleStabilisationWindowMs: s.PODSYNC_HPA_DOWNSCALE_STABILIZATION_MS,
    },
    log: jsonLog(quiet, "controllers"),
    onRefused: (pod, reason, message) => d.recorder.record(pod.metadata, { type: "Warning", reason, message }),
    // The node owner's bounds and policy hold for the pods the controllers make as for a pod sent directly, as
    // they are now (a workload stored under looser settings is refused, with an event on it).
    limits: { maxPods: node.nodeInfo.allocatable.pods ?? 110 },
    admitTemplate: templateRefusal(node.policy, d.engine),
    onWorkloadRefused: (w, f) =>
      d.recorder.record(
        {
          kind: w.kind,
          apiVersion: w.apiVersion,
          namespace: w.metadata.namespace,
          name: w.metadata.name,
          uid: w.metadata.uid ?? "",
        },
        { type: "Warning", reason: f.reason, message: f.message },
      ),
  });
}
