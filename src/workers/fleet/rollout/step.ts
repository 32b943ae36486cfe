// The rollout's decision logic (issue #39), pure: step(state, observations, now) → { state, actions }, and
// command(state, verb, now) for the owner's pause, resume, abort, approve and rollback. The coordinator
// (coordinator.ts) persists the state and its actions together, then performs the actions, so a restart resumes
// where it stopped and never dispatches a batch twice. A state's unchanged node entries keep their identity, so the
// coordinator writes only the rows that changed.
//
// Rules: a batch passes when each of its nodes is Healthy, or Failed within maxFailures, or Unreachable past its
// deadline within maxUnavailable; it then soaks (stays passing for soakMs; a lapse restarts the soak). A failed gate
// (failures over maxFailures, unavailable over maxUnavailable, or the batch not passing by progressDeadline) stops
// the rollout at once: no further batch is dispatched; with autoRollback every node that took the revision gets the
// rollback set.
import { type Expected, type Observation, restartsOf, verdict } from "./health.js";
import { FINAL, type NodeState, type Phase, type RolloutNode, type RolloutState, type Strategy } from "./model.js";

export type Action =
  | { type: "dispatch"; set: "revision" | "rollback"; batch: number; nodes: string[] }
  | { type: "event"; reason: string; message: string }
  /** The rollout is final: its nodes may take another rollout. */
  | { type: "release" };

export interface Step {
  state: RolloutState;
  actions: Action[];
}

export type Verb = "pause" | "resume" | "abort" | "approve" | "rollback";

/** What the revision and the rollback set run (health.ts expectedOf), when known. */
export interface Expectations {
  revision?: Expected;
  rollback?: Expected;
}

export class RolloutCommandError extends Error {}

/** A mutable copy: counts and the node map copied, node entries replaced (never edited) when they change. */
class Draft {
  readonly st: RolloutState;
  readonly actions: Action[] = [];
  changed = false;
  constructor(
    prev: RolloutState,
    readonly s: Strategy,
    readonly now: number,
    readonly ex: Expectations = {},
  ) {
    this.st = { ...prev, nodes: { ...prev.nodes }, counts: prev.counts.map((c) => ({ ...c })) };
  }
  set(name: string, to: Partial<RolloutNode> & { state: NodeState }): void {
    const n = this.st.nodes[name]!;
    this.st.counts[n.batch]![n.state]--;
    this.st.counts[n.batch]![to.state]++;
    this.st.nodes[name] = { batch: n.batch, ...to };
    this.changed = true;
  }
  phase(p: Phase, message?: string): void {
    this.st.phase = p;
    if (message !== undefined) this.st.message = message;
    this.changed = true;
  }
  event(reason: string, message: string): void {
    this.actions.push({ type: "event", reason, message });
  }
  done(): Step {
    if (!this.changed && this.actions.length === 0) return { state: this.st, actions: [] };
    return { state: { ...this.st, seq: this.st.seq + 1, updatedAt: this.now }, actions: this.actions };
  }
  nodesOf(batch: number): string[] {
    return Object.keys(this.st.nodes).filter((n) => this.st.nodes[n]!.batch === batch);
  }
  total(state: NodeState, pred: (n: RolloutNode) => boolean = () => true): number {
    let k = 0;
    for (const n of Object.values(this.st.nodes)) if (n.state === state && pred(n)) k++;
    return k;
  }
}

export function step(
  prev: RolloutState,
  s: Strategy,
  obs: Map<string, Observation>,
  now: number,
  ex: Expectations = {},
): Step {
  const d = new Draft(prev, s, now, ex);
  catchUp(d, obs);
  const p = d.st.phase;
  if (p === "RollingBack") rollingBack(d, obs);
  else if ((p === "Progressing" || p === "Soaking") && d.st.batch < 0) startBatch(d, 0, obs);
  else if (p === "Progressing" || p === "Soaking") {
    watchPassed(d, obs);
    gate(d, obs);
  }
  return d.done();
}

/** Nodes of batches that already passed are still watched for failure (a crash that shows only after the gate
 * passed): a Failed one counts against maxFailures, so it stops the batches after it. */
function watchPassed(d: Draft, obs: Map<string, Observation>): void {
  for (const [name, n] of Object.entries(d.st.nodes)) {
    if (n.batch >= d.st.batch || n.state !== "Healthy") continue;
    const v = verdict(obs.get(name), d.st.generation, n.baseline, d.s.failOnRestarts, d.ex.revision);
    if (v.v === "failed") d.set(name, { ...n, state: "Failed", reason: v.reason });
  }
}

/** Nodes of finished batches that were unreachable and came back with the revision: Healthy (no longer counted
 * against maxUnavailable). They got the revision when their batch started (it waits in their registry row). */
function catchUp(d: Draft, obs: Map<string, Observation>): void {
  for (const [name, n] of Object.entries(d.st.nodes)) {
    if (n.state !== "Unreachable" || (n.batch === d.st.batch && !FINAL.has(d.st.phase))) continue;
    if (verdict(obs.get(name), d.st.generation, n.baseline, 0, d.ex.revision).v === "healthy")
      d.set(name, { ...n, state: "Healthy" });
  }
}

/** Dispatch batch `i` (every node, reachable or not: the registry keeps the set until the node connects). */
function startBatch(d: Draft, i: number, obs: Map<string, Observation>): void {
  const nodes = d.nodesOf(i);
  d.st.batch = i;
  d.st.batchStartedAt = d.now;
  delete d.st.soakSince;
  for (const name of nodes) {
    const o = obs.get(name);
    const base = { dispatchedAt: d.now, baseline: restartsOf(o?.pods ?? []) };
    d.set(
      name,
      o?.reachable ? { ...base, state: "Dispatched" } : { ...base, state: "Unreachable", unreachableSince: d.now },
    );
  }
  d.phase("Progressing");
  d.actions.push({ type: "dispatch", set: "revision", batch: i, nodes });
  d.event("BatchStarted", `batch ${i + 1}/${d.st.batches.length}: ${nodes.length} node(s)`);
}

/** The current batch's nodes against their observations, then the gate. */
function gate(d: Draft, obs: Map<string, Observation>): void {
  const { s, now } = d;
  for (const name of d.nodesOf(d.st.batch)) observeNode(d, name, obs.get(name));
  const deadline = (d.st.batchStartedAt ?? now) + s.progressDeadlineMs;
  if (now >= deadline)
    for (const name of d.nodesOf(d.st.batch))
      if (d.st.nodes[name]!.state === "Dispatched")
        d.set(name, { ...d.st.nodes[name]!, state: "Failed", reason: "not healthy within progressDeadline" });
  const failed = d.total("Failed");
  const unavailable = d.total("Unreachable", (n) => n.expired === true);
  const over =
    failed > d.st.maxFailures
      ? `${failed} node(s) failed, over maxFailures ${d.st.maxFailures}`
      : unavailable > d.st.maxUnavailable
        ? `${unavailable} node(s) unreachable, over maxUnavailable ${d.st.maxUnavailable}`
        : undefined;
  if (over !== undefined) {
    gateFailed(d, over, obs);
    return;
  }
  const passing = d.nodesOf(d.st.batch).every((name) => {
    const n = d.st.nodes[name]!;
    return n.state === "Healthy" || n.state === "Failed" || (n.state === "Unreachable" && n.expired === true);
  });
  if (!passing) {
    if (d.st.phase === "Soaking") {
      delete d.st.soakSince;
      d.phase("Progressing");
      d.event("SoakInterrupted", `batch ${d.st.batch + 1}: a node is no longer healthy; the soak starts over`);
    }
    return;
  }
  if (d.st.phase === "Progressing" && s.soakMs > 0) {
    d.st.soakSince = now;
    d.phase("Soaking");
    return;
  }
  if (d.st.phase === "Soaking" && now - (d.st.soakSince ?? now) < s.soakMs) return;
  advance(d, obs);
}

/** One node of the current batch: Dispatched → Healthy | Failed | Unreachable, and back. */
function observeNode(d: Draft, name: string, o: Observation | undefined): void {
  const n = d.st.nodes[name]!;
  if (n.state === "Failed") return;
  const v = verdict(o, d.st.generation, n.baseline, d.s.failOnRestarts, d.ex.revision);
  const { unreachableSince: _u, expired: _e, ...rest } = n;
  if (v.v === "failed") {
    d.set(name, { ...rest, state: "Failed", reason: v.reason });
    return;
  }
  if (v.v === "healthy") {
    if (n.state !== "Healthy") d.set(name, { ...rest, state: "Healthy" });
    return;
  }
  if (v.v === "pending") {
    if (n.state !== "Dispatched") d.set(name, { ...rest, state: "Dispatched" });
    return;
  }
  const since = n.state === "Unreachable" ? (n.unreachableSince ?? d.now) : d.now;
  const expired = d.now - since >= d.s.unreachableDeadlineMs;
  if (n.state !== "Unreachable" || expired !== (n.expired === true))
    d.set(name, { ...rest, state: "Unreachable", unreachableSince: since, ...(expired ? { expired } : {}) });
}

function advance(d: Draft, obs: Map<string, Observation>): void {
  const i = d.st.batch;
  d.event("BatchPassed", `batch ${i + 1}/${d.st.batches.length} passed`);
  if (i + 1 >= d.st.batches.length) {
    d.phase("Completed", `all ${d.st.batches.length} batch(es) passed`);
    d.actions.push({ type: "release" });
    return;
  }
  if (i === 0 && d.s.canary > 0 && d.s.approveAfterCanary) {
    d.phase("AwaitingApproval", "the canary passed: podsync fleet approve to go on");
    return;
  }
  startBatch(d, i + 1, obs);
}

function gateFailed(d: Draft, why: string, obs: Map<string, Observation>): void {
  d.event("GateFailed", `batch ${d.st.batch + 1}: ${why}`);
  if (d.s.autoRollback && d.st.rollbackGeneration !== undefined) {
    startRollback(d, why, obs);
    return;
  }
  d.st.pauseReason = "GateFailed";
  d.phase("Paused", `batch ${d.st.batch + 1}: ${why}`);
}

/** Every node that was given the revision gets the rollback set (a node never dispatched is left alone). */
function startRollback(d: Draft, why: string, obs: Map<string, Observation>): void {
  const nodes = Object.keys(d.st.nodes).filter((n) => d.st.nodes[n]!.dispatchedAt !== undefined);
  for (const name of nodes)
    d.set(name, {
      batch: d.st.nodes[name]!.batch,
      state: "RolledBack",
      dispatchedAt: d.now,
      baseline: restartsOf(obs.get(name)?.pods ?? []),
    });
  d.st.batchStartedAt = d.now;
  delete d.st.soakSince;
  delete d.st.pauseReason;
  d.phase("RollingBack", `rolling back: ${why}`);
  d.actions.push({ type: "dispatch", set: "rollback", batch: d.st.batch, nodes });
  d.event("RollbackStarted", `${nodes.length} node(s) get generation ${d.st.rollbackGeneration}`);
}

/** Rolling back ends when every reachable rolled-back node is healthy on the rollback set (an unreachable one
 * takes it when it returns), or fails at progressDeadline. */
function rollingBack(d: Draft, obs: Map<string, Observation>): void {
  const g = d.st.rollbackGeneration ?? d.st.generation;
  const waiting = Object.entries(d.st.nodes).filter(([name, n]) => {
    if (n.state !== "RolledBack") return false;
    const v = verdict(obs.get(name), g, n.baseline, d.s.failOnRestarts, d.ex.rollback).v;
    return v === "pending" || v === "failed";
  });
  if (waiting.length === 0) {
    d.phase("RolledBack", `rolled back to generation ${g}`);
    d.actions.push({ type: "release" });
  } else if (d.now >= (d.st.batchStartedAt ?? d.now) + d.s.progressDeadlineMs) {
    d.phase("Failed", `the rollback is not healthy on ${waiting.length} node(s) within progressDeadline`);
    d.actions.push({ type: "release" });
  }
}

/** The owner's verbs (`obs`: the nodes now, for a batch or rollback they start). An invalid one (approve when nothing awaits approval, anything on a final rollout but
 * rollback) throws RolloutCommandError naming the phase. */
export function command(
  prev: RolloutState,
  s: Strategy,
  verb: Verb,
  obs: Map<string, Observation>,
  now: number,
  ex: Expectations = {},
): Step {
  const d = new Draft(prev, s, now, ex);
  const p = prev.phase;
  const refuse = (why: string): never => {
    throw new RolloutCommandError(`cannot ${verb} a rollout that is ${p}${why ? `: ${why}` : ""}`);
  };
  switch (verb) {
    case "pause":
      if (p !== "Progressing" && p !== "Soaking" && p !== "AwaitingApproval") refuse("");
      d.st.pauseReason = "Manual";
      d.phase("Paused", "paused by hand");
      break;
    case "resume":
      if (p !== "Paused") refuse("only a paused rollout resumes");
      resume(d);
      break;
    case "approve":
      if (p !== "AwaitingApproval") refuse("only a rollout awaiting approval after its canary is approved");
      startBatch(d, prev.batch + 1, obs);
      break;
    case "abort":
      if (FINAL.has(p)) refuse("it is final");
      d.phase("Aborted", "aborted by hand: no further batch is dispatched");
      d.actions.push({ type: "release" });
      break;
    case "rollback":
      if (p === "RollingBack" || p === "RolledBack") refuse("");
      if (prev.rollbackGeneration === undefined) refuse("it has no rollback set");
      startRollback(d, "by hand", obs);
      break;
  }
  d.event(verb, `${verb} (was ${p})`);
  return d.done();
}

/** Resume: the current batch's gate starts over (its failed nodes are looked at again, the deadline runs from
 * now), so a pause, however long, does not fail it. */
function resume(d: Draft): void {
  if (d.st.pauseReason === "GateFailed")
    for (const name of d.nodesOf(d.st.batch)) {
      const { reason: _r, ...n } = d.st.nodes[name]!;
      if (n.state === "Failed") d.set(name, { ...n, state: "Dispatched" });
    }
  delete d.st.pauseReason;
  delete d.st.soakSince;
  d.st.batchStartedAt = d.now;
  d.phase("Progressing", "resumed");
}
