// A shard's own counts (requests, WebSocket messages, alarms, SQLite rows written, alarm writes), for the bench
// (docs/fleet.md's price). Off by default: in memory only, and lost when the object hibernates. With
// PODSYNC_FLEET_STATS=on they are kept in a table of their own, flushed after each event, so they survive
// hibernation; those writes are the instrument's and are not counted.
import type { SqlStorage } from "./runtime.js";

const KEYS = ["requests", "messages", "alarms", "rowsWritten", "alarmWrites"] as const;
export type StatKey = (typeof KEYS)[number];
export type StatCounts = Record<StatKey, number>;

const zero = (): StatCounts => ({ requests: 0, messages: 0, alarms: 0, rowsWritten: 0, alarmWrites: 0 });

export class FleetStats {
  private pending = zero();
  private total = zero();
  private rowsSeen = 0;
  constructor(
    private readonly sql: SqlStorage,
    private readonly persist: boolean,
  ) {
    if (!persist) return;
    sql.exec("CREATE TABLE IF NOT EXISTS stats (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
    for (const r of sql.exec<{ k: string; v: number }>("SELECT k, v FROM stats"))
      if ((KEYS as readonly string[]).includes(r.k)) this.total[r.k as StatKey] = r.v;
  }

  add(k: StatKey, n = 1): void {
    this.pending[k] += n;
  }

  /** After an event: the rows the tables wrote since the last flush, and the counts, to the stats table. */
  flush(rowsWritten: number): void {
    this.pending.rowsWritten += rowsWritten - this.rowsSeen;
    this.rowsSeen = rowsWritten;
    for (const k of KEYS) {
      const n = this.pending[k];
      if (!n) continue;
      this.total[k] += n;
      if (this.persist)
        this.sql.exec("INSERT INTO stats (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = v + excluded.v", k, n);
    }
    this.pending = zero();
  }

  read(): StatCounts {
    return { ...this.total };
  }
}
