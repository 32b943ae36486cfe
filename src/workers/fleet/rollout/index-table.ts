// The rollouts' index (the coordinator class's instance named "index"): every rollout's summary for `fleet
// rollouts`, and a lock per node held by the one active rollout on it. Two rollouts on overlapping node sets are
// refused, never interleaved or queued: a rollout takes all its nodes' locks at creation, in one transaction, or
// none, and gives them back when it is final.
import { ProblemError } from "../../../usecases/problems.js";
import type { SqlStorage } from "../runtime.js";
import type { Phase } from "./model.js";

export interface RolloutSummary {
  name: string;
  selector: string;
  createdAt: number;
  phase: Phase;
  pauseReason?: string;
  generation: number;
  targets: number;
  batch: number;
  batches: number;
  healthy: number;
  failed: number;
  unreachable: number;
  updatedAt: number;
}

export class RolloutIndex {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS rollouts (name TEXT PRIMARY KEY, created_at INTEGER NOT NULL, v TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS locks (node TEXT PRIMARY KEY, rollout TEXT NOT NULL);`);
  }

  /** All of `nodes`' locks for `s.name`, or a 409 naming the rollout that holds one. */
  acquire(s: RolloutSummary, nodes: string[]): void {
    if (this.sql.exec("SELECT 1 FROM rollouts WHERE name = ?", s.name).toArray().length)
      throw new ProblemError("rollout-conflict", `a rollout named "${s.name}" exists already`);
    const held = new Map<string, string[]>();
    for (let i = 0; i < nodes.length; i += 100) {
      const part = nodes.slice(i, i + 100);
      const q = `SELECT node, rollout FROM locks WHERE node IN (${part.map(() => "?").join(",")})`;
      for (const r of this.sql.exec<{ node: string; rollout: string }>(q, ...part))
        held.set(r.rollout, [...(held.get(r.rollout) ?? []), r.node]);
    }
    if (held.size) {
      const [other, on] = [...held][0]!;
      throw new ProblemError(
        "rollout-conflict",
        `rollout "${other}" is still active on ${on.length} of these nodes (${on.slice(0, 5).join(", ")}${on.length > 5 ? ", ..." : ""}): overlapping rollouts are refused; wait for it, or pause/abort it`,
        { rollout: other, nodes: on.slice(0, 100) },
      );
    }
    for (const n of nodes) this.sql.exec("INSERT INTO locks (node, rollout) VALUES (?, ?)", n, s.name);
    this.update(s);
  }

  release(name: string): void {
    this.sql.exec("DELETE FROM locks WHERE rollout = ?", name);
  }

  update(s: RolloutSummary): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO rollouts (name, created_at, v) VALUES (?, ?, ?)",
      s.name,
      s.createdAt,
      JSON.stringify(s),
    );
  }

  list(): RolloutSummary[] {
    return this.sql
      .exec<{ v: string }>("SELECT v FROM rollouts ORDER BY created_at, name")
      .toArray()
      .map((r) => JSON.parse(r.v) as RolloutSummary);
  }
}
