// Package workers/fleet/ — the fleet registry on Workers: routes, FleetShard Durable Objects, their SQLite tables.
// Imports http/ (fleet protocol, problems, signed requests), auth/, kubeapi/selectors and ../; never the agent.
//
// Durable Object FleetShard: one shard of the node registry (a node's shard is its name's hash, shardOf). It holds
// its nodes' rows, desired sets and audit in SQLite (table.ts) and their connections as hibernatable
// WebSockets. Guarantees: an idle connected node wakes nothing (the heartbeat is answered by the runtime,
// setWebSocketAutoResponse); one alarm per shard (not per node) while any connection is open finds silent ones and
// writes lastSeen at most every PODSYNC_FLEET_LAST_SEEN_WRITE_S; a node reports only its own status (another node's
// name is refused and audited); a revoked node's connection is closed at once.
import {
  CLOSE,
  type DesiredMessage,
  HEARTBEAT,
  NodeMessage,
  SILENT_MS,
  STREAM,
  type StreamOpen,
} from "../../http/fleet/protocol.js";
import { fleetNode, type FleetNode } from "../../http/fleet/node-view.js";
import { toProblemError, ProblemError } from "../../usecases/problems.js";
import { type FleetShardState, type HibernatableSocket, upgraded, workerd } from "./runtime.js";
import { FleetStats } from "./stats.js";
import { ShardStreams } from "./streams.js";
import { ShardSessions } from "./sessions.js";
import { FleetTable, type NodeRow, type StoredDesired } from "./table.js";
import { verifyNodeToken } from "./node-auth.js";
import { fleetSettingsOf } from "./settings.js";
import type { Env } from "../settings.js";

interface Attachment {
  node: string;
  connectedAt: number;
  /** When the node last sent a message the object saw (the heartbeat is seen by the runtime only). */
  heardAt: number;
}

/** What the Worker's fleet routes send the shard (after checking the owner's token): `actor` is who, for the audit. */
export interface ShardArg {
  actor: string;
  node?: string;
  limit?: number;
}
export type EnrollArg = ShardArg & Pick<NodeRow, "name" | "jwk" | "labels" | "capacity" | "version"> & { jti: string };
export type LabelArg = ShardArg & { node: string; set: Record<string, string | null> };
export type DesiredArg = ShardArg & StoredDesired & { node: string; jti: string };
export type StreamArg = ShardArg & { node: string } & Omit<StreamOpen, "type" | "id">;
/** The header carrying a session's StreamArg to the shard (the request itself is the caller's upgrade). */
export const SESSION_HEADER = "x-podsync-fleet-session";

export class FleetShard {
  private readonly table: FleetTable;
  private readonly stats: FleetStats;
  private readonly streams = new ShardStreams();
  private readonly sessions = new ShardSessions(this.streams.nextId);
  constructor(
    private readonly ctx: FleetShardState,
    private readonly env: Env,
  ) {
    this.table = new FleetTable(ctx.storage.sql);
    this.stats = new FleetStats(ctx.storage.sql, fleetSettingsOf(env).PODSYNC_FLEET_STATS === "on");
    const w = workerd();
    ctx.setWebSocketAutoResponse(new w.WebSocketRequestResponsePair(HEARTBEAT.ping, HEARTBEAT.pong));
  }

  async fetch(req: Request): Promise<Response> {
    this.stats.add("requests");
    try {
      return await this.serve(req);
    } finally {
      this.stats.flush(this.table.rowsWritten);
    }
  }

  private async serve(req: Request): Promise<Response> {
    const op = new URL(req.url).pathname;
    try {
      if (op === "/connect") return await this.connect(req);
      if (op === "/session") return await this.session(req);
      const arg = (await req.json()) as ShardArg;
      if (op === "/stream") return await this.stream(arg as StreamArg);
      const now = Date.now();
      switch (op) {
        case "/enroll":
          return Response.json(this.enroll(arg as EnrollArg, now));
        case "/list":
          return Response.json(this.list(now));
        case "/label":
          return Response.json(this.label(arg as LabelArg, now));
        case "/revoke":
          return Response.json(this.revoke(arg as ShardArg & { node: string }, now));
        case "/desired-many":
          return Response.json(this.putDesiredMany(arg as DesiredArg & { nodes: string[] }, now));
        case "/desired":
          return Response.json(this.putDesired(arg as DesiredArg, now));
        case "/desired-of":
          return Response.json(this.desiredOf((arg as ShardArg & { nodes: string[] }).nodes));
        case "/audit":
          return Response.json(this.table.auditOf(arg.node, Number(arg.limit ?? 100)));
        case "/stats":
          return Response.json({
            ...this.stats.read(),
            sockets: this.ctx.getWebSockets().length,
          });
        default:
          throw new ProblemError("not-found", `no fleet shard operation ${op}`);
      }
    } catch (e) {
      return toProblemError(e).toResponse(op);
    }
  }

  /** The node's WebSocket, after its connection token checks out against its enrolled key. */
  private async connect(req: Request): Promise<Response> {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket")
      throw new ProblemError("bad-request", "GET /fleet/connect is a WebSocket upgrade");
    const s = fleetSettingsOf(this.env);
    const now = Date.now();
    const row = await verifyNodeToken(req.headers.get("authorization"), (n) => this.table.get(n), {
      fleet: s.PODSYNC_FLEET_NAME,
      skewS: s.PODSYNC_FLEET_NODE_CLOCK_SKEW_S,
      now,
      spend: (jti, until) => this.table.spend(jti, until),
    });
    // One connection per node: a new one replaces the old (the node reconnected before the old one timed out).
    for (const old of this.ctx.getWebSockets(row.name)) old.close(CLOSE.replaced, "replaced by a newer connection");
    const pair = new (workerd().WebSocketPair)();
    const server = pair[1];
    this.ctx.acceptWebSocket(server, [row.name]);
    server.serializeAttachment({ node: row.name, connectedAt: now, heardAt: now } satisfies Attachment);
    await this.ensureSweep();
    return upgraded(pair[0]);
  }

  async webSocketMessage(ws: HibernatableSocket, message: string | ArrayBuffer): Promise<void> {
    this.stats.add("messages");
    try {
      await this.message(ws, message);
    } finally {
      this.stats.flush(this.table.rowsWritten);
    }
  }

  private async message(ws: HibernatableSocket, message: string | ArrayBuffer): Promise<void> {
    const att = ws.deserializeAttachment() as Attachment;
    const now = Date.now();
    if (message === HEARTBEAT.ping) return ws.send(HEARTBEAT.pong);
    const limit = fleetSettingsOf(this.env).PODSYNC_FLEET_MAX_MESSAGE_BYTES;
    const size = typeof message === "string" ? new TextEncoder().encode(message).byteLength : message.byteLength;
    if (size > limit) {
      const why = `message of ${size} bytes is over the limit of ${limit} bytes (PODSYNC_FLEET_MAX_MESSAGE_BYTES)`;
      send(ws, { type: "error", reason: "message-too-large", message: why });
      return ws.close(CLOSE.tooLarge, why.slice(0, 120));
    }
    let msg: NodeMessage;
    try {
      msg = NodeMessage.parse(JSON.parse(typeof message === "string" ? message : new TextDecoder().decode(message)));
    } catch (e) {
      return send(ws, {
        type: "error",
        reason: "bad-message",
        message: `not a fleet message: ${String((e as Error).message).slice(0, 300)}`,
      });
    }
    if (msg.type === "head" || msg.type === "data" || msg.type === "end") {
      if (!this.streams.frame(ws, msg)) this.sessions.frame(ws, msg);
      return;
    }
    if (msg.type === "credit") return void this.sessions.credit(ws, msg);
    ws.serializeAttachment({ ...att, heardAt: now } satisfies Attachment);
    if (msg.node !== att.node) return this.forged(ws, att.node, msg, now);
    if (msg.type === "hello") {
      this.table.connection(att.node, true, now, msg);
      const d = this.table.desired(att.node);
      if (d && d.generation > msg.generation) send(ws, desiredMessage(d));
      return;
    }
    this.table.status(att.node, msg, now);
  }

  /** A message naming another node: refused, audited, and the connection closed. */
  private forged(ws: HibernatableSocket, node: string, msg: { type: string; node: string }, now: number): void {
    const why = `this connection is node "${node}"'s: it may not report for "${msg.node}"`;
    this.table.audit({
      at: now,
      node,
      action: "forged-status",
      actor: `node:${node}`,
      detail: { claimed: msg.node, type: msg.type },
    });
    send(ws, { type: "error", reason: "forbidden", message: why });
    ws.close(CLOSE.policy, "a node reports only its own status");
  }

  async webSocketClose(ws: HibernatableSocket, code: number, reason: string): Promise<void> {
    const att = ws.deserializeAttachment() as Attachment | null;
    this.streams.dropSocket(ws);
    this.sessions.dropSocket(ws);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
    if (att && !this.ctx.getWebSockets(att.node).some((o) => o !== ws && o.readyState === 1))
      if (this.table.get(att.node)?.revokedAt === null) this.table.connection(att.node, false, Date.now());
    this.stats.flush(this.table.rowsWritten);
  }

  async webSocketError(ws: HibernatableSocket): Promise<void> {
    await this.webSocketClose(ws, 1011, "error");
  }

  /** One pass over the open connections: silent ones closed (NotReady), lastSeen written in a batch for those whose
   * stored one is older than the write interval; the next pass only while a connection is open. */
  async alarm(): Promise<void> {
    this.stats.add("alarms");
    try {
      await this.sweep();
    } finally {
      this.stats.flush(this.table.rowsWritten);
    }
  }

  private async sweep(): Promise<void> {
    const s = fleetSettingsOf(this.env);
    const now = Date.now();
    const due: { name: string; at: number }[] = [];
    for (const ws of this.ctx.getWebSockets()) {
      const att = ws.deserializeAttachment() as Attachment;
      const heard = this.heard(ws, att);
      if (now - heard > SILENT_MS) {
        ws.close(CLOSE.silent, `silent for ${Math.round((now - heard) / 1000)} s`);
        this.table.connection(att.node, false, heard);
        continue;
      }
      const row = this.table.get(att.node);
      if (row && (row.lastSeen ?? 0) + s.PODSYNC_FLEET_LAST_SEEN_WRITE_S * 1000 <= heard)
        due.push({ name: att.node, at: heard });
    }
    this.table.seen(due);
    this.table.forgetSpent(now);
    if (this.ctx.getWebSockets().length > 0) await this.setAlarm(now + s.PODSYNC_FLEET_SWEEP_S * 1000);
  }

  private async ensureSweep(): Promise<void> {
    if ((await this.ctx.storage.getAlarm()) === null)
      await this.setAlarm(Date.now() + fleetSettingsOf(this.env).PODSYNC_FLEET_SWEEP_S * 1000);
  }

  /** setAlarm is billed as a row write. */
  private setAlarm(at: number): Promise<void> {
    this.stats.add("alarmWrites");
    return this.ctx.storage.setAlarm(at);
  }

  /** When the connection last spoke: its last message or heartbeat. */
  private heard(ws: HibernatableSocket, att: Attachment): number {
    return Math.max(att.heardAt, this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0);
  }

  private socketOf(node: string): HibernatableSocket | undefined {
    return this.ctx.getWebSockets(node).find((w) => w.readyState === 1);
  }

  /** A request for the node's own API, over its link as a stream (streams.ts); the node checks the caller's token. */
  private async stream(a: StreamArg): Promise<Response> {
    const ws = this.socketOf(a.node);
    if (!ws)
      throw new ProblemError(
        "node-not-connected",
        `node "${a.node}" is not connected to the fleet: its API is reached over its own link`,
      );
    if (this.streams.size + this.sessions.size >= STREAM.maxStreams * this.ctx.getWebSockets().length)
      throw new ProblemError("too-many-streams", "this registry shard holds as many streams as it serves");
    return this.streams.open(ws, { method: a.method, path: a.path, headers: a.headers });
  }

  /** kubectl exec over the node's link: the caller's WebSocket upgrade (its stream argument in SESSION_HEADER)
   * becomes a session (sessions.ts); the node's own listener checks the token, PODSYNC_ALLOW_EXEC and the pod. */
  private async session(req: Request): Promise<Response> {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket")
      throw new ProblemError("bad-request", "a session is a WebSocket upgrade");
    const a = JSON.parse(req.headers.get(SESSION_HEADER) ?? "{}") as StreamArg;
    const ws = this.socketOf(a.node);
    if (!ws)
      throw new ProblemError(
        "node-not-connected",
        `node "${a.node}" is not connected to the fleet: its API is reached over its own link`,
      );
    if (this.streams.size + this.sessions.size >= STREAM.maxStreams * this.ctx.getWebSockets().length)
      throw new ProblemError("too-many-streams", "this registry shard holds as many streams as it serves");
    return this.sessions.upgrade(ws, { method: "GET", path: a.path, headers: a.headers });
  }

  private enroll(n: EnrollArg, now: number): { node: string } {
    const had = this.table.get(n.name);
    if (had && had.revokedAt === null && JSON.stringify(had.jwk) !== JSON.stringify(n.jwk))
      throw new ProblemError(
        "already-enrolled",
        `node "${n.name}" is enrolled with another key; revoke it first (podsync fleet revoke ${n.name}) to enroll it again`,
      );
    this.table.enroll(n, now);
    this.table.audit({
      at: now,
      node: n.name,
      action: "enroll",
      actor: n.actor,
      detail: { jti: n.jti, labels: n.labels, version: n.version },
    });
    return { node: n.name };
  }

  private list(now: number): FleetNode[] {
    return this.table.list().map((row) => {
      const ws = this.socketOf(row.name);
      return fleetNode(row, ws && this.heard(ws, ws.deserializeAttachment() as Attachment), now);
    });
  }

  /** The stored sets of `nodes` (for drift, rollout/drift.ts), each distinct set once: a set for many nodes is one
   * signature over the same bytes, so `of` maps a node to its set's index. */
  private desiredOf(nodes: string[]): { sets: StoredDesired[]; of: Record<string, number> } {
    const sets: StoredDesired[] = [];
    const seen = new Map<string, number>();
    const of: Record<string, number> = {};
    for (const n of nodes) {
      const d = this.table.desired(n);
      if (!d) continue;
      const k = d.signature ?? d.body;
      if (!seen.has(k)) seen.set(k, sets.push(d) - 1);
      of[n] = seen.get(k)!;
    }
    return { sets, of };
  }

  private known(name: string): NodeRow {
    const row = this.table.get(name);
    if (!row) throw new ProblemError("not-found", `node "${name}" is not enrolled in this fleet`);
    return row;
  }

  private label({ node, set, actor }: LabelArg, now: number): FleetNode {
    const row = this.known(node);
    const labels = { ...row.labels };
    for (const [k, v] of Object.entries(set))
      if (v === null) delete labels[k];
      else labels[k] = v;
    this.table.setLabels(node, labels);
    this.table.audit({ at: now, node, action: "label", actor, detail: { set, before: row.labels } });
    return fleetNode({ ...row, labels }, undefined, now);
  }

  private revoke({ node, actor }: ShardArg & { node: string }, now: number): { node: string; closed: number } {
    this.known(node);
    this.table.revoke(node, now);
    this.table.audit({ at: now, node, action: "revoke", actor });
    const open = this.ctx.getWebSockets(node);
    for (const ws of open) {
      send(ws, { type: "error", reason: "revoked", message: `node "${node}" was revoked` });
      ws.close(CLOSE.revoked, "revoked");
    }
    return { node, closed: open.length };
  }

  /** A signed desired set the Worker checked: stored if newer than the stored one, pushed to the node if connected. */
  private putDesired(arg: DesiredArg, now: number): { node: string; generation: number; delivered: boolean } {
    const { node, actor, jti, ...d } = arg;
    const row = this.known(node);
    if (row.revokedAt !== null) throw new ProblemError("node-revoked", `node "${node}" is revoked`);
    const had = this.table.desired(node);
    if (had && had.generation >= d.generation)
      throw new ProblemError(
        "stale-generation",
        `generation ${d.generation} is not above the stored ${had.generation}`,
        {
          current: had.generation,
        },
      );
    this.table.putDesired(node, d);
    this.table.audit({ at: now, node, action: "apply", actor, detail: { generation: d.generation, jti } });
    const ws = this.socketOf(node);
    if (ws) send(ws, desiredMessage(d));
    return { node, generation: d.generation, delivered: ws !== undefined };
  }

  /** One signed set for many of this shard's nodes (its `aud` names them all): each stored and pushed as above. */
  private putDesiredMany(
    arg: DesiredArg & { nodes: string[] },
    now: number,
  ): { stored: number; delivered: number; refused: { node: string; reason: string }[] } {
    const { nodes, ...one } = arg;
    let stored = 0;
    let delivered = 0;
    const refused: { node: string; reason: string }[] = [];
    for (const node of nodes)
      try {
        const r = this.putDesired({ ...one, node }, now);
        stored++;
        if (r.delivered) delivered++;
      } catch (e) {
        refused.push({ node, reason: toProblemError(e).message });
      }
    return { stored, delivered, refused };
  }
}

const send = (ws: HibernatableSocket, m: DesiredMessage | { type: "error"; reason: string; message: string }) => {
  try {
    ws.send(JSON.stringify(m));
  } catch {
    // The connection closed meanwhile: the node catches up at its next hello.
  }
};

const desiredMessage = (d: StoredDesired): DesiredMessage => ({
  type: "desired",
  generation: d.generation,
  contentType: d.contentType,
  body: d.body,
  ...(d.signature ? { signature: d.signature } : {}),
});
