// A rolling Deployment's bounds on this node (util/deployment_util.go ResolveFenceposts, MaxUnavailable).
import type { Deployment } from "../../pod/workloads/schema.js";
import { scaledValue } from "../pods.js";

/** ResolveFenceposts: maxSurge rounded up, maxUnavailable down; both 0 makes maxUnavailable 1. */
export function resolveFenceposts(d: Deployment): { surge: number; unavailable: number } {
  const ru = d.spec.strategy.rollingUpdate;
  const surge = scaledValue(ru?.maxSurge, d.spec.replicas, true, "25%");
  let unavailable = scaledValue(ru?.maxUnavailable, d.spec.replicas, false, "25%");
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable };
}

/** MaxUnavailable: 0 for Recreate or no replicas; never above replicas. */
export function maxUnavailable(d: Deployment): number {
  if (d.spec.strategy.type !== "RollingUpdate" || d.spec.replicas === 0) return 0;
  return Math.min(resolveFenceposts(d).unavailable, d.spec.replicas);
}
