// Package controllers/statefulset/ — the StatefulSet controller's pure step: ordinals, claims, updates.
// Imports ../ (the controllers' types and pods) and pod/workloads/; never I/O, HTTP or the runtime.
//
// The StatefulSet controller on one node (pkg/controller/statefulset/stateful_set_control.go updateStatefulSet,
// stateful_set_utils.go newVersionedStatefulSetPod, getPersistentVolumeClaimName, updateIdentity, isRunningAndReady):
// pods `<name>-<ordinal>` with the statefulset.kubernetes.io/pod-name and apps.kubernetes.io/pod-index labels,
// controller-revision-hash `<name>-<hash>`, hostname the pod's name and subdomain the serviceName. Each
// volumeClaimTemplate becomes the pod's persistentVolumeClaim volume `<template>-<name>-<ordinal>`: a node-local claim
// directory that outlives the pod and a scale-down (it is removed only through DELETE /v1/node/volumes/{name}).
//   OrderedReady  ordinal n+1 is made only once 0..n are Running and Ready; scale-down removes the highest ordinal
//                 first, one at a time, and only while the rest are Running and Ready.
//   Parallel      every missing pod at once, every extra one at once.
// Updates (RollingUpdate) go in reverse ordinal order, one pod at a time, down to the partition, each only once the
// others are Running and Ready; OnDelete replaces a pod only once it is gone. A failed pod is replaced. A pod being
// deleted is waited for before its name is used again (its uid is its name's, on this node).
import type { StatefulSet } from "../../pod/workloads/schema.js";
import { derivedUid } from "../../pod/workloads/uid.js";
import { makePod } from "../../pod/workloads/template.js";
import { computeHash } from "../hash.js";
import { controllerRef, isReady, phaseOf, type ObservedPod } from "../pods.js";
import type { ControllerContext, ControllerResult } from "../types.js";

export const POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name";
export const POD_INDEX_LABEL = "apps.kubernetes.io/pod-index";
export const REVISION_LABEL = "controller-revision-hash";

export interface StatefulSetStatus {
  replicas: number;
  readyReplicas: number;
  currentReplicas: number;
  updatedReplicas: number;
  availableReplicas: number;
  currentRevision: string;
  updateRevision: string;
  [k: string]: unknown;
}

/** getPersistentVolumeClaimName. */
export const claimName = (sts: StatefulSet, template: string, ordinal: number) =>
  `${template}-${sts.metadata.name}-${ordinal}`;

const ordinalOf = (sts: StatefulSet, p: ObservedPod): number | undefined => {
  const m = new RegExp(`^${sts.metadata.name.replace(/[.]/g, "\\.")}-([0-9]+)$`).exec(p.pod.metadata.name);
  return m ? Number(m[1]) : undefined;
};
const runningAndReady = (p: ObservedPod) => phaseOf(p) === "Running" && isReady(p) && !p.terminating;

/** The pod for `ordinal` at the current revision (newVersionedStatefulSetPod). */
function newPod(sts: StatefulSet, ordinal: number, revision: string, ctx: ControllerContext) {
  const name = `${sts.metadata.name}-${ordinal}`;
  const t = structuredClone(sts.spec.template);
  const volumes = ((t.spec["volumes"] as { name: string }[] | undefined) ?? []).filter(
    (v) => !(sts.spec.volumeClaimTemplates ?? []).some((c) => c.metadata.name === v.name),
  );
  for (const c of sts.spec.volumeClaimTemplates ?? [])
    volumes.push({
      name: c.metadata.name,
      persistentVolumeClaim: { claimName: claimName(sts, c.metadata.name, ordinal) },
    } as { name: string });
  if (volumes.length) t.spec["volumes"] = volumes;
  t.spec["hostname"] ??= name.length <= 63 ? name : undefined;
  if (sts.spec.serviceName && t.spec["subdomain"] === undefined) t.spec["subdomain"] = sts.spec.serviceName;
  return makePod(t, {
    name,
    namespace: sts.metadata.namespace,
    uid: derivedUid(ctx.nodeName, sts.metadata.namespace, name),
    labels: { [POD_NAME_LABEL]: name, [POD_INDEX_LABEL]: String(ordinal), [REVISION_LABEL]: revision },
    ownerReferences: [controllerRef(sts)],
  });
}

export function syncStatefulSet(
  sts: StatefulSet,
  pods: readonly ObservedPod[],
  prev: StatefulSetStatus | undefined,
  ctx: ControllerContext,
): ControllerResult {
  const out: ControllerResult = { create: [], delete: [], status: {} };
  const revision = `${sts.metadata.name}-${computeHash(sts.spec.template)}`;
  const start = sts.spec.ordinals?.start ?? 0;
  const end = start + sts.spec.replicas; // ordinals [start, end) are wanted
  const ordered = sts.spec.podManagementPolicy === "OrderedReady";
  const byOrdinal = new Map<number, ObservedPod>();
  const strays: ObservedPod[] = [];
  for (const p of pods) {
    const o = ordinalOf(sts, p);
    if (o === undefined) strays.push(p);
    else if (!byOrdinal.has(o) || (byOrdinal.get(o)!.terminating && !p.terminating)) byOrdinal.set(o, p);
  }
  const del = (p: ObservedPod, reason: string) => {
    if (!p.terminating && !out.delete.some((d) => d.uid === p.pod.metadata.uid))
      out.delete.push({ uid: p.pod.metadata.uid, name: p.pod.metadata.name, reason });
  };
  for (const p of strays) del(p, `not a pod name of StatefulSet ${sts.metadata.name}`);

  // Wanted ordinals, ascending: replace failed pods, make missing ones (OrderedReady: stop at the first not ready).
  let blocked = false;
  for (let o = start; o < end; o++) {
    const p = byOrdinal.get(o);
    if (p && phaseOf(p) === "Failed") {
      del(p, `pod ${p.pod.metadata.name} failed; StatefulSet ${sts.metadata.name} recreates it`);
      if (ordered) blocked = true;
      continue;
    }
    if (!p) {
      if (!blocked && out.create.length < (ctx.maxCreate ?? Infinity)) out.create.push(newPod(sts, o, revision, ctx));
      if (ordered) blocked = true;
      continue;
    }
    if (p.terminating) {
      if (ordered) blocked = true;
      continue;
    }
    if (ordered && !runningAndReady(p)) blocked = true;
  }
  // Extra ordinals, highest first (OrderedReady: one at a time, only while the wanted ones are all ready).
  const extra = [...byOrdinal.entries()]
    .filter(([o, p]) => (o < start || o >= end) && !p.terminating)
    .sort((a, b) => b[0] - a[0]);
  const allReady = [...byOrdinal.entries()].every(([o, p]) => o < start || o >= end || runningAndReady(p));
  if (extra.length) {
    if (!ordered)
      for (const [, p] of extra) del(p, `StatefulSet ${sts.metadata.name} scaled down to ${sts.spec.replicas}`);
    else if (allReady && ![...byOrdinal.values()].some((p) => p.terminating) && out.create.length === 0)
      del(extra[0]![1], `StatefulSet ${sts.metadata.name} scaled down to ${sts.spec.replicas}`);
  }
  // Rolling update: the highest ordinal not at the revision (and at or above the partition) goes, once all are ready.
  if (
    sts.spec.updateStrategy.type === "RollingUpdate" &&
    out.create.length === 0 &&
    out.delete.length === 0 &&
    allReady &&
    ![...byOrdinal.values()].some((p) => p.terminating)
  ) {
    const partition = start + (sts.spec.updateStrategy.rollingUpdate?.partition ?? 0);
    for (let o = end - 1; o >= Math.max(start, partition); o--) {
      const p = byOrdinal.get(o);
      if (p && p.pod.metadata.labels?.[REVISION_LABEL] !== revision) {
        del(p, `StatefulSet ${sts.metadata.name} updated to revision ${revision}`);
        break;
      }
    }
  }
  const live = [...byOrdinal.values()].filter((p) => !p.terminating);
  const updated = live.filter((p) => p.pod.metadata.labels?.[REVISION_LABEL] === revision).length;
  const s: StatefulSetStatus = {
    replicas: live.length,
    readyReplicas: live.filter(isReady).length,
    currentReplicas: live.filter((p) => p.pod.metadata.labels?.[REVISION_LABEL] === (prev?.currentRevision ?? revision))
      .length,
    updatedReplicas: updated,
    availableReplicas: live.filter(runningAndReady).length,
    // The current revision becomes the update revision once every pod is at it.
    currentRevision:
      updated === sts.spec.replicas && live.length === sts.spec.replicas
        ? revision
        : (prev?.currentRevision ?? revision),
    updateRevision: revision,
  };
  out.status = s;
  return out;
}
