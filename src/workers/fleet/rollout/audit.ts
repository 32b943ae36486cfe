// A hash-chained audit log in a Durable Object's SQLite (issue #39: every rollout action, who, what, which nodes,
// when). Each row's hash is SHA-256 over the previous row's hash and this row's fields, so an edited or removed
// row breaks the chain from there on; verify() walks it.
import type { SqlStorage } from "../runtime.js";

export interface AuditEntry {
  at: number;
  actor: string;
  action: string;
  rollout: string;
  nodes: string[];
  detail?: Record<string, unknown>;
}
export interface ChainedEntry extends AuditEntry {
  id: number;
  prev: string;
  hash: string;
}

const GENESIS = "0".repeat(64);

export async function entryHash(prev: string, e: AuditEntry): Promise<string> {
  const text = JSON.stringify([prev, e.at, e.actor, e.action, e.rollout, e.nodes, e.detail ?? null]);
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export class AuditChain {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL,
      actor TEXT NOT NULL, action TEXT NOT NULL, rollout TEXT NOT NULL, nodes TEXT NOT NULL, detail TEXT,
      prev TEXT NOT NULL, hash TEXT NOT NULL)`);
  }

  private last(): string {
    const r = this.sql.exec<{ hash: string }>("SELECT hash FROM audit ORDER BY id DESC LIMIT 1").toArray()[0];
    return r?.hash ?? GENESIS;
  }

  /** The hash is computed before the insert; the insert itself is one synchronous write. */
  async append(e: AuditEntry): Promise<void> {
    const prev = this.last();
    const hash = await entryHash(prev, e);
    // Another append may have landed while hashing: chain onto whatever is last now.
    if (this.last() !== prev) return this.append(e);
    this.sql.exec(
      "INSERT INTO audit (at, actor, action, rollout, nodes, detail, prev, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      e.at,
      e.actor,
      e.action,
      e.rollout,
      JSON.stringify(e.nodes),
      e.detail === undefined ? null : JSON.stringify(e.detail),
      prev,
      hash,
    );
  }

  list(limit = 1000): ChainedEntry[] {
    return this.sql
      .exec<Record<string, string | number | null>>("SELECT * FROM audit ORDER BY id LIMIT ?", limit)
      .toArray()
      .map((r) => ({
        id: Number(r["id"]),
        at: Number(r["at"]),
        actor: String(r["actor"]),
        action: String(r["action"]),
        rollout: String(r["rollout"]),
        nodes: JSON.parse(String(r["nodes"])) as string[],
        ...(r["detail"] === null ? {} : { detail: JSON.parse(String(r["detail"])) as Record<string, unknown> }),
        prev: String(r["prev"]),
        hash: String(r["hash"]),
      }));
  }
}

/** The first row whose chain is broken, or -1 when every row's hash holds. */
export async function verifyChain(rows: ChainedEntry[]): Promise<number> {
  let prev = GENESIS;
  for (const r of rows) {
    const { id: _i, prev: p, hash, ...e } = r;
    if (p !== prev || (await entryHash(prev, e)) !== hash) return r.id;
    prev = hash;
  }
  return -1;
}
