// The node's side of WebSocket sessions over the fleet link (kubectl exec through the Worker, protocol.ts STREAM):
// an `open` with `upgrade` is dialled as a WebSocket to the node's own listener on loopback, so it meets the very
// upgrade handler kubectl meets there (the read token's exec claim, the owner's PODSYNC_ALLOW_EXEC, the pod, the
// runtime's streaming server). A refusal goes back as the listener's answer (head, body, end); an accepted upgrade
// as a 101 head, then whole WebSocket messages both ways, each split into frames of at most `chunkBytes`.
// Flow control is per session and per direction: the node sends the listener's messages only within the credit the
// Worker grants (and stops reading the local socket while more than a window waits), and grants the Worker credit
// for its messages once the local socket took them. A slow session waits alone; the link and other streams go on.
import { WebSocket } from "ws";
import { STREAM, type StreamCredit, type StreamData, type StreamFrame, type StreamOpen } from "./protocol.js";

export interface NodeSessionsOptions {
  /** The node's own listener as `ws://host:port` (loopback); undefined until it listens. */
  local: () => string | undefined;
  send: (f: StreamFrame | StreamCredit) => void;
  log: (rec: Record<string, unknown>) => void;
  limits?: Partial<Pick<typeof STREAM, "windowBytes" | "chunkBytes" | "maxStreams" | "maxSessionMessageBytes">>;
}

interface Session {
  ws: WebSocket;
  /** Bytes the Worker still takes from this session. */
  credit: number;
  /** The listener's messages not sent yet, the first from `off`. */
  out: Buffer[];
  off: number;
  queued: number;
  /** The Worker's message being reassembled from its frames. */
  parts: Buffer[];
  partBytes: number;
  closed: boolean;
  opened: boolean;
  started: number;
  sent: number;
}

/** The headers of the caller's upgrade carried to the listener (the read token, the subprotocols kubectl offers). */
const CARRIED = new Set(["authorization", "user-agent", "kubectl-command", "kubectl-session"]);

export class NodeSessions {
  private readonly open = new Map<number, Session>();
  private readonly window: number;
  private readonly chunk: number;
  private readonly max: number;
  private readonly maxMessage: number;
  constructor(private readonly o: NodeSessionsOptions) {
    this.window = o.limits?.windowBytes ?? STREAM.windowBytes;
    this.chunk = o.limits?.chunkBytes ?? STREAM.chunkBytes;
    this.max = o.limits?.maxStreams ?? STREAM.maxStreams;
    this.maxMessage = o.limits?.maxSessionMessageBytes ?? STREAM.maxSessionMessageBytes;
  }

  get size(): number {
    return this.open.size;
  }

  has(id: number): boolean {
    return this.open.has(id);
  }

  start(m: StreamOpen): void {
    if (this.open.has(m.id)) return;
    const origin = this.o.local();
    if (!origin || this.open.size >= this.max) {
      const busy = `this node serves at most ${this.max} sessions over its fleet link (STREAM.maxStreams)`;
      this.answer(m.id, 503, origin ? busy : "the node is starting: its listener is not up yet");
      return;
    }
    const offered = m.headers.find(([k]) => k.toLowerCase() === "sec-websocket-protocol")?.[1] ?? "";
    const protocols = offered
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
    const ws = new WebSocket(`${origin}${m.path}`, protocols, {
      headers: Object.fromEntries(m.headers.filter(([k]) => CARRIED.has(k.toLowerCase()))),
      maxPayload: this.maxMessage,
      perMessageDeflate: false,
      handshakeTimeout: STREAM.headTimeoutMs,
    });
    const s: Session = {
      ws,
      credit: this.window,
      out: [],
      off: 0,
      queued: 0,
      parts: [],
      partBytes: 0,
      closed: false,
      opened: false,
      started: Date.now(),
      sent: 0,
    };
    this.open.set(m.id, s);
    ws.on("unexpected-response", (_req, res) => {
      // The listener refused the upgrade (exec off, a token without exec, no such pod): its answer goes back as is.
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (d: Buffer) => size < 64 * 1024 && (chunks.push(d), (size += d.byteLength)));
      res.on("end", () => {
        this.open.delete(m.id);
        const type = res.headers["content-type"];
        const body = Buffer.concat(chunks).subarray(0, 64 * 1024);
        this.o.send({
          type: "head",
          id: m.id,
          status: res.statusCode ?? 502,
          headers: type ? [["content-type", String(type)]] : [],
        });
        for (let off = 0; off < body.byteLength; off += this.chunk)
          this.o.send({ type: "data", id: m.id, data: body.subarray(off, off + this.chunk).toString("base64") });
        this.o.send({ type: "end", id: m.id });
        ws.terminate();
        this.o.log({ event: "session-refused", id: m.id, status: res.statusCode, path: m.path.split("?")[0] });
      });
      res.on("error", () => this.fail(m.id, "the listener's answer broke off"));
    });
    ws.on("open", () => {
      s.opened = true;
      this.o.send({ type: "head", id: m.id, status: 101, headers: [["sec-websocket-protocol", ws.protocol]] });
      this.o.log({ event: "session", id: m.id, path: m.path.split("?")[0] });
    });
    ws.on("message", (data) => {
      const b = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      s.out.push(b);
      s.queued += b.byteLength;
      // More than a window waiting: stop reading the listener (TCP back-pressure reaches the command's output).
      if (s.queued > this.window) ws.pause();
      this.pump(m.id, s);
    });
    ws.on("close", () => {
      s.closed = true;
      this.pump(m.id, s);
    });
    ws.on("error", (e) => {
      if (!s.opened && !this.open.has(m.id)) return;
      this.fail(m.id, e.message);
    });
  }

  /** Bytes the Worker took from session `id`. */
  credit(id: number, bytes: number): void {
    const s = this.open.get(id);
    if (!s) return;
    s.credit += bytes;
    this.pump(id, s);
  }

  /** A frame of the client's message (stdin, resize), passed to the listener when whole; its bytes are granted back
   * as the local socket takes them (a frame that continues at once: its message is bounded by maxMessage). */
  data(m: StreamData): void {
    const s = this.open.get(m.id);
    if (!s) return;
    const b = Buffer.from(m.data, "base64");
    s.parts.push(b);
    s.partBytes += b.byteLength;
    if (s.partBytes > this.maxMessage) {
      this.fail(m.id, `a message over ${this.maxMessage} bytes (STREAM.maxSessionMessageBytes)`);
      return;
    }
    if (m.more) {
      this.o.send({ type: "credit", id: m.id, bytes: b.byteLength });
      return;
    }
    const msg = s.parts.length === 1 ? b : Buffer.concat(s.parts);
    s.parts = [];
    s.partBytes = 0;
    s.ws.send(msg, { binary: true }, (e) => {
      if (!e && this.open.has(m.id)) this.o.send({ type: "credit", id: m.id, bytes: b.byteLength });
    });
  }

  /** The client went away (or the Worker ended the session): the local socket is closed. */
  cancel(id: number): void {
    const s = this.open.get(id);
    if (!s) return;
    this.open.delete(id);
    s.ws.terminate();
  }

  closeAll(): void {
    for (const id of [...this.open.keys()]) this.cancel(id);
  }

  /** The listener's messages, within the session's credit; once the local socket closed and all is sent: end. */
  private pump(id: number, s: Session): void {
    if (this.open.get(id) !== s || !s.opened) return;
    while (s.out.length > 0 && s.credit > 0) {
      const msg = s.out[0]!;
      const n = Math.min(this.chunk, s.credit, msg.byteLength - s.off);
      const more = s.off + n < msg.byteLength;
      const data = msg.subarray(s.off, s.off + n).toString("base64");
      this.o.send(more ? { type: "data", id, data, more } : { type: "data", id, data });
      s.credit -= n;
      s.sent += n;
      s.off += n;
      if (!more) {
        s.out.shift();
        s.off = 0;
        s.queued -= msg.byteLength;
      }
    }
    if (s.queued <= this.window / 2 && s.ws.isPaused) s.ws.resume();
    if (s.closed && s.out.length === 0) {
      this.open.delete(id);
      this.o.send({ type: "end", id });
      this.o.log({ event: "session-closed", id, bytes: s.sent, ms: Date.now() - s.started });
    }
  }

  private fail(id: number, error: string): void {
    const s = this.open.get(id);
    this.open.delete(id);
    s?.ws.terminate();
    this.o.send({ type: "end", id, error: error.slice(0, 1000) });
    this.o.log({ event: "session-failed", id, error });
  }

  /** An answer without a session (the node cannot serve it). */
  private answer(id: number, status: number, text: string): void {
    this.o.send({ type: "head", id, status, headers: [["content-type", "text/plain"]] });
    this.o.send({ type: "data", id, data: Buffer.from(text).toString("base64") });
    this.o.send({ type: "end", id });
  }
}
