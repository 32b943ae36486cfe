// What a node's compact status summary (protocol.ts StatusReport, as the registry holds it) says about one revision:
// healthy, failed, not yet, or unreachable. Pure. The gate is the summary's pods: every pod Ready (a Deployment's
// pods Ready is the Deployment Available, deployment/util.go DeploymentComplete with minReadySeconds 0), or
// Succeeded (a Job's pods: the Job Complete). Status-only fields (phase, ready, restarts) never count as drift;
// here they are what health is read from.
import type { PodSummary } from "../../../http/fleet/protocol.js";

/** One node as the coordinator sees it in the registry. */
export interface Observation {
  /** Connected and heard from lately (the registry's Ready). */
  reachable: boolean;
  /** The generation of the desired set the node has applied. */
  generation: number;
  pods: PodSummary[];
  error?: string;
}

export type Verdict = { v: "healthy" } | { v: "pending" } | { v: "unreachable" } | { v: "failed"; reason: string };

export const restartsOf = (pods: PodSummary[]): Record<string, number> =>
  Object.fromEntries(pods.map((p) => [p.uid, p.restarts]));

/** The node against `generation`: a pod Failed, or restarted `failOnRestarts` times since `baseline`, fails it. */
export function verdict(
  o: Observation | undefined,
  generation: number,
  baseline: Record<string, number> | undefined,
  failOnRestarts: number,
): Verdict {
  if (!o?.reachable) return { v: "unreachable" };
  if (o.generation < generation) return { v: "pending" };
  for (const p of o.pods) {
    if (p.phase === "Failed") return { v: "failed", reason: `pod ${p.namespace}/${p.name} Failed` };
    const n = p.restarts - (baseline?.[p.uid] ?? 0);
    if (failOnRestarts > 0 && n >= failOnRestarts)
      return { v: "failed", reason: `pod ${p.namespace}/${p.name} restarted ${n} time${n === 1 ? "" : "s"}` };
  }
  return o.pods.every((p) => p.ready || p.phase === "Succeeded") ? { v: "healthy" } : { v: "pending" };
}
