// Group commit for an append-only log: lines queued while a write is in flight go out together in the next
// write, so concurrent callers share one write and one fsync; each caller's promise settles when its own line
// is durable (or its batch failed). `write` gets the batch's lines joined; `after` runs between batches (a
// compaction), with nothing in flight.

import { constants } from "node:fs";
import type { FileHandle } from "node:fs/promises";

/** Whether this platform has O_DSYNC (every POSIX one; not Windows, where each batch is datasync'd instead). */
const HAS_DSYNC = constants.O_DSYNC !== undefined;

/** How a log is opened for durable appends: O_DSYNC makes each write return once its bytes (and the size that
 * reaches them) are on disk, what a write and an fdatasync give, in one call and one thread-pool round trip
 * (measured here: 0.10 against 0.19 ms of CPU per append). Created with the mode the caller passes. */
export const DURABLE_APPEND =
  constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (HAS_DSYNC ? constants.O_DSYNC : 0);

/** A batch's bytes appended and made durable by its writes: `fh` was opened with DURABLE_APPEND. FileHandle.write
 * takes the bytes as they are; appendFile's general path costs twice its CPU per batch. */
export async function appendDurably(
  fh: Pick<FileHandle, "write" | "datasync">,
  chunk: string,
  encoding: BufferEncoding,
): Promise<void> {
  const buf = Buffer.from(chunk, encoding);
  for (let off = 0; off < buf.length; ) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
  if (!HAS_DSYNC) await fh.datasync();
}

export interface GroupCommit {
  append(line: string): Promise<void>;
  /** Resolves once nothing is queued or in flight. */
  idle(): Promise<void>;
}

export function groupCommit(
  write: (chunk: string, lines: number) => Promise<void>,
  after?: () => Promise<void>,
): GroupCommit {
  let pending: { line: string; done: (e?: unknown) => void }[] = [];
  let flushing: Promise<void> | undefined;

  async function flush(): Promise<void> {
    while (pending.length) {
      const batch = pending;
      pending = [];
      let chunk = "";
      for (const b of batch) chunk += b.line;
      try {
        await write(chunk, batch.length);
      } catch (e) {
        for (const b of batch) b.done(e);
        continue;
      }
      for (const b of batch) b.done();
      await after?.();
    }
    flushing = undefined;
  }

  return {
    append(line) {
      return new Promise((resolve, reject) => {
        pending.push({ line, done: (e) => (e ? reject(e) : resolve()) });
        flushing ??= flush();
      });
    },
    async idle() {
      await flushing;
    },
  };
}
