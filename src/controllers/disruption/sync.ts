// Package controllers/disruption/ — the PodDisruptionBudget controller's pure status step (disruption.go).
// Imports ../ (the controllers' types) and pod/workloads/; never I/O, HTTP or the runtime.
//
// The disruption controller's status of a PodDisruptionBudget on one node (pkg/controller/disruption/
// disruption.go: trySync, getPodsForPdb, getExpectedPodCount, getExpectedScale, countHealthyPods,
// updatePdbStatus, failSafe; pkg/apis/policy/helper UpdateDisruptionAllowedCondition). The pods are those of the
// PDB's namespace its selector matches (none for a missing selector, all for an empty one); expectedPods and
// desiredHealthy come from minAvailable/maxUnavailable and, for a percentage or maxUnavailable, from the scale of
// the pods' controllers (Deployment through its ReplicaSet, ReplicaSet, ReplicationController, StatefulSet);
// currentHealthy counts the ready pods not being deleted. A pod with a controller of no scale (a DaemonSet's, a
// Job's) fails the sync as upstream's "found no controllers", and failSafe leaves disruptionsAllowed 0.
// podsync keeps no DisruptedPods map: nothing on a node evicts through the Eviction API (docs/workloads.md).
import type { OwnerReference } from "../../pod/schema.js";
import type { PodDisruptionBudget } from "../../pod/workloads/schema.js";
import { selectorMatches } from "../../pod/workloads/selector.js";
import { controllerOf, isReady, scaledValue, type ObservedPod } from "../pods.js";
import { setCondition, type Condition, type ControllerContext } from "../types.js";

export interface PdbStatus {
  currentHealthy: number;
  desiredHealthy: number;
  expectedPods: number;
  disruptionsAllowed: number;
  conditions: Condition[];
  [k: string]: unknown;
}

/** A controller that has a scale: its uid, its replicas, and its own controller (a ReplicaSet's Deployment). */
export interface ScaledController {
  uid: string;
  kind: string;
  replicas: number;
  owner?: OwnerReference | undefined;
}

/** The finders: the controller whose scale counts for a pod (a Deployment's, through its ReplicaSet), or none. */
function scaleOf(
  ref: OwnerReference,
  controllers: ReadonlyMap<string, ScaledController>,
): ScaledController | undefined {
  const c = controllers.get(ref.uid);
  if (!c) return undefined;
  if (c.kind === "ReplicaSet" && c.owner?.kind === "Deployment") return controllers.get(c.owner.uid);
  return ["ReplicaSet", "ReplicationController", "StatefulSet", "Deployment"].includes(c.kind) ? c : undefined;
}

/** getExpectedScale: the sum of the scales of the pods' controllers; an error for a pod whose controller has none. */
function expectedScale(pods: readonly ObservedPod[], controllers: ReadonlyMap<string, ScaledController>): number {
  const scale = new Map<string, number>();
  for (const p of pods) {
    const ref = controllerOf(p.pod.metadata);
    if (!ref) continue; // unmanaged: upstream logs and warns, and goes on
    const c = scaleOf(ref, controllers);
    if (!c) throw new Error(`found no controllers for pod "${p.pod.metadata.name}"`);
    scale.set(c.uid, c.replicas);
  }
  return [...scale.values()].reduce((a, b) => a + b, 0);
}

/** getExpectedPodCount. */
function expectedPodCount(
  pdb: PodDisruptionBudget,
  pods: readonly ObservedPod[],
  controllers: ReadonlyMap<string, ScaledController>,
): { expectedCount: number; desiredHealthy: number } {
  const { maxUnavailable, minAvailable } = pdb.spec;
  if (maxUnavailable !== undefined) {
    const expectedCount = expectedScale(pods, controllers);
    const max = scaledValue(maxUnavailable, expectedCount, true, 0);
    return { expectedCount, desiredHealthy: Math.max(0, expectedCount - max) };
  }
  if (typeof minAvailable === "number") return { expectedCount: pods.length, desiredHealthy: minAvailable };
  if (typeof minAvailable === "string") {
    const expectedCount = expectedScale(pods, controllers);
    return { expectedCount, desiredHealthy: scaledValue(minAvailable, expectedCount, true, 0) };
  }
  return { expectedCount: 0, desiredHealthy: 0 };
}

/** getPodsForPdb: the namespace's pods the selector matches (LabelSelectorAsSelector: nil selects nothing). */
export function podsForPdb(pdb: PodDisruptionBudget, pods: readonly ObservedPod[]): ObservedPod[] {
  const sel = pdb.spec.selector;
  if (!sel) return [];
  return pods.filter(
    (p) => p.pod.metadata.namespace === pdb.metadata.namespace && selectorMatches(sel, p.pod.metadata.labels),
  );
}

/** trySync → updatePdbStatus (or failSafe on an error). */
export function pdbStatus(
  pdb: PodDisruptionBudget,
  pods: readonly ObservedPod[],
  controllers: ReadonlyMap<string, ScaledController>,
  prev: PdbStatus | undefined,
  ctx: Pick<ControllerContext, "now">,
): PdbStatus {
  const nowIso = new Date(ctx.now).toISOString();
  const mine = podsForPdb(pdb, pods);
  let counts: { expectedCount: number; desiredHealthy: number };
  try {
    counts = expectedPodCount(pdb, mine, controllers);
  } catch (e) {
    const base = prev ?? {
      currentHealthy: 0,
      desiredHealthy: 0,
      expectedPods: 0,
      disruptionsAllowed: 0,
      conditions: [],
    };
    return {
      ...base,
      disruptionsAllowed: 0,
      conditions: setCondition(
        base.conditions,
        { type: "DisruptionAllowed", status: "False", reason: "SyncFailed", message: (e as Error).message },
        nowIso,
      ),
    };
  }
  const currentHealthy = mine.filter((p) => !p.terminating && isReady(p)).length;
  let disruptionsAllowed = currentHealthy - counts.desiredHealthy;
  if (counts.expectedCount <= 0 || disruptionsAllowed <= 0) disruptionsAllowed = 0;
  const allowed = disruptionsAllowed > 0;
  return {
    currentHealthy,
    desiredHealthy: counts.desiredHealthy,
    expectedPods: counts.expectedCount,
    disruptionsAllowed,
    conditions: setCondition(
      prev?.conditions ?? [],
      {
        type: "DisruptionAllowed",
        status: allowed ? "True" : "False",
        reason: allowed ? "SufficientPods" : "InsufficientPods",
        message: "",
      },
      nowIso,
    ),
  };
}
