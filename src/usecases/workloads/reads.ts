// The workload reads and the delete of GET /v1/workloads and DELETE /v1/workloads/{uid}: the stored workloads of
// one kind or all, sorted as the list shows them; and a workload forgotten (its controller's pods go at the
// controllers' next pass; its claims stay).
import { workloadKey, type StoredWorkload, type WorkloadStore } from "../../controllers/store.js";
import { isWorkloadKind } from "../../pod/workloads/schema.js";
import { ProblemError } from "../problems.js";
import { toV1Workload } from "./entries.js";

/** The stored workloads (`kind`: of one kind) as Kubernetes objects, by kind, namespace and name. */
export async function listWorkloads(
  store: WorkloadStore,
  kind: string | undefined,
): Promise<Record<string, unknown>[]> {
  if (kind !== undefined && !isWorkloadKind(kind))
    throw new ProblemError(
      "bad-request",
      `kind must be one of Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet, Job, CronJob, PersistentVolumeClaim, HorizontalPodAutoscaler, PodDisruptionBudget, Service (got ${JSON.stringify(kind)})`,
      { errors: [{ path: "kind", message: "unknown workload kind" }] },
    );
  const all = (await store.list()).filter((s) => kind === undefined || s.workload.kind === kind);
  all.sort(
    (a, b) =>
      a.workload.kind.localeCompare(b.workload.kind) ||
      a.workload.metadata.namespace.localeCompare(b.workload.metadata.namespace) ||
      a.workload.metadata.name.localeCompare(b.workload.metadata.name),
  );
  return all.map(toV1Workload);
}

/** Forget the workload with this uid (404 not-found when the node holds none); what was removed. */
export async function deleteWorkload(
  store: WorkloadStore,
  uid: string,
): Promise<{ kind: string; namespace: string; name: string; uid: string }> {
  const found: StoredWorkload | undefined = (await store.list()).find((s) => s.workload.metadata.uid === uid);
  if (!found) throw new ProblemError("not-found", `the node holds no workload with uid ${uid}`);
  await store.remove(workloadKey(found.workload));
  const m = found.workload.metadata;
  return { kind: found.workload.kind, namespace: m.namespace, name: m.name, uid };
}
