// Proportional scaling of a Deployment's ReplicaSets when its replicas change mid-rollout or while it is paused
// (pkg/controller/deployment/sync.go scale, isScalingEvent; util/deployment_util.go FindActiveOrLatest, IsSaturated,
// GetProportion, getReplicaSetFraction, SetReplicasAnnotations; controller_utils.go ReplicaSetsBySizeNewer/Older).
// Each ReplicaSet the controller scales carries the Deployment's replicas and replicas + maxSurge at that time
// (`deployment.kubernetes.io/desired-replicas`, `max-replicas`); a Deployment whose replicas differ from an active
// ReplicaSet's desired-replicas is a scaling event, and every active ReplicaSet then grows or shrinks by its share
// (its size × the new max / the max it was sized for), the leftover going to the largest, so a rollout keeps its
// old:new proportion instead of the new count landing on one side.
import type { Deployment } from "../../pod/workloads/schema.js";
import { resolveFenceposts } from "./fenceposts.js";

export const DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas";
export const MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas";

/** What scaling needs of a ReplicaSet. */
export interface ScaledReplicaSet {
  name: string;
  replicas: number;
  /** Its creationTimestamp (ms). */
  createdAt: number;
  annotations?: Record<string, string> | undefined;
  availableReplicas?: number;
}

/** MaxSurge: 0 unless RollingUpdate. */
export const maxSurge = (d: Deployment): number =>
  d.spec.strategy.type === "RollingUpdate" ? resolveFenceposts(d).surge : 0;

/** The annotations SetReplicasAnnotations writes on a ReplicaSet the controller sizes. */
export const replicasAnnotations = (d: Deployment): Record<string, string> => ({
  [DESIRED_REPLICAS_ANNOTATION]: String(d.spec.replicas),
  [MAX_REPLICAS_ANNOTATION]: String(d.spec.replicas + maxSurge(d)),
});

/** getIntFromAnnotation: the annotation as a whole number, or undefined. */
function intAnnotation(rs: ScaledReplicaSet, key: string): number | undefined {
  const v = rs.annotations?.[key];
  return v !== undefined && /^-?[0-9]+$/.test(v) ? Number(v) : undefined;
}

/** ReplicaSetsByCreationTimestamp's Less: older first, the name breaking ties. */
const byCreation = (a: ScaledReplicaSet, b: ScaledReplicaSet) =>
  a.createdAt - b.createdAt || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
/** ReplicaSetsBySizeOlder: larger first, then older first. */
export const bySizeOlder = (a: ScaledReplicaSet, b: ScaledReplicaSet) => b.replicas - a.replicas || byCreation(a, b);
/** ReplicaSetsBySizeNewer: larger first, then newer first. */
export const bySizeNewer = (a: ScaledReplicaSet, b: ScaledReplicaSet) => b.replicas - a.replicas || byCreation(b, a);

const active = (rss: readonly (ScaledReplicaSet | undefined)[]) =>
  rss.filter((r): r is ScaledReplicaSet => r !== undefined && r.replicas > 0);

/** isScalingEvent: an active ReplicaSet was sized for other replicas than the Deployment's. */
export function isScalingEvent(
  d: Deployment,
  newRS: ScaledReplicaSet | undefined,
  olds: readonly ScaledReplicaSet[],
): boolean {
  return active([...olds, newRS]).some((rs) => {
    const desired = intAnnotation(rs, DESIRED_REPLICAS_ANNOTATION);
    return desired !== undefined && desired !== d.spec.replicas;
  });
}

/** FindActiveOrLatest: the one active ReplicaSet, or (none active) the new one or the newest old one; undefined
 * when several are active. */
export function findActiveOrLatest(
  newRS: ScaledReplicaSet | undefined,
  olds: readonly ScaledReplicaSet[],
): ScaledReplicaSet | undefined {
  if (!newRS && olds.length === 0) return undefined;
  const newestFirst = [...olds].sort((a, b) => byCreation(b, a));
  const all = active([...newestFirst, newRS]);
  if (all.length === 0) return newRS ?? newestFirst[0];
  return all.length === 1 ? all[0] : undefined;
}

/** IsSaturated: the new ReplicaSet holds every replica, sized for them, all available. */
export function isSaturated(d: Deployment, rs: ScaledReplicaSet | undefined): boolean {
  if (!rs) return false;
  const desired = intAnnotation(rs, DESIRED_REPLICAS_ANNOTATION);
  return rs.replicas === d.spec.replicas && desired === d.spec.replicas && rs.availableReplicas === d.spec.replicas;
}

/** getReplicaSetFraction: how many replicas this ReplicaSet gains (or loses) for the Deployment's new size.
 * `statusReplicas` is the Deployment's status.replicas, used when the max-replicas annotation is missing or 0. */
export function getReplicaSetFraction(rs: ScaledReplicaSet, d: Deployment, statusReplicas: number): number {
  if (d.spec.replicas === 0) return -rs.replicas;
  const deploymentMaxReplicas = d.spec.replicas + maxSurge(d);
  let before = intAnnotation(rs, MAX_REPLICAS_ANNOTATION);
  if (before === undefined || before === 0) before = statusReplicas;
  // Nothing to scale from: an unsynced Deployment does not scale.
  if (before === 0) return 0;
  // integer.RoundToInt32: math.Round (halves away from zero; the sizes here are never negative).
  return Math.round((rs.replicas * deploymentMaxReplicas) / before) - rs.replicas;
}

/** GetProportion: this ReplicaSet's share of the replicas to add (or remove), within what is left to add. */
export function getProportion(
  rs: ScaledReplicaSet | undefined,
  d: Deployment,
  toAdd: number,
  added: number,
  statusReplicas: number,
): number {
  if (!rs || rs.replicas === 0 || toAdd === 0 || toAdd === added) return 0;
  const fraction = getReplicaSetFraction(rs, d, statusReplicas);
  const allowed = toAdd - added;
  return toAdd > 0 ? Math.min(fraction, allowed) : Math.max(fraction, allowed);
}

/** scale: the size each ReplicaSet should get (only those scale sets; the rest stay as they are). */
export function proportionalSizes(
  d: Deployment,
  newRS: ScaledReplicaSet | undefined,
  olds: readonly ScaledReplicaSet[],
  statusReplicas: number,
): Map<string, number> {
  const out = new Map<string, number>();
  const one = findActiveOrLatest(newRS, olds);
  if (one) {
    if (one.replicas !== d.spec.replicas) out.set(one.name, d.spec.replicas);
    return out;
  }
  // A saturated new ReplicaSet: the old ones go to 0 (ReplicaSet adoption during a saturated new ReplicaSet).
  if (isSaturated(d, newRS)) {
    for (const old of active(olds)) out.set(old.name, 0);
    return out;
  }
  if (d.spec.strategy.type !== "RollingUpdate") return out;
  const all = active([...olds, newRS]);
  const total = all.reduce((n, rs) => n + rs.replicas, 0);
  const allowedSize = d.spec.replicas > 0 ? d.spec.replicas + maxSurge(d) : 0;
  const toAdd = allowedSize - total;
  // Larger first; when scaling up the newer of two the same size first, when scaling down the older.
  if (toAdd > 0) all.sort(bySizeNewer);
  else if (toAdd < 0) all.sort(bySizeOlder);
  let added = 0;
  const size = new Map<string, number>();
  for (const rs of all) {
    if (toAdd === 0) {
      size.set(rs.name, rs.replicas);
      continue;
    }
    const p = getProportion(rs, d, toAdd, added, statusReplicas);
    size.set(rs.name, rs.replicas + p);
    added += p;
  }
  // The leftover goes to (or comes off) the largest.
  if (all.length && toAdd !== 0) size.set(all[0]!.name, Math.max(0, size.get(all[0]!.name)! + toAdd - added));
  // scaleReplicaSet writes each one (its annotations too), whether or not its size changed.
  for (const rs of all) out.set(rs.name, size.get(rs.name)!);
  return out;
}
