// The pods' runtime status as last read, kept while the runtime's event stream says nothing touched them: kubelet's
// pod cache (pkg/kubelet/container/cache.go), which its pod workers read instead of the runtime (GetNewerThan),
// filled by the PLEG. Here a read fills it and an event empties the pod's entry, so a converged sync of a pod nothing
// happened to makes no CRI call.
//
// An entry is only as good as the stream behind it, so:
//   - it serves only while the stream is up; the stream going down or up again empties it (events may be lost);
//   - a read is kept only if nothing touched its pod, and nothing unknown happened, between the read's ticket (taken
//     before its CRI calls) and its arrival: an event that raced the read voids it;
//   - an event for an id no entry owns (a container made since, by anyone) empties every entry;
//   - containerd 1.6 publishes a task's exit and start before its CRI plugin records them (the exit 130-220 ms
//     before, here). So a read that still shows running what an exit event named is not kept, nor a read within
//     QUIET_MS of an event for its pod, nor one with a container created but not yet running, unknown, or a
//     sandbox that is not the pod's only one (a pod being made or changed);
//   - an entry serves at most MAX_AGE_MS (the node passes its evented relist period), so whatever slipped through is
//     read again; a relist that sees a pod's objects change empties its entry sooner (syncloop/pass.ts).
//
// A pod's periodic resync reads the cache too, as kubelet's pod workers do under the Evented PLEG
// (pkg/kubelet/pod_workers.go GetNewerThan, with evented.go's updateGlobalCache keeping the cache current): an idle
// pod is read from the runtime once per MAX_AGE_MS, not once per resync.
import type { ContainerEvent } from "../cri/container-events.js";
import { PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import type { PodStatus } from "./types.js";

/** An entry serves this long at most after its read, by default: kubelet's Evented PLEG relists every 300 s
 * (eventedPlegRelistPeriod), its safety net for what the events missed. */
export const MAX_AGE_MS = 300_000;
/** A read that began within this long after an event for its pod is not kept (the runtime's own bookkeeping of an
 * event lags it). */
export const QUIET_MS = 1_000;
/** An exit event's id is forgotten this long after it, if no read showed the exit meanwhile (the container is gone). */
const EXIT_MEMORY_MS = 5 * 60_000;

/** Taken before a read: what the cache knew then. */
export interface Ticket {
  readonly all: number;
  readonly pod: number;
  readonly at: number;
}

export interface PodStatusCacheStats {
  hits: number;
  misses: number;
  /** Entries emptied by an event, the stream's state, or a caller. */
  invalidations: number;
}

export class PodStatusCache {
  private up = false;
  /** Bumped when every entry is voided (the stream's state changed, an event for an unknown id). */
  private all = 0;
  /** Per pod, bumped when something touched it; with the time it was. */
  private readonly touched = new Map<string, { n: number; at: number }>();
  private readonly entries = new Map<string, { status: PodStatus; at: number; ids: string[] }>();
  /** Sandbox and container id → pod uid, for the ids of the entries held. */
  private readonly owners = new Map<string, string>();
  /** When an event for an id no entry owned came last (its pod is unknown, so every read waits out QUIET_MS). */
  private unknownAt = -Infinity;
  /** Ids an exit event named, until a read shows them stopped: id → when. */
  private readonly exits = new Map<string, number>();
  readonly stats: PodStatusCacheStats = { hits: 0, misses: 0, invalidations: 0 };

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxAgeMs = MAX_AGE_MS,
  ) {}

  /** The pod's status as last read, if it may stand for a read now. Treat it as read-only: it is shared. */
  get(uid: string): PodStatus | undefined {
    const e = this.up ? this.entries.get(uid) : undefined;
    if (e && this.now() - e.at <= this.maxAgeMs) {
      this.stats.hits++;
      return e.status;
    }
    this.stats.misses++;
    return undefined;
  }

  /** What the cache knows now, for a read about to be made; undefined while the stream is down. */
  ticket(uid: string): Ticket | undefined {
    return this.up ? { all: this.all, pod: this.touched.get(uid)?.n ?? 0, at: this.now() } : undefined;
  }

  /** Keep a read made after `ticket` was taken, unless something voided it since (see the file's head). */
  set(uid: string, status: PodStatus, t: Ticket | undefined): void {
    if (!t || !this.up || t.all !== this.all) return;
    const touched = this.touched.get(uid);
    if ((touched?.n ?? 0) !== t.pod || (touched && t.at - touched.at < QUIET_MS) || t.at - this.unknownAt < QUIET_MS)
      return;
    if (status.sandboxStatuses.length !== 1 || status.sandboxStatuses[0]!.state !== PodSandboxState.SANDBOX_READY)
      return;
    const sandbox = status.sandboxStatuses[0]!.id;
    if (this.exits.has(sandbox)) return;
    for (const c of status.containerStatuses) {
      if (c.state === "created" || c.state === "unknown") return;
      if (c.state === "running" && this.exits.has(c.id)) return;
    }
    // The read shows these exits: nothing is pending for them any more.
    for (const c of status.containerStatuses) this.exits.delete(c.id);
    this.drop(uid);
    const ids = [sandbox, ...status.containerStatuses.map((c) => c.id)];
    for (const id of ids) this.owners.set(id, uid);
    this.entries.set(uid, { status, at: t.at, ids });
  }

  /** Something acted on the pod (a sync's steps, a kill): its entry goes, and a read racing it is not kept. */
  invalidate(uid: string): void {
    this.touched.set(uid, { n: (this.touched.get(uid)?.n ?? 0) + 1, at: this.now() });
    if (this.drop(uid)) this.stats.invalidations++;
  }

  /** The pod is gone (deleted): forget it. Its touch count goes too (uids come and go), so a read in flight for
   * any pod is voided instead: the entries held stand, only tickets taken before now fail. */
  forget(uid: string): void {
    if (this.drop(uid)) this.stats.invalidations++;
    this.touched.delete(uid);
    this.all++;
  }

  /** A runtime event: its pod's entry goes; an id no entry owns voids them all. */
  event(e: ContainerEvent): void {
    const at = this.now();
    if (e.kind === "exited" && !e.settled) {
      this.exits.set(e.id, at);
      for (const [id, when] of this.exits) if (at - when > EXIT_MEMORY_MS) this.exits.delete(id);
    }
    const uid = e.podUid ?? this.owners.get(e.id);
    if (uid !== undefined) {
      this.invalidate(uid);
      return;
    }
    this.unknownAt = at;
    this.voidAll();
  }

  /** The event stream is up or down: either way, what was kept may have missed events. */
  streamUp(up: boolean): void {
    if (up === this.up) return;
    this.up = up;
    this.voidAll();
  }

  private voidAll(): void {
    this.all++;
    this.stats.invalidations += this.entries.size;
    this.entries.clear();
    this.owners.clear();
  }

  private drop(uid: string): boolean {
    const e = this.entries.get(uid);
    if (!e) return false;
    for (const id of e.ids) if (this.owners.get(id) === uid) this.owners.delete(id);
    this.entries.delete(uid);
    return true;
  }
}
