// Group commit for an append-only log: lines queued while a write is in flight go out together in the next
// write, so concurrent callers share one write and one fsync; each caller's promise settles when its own line
// is durable (or its batch failed). `write` gets the batch's lines joined; `after` runs between batches (a
// compaction), with nothing in flight.

export interface GroupCommit {
  append(line: string): Promise<void>;
  /** Resolves once nothing is queued or in flight. */
  idle(): Promise<void>;
}

export function groupCommit(write: (chunk: string, lines: number) => Promise<void>, after?: () => Promise<void>): GroupCommit {
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
