// What podsync reads of a SPDY session it joins (spdy-upgrade.ts), in the client's direction, without changing a
// byte: the streams the client opens (SYN_STREAM) and closes (its FIN or a RST_STREAM), held to `maxStreams` at
// once, and each port-forward stream's `port` header (for the request log). kubectl opens two streams per
// forwarded connection (client-go tools/portforward: `streamType` error, then data, with `port` and `requestID`)
// and closes its error stream's side at once, so the count is about one per open connection.
import { type Frame, FLAG_FIN, FrameParser, SpdyProtocolError } from "./frames.js";
import { HeaderDecompressor } from "./headers.js";

export interface InspectorOptions {
  maxStreams: number;
  onPort?: (port: number) => void;
}

export class SpdyInspector {
  private readonly parser = new FrameParser({ skipData: true, maxControlBytes: 64 * 1024 });
  private readonly headers = new HeaderDecompressor();
  /** Streams the client opened and has not closed its side of. */
  private readonly open = new Set<number>();
  /** Header blocks still being inflated: the log waits for them, or a short session loses its ports. */
  private reading: Promise<unknown> = Promise.resolve();
  /** Why the session broke a rule (a frame that does not parse, too many streams), once it did. */
  broken: Error | undefined;
  constructor(private readonly o: InspectorOptions) {}

  get openStreams(): number {
    return this.open.size;
  }

  /** The next bytes from the client; an error once the session broke a rule (the caller cuts it). */
  push(chunk: Buffer): Error | undefined {
    if (this.broken) return this.broken;
    try {
      for (const f of this.parser.push(chunk)) this.frame(f);
    } catch (e) {
      this.broken = e instanceof Error ? e : new SpdyProtocolError(String(e));
    }
    return this.broken;
  }

  private frame(f: Frame): void {
    switch (f.kind) {
      case "syn_stream": {
        if (!(f.flags & FLAG_FIN)) this.open.add(f.streamId);
        if (this.open.size > this.o.maxStreams)
          throw new SpdyProtocolError(`more than ${this.o.maxStreams} open streams in one session`);
        // Every block goes through the decompressor (its window is the direction's), whether or not it is used.
        this.reading = this.headers.decompress(f.block).then(
          (h) => {
            const port = Number(h["port"]?.[0]);
            if (Number.isInteger(port) && port > 0 && port < 65536) this.o.onPort?.(port);
          },
          () => undefined,
        );
        return;
      }
      case "headers":
        this.reading = this.headers.decompress(f.block).catch(() => undefined);
        if (f.flags & FLAG_FIN) this.open.delete(f.streamId);
        return;
      case "data":
        if (f.flags & FLAG_FIN) this.open.delete(f.streamId);
        return;
      case "rst_stream":
        this.open.delete(f.streamId);
        return;
      default:
        return;
    }
  }

  /** Ends the session's reading once the blocks already pushed are read (the inflater runs them in order). */
  async close(): Promise<void> {
    await this.reading;
    this.headers.close();
  }
}
