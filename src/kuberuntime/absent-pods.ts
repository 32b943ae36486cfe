// Pods a uid check found absent from the runtime, so their next sync decides without a status read.
//
// A request for a pod podsync does not hold yet checks its uid against the runtime before storing it (one
// ListPodSandbox: pod-identity.ts). When that list finds no sandbox of the pod and nothing has acted on the pod
// since, the sync that follows would list nothing again: with an in-process pod lock every run that can make a
// sandbox or a container of a pod (sync, delete, evict) goes through the engine and is seen here, and CRI keeps no
// container without its sandbox (RemovePodSandbox removes them). So its decision starts from the empty status,
// and a first sync costs no list beyond the check's. kubelet lists at every sync (GetPodStatus); here the check's
// list, made a moment before under the same rule, stands in for it.
//
// A list counts only for pods with no run entered (waiting or holding the lock) when it was sent and none entered
// until it answered; a run entering forgets the pod's absence. Absences are kept briefly and bounded in number.

export interface AbsentWatch {
  /** The list answered: `present` holds every uid it found a sandbox of. */
  listed(present: ReadonlySet<string>, at: number): void;
  /** The check is over (answered or failed). */
  end(): void;
}

export class AbsentPods {
  /** Runs entered and not left, per uid. */
  private readonly active = new Map<string, number>();
  /** The list in flight that watches each uid. */
  private readonly watched = new Map<string, object>();
  /** Pods found absent, and when. */
  private readonly absent = new Map<string, number>();

  constructor(
    private readonly maxAgeMs = 10_000,
    private readonly max = 1024,
  ) {}

  /** A uid check's list is about to be sent for these pods. */
  watch(uids: readonly string[]): AbsentWatch {
    const token = {};
    const mine = uids.filter((u) => !this.active.has(u));
    for (const u of mine) this.watched.set(u, token);
    return {
      listed: (present, at) => {
        for (const u of mine) if (this.watched.get(u) === token && !present.has(u)) this.remember(u, at);
      },
      end: () => {
        for (const u of mine) if (this.watched.get(u) === token) this.watched.delete(u);
      },
    };
  }

  /** The pod is known to hold nothing in the runtime (forgotten once asked). Ask before entering the run. */
  take(uid: string, now: number): boolean {
    const at = this.absent.get(uid);
    if (at === undefined) return false;
    this.absent.delete(uid);
    return now - at <= this.maxAgeMs;
  }

  /** A run that may act on the pod starts. */
  enter(uid: string): void {
    this.active.set(uid, (this.active.get(uid) ?? 0) + 1);
    this.watched.delete(uid);
    this.absent.delete(uid);
  }

  leave(uid: string): void {
    const n = (this.active.get(uid) ?? 1) - 1;
    if (n > 0) this.active.set(uid, n);
    else this.active.delete(uid);
  }

  /** Entries held, for tests. */
  get size(): { active: number; watched: number; absent: number } {
    return { active: this.active.size, watched: this.watched.size, absent: this.absent.size };
  }

  private remember(uid: string, at: number) {
    this.absent.delete(uid);
    if (this.absent.size >= this.max) this.absent.delete(this.absent.keys().next().value!);
    this.absent.set(uid, at);
  }
}
