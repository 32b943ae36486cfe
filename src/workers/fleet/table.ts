// One registry shard's tables (SQLite in its Durable Object): the nodes, their signed desired sets and the audit
// trail. Every write goes through here, so the row writes an idle fleet costs are all in one place (docs/fleet.md).
import type { JWK } from "jose";
import type { RegistryEntry } from "../../http/fleet/node-view.js";
import type { PodSummary } from "../../http/fleet/protocol.js";
import type { SqlStorage } from "./runtime.js";

/** A node's row: the registry entry the owner sees (node-view.ts), with the node's key and when it last reported. */
export interface NodeRow extends RegistryEntry {
  jwk: JWK;
  statusAt: number | null;
}
export interface StoredDesired {
  generation: number;
  contentType: string;
  body: string;
  signature: string | null;
}
export interface AuditRow {
  at: number;
  node: string;
  action: string;
  actor: string;
  detail: string;
}

type Raw = Record<string, string | number | null>;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS nodes (
  name TEXT PRIMARY KEY, jwk TEXT NOT NULL, labels TEXT NOT NULL, taints TEXT NOT NULL DEFAULT '[]',
  capacity TEXT NOT NULL DEFAULT '{}', version TEXT NOT NULL DEFAULT '', enrolled_at INTEGER NOT NULL,
  revoked_at INTEGER, connected INTEGER NOT NULL DEFAULT 0, last_seen INTEGER,
  generation INTEGER NOT NULL DEFAULT 0, pods TEXT NOT NULL DEFAULT '[]', error TEXT, status_at INTEGER,
  desired_generation INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS desired (
  name TEXT PRIMARY KEY, generation INTEGER NOT NULL, content_type TEXT NOT NULL, body TEXT NOT NULL, signature TEXT);
CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, node TEXT NOT NULL, action TEXT NOT NULL,
  actor TEXT NOT NULL, detail TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_node ON audit (node, id);
CREATE TABLE IF NOT EXISTS used_jti (jti TEXT PRIMARY KEY, until INTEGER NOT NULL);`;

/** The shard's tables, with a count of the rows written (for the bench and /stats). */
export class FleetTable {
  rowsWritten = 0;
  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
  }

  private run(query: string, ...b: unknown[]): Raw[] {
    const c = this.sql.exec<Raw>(query, ...b);
    const rows = c.toArray();
    this.rowsWritten += c.rowsWritten;
    return rows;
  }

  get(name: string): NodeRow | undefined {
    const r = this.run("SELECT * FROM nodes WHERE name = ?", name)[0];
    return r && toRow(r);
  }

  list(): NodeRow[] {
    return this.run("SELECT * FROM nodes ORDER BY name").map(toRow);
  }

  enroll(n: Pick<NodeRow, "name" | "jwk" | "labels" | "capacity" | "version">, now: number): void {
    this.run(
      `INSERT INTO nodes (name, jwk, labels, capacity, version, enrolled_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET jwk = excluded.jwk, labels = excluded.labels, capacity = excluded.capacity,
       version = excluded.version, enrolled_at = excluded.enrolled_at, revoked_at = NULL, connected = 0`,
      n.name,
      JSON.stringify(n.jwk),
      JSON.stringify(n.labels),
      JSON.stringify(n.capacity),
      n.version,
      now,
    );
  }

  setLabels(name: string, labels: Record<string, string>): void {
    this.run("UPDATE nodes SET labels = ? WHERE name = ?", JSON.stringify(labels), name);
  }

  revoke(name: string, now: number): void {
    this.run("UPDATE nodes SET revoked_at = ?, connected = 0, last_seen = ? WHERE name = ?", now, now, name);
  }

  /** A connection opened (hello) or closed: one row write. */
  connection(
    name: string,
    connected: boolean,
    now: number,
    hello?: { version: string; capacity?: Record<string, string> },
  ): void {
    if (hello)
      this.run(
        "UPDATE nodes SET connected = ?, last_seen = ?, version = ?, capacity = COALESCE(?, capacity) WHERE name = ?",
        connected ? 1 : 0,
        now,
        hello.version,
        hello.capacity ? JSON.stringify(hello.capacity) : null,
        name,
      );
    else this.run("UPDATE nodes SET connected = ?, last_seen = ? WHERE name = ?", connected ? 1 : 0, now, name);
  }

  /** lastSeen for many nodes at once (the sweep's batch). */
  seen(entries: readonly { name: string; at: number }[]): void {
    for (const e of entries) this.run("UPDATE nodes SET last_seen = ? WHERE name = ?", e.at, e.name);
  }

  status(name: string, s: { generation: number; pods: PodSummary[]; error?: string | undefined }, now: number): void {
    this.run(
      "UPDATE nodes SET generation = ?, pods = ?, error = ?, status_at = ?, last_seen = ? WHERE name = ?",
      s.generation,
      JSON.stringify(s.pods),
      s.error ?? null,
      now,
      now,
      name,
    );
  }

  desired(name: string): StoredDesired | undefined {
    const r = this.run("SELECT * FROM desired WHERE name = ?", name)[0];
    return (
      r && {
        generation: Number(r["generation"]),
        contentType: String(r["content_type"]),
        body: String(r["body"]),
        signature: r["signature"] === null ? null : String(r["signature"]),
      }
    );
  }

  putDesired(name: string, d: StoredDesired): void {
    this.run(
      `INSERT INTO desired (name, generation, content_type, body, signature) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET generation = excluded.generation, content_type = excluded.content_type,
       body = excluded.body, signature = excluded.signature`,
      name,
      d.generation,
      d.contentType,
      d.body,
      d.signature,
    );
    this.run("UPDATE nodes SET desired_generation = ? WHERE name = ?", d.generation, name);
  }

  /** A connection token's jti, spent: false if it was already (a replayed token). */
  spend(jti: string, until: number): boolean {
    if (this.run("SELECT 1 AS x FROM used_jti WHERE jti = ?", jti).length) return false;
    this.run("INSERT INTO used_jti (jti, until) VALUES (?, ?)", jti, until);
    return true;
  }

  forgetSpent(now: number): void {
    this.run("DELETE FROM used_jti WHERE until < ?", now);
  }

  audit(a: Omit<AuditRow, "detail"> & { detail?: unknown }): void {
    this.run(
      "INSERT INTO audit (at, node, action, actor, detail) VALUES (?, ?, ?, ?, ?)",
      a.at,
      a.node,
      a.action,
      a.actor,
      JSON.stringify(a.detail ?? {}),
    );
  }

  auditOf(node: string | undefined, limit: number): AuditRow[] {
    const rows = node
      ? this.run("SELECT * FROM audit WHERE node = ? ORDER BY id DESC LIMIT ?", node, limit)
      : this.run("SELECT * FROM audit ORDER BY id DESC LIMIT ?", limit);
    return rows.map((r) => ({
      at: Number(r["at"]),
      node: String(r["node"]),
      action: String(r["action"]),
      actor: String(r["actor"]),
      detail: String(r["detail"]),
    }));
  }
}

const json = <T>(v: string | number | null | undefined, dflt: T): T =>
  typeof v === "string" ? (JSON.parse(v) as T) : dflt;

function toRow(r: Raw): NodeRow {
  return {
    name: String(r["name"]),
    jwk: json<JWK>(r["jwk"], {}),
    labels: json(r["labels"], {}),
    taints: json(r["taints"], []),
    capacity: json(r["capacity"], {}),
    version: String(r["version"] ?? ""),
    enrolledAt: Number(r["enrolled_at"]),
    revokedAt: r["revoked_at"] === null ? null : Number(r["revoked_at"]),
    connected: r["connected"] === 1,
    lastSeen: r["last_seen"] === null ? null : Number(r["last_seen"]),
    generation: Number(r["generation"]),
    pods: json(r["pods"], []),
    error: r["error"] === null ? null : String(r["error"]),
    statusAt: r["status_at"] === null ? null : Number(r["status_at"]),
    desiredGeneration: Number(r["desired_generation"]),
  };
}
