// LeaseFence. Guarantees: its signal aborts before a lease may have expired (a margin before the last granted
// renewal's term) and at once when a renewal is refused; a stopped fence never fires.
/** The holder's side of a lease: aborts once the lease may have expired. A renewal sent at time t that the
 * Durable Object granted keeps the lease to at least t + leaseMs (its timer restarted after t), so the fence
 * fires a margin before that unless a later renewal succeeds, and at once when a renewal is refused. */
export class LeaseFence {
  private readonly ac = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  constructor(private readonly leaseMs: number) {}
  get signal(): AbortSignal {
    return this.ac.signal;
  }
  renewed(sentAt: number): void {
    if (this.stopped || this.ac.signal.aborted) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => this.lose("the pod's lease could not be renewed in time"),
      sentAt + this.leaseMs * 0.9 - Date.now(),
    );
  }
  lose(reason: string): void {
    clearTimeout(this.timer);
    if (!this.ac.signal.aborted) this.ac.abort(new Error(reason));
  }
  /** The holder is done: a renewal answered late changes nothing. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
