// Package controllers/replication/ — the ReplicationController's pure step (replication/, on the ReplicaSet's).
// Imports ../ (the controllers' types and pods) and ../replicaset/; never I/O, HTTP or the runtime.
//
// The ReplicationController controller, as upstream runs it (pkg/controller/replication/replication_controller.go:
// NewReplicationManager is the ReplicaSet controller over an informer that converts each v1.ReplicationController
// to an apps/v1.ReplicaSet and back, conversion.go): the RC is read as a ReplicaSet (its equality selector as
// matchLabels), the ReplicaSet step runs, and the pods it makes are owned by the RC (v1, ReplicationController).
import type { ReplicaSet, ReplicationController } from "../../pod/workloads/schema.js";
import { controllerRef, type ObservedPod } from "../pods.js";
import { syncReplicaSet } from "../replicaset/sync.js";
import type { ControllerContext, ControllerResult } from "../types.js";

/** conversion.go's convertRCtoRS: the same object as an apps/v1 ReplicaSet. */
export function asReplicaSet(rc: ReplicationController): ReplicaSet {
  return {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: rc.metadata,
    spec: {
      replicas: rc.spec.replicas,
      selector: { matchLabels: rc.spec.selector },
      template: rc.spec.template,
      minReadySeconds: rc.spec.minReadySeconds,
    },
  };
}

export function syncReplicationController(
  rc: ReplicationController,
  pods: readonly ObservedPod[],
  ctx: ControllerContext,
): ControllerResult {
  const r = syncReplicaSet(asReplicaSet(rc), pods, ctx);
  const owner = controllerRef(rc);
  for (const p of r.create) p.metadata.ownerReferences = [owner];
  for (const d of r.delete) d.reason = d.reason.replace(/^ReplicaSet /, "ReplicationController ");
  return r;
}
