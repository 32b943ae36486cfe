// Replay protection: a token id may act once within its lifetime. Pluggable: the Node entry keeps used ids on disk
// (src/state/used-jtis.ts), Workers in a Durable Object; this in-memory store serves tests and the bench.
export interface ReplayStore {
  /** Atomically record `key` until `expiresAtMs`; false if it is already recorded and not yet expired. */
  claim(key: string, expiresAtMs: number): Promise<boolean>;
}

/** In-process store (Node): a map swept lazily, bounded so a flood of tokens cannot grow it without end. */
export class MemoryReplayStore implements ReplayStore {
  private readonly seen = new Map<string, number>();
  private nextSweep = 0;
  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 1_000_000,
  ) {}

  async claim(key: string, expiresAtMs: number): Promise<boolean> {
    const t = this.now();
    const until = this.seen.get(key);
    if (until !== undefined && until > t) return false;
    if (t >= this.nextSweep || this.seen.size >= this.maxEntries) this.sweep(t);
    // Refusing is safer than forgetting: when full of live entries, reject new tokens until some expire.
    if (this.seen.size >= this.maxEntries) return false;
    this.seen.set(key, expiresAtMs);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }

  private sweep(t: number) {
    for (const [k, until] of this.seen) if (until <= t) this.seen.delete(k);
    this.nextSweep = t + 10_000;
  }
}
