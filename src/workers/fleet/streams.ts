// The shard's side of streams over a node's link (protocol.ts STREAM): one request for the node's own API becomes an
// `open` on the node's WebSocket, and the node's head, data and end frames become the answer's status, headers and
// body. Flow control is per stream: the body is a ReadableStream that asks for nothing ahead (high-water mark 0), and
// each time its reader wants more, the bytes it took are granted back to the node as credit; a stream nobody reads
// stops getting credit, and only it waits. The map lives in the object's memory: a stream holds the object awake
// (its request is open), and a closed connection ends its streams with an error.
import { STREAM, type StreamFrame, type StreamOpen } from "../../http/fleet/protocol.js";
import { ProblemError } from "../../http/problems.js";
import type { HibernatableSocket } from "./runtime.js";

interface Pending {
  ws: HibernatableSocket;
  head: (h: { status: number; headers: [string, string][] }) => void;
  fail: (e: Error) => void;
  body?: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** Bytes enqueued, and bytes granted back as credit: the reader took all of them when it asks again. */
  enqueued: number;
  granted: number;
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

  /** The node's answer to one request, streamed. */
  async open(ws: HibernatableSocket, req: Omit<StreamOpen, "type" | "id">): Promise<Response> {
    const id = (this.next = (this.next % 2 ** 31) + 1);
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
      this.pending.set(id, { ws, head: resolve, fail: reject, enqueued: 0, granted: 0, timer });
      try {
        ws.send(JSON.stringify({ type: "open", id, ...req } satisfies StreamOpen));
      } catch {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new ProblemError("runtime-unavailable", "the node's fleet link closed"));
      }
    });
    const p = this.pending.get(id);
    const headers = new Headers(head.headers.filter(([k]) => !HOP.has(k.toLowerCase())));
    if (!p || req.method === "HEAD" || head.status === 204 || head.status === 304) {
      this.cancel(id);
      return new Response(null, { status: head.status, headers });
    }
    const body = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          p.body = c;
        },
        pull: () => this.grant(id),
        cancel: () => this.cancel(id),
      },
      { highWaterMark: 0 },
    );
    return new Response(body, { status: head.status, headers });
  }

  /** A frame from the node; false when it names no open stream (a stream the reader already left). */
  frame(f: StreamFrame): boolean {
    const p = this.pending.get(f.id);
    if (!p) return false;
    switch (f.type) {
      case "head":
        clearTimeout(p.timer);
        p.head({ status: f.status, headers: f.headers });
        return true;
      case "data": {
        const bytes = base64(f.data);
        p.enqueued += bytes.byteLength;
        p.body?.enqueue(bytes);
        return true;
      }
      case "end":
        this.pending.delete(f.id);
        clearTimeout(p.timer);
        if (f.error) {
          p.fail(new ProblemError("runtime-unavailable", `the node's answer broke off: ${f.error}`));
          p.body?.error(new Error(f.error));
        } else p.body?.close();
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
        try {
          p.body?.error(e);
        } catch {
          // Already closed.
        }
      }
  }

  private grant(id: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    const give = p.enqueued - p.granted;
    if (give <= 0) return;
    p.granted += give;
    try {
      p.ws.send(JSON.stringify({ type: "credit", id, bytes: give }));
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
