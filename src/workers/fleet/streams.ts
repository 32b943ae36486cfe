// The shard's side of streams over a node's link (protocol.ts STREAM): one request for the node's own API becomes an
// `open` on the node's WebSocket, and the node's head, data and end frames become the answer's status, headers and
// body. Flow control is per stream: the body is a TransformStream that holds nothing ahead (high-water mark 0), and
// the bytes of each write are granted back to the node as credit once its reader took them; a stream nobody reads
// stops getting credit, and only it waits. The map lives in the object's memory: a stream holds the object awake
// (its request is open), and a closed connection ends its streams with an error.
import { STREAM, type StreamFrame, type StreamOpen } from "../../http/fleet/protocol.js";
import { ProblemError } from "../../usecases/problems.js";
import type { HibernatableSocket } from "./runtime.js";

interface Pending {
  ws: HibernatableSocket;
  head: (h: { status: number; headers: [string, string][] }) => void;
  fail: (e: Error) => void;
  body: WritableStreamDefaultWriter<Uint8Array>;
  timer: ReturnType<typeof setTimeout>;
}

/** Headers that describe the node's hop, not the answer. */
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"]);

export class ShardStreams {
  private next = 0;
  private readonly pending = new Map<number, Pending>();

  get size(): number {
    return this.pending.size;
  }

  /** One id space for the link's streams and sessions. */
  readonly nextId = (): number => (this.next = (this.next % 2 ** 31) + 1);

  /** The node's answer to one request, streamed. */
  async open(ws: HibernatableSocket, req: Omit<StreamOpen, "type" | "id">): Promise<Response> {
    const id = this.nextId();
    // The body exists before the open is sent: data may arrive before the head's await resumes. A TransformStream's
    // writes resolve as its reader takes them (readable high-water mark 0): each resolution grants those bytes back.
    // A reader gone (the client left) fails the writes: the node is told to stop.
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(undefined, undefined, {
      highWaterMark: 0,
    });
    const writer = writable.getWriter();
    writer.closed.catch(() => this.cancel(id));
    const head = await new Promise<{ status: number; headers: [string, string][] }>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new ProblemError(
            "runtime-timeout",
            `the node did not answer within ${STREAM.headTimeoutMs / 1000} s over its fleet link`,
          ),
        );
      }, STREAM.headTimeoutMs);
      this.pending.set(id, { ws, head: resolve, fail: reject, timer, body: writer });
      try {
        ws.send(JSON.stringify({ type: "open", id, ...req } satisfies StreamOpen));
      } catch {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new ProblemError("runtime-unavailable", "the node's fleet link closed"));
      }
    });
    const headers = new Headers(head.headers.filter(([k]) => !HOP.has(k.toLowerCase())));
    if (req.method === "HEAD" || head.status === 204 || head.status === 304) {
      this.cancel(id);
      return new Response(null, { status: head.status, headers });
    }
    // The runtime would gzip a text answer for a client that accepts it, holding a followed log's lines back until
    // a block fills: the answer goes out as it comes.
    headers.set("content-encoding", "identity");
    const body = readable;
    return new Response(body, { status: head.status, headers });
  }

  /** A frame from the node; false when it names no open stream of this socket (a stream the reader already left,
   * or another node's). */
  frame(ws: HibernatableSocket, f: StreamFrame): boolean {
    const p = this.pending.get(f.id);
    if (!p || p.ws !== ws) return false;
    switch (f.type) {
      case "head":
        clearTimeout(p.timer);
        p.head({ status: f.status, headers: f.headers });
        return true;
      case "data": {
        const bytes = base64(f.data);
        p.body.write(bytes).then(
          () => this.grant(f.id, bytes.byteLength),
          () => this.cancel(f.id),
        );
        return true;
      }
      case "end":
        this.pending.delete(f.id);
        clearTimeout(p.timer);
        if (f.error) {
          p.fail(new ProblemError("runtime-unavailable", `the node's answer broke off: ${f.error}`));
          p.body.abort(new Error(f.error)).catch(() => undefined);
        } else p.body.close().catch(() => undefined);
        return true;
    }
  }

  /** The node's connection closed: its streams end with an error. */
  dropSocket(ws: HibernatableSocket): void {
    for (const [id, p] of this.pending)
      if (p.ws === ws) {
        this.pending.delete(id);
        clearTimeout(p.timer);
        const e = new ProblemError("runtime-unavailable", "the node's fleet link closed");
        p.fail(e);
        p.body.abort(e).catch(() => undefined);
      }
  }

  private grant(id: number, bytes: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    try {
      p.ws.send(JSON.stringify({ type: "credit", id, bytes }));
    } catch {
      this.dropSocket(p.ws);
    }
  }

  private cancel(id: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    try {
      p.ws.send(JSON.stringify({ type: "cancel", id }));
    } catch {
      // The connection is gone; so is the node's side of the stream.
    }
  }
}

function base64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
