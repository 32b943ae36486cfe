// SPDY/3 header compression: one zlib stream per direction of a connection, primed with the SPDY/3 dictionary,
// each header block flushed with Z_SYNC_FLUSH so it ends on a byte boundary and the next block goes on with the
// same window (spdystream spdy/write.go: zlib.NewWriterLevelDict(BestCompression) and Flush per frame; read.go
// reads every block through one zlib.NewReaderDict). Node's zlib streams are asynchronous; calls are queued so
// blocks stay in order, as their frames are.
import { constants, createDeflate, createInflate, type Deflate, type Inflate } from "node:zlib";
import { HEADER_DICTIONARY } from "./dictionary.js";
import { decodeHeaderBlock, encodeHeaderBlock, SpdyProtocolError } from "./frames.js";

/** The most a header block may inflate to (kubectl's are under 200 bytes; spdystream sets no bound). */
const MAX_HEADER_BLOCK = 64 * 1024;

class QueuedZlib {
  private chain: Promise<unknown> = Promise.resolve();
  private out: Buffer[] = [];
  private size = 0;
  private failed: Error | undefined;
  constructor(private readonly z: Deflate | Inflate) {
    z.on("data", (c: Buffer) => {
      this.out.push(c);
      this.size += c.length;
    });
    z.on("error", (e: Error) => {
      this.failed = e;
    });
  }
  run(input: Buffer): Promise<Buffer> {
    const p = this.chain.then(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          const failed = (e: Error) => reject(new SpdyProtocolError(`header compression: ${e.message}`));
          if (this.failed) return failed(this.failed);
          this.out = [];
          this.size = 0;
          // A stream that fails (a block that is not the next of this stream) never calls the flush back.
          this.z.once("error", failed);
          this.z.write(input);
          this.z.flush(constants.Z_SYNC_FLUSH, () => {
            this.z.off("error", failed);
            if (this.failed) return failed(this.failed);
            if (this.size > MAX_HEADER_BLOCK)
              return reject(new SpdyProtocolError(`a header block of more than ${MAX_HEADER_BLOCK} bytes`));
            resolve(Buffer.concat(this.out));
          });
        }),
    );
    this.chain = p.catch(() => undefined);
    return p;
  }
  close(): void {
    this.z.close();
  }
}

/** The compressing side of one direction. */
export class HeaderCompressor {
  private readonly z = new QueuedZlib(createDeflate({ level: 9, dictionary: HEADER_DICTIONARY }));
  compress(headers: Record<string, string | string[]>): Promise<Buffer> {
    return this.z.run(encodeHeaderBlock(headers));
  }
  close(): void {
    this.z.close();
  }
}

/** The reading side of one direction: every block of the direction must pass through it, in order. */
export class HeaderDecompressor {
  private readonly z = new QueuedZlib(createInflate({ dictionary: HEADER_DICTIONARY }));
  async decompress(block: Buffer): Promise<Record<string, string[]>> {
    return decodeHeaderBlock(await this.z.run(block));
  }
  close(): void {
    this.z.close();
  }
}
