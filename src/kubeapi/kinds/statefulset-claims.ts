// The claims a StatefulSet's pods use, as the PersistentVolumeClaim objects the API server would hold for them
// (pkg/controller/statefulset stateful_set_utils.go getPersistentVolumeClaims: `<template>-<set>-<ordinal>`, the
// template's labels with the set's matchLabels, in the set's namespace). On a node they are directories made on
// first use (src/volumemanager/claims.ts), not stored objects, so `get pvc` derives them: one per template and
// ordinal the set holds now, Bound (no provisioner, no PersistentVolume: no VOLUME, as a stored claim shows), unless
// a claim of that name was sent itself. Claims retained past a scale-down are not listed (`podsync volumes` is).
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

export function statefulSetClaims<T extends Obj>(sets: readonly T[], stored: readonly T[]): T[] {
  const have = new Set(stored.map((c) => `${c.metadata.namespace ?? "default"}/${c.metadata.name}`));
  const out: T[] = [];
  for (const set of sets) {
    const spec = (set.spec ?? {}) as SetSpec;
    const ns = set.metadata.namespace ?? "default";
    const start = spec.ordinals?.start ?? 0;
    for (const t of spec.volumeClaimTemplates ?? [])
      for (let i = start; i < start + (spec.replicas ?? 1); i++) {
        const name = `${t.metadata.name}-${set.metadata.name}-${i}`;
        if (have.has(`${ns}/${name}`)) continue;
        const requests = t.spec?.resources?.requests;
        out.push({
          apiVersion: "v1",
          kind: "PersistentVolumeClaim",
          metadata: {
            name,
            namespace: ns,
            uid: uuidv5(CLAIM_NS, `${set.metadata.uid ?? ""}/${name}`),
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
        } as unknown as T);
      }
  }
  return out;
}
