// The node's desired workloads: the port to the store that holds the Deployments, ReplicaSets, StatefulSets,
// DaemonSets, Jobs, CronJobs and PersistentVolumeClaims a node runs (the pods they make are desired pods, in the
// desired-state store beside it: src/kuberuntime/desired-state.ts). Requests put and replace the workloads sent
// to the node; the controllers (src/controllers/*) add the workloads they make (a Deployment's ReplicaSets, a
// CronJob's Jobs), record each workload's status and their own memory (a CronJob's last schedule time), and
// remove what they retire. Implementations: files under the state dir on Node (src/state/workloads.ts), memory in
// tests.
import type { DesiredAudit } from "../pleg/desired-state.js";
import type { OwnerReference } from "../pod/schema.js";
import type { Workload } from "../pod/workloads/schema.js";

export interface StoredWorkload {
  workload: Workload;
  /** The ConfigMaps and Secrets its pods see (as v1 objects), as DesiredPod.objects. */
  objects?: { configMaps?: unknown[]; secrets?: unknown[] } | undefined;
  audit: DesiredAudit;
  storedAt: number;
  /** A workload a controller made: its controller (a Deployment for its ReplicaSets, a CronJob for its Jobs). */
  owner?: OwnerReference | undefined;
  /** metadata.generation: 1 when first stored, one more each time its spec changes (status.observedGeneration
   * says which one the controller has acted on). */
  generation?: number | undefined;
  /** The Kubernetes-shaped status its controller last wrote (DeploymentStatus, JobStatus, ...). */
  status?: Record<string, unknown> | undefined;
}

export const workloadKey = (w: { kind: string; metadata: { namespace: string; name: string } }) =>
  `${w.kind}/${w.metadata.namespace}/${w.metadata.name}`;

export interface WorkloadStore {
  list(): Promise<StoredWorkload[]>;
  /** Store one workload (durably), replacing the one of the same kind, namespace and name. */
  put(entry: StoredWorkload): Promise<void>;
  /** Store several at once (durably, all or nothing). */
  putAll(entries: StoredWorkload[]): Promise<void>;
  /** Record a workload's status (and nothing else), if the workload is still stored under that uid. */
  setStatus(key: string, uid: string, status: Record<string, unknown>): Promise<void>;
  /** Forget one workload; false when it was not there. */
  remove(key: string): Promise<boolean>;
  /** Replace every workload at once (durably, all or nothing). */
  replace(entries: StoredWorkload[]): Promise<void>;
}

export class MemoryWorkloadStore implements WorkloadStore {
  private readonly items = new Map<string, StoredWorkload>();
  async list() {
    return [...this.items.values()];
  }
  async put(entry: StoredWorkload) {
    this.items.set(workloadKey(entry.workload), entry);
  }
  async putAll(entries: StoredWorkload[]) {
    for (const e of entries) this.items.set(workloadKey(e.workload), e);
  }
  async setStatus(key: string, uid: string, status: Record<string, unknown>) {
    const e = this.items.get(key);
    if (e && e.workload.metadata.uid === uid) this.items.set(key, { ...e, status });
  }
  async remove(key: string) {
    return this.items.delete(key);
  }
  async replace(entries: StoredWorkload[]) {
    this.items.clear();
    for (const e of entries) this.items.set(workloadKey(e.workload), e);
  }
}

/** The store, calling `changed` after each change a request makes (not after a status): the Node entry kicks the
 * loop with it, so a workload stored while the loop relists slowly (runtime events up, nothing watched) is run at
 * once. */
export function notifying(inner: WorkloadStore, changed: () => void): WorkloadStore {
  const after =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      const r = await fn(...a);
      changed();
      return r;
    };
  return {
    list: () => inner.list(),
    setStatus: (key, uid, status) => inner.setStatus(key, uid, status),
    put: after((e: StoredWorkload) => inner.put(e)),
    putAll: after((es: StoredWorkload[]) => inner.putAll(es)),
    remove: after((key: string) => inner.remove(key)),
    replace: after((es: StoredWorkload[]) => inner.replace(es)),
  };
}
