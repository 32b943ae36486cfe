// The shard's side of WebSocket sessions over a node's link (kubectl exec through the Worker; protocol.ts STREAM):
// the caller's upgrade becomes an `open` with `upgrade` on the node's socket; the node dials its own listener and
// answers 101 (then the two sides exchange whole WebSocket messages as frames) or the listener's refusal, passed on
// as the answer. Flow control per session and direction: the client's messages (stdin, resize) go to the node only
// within the credit it grants, and wait here meanwhile, at most STREAM.sessionQueueBytes (workerd cannot pause a
// WebSocket's reads, cloudflare/workerd#988: over the bound the session is closed with 1009, naming it); the node's
// messages are granted back as they are handed to the client's socket (workerd exposes no bufferedAmount either,
// so the window bounds what the link carries, not the client's own send queue). A session waits alone: the link,
// its other streams and other sessions go on.
import {
  STREAM,
  type StreamCredit,
  type StreamData,
  type StreamFrame,
  type StreamOpen,
} from "../../http/fleet/protocol.js";
import { ProblemError } from "../../usecases/problems.js";
import { type HibernatableSocket, workerd } from "./runtime.js";

/** The client's end, accepted in the object (not hibernatable: a session holds the object while it is open). */
interface ClientSocket extends HibernatableSocket {
  accept(): void;
  addEventListener(type: "message", f: (e: { data: string | ArrayBuffer }) => void): void;
  addEventListener(type: "close" | "error", f: () => void): void;
}

interface Session {
  ws: HibernatableSocket;
  /** Until the head: its promise's ends; then the client's socket. */
  head?: { resolve: (h: { status: number; headers: [string, string][] }) => void; reject: (e: Error) => void };
  timer?: ReturnType<typeof setTimeout>;
  /** A refusal's body, collected until its end. */
  body?: Uint8Array[];
  bodyDone?: (b: Uint8Array[]) => void;
  bodyAll?: Promise<Uint8Array[]>;
  client?: ClientSocket;
  /** The node's message being reassembled. */
  parts: Uint8Array[];
  /** Client messages waiting for the node's credit, the first from `off`. */
  out: Uint8Array[];
  off: number;
  queued: number;
  credit: number;
}

export class ShardSessions {
  private readonly open = new Map<number, Session>();
  constructor(private readonly nextId: () => number) {}

  get size(): number {
    return this.open.size;
  }

  /** The node's answer to an upgrade: a 101 joined to a session, or the listener's refusal. */
  async upgrade(ws: HibernatableSocket, req: Omit<StreamOpen, "type" | "id" | "upgrade">): Promise<Response> {
    const id = this.nextId();
    const s: Session = { ws, parts: [], out: [], off: 0, queued: 0, credit: STREAM.windowBytes };
    const head = await new Promise<{ status: number; headers: [string, string][] }>((resolve, reject) => {
      s.head = { resolve, reject };
      s.timer = setTimeout(() => {
        this.open.delete(id);
        reject(
          new ProblemError(
            "runtime-timeout",
            `the node did not answer within ${STREAM.headTimeoutMs / 1000} s over its fleet link`,
          ),
        );
      }, STREAM.headTimeoutMs);
      this.open.set(id, s);
      this.toNode(s, { type: "open", id, ...req, upgrade: "websocket" } satisfies StreamOpen);
    });
    if (head.status !== 101) {
      const chunks = (await s.bodyAll) ?? [];
      const type = head.headers.find(([k]) => k.toLowerCase() === "content-type")?.[1];
      return new Response(new Blob(chunks as BlobPart[]), {
        status: head.status,
        headers: type ? { "content-type": type } : {},
      });
    }
    const pair = new (workerd().WebSocketPair)();
    const client = pair[1] as ClientSocket;
    client.accept();
    s.client = client;
    client.addEventListener("message", (e) => this.fromClient(id, e.data));
    // The client left: the node is told, and the close is answered (the runtime expects the reply).
    const gone = () => {
      this.close(id, "cancel");
      try {
        client.close(1000, "");
      } catch {
        // Already closed.
      }
    };
    client.addEventListener("close", gone);
    client.addEventListener("error", gone);
    const protocol = head.headers.find(([k]) => k.toLowerCase() === "sec-websocket-protocol")?.[1];
    return new Response(null, {
      status: 101,
      webSocket: pair[0],
      headers: protocol ? { "sec-websocket-protocol": protocol } : {},
    } as ResponseInit);
  }

  /** A frame from the node; false when it names no session of this socket. */
  frame(ws: HibernatableSocket, f: StreamFrame): boolean {
    const s = this.open.get(f.id);
    if (!s || s.ws !== ws) return false;
    if (f.type === "head") {
      clearTimeout(s.timer);
      if (f.status !== 101) {
        s.body = [];
        s.bodyAll = new Promise((r) => (s.bodyDone = r));
      }
      s.head?.resolve({ status: f.status, headers: f.headers });
      s.head = undefined;
    } else if (f.type === "data") {
      const bytes = base64(f.data);
      if (s.body) s.body.push(bytes);
      else if (s.client) {
        s.parts.push(bytes);
        if (!f.more) {
          const msg = concat(s.parts);
          s.parts = [];
          try {
            s.client.send(msg);
          } catch {
            this.close(f.id, "cancel");
            return true;
          }
        }
        this.toNode(s, { type: "credit", id: f.id, bytes: bytes.byteLength });
      }
    } else {
      this.open.delete(f.id);
      clearTimeout(s.timer);
      if (s.head)
        s.head.reject(
          new ProblemError("runtime-unavailable", `the node could not open the session: ${f.error ?? "it ended"}`),
        );
      s.bodyDone?.(s.body ?? []);
      try {
        s.client?.close(f.error ? 1011 : 1000, (f.error ?? "").slice(0, 120));
      } catch {
        // Already closed.
      }
    }
    return true;
  }

  /** The node granted `bytes` more of the client's messages. */
  credit(ws: HibernatableSocket, c: StreamCredit): boolean {
    const s = this.open.get(c.id);
    if (!s || s.ws !== ws) return false;
    s.credit += c.bytes;
    this.pump(c.id, s);
    return true;
  }

  /** The node's connection closed: its sessions end. */
  dropSocket(ws: HibernatableSocket): void {
    for (const [id, s] of this.open)
      if (s.ws === ws) {
        this.open.delete(id);
        clearTimeout(s.timer);
        s.head?.reject(new ProblemError("runtime-unavailable", "the node's fleet link closed"));
        s.bodyDone?.(s.body ?? []);
        try {
          s.client?.close(1011, "the node's fleet link closed");
        } catch {
          // Already closed.
        }
      }
  }

  private fromClient(id: number, data: string | ArrayBuffer): void {
    const s = this.open.get(id);
    if (!s) return;
    const b = typeof data === "string" ? new TextEncoder().encode(data) : new Uint8Array(data);
    s.out.push(b);
    s.queued += b.byteLength;
    if (s.queued > STREAM.sessionQueueBytes) {
      const why = `over ${STREAM.sessionQueueBytes} bytes of input wait for the node (STREAM.sessionQueueBytes)`;
      try {
        s.client?.close(1009, why);
      } catch {
        // Already closed.
      }
      this.close(id, "cancel");
      return;
    }
    this.pump(id, s);
  }

  /** The client's messages, within the node's credit, each in frames of at most chunkBytes. */
  private pump(id: number, s: Session): void {
    while (s.out.length > 0 && s.credit > 0) {
      const msg = s.out[0]!;
      const n = Math.min(STREAM.chunkBytes, s.credit, msg.byteLength - s.off);
      const more = s.off + n < msg.byteLength;
      const data = toBase64(msg.subarray(s.off, s.off + n));
      this.toNode(s, more ? { type: "data", id, data, more } : ({ type: "data", id, data } satisfies StreamData));
      s.credit -= n;
      s.off += n;
      if (!more) {
        s.out.shift();
        s.off = 0;
        s.queued -= msg.byteLength;
      }
    }
  }

  private close(id: number, tell: "cancel"): void {
    const s = this.open.get(id);
    if (!s) return;
    this.open.delete(id);
    clearTimeout(s.timer);
    this.toNode(s, { type: tell, id });
  }

  private toNode(s: Session, m: object): void {
    try {
      s.ws.send(JSON.stringify(m));
    } catch {
      this.dropSocket(s.ws);
    }
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let off = 0;
  for (const p of parts) out.set(p, off), (off += p.byteLength);
  return out;
}

function base64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function toBase64(b: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < b.byteLength; i += 0x8000) bin += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(bin);
}
