// The claims a StatefulSet's pods use, as the PersistentVolumeClaim objects the API server would hold for them
// (pkg/controller/statefulset stateful_set_utils.go getPersistentVolumeClaims: `<template>-<set>-<ordinal>`, the
// template's labels with the set's matchLabels, in the set's namespace). On a node they are directories made on
// first use (src/volumemanager/claims.ts), not stored objects, so `get pvc` derives them: one per template and
// ordinal the set holds now, Bound (no provisioner, no PersistentVolume: no VOLUME, as a stored claim shows), unless
// a claim of that name was sent itself; and one per claim directory left on the node that neither names (a claim
// retained past a scale-down, or after its set was deleted: persistentVolumeClaimRetentionPolicy Retain, the
// default), with its set's template when the set is still there.
import { uuidv5 } from "../../pod/workloads/uid.js";

interface Meta {
  name: string;
  namespace?: string | undefined;
  uid?: string | undefined;
  labels?: Record<string, string> | undefined;
  annotations?: Record<string, string> | undefined;
  creationTimestamp?: string | null | undefined;
}
type Obj = { apiVersion?: string; kind?: string; metadata: Meta; spec?: unknown; status?: unknown };

interface ClaimTemplate {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: {
    accessModes?: string[];
    resources?: { requests?: Record<string, string | number> };
    storageClassName?: string | null;
  };
}
interface SetSpec {
  replicas?: number;
  ordinals?: { start?: number };
  selector?: { matchLabels?: Record<string, string> };
  volumeClaimTemplates?: ClaimTemplate[];
}

/** A fixed UUID namespace for derived claims' uids: v5 of the set's uid and the claim's name. */
const CLAIM_NS = "0f5bf3c1c3a04cf8b2b4a7f1a1f3c0de";

/** A claim directory on the node: `<root>/volumes/pvc/<namespace>/<name>`. */
export interface ClaimDir {
  namespace: string;
  name: string;
}

export function statefulSetClaims<T extends Obj>(
  sets: readonly T[],
  stored: readonly T[],
  dirs: readonly ClaimDir[] = [],
): T[] {
  const have = new Set(stored.map((c) => `${c.metadata.namespace ?? "default"}/${c.metadata.name}`));
  const out: T[] = [];
  const add = (claim: T) => {
    have.add(`${claim.metadata.namespace}/${claim.metadata.name}`);
    out.push(claim);
  };
  for (const set of sets) {
    const spec = (set.spec ?? {}) as SetSpec;
    const start = spec.ordinals?.start ?? 0;
    for (const t of spec.volumeClaimTemplates ?? [])
      for (let i = start; i < start + (spec.replicas ?? 1); i++) {
        const name = `${t.metadata.name}-${set.metadata.name}-${i}`;
        if (!have.has(`${set.metadata.namespace ?? "default"}/${name}`)) add(claimOf<T>(name, set, t));
      }
  }
  // The directories left: a retained claim, with the template of its set when the name is `<template>-<set>-<n>`.
  for (const d of dirs) {
    if (have.has(`${d.namespace}/${d.name}`)) continue;
    const owner = sets
      .filter((s) => (s.metadata.namespace ?? "default") === d.namespace)
      .flatMap((set) => ((set.spec as SetSpec | undefined)?.volumeClaimTemplates ?? []).map((t) => ({ set, t })))
      .find(({ set, t }) => {
        const prefix = `${t.metadata.name}-${set.metadata.name}-`;
        return d.name.startsWith(prefix) && /^\d+$/.test(d.name.slice(prefix.length));
      });
    add(
      owner
        ? claimOf<T>(d.name, owner.set, owner.t)
        : claimOf<T>(d.name, { metadata: { name: "", namespace: d.namespace } } as T, { metadata: { name: "" } }),
    );
  }
  return out;
}

/** The PersistentVolumeClaim the API server would hold for claim `name` of `set`'s template `t`. */
function claimOf<T extends Obj>(name: string, set: T, t: ClaimTemplate): T {
  const spec = (set.spec ?? {}) as SetSpec;
  const ns = set.metadata.namespace ?? "default";
  const requests = t.spec?.resources?.requests;
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name,
      namespace: ns,
      uid: uuidv5(CLAIM_NS, `${set.metadata.uid ?? ns}/${name}`),
      labels: { ...(t.metadata.labels ?? {}), ...(spec.selector?.matchLabels ?? {}) },
      ...(t.metadata.annotations ? { annotations: t.metadata.annotations } : {}),
      ...(set.metadata.creationTimestamp ? { creationTimestamp: set.metadata.creationTimestamp } : {}),
    },
    spec: {
      accessModes: t.spec?.accessModes ?? ["ReadWriteOnce"],
      ...(requests ? { resources: { requests } } : {}),
      ...(t.spec?.storageClassName ? { storageClassName: t.spec.storageClassName } : {}),
      volumeMode: "Filesystem",
    },
    status: {
      phase: "Bound",
      accessModes: t.spec?.accessModes ?? ["ReadWriteOnce"],
      ...(requests?.["storage"] !== undefined ? { capacity: { storage: String(requests["storage"]) } } : {}),
    },
  } as unknown as T;
}
