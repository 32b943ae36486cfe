// The node's outbound link to its fleet (pull mode, docs/fleet.md): enroll once with the join token, then hold a
// WebSocket to the node's registry shard. It receives the owner-signed desired sets (catching up to the latest
// only: a set at or below what the node has is never applied), hands each to `apply`, and reports the node's status
// on change only. The node's pods never depend on it: with the Worker gone they keep running from the local store,
// and the link reconnects with exponential back-off and full jitter (at once, jitter only, when the Worker closed it
// cleanly: a restart). A half-open connection is dropped after `deadMs` without a word (the shard answers every
// ping). The same connection carries streams to the node's own API (link-streams.ts).
import { WebSocket } from "ws";
import {
  CLOSE,
  type DesiredMessage,
  FLEET_PATHS,
  FleetMessage,
  HEARTBEAT,
  type PodSummary,
  type StatusReport,
} from "./protocol.js";
import type { FleetIdentity } from "./identity.js";
import { NodeStreams } from "./link-streams.js";
import { NodeSessions } from "./link-sessions.js";

export interface LinkOptions {
  url: string;
  node: string;
  identity: FleetIdentity;
  /** The join token, needed only until the node is enrolled. */
  joinToken?: string | undefined;
  version: string;
  capacity?: Record<string, string>;
  /** Apply a set (its generation is above the node's); an error message when the node refused it. */
  apply(m: DesiredMessage): Promise<string | undefined>;
  generation(): Promise<number>;
  pods(): PodSummary[] | Promise<PodSummary[]>;
  log(rec: Record<string, unknown>): void;
  heartbeatMs?: number;
  deadMs?: number;
  backoff?: { baseMs: number; maxMs: number };
  /** How often the status is compared with what was last sent. */
  statusEveryMs?: number;
  /** The node's clock (tests skew it). */
  now?: () => number;
  /** The node's own API (its HTTP listener's fetch): streams over the link are served by it. None: no streams. */
  serve?: ((req: Request) => Promise<Response>) | undefined;
  /** The node's own listener as `ws://host:port` (loopback), for WebSocket sessions (kubectl exec) over the link;
   * none: no sessions. */
  local?: (() => string | undefined) | undefined;
  /** After the Worker closed the connection cleanly (a restart), the reconnect waits a random 0..this (1 s). */
  reconnectJitterMs?: number | undefined;
}

export interface FleetLink {
  /** The WebSocket is open and said hello. */
  connected(): boolean;
  /** Resolves at the first hello (tests). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export class JoinRefusedError extends Error {}

export function startLink(o: LinkOptions): FleetLink {
  const link = new Link(o);
  link.connect();
  return { connected: () => link.open, ready: () => link.first, close: () => link.close() };
}

/** Close codes that mean the Worker went away on purpose (a restart, a deploy): the node reconnects at once, with
 * jitter only, rather than back off (RFC 6455 7.4.1: 1000 normal, 1001 going away, 1012 service restart, 1013 try
 * again later). */
const CLEAN_CLOSE = new Set([1000, 1001, 1012, 1013]);

/** One node's link: its parts are the connection (open, message, close), the back-off, the status report and the
 * sets' drain; streams are NodeStreams'. */
class Link {
  open = false;
  readonly first: Promise<void>;
  private markReady!: () => void;
  private ws: WebSocket | undefined;
  private stopped = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastError: string | undefined;
  private lastSent = "";
  // The newest set received and not yet applied: a burst of sets applies only the last.
  private pending: DesiredMessage | undefined;
  private applying: Promise<void> = Promise.resolve();
  private readonly streams: NodeStreams | undefined;
  private readonly sessions: NodeSessions | undefined;
  private readonly now: () => number;
  private readonly backoff: { baseMs: number; maxMs: number };

  constructor(private readonly o: LinkOptions) {
    this.first = new Promise<void>((r) => (this.markReady = r));
    this.now = o.now ?? Date.now;
    this.backoff = o.backoff ?? { baseMs: 1000, maxMs: 60_000 };
    this.streams = o.serve
      ? new NodeStreams({
          serve: o.serve,
          send: (f) => this.ws?.send(JSON.stringify(f)),
          log: (rec) => o.log(rec),
        })
      : undefined;
    this.sessions = o.local
      ? new NodeSessions({ local: o.local, send: (f) => this.ws?.send(JSON.stringify(f)), log: (rec) => o.log(rec) })
      : undefined;
  }

  /** The compact summary: sent on change, and again on every (re)connect (the registry may have lost it). */
  private async status(): Promise<StatusReport> {
    return {
      type: "status",
      node: this.o.node,
      generation: await this.o.generation(),
      pods: await this.o.pods(),
      ...(this.lastError ? { error: this.lastError.slice(0, 1000) } : {}),
    };
  }

  readonly report = async (): Promise<void> => {
    if (!this.open || !this.ws) return;
    const s = JSON.stringify(await this.status());
    if (s === this.lastSent) return;
    this.lastSent = s;
    this.ws.send(s);
  };

  private drain(): void {
    this.applying = this.applying.then(async () => {
      const m = this.pending;
      this.pending = undefined;
      if (!m || m.generation <= (await this.o.generation())) return;
      this.lastError = await this.o.apply(m).catch((e: unknown) => String((e as Error)?.message ?? e));
      this.o.log({
        event: this.lastError ? "apply-refused" : "applied",
        generation: m.generation,
        ...(this.lastError ? { error: this.lastError } : {}),
      });
      await this.report().catch(() => undefined);
    });
  }

  /** The next attempt: at once (jitter only) after the Worker closed cleanly, else exponential back-off with full
   * jitter (AWS Architecture Blog, "Exponential Backoff And Jitter": a fleet coming back does not reconnect in step). */
  private schedule(clean = false): void {
    if (this.stopped) return;
    const cap = clean
      ? (this.o.reconnectJitterMs ?? 1000)
      : Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** Math.min(this.attempt, 20));
    if (!clean) this.attempt++;
    this.timer = setTimeout(() => this.connect(), Math.round(Math.random() * cap));
  }

  connect(): void {
    void this.dial().catch((e: unknown) => {
      this.o.log({ event: "link-error", error: String((e as Error)?.message ?? e) });
      this.schedule();
    });
  }

  private async dial(): Promise<void> {
    if (this.stopped) return;
    try {
      await enroll(this.o);
    } catch (e) {
      this.o.log({ event: "enroll-failed", error: (e as Error).message });
      if (e instanceof JoinRefusedError) return;
      return this.schedule();
    }
    const fleet = this.o.identity.enrollment()!.fleet;
    const target = new URL(FLEET_PATHS.connect, this.o.url);
    target.protocol = target.protocol === "https:" ? "wss:" : "ws:";
    const token = await this.o.identity.connectionToken(this.o.node, fleet, this.now());
    const sock = new WebSocket(target, {
      headers: { authorization: `Bearer ${token}` },
      maxPayload: 8 * 1024 * 1024,
      handshakeTimeout: 10_000,
    });
    this.ws = sock;
    const conn = { heard: Date.now(), beat: undefined as NodeJS.Timeout | undefined, refused: false };
    sock.on("unexpected-response", (_req, res) => {
      // 403: revoked. Anything else (401 a clock far off, 5xx) is tried again later.
      conn.refused = res.statusCode === 403;
      this.o.log({ event: "connect-refused", status: res.statusCode });
      sock.terminate();
    });
    sock.on("open", () => this.opened(sock, conn));
    sock.on("message", (data) => {
      conn.heard = Date.now();
      this.message(data.toString(), conn);
    });
    sock.on("error", (e) => this.o.log({ event: "link-error", error: e.message }));
    sock.on("close", (code) => this.closed(sock, code, conn));
  }

  /** Open: hello (generation, version, capacity), then the summary at once, then the connection's timer. */
  private opened(sock: WebSocket, conn: { heard: number; beat: NodeJS.Timeout | undefined }): void {
    this.open = true;
    this.attempt = 0;
    conn.heard = Date.now();
    this.lastSent = "";
    this.o.log({ event: "connected" });
    void this.o.generation().then((generation) => {
      sock.send(
        JSON.stringify({
          type: "hello",
          node: this.o.node,
          generation,
          version: this.o.version,
          ...(this.o.capacity ? { capacity: this.o.capacity } : {}),
        }),
      );
      this.markReady();
      void this.report().catch(() => undefined);
    });
    const heartbeatMs = this.o.heartbeatMs ?? HEARTBEAT.intervalMs;
    conn.beat = ticker(sock, {
      heartbeatMs,
      deadMs: this.o.deadMs ?? HEARTBEAT.deadMs,
      everyMs: this.o.statusEveryMs ?? 1000,
      heard: () => conn.heard,
      report: this.report,
      log: this.o.log,
    });
  }

  private message(text: string, conn: { refused: boolean }): void {
    const m = parseFleetMessage(text, this.o.log);
    if (!m) return;
    if (m.type === "error") conn.refused ||= m.reason === "revoked";
    else if (m.type === "open") {
      const to = m.upgrade ? this.sessions : this.streams;
      if (to) to.start(m);
      else
        this.ws?.send(
          JSON.stringify({ type: "end", id: m.id, error: "this node serves no such streams over its link" }),
        );
    } else if (m.type === "credit") {
      if (this.sessions?.has(m.id)) this.sessions.credit(m.id, m.bytes);
      else this.streams?.credit(m.id, m.bytes);
    } else if (m.type === "cancel") {
      this.streams?.cancel(m.id);
      this.sessions?.cancel(m.id);
    } else if (m.type === "data") this.sessions?.data(m);
    else {
      if (!this.pending || m.generation > this.pending.generation) this.pending = m;
      this.drain();
    }
  }

  private closed(sock: WebSocket, code: number, conn: { beat: NodeJS.Timeout | undefined; refused: boolean }): void {
    clearInterval(conn.beat);
    // A connection that is no longer the link's (a newer one replaced it) ends quietly.
    if (this.ws !== sock) return;
    const was = this.open;
    this.ws = undefined;
    this.open = false;
    this.streams?.closeAll();
    this.sessions?.closeAll();
    if (was) this.o.log({ event: "disconnected", code });
    if (code === CLOSE.revoked || conn.refused) {
      this.o.log({ event: "revoked", note: "the node keeps its pods running; enroll it again with a new join token" });
      return;
    }
    this.schedule(was && CLEAN_CLOSE.has(code));
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.streams?.closeAll();
    this.sessions?.closeAll();
    this.ws?.close(1000, "node stopping");
    this.ws?.terminate();
    await this.applying.catch(() => undefined);
  }
}

/** The join token's one use, unless the node is enrolled already. */
async function enroll(o: LinkOptions): Promise<void> {
  if (o.identity.enrollment()) return;
  if (!o.joinToken)
    throw new JoinRefusedError(
      "not enrolled: set PODSYNC_FLEET_JOIN_TOKEN or PODSYNC_FLEET_JOIN_TOKEN_FILE for the first start",
    );
  const r = await fetch(new URL(FLEET_PATHS.enroll, o.url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      token: o.joinToken,
      node: o.node,
      jwk: o.identity.publicJwk,
      version: o.version,
      capacity: o.capacity ?? {},
    }),
  });
  const body = (await r.json().catch(() => ({}))) as { fleet?: string; detail?: string };
  if (r.status >= 400 && r.status < 500)
    throw new JoinRefusedError(`the fleet refused the join token (${r.status}): ${body.detail ?? ""}`);
  if (!r.ok || !body.fleet) throw new Error(`enrollment answered ${r.status}`);
  o.identity.saveEnrollment({ url: o.url, node: o.node, fleet: body.fleet, enrolledAt: new Date().toISOString() });
  o.log({ event: "enrolled", fleet: body.fleet });
}

/** The connection's timer: the status compared every `everyMs` (sent on change), a ping every `heartbeatMs`, and
 * the connection dropped when nothing was heard for `deadMs`. */
function ticker(
  sock: WebSocket,
  t: {
    heartbeatMs: number;
    deadMs: number;
    everyMs: number;
    heard: () => number;
    report: () => Promise<void>;
    log: (rec: Record<string, unknown>) => void;
  },
): NodeJS.Timeout {
  let pinged = Date.now();
  return setInterval(
    () => {
      const now = Date.now();
      if (now - t.heard() > t.deadMs) {
        t.log({ event: "heartbeat-lost", silentMs: now - t.heard() });
        sock.terminate();
        return;
      }
      if (now - pinged >= t.heartbeatMs) {
        pinged = now;
        sock.send(HEARTBEAT.ping);
      }
      void t.report().catch(() => undefined);
    },
    Math.min(t.heartbeatMs, t.everyMs),
  );
}

/** A message from the fleet: undefined for a pong or one that does not parse (logged); errors are logged. */
function parseFleetMessage(text: string, log: (rec: Record<string, unknown>) => void): FleetMessage | undefined {
  if (text === HEARTBEAT.pong) return undefined;
  const m = FleetMessage.safeParse(safeJson(text));
  if (!m.success) return void log({ event: "bad-message" });
  if (m.data.type === "error") log({ event: "fleet-error", reason: m.data.reason, message: m.data.message });
  return m.data;
}

function safeJson(t: string): unknown {
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}
