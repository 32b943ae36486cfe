// Per-pod serialisation: syncs of one pod uid run one after another (the second waits and then sees what
// the first did, so two concurrent syncs never both create a sandbox); different pods run in parallel.
// A caller that would wait longer than `maxWaitMs` gets PodBusyError instead of piling up.

export interface PodLock {
  /** Run fn holding the pod's lock. A lock that can be lost while held (a lease) aborts `fence` once it may
   * have been; the holder then makes no further runtime write (see src/cri/request-view.ts). A lock that cannot be
   * lost gives no fence. */
  run<T>(uid: string, fn: (fence: AbortSignal | undefined) => Promise<T>): Promise<T>;
}

export class MemoryPodLock implements PodLock {
  private readonly tails = new Map<string, Promise<unknown>>();
  constructor(private readonly maxWaitMs = 30_000) {}

  async run<T>(uid: string, fn: (fence: AbortSignal | undefined) => Promise<T>): Promise<T> {
    const prev = this.tails.get(uid);
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev ? prev.then(() => mine) : mine;
    this.tails.set(uid, tail);
    try {
      if (prev) await waitAtMost(prev, this.maxWaitMs, uid);
      // An in-process lock is never lost, so it gives no fence. (A signal that never fires would still take a
      // listener from every runtime call in flight: a status read per container, in parallel.)
      return await fn(undefined);
    } finally {
      release();
      if (this.tails.get(uid) === tail) this.tails.delete(uid);
    }
  }

  get size(): number {
    return this.tails.size;
  }
}

function waitAtMost(p: Promise<unknown>, ms: number, uid: string): Promise<void> {
  // Timers past 2^31-1 ms fire at once; treat such a bound as "wait as long as it takes".
  if (!(ms < 2 ** 31))
    return p.then(
      () => undefined,
      () => undefined,
    );
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p.then(
      () => undefined,
      () => undefined,
    ),
    new Promise<never>((_, rej) => {
      timer = setTimeout(() => rej(new PodBusyError(uid, ms)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The pod's lock could not be had in time: another sync or delete of it is still running. */
export class PodBusyError extends Error {
  constructor(
    readonly uid: string,
    readonly waitedMs: number,
  ) {
    super(`another request for pod ${uid} has been running for over ${waitedMs} ms; retry later`);
  }
}
