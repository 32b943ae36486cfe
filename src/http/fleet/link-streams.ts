// The node's side of streams over the fleet link (protocol.ts STREAM): each `open` is one request to the node's own
// API, answered by `serve`, the very function its HTTP listener calls (so kubectl's reads and `logs -f` run the
// node's own handlers, with its own token checks), and its answer goes back as head, data and end frames. Each
// stream sends only while it has credit: a stream whose reader at the Worker is slow waits alone, the others go on.
// Nothing here listens: the requests arrive over the node's outbound connection.
import { EXEC_POST_PATH, STREAM, type StreamFrame, type StreamOpen } from "./protocol.js";

export interface NodeStreamsOptions {
  /** The node's own API (its HTTP listener's fetch). */
  serve: (req: Request) => Promise<Response>;
  send: (f: StreamFrame) => void;
  log: (rec: Record<string, unknown>) => void;
  limits?: Partial<Pick<typeof STREAM, "windowBytes" | "chunkBytes" | "maxStreams">>;
}

interface Open {
  credit: number;
  /** Wakes the pump waiting for credit. */
  wake?: (() => void) | undefined;
  abort: AbortController;
  reader?: ReadableStreamDefaultReader<Uint8Array> | undefined;
}

export class NodeStreams {
  private readonly open = new Map<number, Open>();
  private readonly window: number;
  private readonly chunk: number;
  private readonly max: number;
  constructor(private readonly o: NodeStreamsOptions) {
    this.window = o.limits?.windowBytes ?? STREAM.windowBytes;
    this.chunk = o.limits?.chunkBytes ?? STREAM.chunkBytes;
    this.max = o.limits?.maxStreams ?? STREAM.maxStreams;
  }

  get size(): number {
    return this.open.size;
  }

  start(m: StreamOpen): void {
    if (this.open.has(m.id)) return;
    const refused = this.refusal(m);
    if (refused) {
      this.answer(m.id, ...refused);
      return;
    }
    const s: Open = { credit: this.window, abort: new AbortController() };
    this.open.set(m.id, s);
    void this.run(m, s).finally(() => this.open.delete(m.id));
  }

  private refusal(m: StreamOpen): [number, string] | undefined {
    if (this.open.size >= this.max)
      return [503, `this node serves at most ${this.max} streams over its fleet link at once (STREAM.maxStreams)`];
    // The one write a stream carries: an exec POST (kubectl's SPDY fallback), which the node's routes only refuse.
    if (m.method === "POST" && !EXEC_POST_PATH.test(new URL(m.path, "http://fleet.local").pathname))
      return [405, "over the fleet link a POST reaches only an exec path"];
    return undefined;
  }

  private answer(id: number, status: number, text: string): void {
    this.o.send({ type: "head", id, status, headers: [["content-type", "text/plain"]] });
    this.o.send({ type: "data", id, data: Buffer.from(text).toString("base64") });
    this.o.send({ type: "end", id });
  }

  credit(id: number, bytes: number): void {
    const s = this.open.get(id);
    if (!s) return;
    s.credit += bytes;
    s.wake?.();
  }

  cancel(id: number): void {
    const s = this.open.get(id);
    if (!s) return;
    this.open.delete(id);
    s.abort.abort();
    void s.reader?.cancel().catch(() => undefined);
    s.wake?.();
  }

  /** The link went down: every stream ends (its reader at the Worker is gone with the connection). */
  closeAll(): void {
    for (const id of [...this.open.keys()]) this.cancel(id);
  }

  private async run(m: StreamOpen, s: Open): Promise<void> {
    const started = Date.now();
    let sent = 0;
    try {
      const res = await this.o.serve(
        new Request(new URL(m.path, "http://fleet.local"), {
          method: m.method,
          headers: m.headers,
          signal: s.abort.signal,
        }),
      );
      const headers: [string, string][] = [];
      res.headers.forEach((v, k) => headers.push([k, v]));
      this.o.send({ type: "head", id: m.id, status: res.status, headers });
      if (res.body) sent = await this.pump(m.id, s, res.body.getReader());
      if (this.open.has(m.id)) this.o.send({ type: "end", id: m.id });
      this.o.log({
        event: "stream",
        id: m.id,
        status: res.status,
        path: m.path.split("?")[0],
        bytes: sent,
        ms: Date.now() - started,
      });
    } catch (e) {
      if (!this.open.has(m.id)) return;
      const error = String((e as Error)?.message ?? e).slice(0, 1000);
      this.o.send({ type: "end", id: m.id, error });
      this.o.log({ event: "stream-failed", id: m.id, error });
    }
  }

  /** The body, in chunks of at most `chunk` bytes, each sent only within the stream's credit. */
  private async pump(id: number, s: Open, reader: ReadableStreamDefaultReader<Uint8Array>): Promise<number> {
    s.reader = reader;
    let sent = 0;
    for (;;) {
      const r = await reader.read();
      if (r.done || !this.open.has(id)) return sent;
      for (let off = 0; off < r.value.byteLength; ) {
        while (s.credit <= 0 && this.open.has(id)) await new Promise<void>((w) => (s.wake = w));
        if (!this.open.has(id)) return sent;
        const n = Math.min(this.chunk, s.credit, r.value.byteLength - off);
        this.o.send({ type: "data", id, data: Buffer.from(r.value.subarray(off, off + n)).toString("base64") });
        s.credit -= n;
        off += n;
        sent += n;
      }
    }
  }
}
