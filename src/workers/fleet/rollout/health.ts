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
  expected?: Expected,
): Verdict {
  if (!o?.reachable) return { v: "unreachable" };
  if (o.generation < generation) return { v: "pending" };
  for (const p of o.pods) {
    if (p.phase === "Failed") return { v: "failed", reason: `pod ${p.namespace}/${p.name} Failed` };
    const n = p.restarts - (baseline?.[p.uid] ?? 0);
    if (failOnRestarts > 0 && n >= failOnRestarts)
      return { v: "failed", reason: `pod ${p.namespace}/${p.name} restarted ${n} time${n === 1 ? "" : "s"}` };
  }
  const all = o.pods.every((p) => p.ready || p.phase === "Succeeded");
  return all && (!expected || complete(o.pods, expected)) ? { v: "healthy" } : { v: "pending" };
}

/** What a revision runs, for the gate: its Pods by namespace/name, and its controllers' pods by name prefix with the
 * count that must be Ready (Deployment, ReplicaSet, StatefulSet: replicas, default 1; DaemonSet: 1 on a node) or
 * Succeeded (Job: completions, default 1). Without it an empty pod list would pass before the controllers made pods. */
export interface Expected {
  pods: string[];
  owners: { prefix: string; count: number; succeeded: boolean }[];
}

export function expectedOf(items: unknown[]): Expected {
  const out: Expected = { pods: [], owners: [] };
  for (const it of items) {
    const o = (it ?? {}) as {
      kind?: string;
      metadata?: { name?: string; namespace?: string };
      spec?: { replicas?: number; completions?: number };
    };
    const ref = `${o.metadata?.namespace ?? "default"}/${o.metadata?.name ?? ""}`;
    if (o.kind === undefined || o.kind === "Pod") out.pods.push(ref);
    else if (o.kind === "Deployment" || o.kind === "ReplicaSet" || o.kind === "StatefulSet")
      out.owners.push({ prefix: `${ref}-`, count: o.spec?.replicas ?? 1, succeeded: false });
    else if (o.kind === "DaemonSet") out.owners.push({ prefix: `${ref}-`, count: 1, succeeded: false });
    else if (o.kind === "Job") out.owners.push({ prefix: `${ref}-`, count: o.spec?.completions ?? 1, succeeded: true });
  }
  return out;
}

/** Every expected pod there and Ready (or Succeeded), every controller with its count. */
export function complete(pods: PodSummary[], e: Expected): boolean {
  const done = (p: PodSummary) => p.ready || p.phase === "Succeeded";
  const ref = (p: PodSummary) => `${p.namespace}/${p.name}`;
  if (!e.pods.every((name) => pods.some((p) => ref(p) === name && done(p)))) return false;
  return e.owners.every(
    (o) =>
      pods.filter((p) => ref(p).startsWith(o.prefix) && (o.succeeded ? p.phase === "Succeeded" : p.ready)).length >=
      o.count,
  );
}
