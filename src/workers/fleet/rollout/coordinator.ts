// Durable Object FleetRollout: one coordinator per rollout (named "r:<rollout>"), driven by its alarm, plus the
// instance named "index" (index-table.ts: the list and the node locks). Each tick reads the nodes' summaries from
// the registry, runs the pure step, commits the state and its actions together, then runs the actions (store.ts).
// Every state-changing operation runs one at a time (a promise chain), so a command never interleaves with a tick.
import { ProblemError, toProblemError } from "../../../usecases/problems.js";
import type { FleetShardState } from "../runtime.js";
import type { FleetEnv } from "../settings.js";
import { AuditChain, verifyChain } from "./audit.js";
import type { Observation } from "./health.js";
import { RolloutIndex, type RolloutSummary } from "./index-table.js";
import { FINAL, type RolloutState } from "./model.js";
import { dispatch, fleetOf, observation, observe } from "./registry.js";
import { rolloutSettingsOf, type RolloutEnv } from "./settings.js";
import { command, RolloutCommandError, step, type Action, type Verb } from "./step.js";
import { type RolloutSpec, RolloutStore } from "./store.js";
import { rolloutView } from "./view.js";

export type CoordinatorState = FleetShardState & {
  storage: FleetShardState["storage"] & { transactionSync?<T>(fn: () => T): T };
};

export class FleetRollout {
  private readonly store: RolloutStore;
  private readonly index: RolloutIndex;
  private readonly audit: AuditChain;
  private chain: Promise<unknown> = Promise.resolve();
  constructor(
    private readonly ctx: CoordinatorState,
    private readonly env: RolloutEnv,
  ) {
    this.store = new RolloutStore(ctx.storage);
    this.index = new RolloutIndex(ctx.storage.sql);
    this.audit = new AuditChain(ctx.storage.sql);
  }

  /** One at a time: ticks and commands never interleave across their awaits. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  async fetch(req: Request): Promise<Response> {
    const op = new URL(req.url).pathname;
    try {
      const arg = (await req.json()) as Record<string, unknown>;
      return Response.json((await this.op(op, arg)) ?? {});
    } catch (e) {
      if (e instanceof RolloutCommandError) return new ProblemError("rollout-conflict", e.message).toResponse(op);
      return toProblemError(e).toResponse(op);
    }
  }

  private async op(op: string, arg: Record<string, unknown>): Promise<unknown> {
    switch (op) {
      // The index.
      case "/acquire":
        return this.index.acquire(arg["summary"] as RolloutSummary, arg["nodes"] as string[]);
      case "/release":
        return this.index.release(String(arg["name"]));
      case "/update":
        return this.index.update(arg["summary"] as RolloutSummary);
      case "/list":
        return this.index.list();
      case "/append":
        return this.audit.append(arg["entry"] as Parameters<AuditChain["append"]>[0]);
      // One rollout.
      case "/init":
        return this.serial(() => this.init(arg["spec"] as RolloutSpec, arg["state"] as RolloutState));
      case "/status":
        return this.status(arg["nodes"] === true);
      case "/command":
        return this.serial(() => this.command(arg["verb"] as Verb, String(arg["actor"])));
      case "/spec":
        return this.known();
      case "/audit": {
        const items = this.audit.list(Number(arg["limit"] ?? 1000));
        return { items, brokenAt: await verifyChain(items) };
      }
      default:
        throw new ProblemError("not-found", `no rollout operation ${op}`);
    }
  }

  private known(): RolloutSpec {
    const s = this.store.spec();
    if (!s) throw new ProblemError("not-found", "no such rollout");
    return s;
  }

  private async init(spec: RolloutSpec, st: RolloutState): Promise<unknown> {
    if (this.store.spec()) throw new ProblemError("rollout-conflict", `rollout "${spec.name}" exists already`);
    this.store.create(spec, st);
    await this.audit.append({
      at: spec.createdAt,
      actor: spec.actor,
      action: "create",
      rollout: spec.name,
      nodes: spec.targets,
      detail: { selector: spec.selector, generation: spec.revision.generation, strategy: spec.strategy },
    });
    await this.ctx.storage.setAlarm(Date.now());
    return this.status(false);
  }

  status(nodes: boolean) {
    const spec = this.known();
    const head = this.store.head()!;
    const st = nodes ? this.store.state() : undefined;
    return rolloutView(spec, head, st?.nodes, nodes ? this.store.dispatchCounts() : undefined);
  }

  async alarm(): Promise<void> {
    await this.serial(() => this.tick());
  }

  /** Outstanding actions first (a restart mid-dispatch), then one step; the next tick while not final. */
  private async tick(): Promise<void> {
    const spec = this.store.spec();
    if (!spec) return;
    await this.drain(spec);
    const prev = this.store.state()!;
    if (FINAL.has(prev.phase)) return;
    const r = step(prev, spec.strategy, await this.observations(spec, prev), Date.now(), spec.expected);
    await this.apply(spec, prev, r.state, r.actions, "coordinator");
    if (!FINAL.has(r.state.phase)) await this.ctx.storage.setAlarm(Date.now() + rolloutSettingsOf(this.env).tickMs);
  }

  private async command(verb: Verb, actor: string): Promise<unknown> {
    const spec = this.known();
    await this.drain(spec);
    const prev = this.store.state()!;
    const r = command(prev, spec.strategy, verb, await this.observations(spec, prev), Date.now(), spec.expected);
    await this.apply(spec, prev, r.state, r.actions, actor);
    if (!FINAL.has(r.state.phase) || verb === "rollback") await this.ctx.storage.setAlarm(Date.now());
    return this.status(false);
  }

  private async observations(spec: RolloutSpec, _st: RolloutState): Promise<Map<string, Observation>> {
    const seen = await observe(fleetOf(this.env), spec.targets);
    return new Map([...seen].map(([n, v]) => [n, observation(v)]));
  }

  /** Commit, then run: the state and its actions are durable before any action's I/O. */
  private async apply(spec: RolloutSpec, prev: RolloutState, next: RolloutState, actions: Action[], actor: string) {
    if (next === prev || (next.seq === prev.seq && actions.length === 0)) return;
    this.store.commit(prev, next, actions);
    for (const a of actions)
      if (a.type === "event")
        await this.audit.append({
          at: next.updatedAt,
          actor,
          action: a.reason,
          rollout: spec.name,
          nodes: [],
          detail: { message: a.message, phase: next.phase },
        });
    await this.drain(spec);
    if (next.phase !== prev.phase || next.batch !== prev.batch) await this.report(spec, next);
  }

  /** Run the outbox: each action marked done after it ran; dispatch re-runs are refused by the registry as stale. */
  private async drain(spec: RolloutSpec): Promise<void> {
    for (const { id, action } of this.store.pending()) {
      if (action.type === "dispatch") {
        const set = action.set === "revision" ? spec.revision : spec.rollback;
        if (!set) throw new Error(`rollout "${spec.name}" has no ${action.set} set`);
        const r = await dispatch(fleetOf(this.env), set, action.nodes, `rollout:${spec.name}`);
        await this.audit.append({
          at: Date.now(),
          actor: `rollout:${spec.name}`,
          action: action.set === "revision" ? "dispatch" : "dispatch-rollback",
          rollout: spec.name,
          nodes: action.nodes,
          detail: { batch: action.batch, generation: set.generation, ...r },
        });
        this.store.done(id, r);
      } else if (action.type === "release") {
        await this.indexCall("/release", { name: spec.name });
        this.store.done(id);
      } else this.store.done(id);
    }
  }

  private async report(spec: RolloutSpec, st: RolloutState): Promise<void> {
    const v = rolloutView(spec, st, undefined, undefined);
    await this.indexCall("/update", { summary: v.summary });
  }

  private async indexCall(op: string, arg: object): Promise<void> {
    const ns = this.env.ROLLOUTS!;
    const r = await ns.get(ns.idFromName("index")).fetch(`https://rollout${op}`, {
      method: "POST",
      body: JSON.stringify(arg),
    });
    if (!r.ok) throw new Error(`the rollout index answered ${r.status} to ${op}`);
  }
}

export type { FleetEnv };
