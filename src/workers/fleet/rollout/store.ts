// One rollout's tables in its coordinator's SQLite: the spec (as created, never changed), the state without its
// nodes (one row: the counts the rollup reads), one row per node, and the outbox of actions a step decided. A step's
// state and its actions are written in one transaction, before any action runs; an action's row is marked done after
// it ran. A restart runs what is not done (dispatch is idempotent: the registry refuses a generation it already
// holds), so it neither loses its place nor dispatches twice.
import type { SqlStorage } from "../runtime.js";
import type { RolloutNode, RolloutState, Strategy } from "./model.js";
import type { Action, Expectations } from "./step.js";

/** A set as the owner signed it (the same bytes for every target). */
export interface SignedSet {
  generation: number;
  contentType: string;
  body: string;
  signature: string;
  jti: string;
}

export interface RolloutSpec {
  name: string;
  selector: string;
  strategy: Strategy;
  targets: string[];
  revision: SignedSet;
  rollback?: SignedSet;
  actor: string;
  createdAt: number;
  /** What the revision and the rollback set run, for the gate. */
  expected?: Expectations;
}

export interface Pending {
  id: number;
  action: Action;
}

export interface TxStorage {
  sql: SqlStorage;
  transactionSync?<T>(fn: () => T): T;
}

export class RolloutStore {
  private readonly sql: SqlStorage;
  constructor(private readonly storage: TxStorage) {
    this.sql = storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, v TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, seq INTEGER NOT NULL,
        action TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0);`);
  }

  private meta<T>(k: string): T | undefined {
    const r = this.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = ?", k).toArray()[0];
    return r ? (JSON.parse(r.v) as T) : undefined;
  }
  private putMeta(k: string, v: unknown): void {
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", k, JSON.stringify(v));
  }
  private tx<T>(fn: () => T): T {
    return this.storage.transactionSync ? this.storage.transactionSync(fn) : fn();
  }

  spec(): RolloutSpec | undefined {
    return this.meta<RolloutSpec>("spec");
  }

  /** The state without the nodes: what status and the rollup read (one row, whatever the node count). */
  head(): Omit<RolloutState, "nodes"> | undefined {
    return this.meta<Omit<RolloutState, "nodes">>("state");
  }

  state(): RolloutState | undefined {
    const h = this.head();
    if (!h) return undefined;
    const nodes: Record<string, RolloutNode> = {};
    for (const r of this.sql.exec<{ name: string; v: string }>("SELECT name, v FROM nodes"))
      nodes[r.name] = JSON.parse(r.v) as RolloutNode;
    return { ...h, nodes };
  }

  create(spec: RolloutSpec, st: RolloutState): void {
    this.tx(() => {
      this.putMeta("spec", spec);
      this.save(undefined, st, []);
    });
  }

  /** The step's new state (only the node rows that changed) and its actions, in one transaction. */
  commit(prev: RolloutState, next: RolloutState, actions: Action[]): void {
    this.tx(() => this.save(prev, next, actions));
  }

  private save(prev: RolloutState | undefined, next: RolloutState, actions: Action[]): void {
    const { nodes, ...head } = next;
    this.putMeta("state", head);
    for (const [name, n] of Object.entries(nodes))
      if (prev?.nodes[name] !== n)
        this.sql.exec("INSERT OR REPLACE INTO nodes (name, v) VALUES (?, ?)", name, JSON.stringify(n));
    for (const a of actions)
      this.sql.exec("INSERT INTO outbox (seq, action) VALUES (?, ?)", next.seq, JSON.stringify(a));
  }

  pending(): Pending[] {
    return this.sql
      .exec<{ id: number; action: string }>("SELECT id, action FROM outbox WHERE done = 0 ORDER BY id")
      .toArray()
      .map((r) => ({ id: Number(r.id), action: JSON.parse(r.action) as Action }));
  }

  done(id: number, result?: unknown): void {
    this.sql.exec("UPDATE outbox SET done = 1 WHERE id = ?", id);
    if (result !== undefined) this.putMeta(`result-${id}`, result);
  }

  /** How many times each node was handed a set (for status and the restart test): counted from the outbox. */
  dispatchCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.sql.exec<{ action: string }>("SELECT action FROM outbox WHERE done = 1")) {
      const a = JSON.parse(r.action) as Action;
      if (a.type === "dispatch") for (const n of a.nodes) out[`${a.set}:${n}`] = (out[`${a.set}:${n}`] ?? 0) + 1;
    }
    return out;
  }
}
