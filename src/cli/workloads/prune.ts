// What `podsync apply` would prune: the workloads the node holds that the file leaves out, with what their
// controllers made (a Deployment's ReplicaSets and every pod under them). kubectl apply deletes an object only
// with --prune (staging/src/k8s.io/kubectl/pkg/cmd/apply/prune.go, `pruner.prune`: it lists the candidates, skips
// those apply did not create and those in the applied set, deletes the rest unless a dry run, and prints each as
// `pruned`, dry run included). A node's set is its whole desired state, so here a workload left out is deleted by
// the PUT, and apply refuses that without --prune-all. Pure: the node's lists in, the deletions out.
import type { V1Pod } from "../../status/api-status.js";

export interface ListedWorkload {
  kind: string;
  metadata: {
    namespace: string;
    name: string;
    uid: string;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  };
}

export interface Pruned {
  /** The top-level workload the file leaves out. */
  workload: ListedWorkload;
  /** What its controllers made, and goes with it: workloads (ReplicaSets, Jobs) and pods. */
  workloads: ListedWorkload[];
  pods: V1Pod[];
}

const controller = (m: { ownerReferences?: { uid: string; controller?: boolean }[] | undefined }) =>
  m.ownerReferences?.find((r) => r.controller === true)?.uid;

const keyOf = (kind: unknown, namespace: unknown, name: unknown) =>
  `${String(kind)}/${String(namespace ?? "default")}/${String(name)}`;

/** The file's objects by kind/namespace/name (a missing namespace is "default", as the node takes it). */
export function fileKeys(items: readonly unknown[]): Set<string> {
  return new Set(
    items.map((x) => {
      const o = x as { kind?: unknown; metadata?: { namespace?: unknown; name?: unknown } };
      return keyOf(o.kind, o.metadata?.namespace, o.metadata?.name);
    }),
  );
}

/** The workloads (and their derived workloads and pods) the node would delete to hold only the file's. */
export function prunedWorkloads(
  stored: readonly ListedWorkload[],
  pods: readonly V1Pod[],
  file: ReadonlySet<string>,
): Pruned[] {
  const byUid = new Map(stored.map((w) => [w.metadata.uid, w]));
  /** The top-level workload above `uid` (itself when it has no controller). */
  const root = (uid: string | undefined): ListedWorkload | undefined => {
    for (let n = 0, u = uid; u !== undefined && n < 4; n++) {
      const w = byUid.get(u);
      if (!w) return undefined;
      const up = controller(w.metadata);
      if (!up) return w;
      u = up;
    }
    return undefined;
  };
  const out: Pruned[] = [];
  for (const w of stored) {
    if (controller(w.metadata) || file.has(keyOf(w.kind, w.metadata.namespace, w.metadata.name))) continue;
    const uid = w.metadata.uid;
    out.push({
      workload: w,
      workloads: stored.filter((d) => d !== w && root(d.metadata.uid)?.metadata.uid === uid),
      pods: pods.filter((p) => root(controller(p.metadata))?.metadata.uid === uid),
    });
  }
  return out;
}

/** `deployment/api (shop)`, kubectl's kind/name with the namespace. */
export const workloadRef = (w: ListedWorkload) =>
  `${w.kind.toLowerCase()}/${w.metadata.name} (${w.metadata.namespace})`;
