// The node's outbound link to its fleet (pull mode, docs/fleet.md): enroll once with the join token, then hold a
// WebSocket to the node's registry shard. It receives the owner-signed desired sets (catching up to the latest
// only: a set at or below what the node has is never applied), hands each to `apply`, and reports the node's status
// on change only. The node's pods never depend on it: with the Worker gone they keep running from the local store,
// and the link reconnects with exponential back-off and full jitter. A half-open connection is dropped after
// `deadMs` without a word (the shard answers every ping).
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
  const now = o.now ?? Date.now;
  const heartbeat = o.heartbeatMs ?? HEARTBEAT.intervalMs;
  const dead = o.deadMs ?? HEARTBEAT.deadMs;
  const backoff = o.backoff ?? { baseMs: 1000, maxMs: 60_000 };
  let ws: WebSocket | undefined;
  let open = false;
  let stopped = false;
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;
  let lastError: string | undefined;
  let lastSent = "";
  let markReady!: () => void;
  const first = new Promise<void>((r) => (markReady = r));
  // The newest set received and not yet applied: a burst of sets applies only the last.
  let pending: DesiredMessage | undefined;
  let applying: Promise<void> = Promise.resolve();

  const status = async (): Promise<StatusReport> => ({
    type: "status",
    node: o.node,
    generation: await o.generation(),
    pods: await o.pods(),
    ...(lastError ? { error: lastError.slice(0, 1000) } : {}),
  });
  const report = async () => {
    if (!open || !ws) return;
    const s = JSON.stringify(await status());
    if (s === lastSent) return;
    lastSent = s;
    ws.send(s);
  };

  const drain = () => {
    applying = applying.then(async () => {
      const m = pending;
      pending = undefined;
      if (!m || m.generation <= (await o.generation())) return;
      lastError = await o.apply(m).catch((e: unknown) => String((e as Error)?.message ?? e));
      o.log({
        event: lastError ? "apply-refused" : "applied",
        generation: m.generation,
        ...(lastError ? { error: lastError } : {}),
      });
      await report().catch(() => undefined);
    });
  };

  const schedule = () => {
    if (stopped) return;
    // Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"): a fleet coming back does not reconnect in step.
    const cap = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(attempt, 20));
    attempt++;
    timer = setTimeout(() => void connect(), Math.round(Math.random() * cap));
  };

  const connect = async () => {
    if (stopped) return;
    try {
      await enroll(o);
    } catch (e) {
      o.log({ event: "enroll-failed", error: (e as Error).message });
      if (e instanceof JoinRefusedError) return;
      return schedule();
    }
    const fleet = o.identity.enrollment()!.fleet;
    const target = new URL(FLEET_PATHS.connect, o.url);
    target.protocol = target.protocol === "https:" ? "wss:" : "ws:";
    const token = await o.identity.connectionToken(o.node, fleet, now());
    const sock = new WebSocket(target, {
      headers: { authorization: `Bearer ${token}` },
      maxPayload: 8 * 1024 * 1024,
      handshakeTimeout: 10_000,
    });
    ws = sock;
    let heard = Date.now();
    let beat: NodeJS.Timeout | undefined;
    let refused = false;
    sock.on("unexpected-response", (_req, res) => {
      // 403: revoked. Anything else (401 a clock far off, 5xx) is tried again later.
      refused = res.statusCode === 403;
      o.log({ event: "connect-refused", status: res.statusCode });
      sock.terminate();
    });
    sock.on("open", () => {
      open = true;
      attempt = 0;
      heard = Date.now();
      lastSent = "";
      o.log({ event: "connected" });
      void o.generation().then((generation) => {
        sock.send(
          JSON.stringify({
            type: "hello",
            node: o.node,
            generation,
            version: o.version,
            ...(o.capacity ? { capacity: o.capacity } : {}),
          }),
        );
        markReady();
        void report().catch(() => undefined);
      });
      beat = ticker(sock, {
        heartbeatMs: heartbeat,
        deadMs: dead,
        everyMs: o.statusEveryMs ?? 1000,
        heard: () => heard,
        report,
        log: o.log,
      });
    });
    sock.on("message", (data) => {
      heard = Date.now();
      const m = parseFleetMessage(data.toString(), o.log);
      if (!m) return;
      if (m.type === "error") {
        refused ||= m.reason === "revoked";
        return;
      }
      if (!pending || m.generation > pending.generation) pending = m;
      drain();
    });
    sock.on("error", (e) => o.log({ event: "link-error", error: e.message }));
    sock.on("close", (code) => {
      clearInterval(beat);
      const was = open;
      open = false;
      if (ws === sock) ws = undefined;
      if (was) o.log({ event: "disconnected", code });
      if (code === CLOSE.revoked || refused) {
        o.log({ event: "revoked", note: "the node keeps its pods running; enroll it again with a new join token" });
        return;
      }
      schedule();
    });
  };
  void connect();

  return {
    connected: () => open,
    ready: () => first,
    close: async () => {
      stopped = true;
      clearTimeout(timer);
      ws?.close(1000, "node stopping");
      ws?.terminate();
      await applying.catch(() => undefined);
    },
  };
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
