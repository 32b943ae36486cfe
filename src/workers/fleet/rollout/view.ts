// A rollout as the owner reads it (GET /fleet/rollouts/NAME, podsync fleet status): its spec, phase and the node
// counts batch by batch, read from the state's counts (kept as nodes move), never by walking the nodes. Pure.
import type { RolloutSummary } from "./index-table.js";
import { NODE_STATES, type NodeState, type RolloutNode, type RolloutState } from "./model.js";
import type { RolloutSpec } from "./store.js";

export interface FleetRolloutView {
  apiVersion: "fleet.podsync.dev/v1alpha1";
  kind: "FleetRollout";
  metadata: { name: string; labels: Record<string, string>; creationTimestamp: string };
  spec: {
    selector: string;
    strategy: RolloutSpec["strategy"];
    generation: number;
    rollbackGeneration?: number;
    targets: number;
  };
  status: {
    phase: RolloutState["phase"];
    pauseReason?: string;
    message?: string;
    /** The batch under way, from 1 (0: none started). */
    batch: number;
    batches: { batch: number; size: number; counts: Record<NodeState, number> }[];
    totals: Record<NodeState, number>;
    maxFailures: number;
    maxUnavailable: number;
    updatedAt: string;
    nodes?: Record<string, RolloutNode & { dispatches: number; rollbacks: number }>;
  };
  summary: RolloutSummary;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

export function rolloutView(
  spec: RolloutSpec,
  st: Omit<RolloutState, "nodes">,
  nodes: Record<string, RolloutNode> | undefined,
  dispatches: Record<string, number> | undefined,
): FleetRolloutView {
  const totals = Object.fromEntries(NODE_STATES.map((s) => [s, 0])) as Record<NodeState, number>;
  for (const c of st.counts) for (const s of NODE_STATES) totals[s] += c[s];
  const summary: RolloutSummary = {
    name: spec.name,
    selector: spec.selector,
    createdAt: spec.createdAt,
    phase: st.phase,
    ...(st.pauseReason ? { pauseReason: st.pauseReason } : {}),
    generation: spec.revision.generation,
    targets: spec.targets.length,
    batch: st.batch + 1,
    batches: st.batches.length,
    healthy: totals.Healthy,
    failed: totals.Failed,
    unreachable: totals.Unreachable,
    updatedAt: st.updatedAt,
  };
  return {
    apiVersion: "fleet.podsync.dev/v1alpha1",
    kind: "FleetRollout",
    metadata: { name: spec.name, labels: {}, creationTimestamp: iso(spec.createdAt) },
    spec: {
      selector: spec.selector,
      strategy: spec.strategy,
      generation: spec.revision.generation,
      ...(spec.rollback ? { rollbackGeneration: spec.rollback.generation } : {}),
      targets: spec.targets.length,
    },
    status: {
      phase: st.phase,
      ...(st.pauseReason ? { pauseReason: st.pauseReason } : {}),
      ...(st.message ? { message: st.message } : {}),
      batch: st.batch + 1,
      batches: st.counts.map((counts, i) => ({ batch: i + 1, size: st.batches[i] ?? 0, counts })),
      totals,
      maxFailures: st.maxFailures,
      maxUnavailable: st.maxUnavailable,
      updatedAt: iso(st.updatedAt),
      ...(nodes
        ? {
            nodes: Object.fromEntries(
              Object.entries(nodes).map(([n, v]) => [
                n,
                { ...v, dispatches: dispatches?.[`revision:${n}`] ?? 0, rollbacks: dispatches?.[`rollback:${n}`] ?? 0 },
              ]),
            ),
          }
        : {}),
    },
    summary,
  };
}
