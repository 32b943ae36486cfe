// Package workers/fleet/rollout — fleet rollouts: the model, the pure step, the coordinator Durable Object.
// Imports the fleet registry's pieces and the model; never the Node entry or the CLI.
//
// A rollout (issue #39): one owner-signed revision (the same bytes for every target node), its targets and its
// strategy, and the states of the rollout and of each node in it. Pure: types, zod schemas and the batch plan.
// The strategy's fields follow OCM's (maxConcurrency → batch, minSuccessTime → soak, progressDeadline, maxFailures),
// flightctl's batch sequences (count, percentage or selector) and Nomad's canary/auto_revert (docs/fleet.md).
import { z } from "zod";

/** A count (`3`) or a percentage of the rollout's targets (`10%`). */
export const CountOrPercent = z.union([
  z.number().int().min(0),
  z.string().regex(/^\d{1,3}%$/, 'a count (3) or a percentage ("10%")'),
]);
export type CountOrPercent = z.infer<typeof CountOrPercent>;

const ms = (max: number) => z.number().int().min(0).max(max);
const DAY = 86_400_000;

export const Strategy = z.strictObject({
  /** Nodes per batch after the canary: a count or a percentage of the targets (rounded up, at least 1). */
  batch: CountOrPercent.default("100%"),
  /** Explicit batches, in order: each takes the targets matching its selector not already in an earlier batch;
   * targets matched by none form a last batch. Exclusive with `batch`. */
  batchSelectors: z.array(z.string().min(1).max(1024)).max(100).optional(),
  /** An optional first batch of this many nodes. */
  canary: z.number().int().min(0).default(0),
  /** Wait for `podsync fleet approve` after the canary batch passes. */
  approveAfterCanary: z.boolean().default(false),
  /** Each batch's gate must pass within this (every pod Ready, Deployments Available, Jobs Complete). */
  progressDeadlineMs: ms(DAY).default(300_000),
  /** The batch must stay healthy this long after its gate passes before the next batch starts. */
  soakMs: ms(DAY).default(0),
  /** Failed nodes tolerated across the rollout; one more fails the gate. */
  maxFailures: CountOrPercent.default(0),
  /** Nodes past their unreachable deadline tolerated across the rollout; one more fails the gate. */
  maxUnavailable: CountOrPercent.default("25%"),
  /** How long a node may be unreachable before it counts against maxUnavailable. */
  unreachableDeadlineMs: ms(DAY).default(300_000),
  /** A pod that restarts this many times after its node got the revision fails the node (a crash loop shows
   * before progressDeadline). 0 turns it off. */
  failOnRestarts: z.number().int().min(0).default(1),
  /** On a failed gate, return every node that took the revision to the rollback set. */
  autoRollback: z.boolean().default(false),
});
export type Strategy = z.output<typeof Strategy>;

/** The nodes' state in a rollout. Unreachable counts neither way until `unreachableDeadline`, then against
 * maxUnavailable (`expired`); RolledBack: the rollback set was stored for it. */
export const NODE_STATES = ["Pending", "Dispatched", "Healthy", "Failed", "Unreachable", "RolledBack"] as const;
export type NodeState = (typeof NODE_STATES)[number];

/** The rollout's phase. Paused has a reason; Completed, Aborted, RolledBack and Failed are final. */
export const PHASES = [
  "Progressing",
  "Soaking",
  "AwaitingApproval",
  "Paused",
  "RollingBack",
  "Completed",
  "Aborted",
  "RolledBack",
  "Failed",
] as const;
export type Phase = (typeof PHASES)[number];
export const FINAL: ReadonlySet<Phase> = new Set(["Completed", "Aborted", "RolledBack", "Failed"]);

export type PauseReason = "Manual" | "GateFailed";

export interface RolloutNode {
  batch: number;
  state: NodeState;
  /** When the revision (or, rolling back, the rollback set) was stored for it. */
  dispatchedAt?: number;
  /** When it was first seen unreachable in its batch (the deadline runs from here). */
  unreachableSince?: number;
  /** Unreachable past its deadline: counts against maxUnavailable. */
  expired?: boolean;
  /** Each pod's restarts when the node took the revision (uid → restarts), so only new restarts count. */
  baseline?: Record<string, number>;
  /** Why it failed (for status and the audit). */
  reason?: string;
}

export interface RolloutState {
  /** Bumped by every step that changes anything: the coordinator's idempotence key. */
  seq: number;
  phase: Phase;
  pauseReason?: PauseReason;
  message?: string;
  /** The batch under way (index into the plan); -1 before the first. */
  batch: number;
  batchStartedAt?: number;
  /** When the current batch's gate passed (its soak runs from here). */
  soakSince?: number;
  /** The generation of the revision and of the rollback set. */
  generation: number;
  rollbackGeneration?: number;
  /** Batch sizes, fixed at creation. */
  batches: number[];
  nodes: Record<string, RolloutNode>;
  /** Counts per batch per node state, kept as nodes move (the rollup reads these, never the nodes). */
  counts: Record<NodeState, number>[];
  maxFailures: number;
  maxUnavailable: number;
  updatedAt: number;
}

/** `n` of `total` for a count or a percentage. Percentages round up (10% of 15 → 2), as Kubernetes rounds maxSurge
 * (intstr.GetScaledValueFromIntOrPercent with roundUp); `atLeastOne` keeps a batch from being empty. */
export function scaled(v: CountOrPercent, total: number, atLeastOne: boolean): number {
  const n = typeof v === "number" ? v : Math.ceil((Number(v.slice(0, -1)) * total) / 100);
  return Math.min(total, atLeastOne ? Math.max(1, n) : n);
}

/** The batch plan: the targets (sorted by name, so batches are predictable) split into the canary, then batches of
 * `batch` nodes, or the explicit selectors' batches. `matches(i, node)` says whether node matches selector i. */
export function planBatches(
  targets: string[],
  s: Strategy,
  matches?: (selector: number, node: string) => boolean,
): string[][] {
  const rest = [...targets].sort();
  const out: string[][] = [];
  if (s.canary > 0 && rest.length > 0) out.push(rest.splice(0, Math.min(s.canary, rest.length)));
  if (s.batchSelectors?.length) {
    s.batchSelectors.forEach((_, i) => {
      const take = rest.filter((n) => matches?.(i, n));
      if (take.length) out.push(take);
      for (const n of take) rest.splice(rest.indexOf(n), 1);
    });
    if (rest.length) out.push(rest);
    return out;
  }
  const size = scaled(s.batch, targets.length, true);
  while (rest.length) out.push(rest.splice(0, size));
  return out;
}

const zeroCounts = (): Record<NodeState, number> =>
  Object.fromEntries(NODE_STATES.map((s) => [s, 0])) as Record<NodeState, number>;

/** The first state of a rollout over `plan` (all nodes Pending, no batch started). */
export function initialState(plan: string[][], s: Strategy, generation: number, now: number): RolloutState {
  const nodes: Record<string, RolloutNode> = {};
  const counts = plan.map((b, i) => {
    for (const n of b) nodes[n] = { batch: i, state: "Pending" };
    return { ...zeroCounts(), Pending: b.length };
  });
  const total = plan.reduce((n, b) => n + b.length, 0);
  return {
    seq: 0,
    phase: "Progressing",
    batch: -1,
    generation,
    batches: plan.map((b) => b.length),
    nodes,
    counts,
    maxFailures: scaled(s.maxFailures, total, false),
    maxUnavailable: scaled(s.maxUnavailable, total, false),
    updatedAt: now,
  };
}
