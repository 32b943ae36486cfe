// The node's workloads as stored and as shown: the store records of a request's workloads (a workload sent again
// keeps its status and generation while its spec is the same), and a stored workload as the Kubernetes API shows it.
// A sync that sends a workload again with no ConfigMaps or Secrets of its namespace keeps those stored with it
// (`keepObjects`): on a cluster they are objects of their own, which sending a Deployment again never removes
// (the CLI's scale and rollout edits re-sign the workload alone). A whole set (PUT /v1/node/pods) replaces them.
import type { VerifiedToken } from "../../auth/verify.js";
import { canonicalJSON } from "../../util/canonical-json.js";
import { workloadKey, type StoredWorkload } from "../../controllers/store.js";
import { storedObjects } from "../../pod/objects.js";
import type { WorkloadItem } from "../../pod/workloads/intake.js";

/** The store records of a request's workloads. */
export function workloadEntries(
  items: readonly WorkloadItem[],
  token: VerifiedToken,
  now: number,
  stored: readonly StoredWorkload[] = [],
  keepObjects = false,
): StoredWorkload[] {
  const p = token.payload;
  const byKey = new Map(stored.map((s) => [workloadKey(s.workload), s]));
  return items.map(({ workload, objects }) => {
    const prev = byKey.get(workloadKey(workload));
    // A workload sent again keeps its status (and a CronJob its last schedule time) while its uid is the same.
    const same = prev !== undefined && prev.workload.metadata.uid === workload.metadata.uid;
    const objs =
      objects.configMaps.length || objects.secrets.length
        ? storedObjects(objects)
        : keepObjects && same
          ? prev.objects
          : undefined;
    const keep = same && prev.status ? { status: prev.status } : {};
    const generation = !same
      ? 1
      : canonicalJSON((prev.workload as { spec?: unknown }).spec) ===
          canonicalJSON((workload as { spec?: unknown }).spec)
        ? (prev.generation ?? 1)
        : (prev.generation ?? 1) + 1;
    return {
      workload,
      audit: { iss: String(p.iss), kid: token.kid, jti: p.jti, iat: Number(p.iat) },
      storedAt: same ? prev.storedAt : now,
      generation,
      ...(objs ? { objects: objs } : {}),
      ...keep,
    };
  });
}

/** A stored workload as the Kubernetes API shows it: with creationTimestamp, its owner and its status. */
export function toV1Workload(s: StoredWorkload): Record<string, unknown> {
  const { status: _sent, ...w } = s.workload as typeof s.workload & { status?: unknown };
  return {
    ...w,
    metadata: {
      ...w.metadata,
      generation: s.generation ?? 1,
      creationTimestamp: new Date(s.storedAt).toISOString(),
      ...(s.owner ? { ownerReferences: [s.owner] } : {}),
    },
    status: s.status ?? {},
  };
}
