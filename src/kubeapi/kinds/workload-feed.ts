// Package kubeapi/kinds/ — the stored kinds kubectl reads: workloads, Services, Endpoints and EndpointSlices.
// Imports ../ (watch hub, defaults), controllers/'s store port and the model; never the runtime or an entry.
//
// The workload kinds' hubs (apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet; batch/v1 Job, CronJob; v1
// PersistentVolumeClaim and Service) and their feed: the node's workload store, as the Kubernetes API shows each stored
// workload (toV1Workload: its creationTimestamp, generation, owner and the status its controller last wrote).
// The store is wrapped so that every change to it (a request's put or replace, a controller's status or the
// workloads it makes and retires) feeds the hubs once the change is written, so a watch sees it then; a list
// or get also feeds first. Nothing here makes a runtime call.
import { toV1Workload } from "../../usecases/workloads/entries.js";
import { notifying, type StoredWorkload, type WorkloadStore } from "../../controllers/store.js";
import type { WorkloadKind } from "../../pod/workloads/schema.js";
import { WatchHub, type KubeObject, type RvClock } from "../watch-hub.js";
import { defaultWorkload, wholeSeconds } from "../apiserver/defaults.js";
import { type ClaimDir, statefulSetClaims } from "./statefulset-claims.js";

export type V1Workload = KubeObject & {
  apiVersion: string;
  kind: WorkloadKind;
  metadata: KubeObject["metadata"] & {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
  };
  // The stored object as sent, read per kind by workload-table's cells; typing each kind's spec here would be a twin of zod's.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  spec: Record<string, any>;
  // biome-ignore lint/suspicious/noExplicitAny: see above
  status: Record<string, any>;
};

export const WORKLOAD_KINDS: readonly WorkloadKind[] = [
  "Deployment",
  "ReplicaSet",
  "StatefulSet",
  "DaemonSet",
  "Job",
  "CronJob",
  "PersistentVolumeClaim",
  "Service",
  "ReplicationController",
  "HorizontalPodAutoscaler",
  "PodDisruptionBudget",
];

/** The object a stored workload is on the read side. A claim is the node's own directory from the moment it
 * is stored (no provisioner, no PersistentVolume: src/volumemanager/claims.ts), so it shows as Bound. */
export function v1Workload(s: StoredWorkload): V1Workload {
  const o = toV1Workload(s) as unknown as V1Workload;
  // As the API server serves it: SetDefaults_* applied, creationTimestamp in whole seconds.
  const served = defaultWorkload({
    ...o,
    metadata: { ...o.metadata, creationTimestamp: wholeSeconds(o.metadata.creationTimestamp) ?? undefined },
  });
  if (served.kind === "PersistentVolumeClaim" && !o.status["phase"])
    return { ...served, status: { ...served.status, phase: "Bound" } };
  // A Service's status is its load balancer's, which a node has none of (LoadBalancer shows <pending>).
  if (served.kind === "Service") {
    const { generation: _, ...metadata } = served.metadata as V1Workload["metadata"] & { generation?: number };
    return { ...served, metadata, status: { loadBalancer: {} } };
  }
  return served;
}

export interface WorkloadFeed {
  hubs: Readonly<Record<WorkloadKind, WatchHub<V1Workload>>>;
  /** Bring every hub up to the store (a list or get calls it first). */
  load(): Promise<void>;
  /** The store, feeding the hubs after each change it makes. */
  store: WorkloadStore;
}

export function createWorkloadFeed(
  clock: RvClock,
  inner: WorkloadStore,
  onError: (e: unknown) => void = () => undefined,
  /** The claim directories on the node (a retained claim lists as a PersistentVolumeClaim too); none on Workers. */
  claimDirs: () => Promise<readonly ClaimDir[]> = async () => [],
): WorkloadFeed {
  const hubs = Object.fromEntries(
    WORKLOAD_KINDS.map((k) => [
      k,
      new WatchHub<V1Workload>(clock, { key: (w) => w.metadata.uid ?? `${w.metadata.namespace}/${w.metadata.name}` }),
    ]),
  ) as Record<WorkloadKind, WatchHub<V1Workload>>;
  const feed = (stored: readonly StoredWorkload[], dirs: readonly ClaimDir[]) => {
    const byKind = new Map<WorkloadKind, V1Workload[]>(WORKLOAD_KINDS.map((k) => [k, []]));
    for (const s of stored) byKind.get(s.workload.kind)?.push(v1Workload(s));
    byKind
      .get("PersistentVolumeClaim")!
      .push(...statefulSetClaims(byKind.get("StatefulSet")!, byKind.get("PersistentVolumeClaim")!, dirs));
    for (const k of WORKLOAD_KINDS) hubs[k].replaceAll(byKind.get(k)!);
  };
  const load = async () => {
    const [stored, dirs] = await Promise.all([inner.list(), claimDirs().catch(() => [])]);
    feed(stored, dirs);
  };
  const refeed = () => void load().catch(onError);
  const notified = notifying(inner, refeed);
  return {
    hubs,
    load,
    // A status a controller writes is a change on the read side too (notifying leaves it out: it kicks the loop).
    store: { ...notified, setStatus: (key, uid, status) => inner.setStatus(key, uid, status).then(refeed) },
  };
}
