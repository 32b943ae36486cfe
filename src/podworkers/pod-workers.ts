// Package podworkers/ — kubelet's pod workers: one serial worker per pod uid that every source (requests, the sync
// loop, PLEG events, probes, eviction, controllers) dispatches to. Imports nothing of the agent; pure scheduling.
//
// As pkg/kubelet/pod_workers.go (UpdatePod, podWorkerLoop, SyncKnownPods):
//   - one pod's work runs one at a time; different pods' work runs in parallel;
//   - work that comes while the worker is busy waits as the pod's one pending update, and a newer update replaces
//     it (kubelet's "work pending while busy": lastUndeliveredWorkUpdate / pendingUpdate, the latest wins);
//   - states syncing → terminating → terminated: a kill moves the worker to terminating and is never lost to a later
//     sync (every kill's waiter hears when termination ends, kubelet's notifyPostTerminating); once terminating or
//     terminated, a plain sync is ignored ("pod is finished processing, no further updates"); a terminated
//     worker is cleaned up by syncKnownPods when its pod is no longer desired.
// Where podsync differs:
//   - every update carries its own work (a closure), and answers its dispatcher: kubelet's callers fire and forget,
//     podsync's requests return the sync's result. A replaced pending update's waiters are told `superseded`
//     (their work never ran: a newer update's did), as kubelet drops the older update; when the newer update does
//     the same (the same spec: its `key`), they get its result instead (ten requests with one spec all succeed);
//   - work may find itself stale when it runs (throws StaleWorkError): a request's entry a later request replaced
//     in the store, a kill of a pod a later request put back (the store is podsync's pod manager, and a request
//     carries its own entry, not the manager's latest). Its waiters are told `superseded`; a stale kill returns the
//     worker to syncing;
//   - work may ask for a slot first (the loop's and a PUT's concurrency; kubelet runs every worker at once): while
//     it waits for one it is still pending, so a newer update replaces it;
//   - a request's update (create/update) to a terminating pod is kept as restartRequested and runs on a fresh
//     worker as soon as the termination ends: kubelet waits for housekeeping's SyncKnownPods; podsync's store has
//     already refused a stale re-creation by its tombstones, so the restart is real and its request waits for it.
//   - a failed termination removes the worker (the next kill starts over); kubelet retries it with back-off;
//   - kills come in kinds: the eviction manager's (its pod's containers stopped, the pod kept), a teardown that may
//     find itself stale (a PUT's dropped pod, a controller's delete) and a DELETE's (`always`: it runs on a
//     terminated worker too, as podsync's DELETE removes the pod's sandboxes and node data and answers with what it
//     found, where kubelet leaves that to housekeeping's HandlePodCleanups). An eviction of a pod being torn down
//     is ignored; a teardown replaces a waiting eviction.

export type UpdateType = "create" | "update" | "sync" | "kill";
export type WorkerState = "syncing" | "terminating" | "terminated";

export interface PodWork<T> {
  /** create/update: a request's spec; sync: the loop's (whatever is stored); kill: terminate the pod. */
  type: UpdateType;
  run(): Promise<T>;
  /** Work with the same key does the same (a request's spec): a replaced update with the newer one's key is not
   * superseded but joins it, and its waiters get the newer work's result. Computed only when an update replaces
   * another (rarely: a key is a canonical form of the whole pod), at most once. */
  key?: (() => string) | undefined;
  /** A concurrency slot to hold while the work runs (resolves with its release). */
  slot?: (() => Promise<() => void>) | undefined;
  /** A kill that runs on a terminated worker too and never joins a running kill (DELETE, the eviction manager's
   * re-creation: each answers with what its own teardown found). */
  always?: boolean | undefined;
  /** A kill that stops the pod's containers and keeps the pod (the eviction manager's evictPod). */
  evict?: boolean | undefined;
}

/** A kill's kind: the eviction manager's, a DELETE's (`always`), or a teardown that may find itself stale. */
const killKind = (w: PodWork<unknown>) => (w.evict ? "evict" : w.always ? "always" : "kill");

/** Thrown by work that found, once run, that a newer change made it moot (nothing was done). */
export class StaleWorkError extends Error {}

export type WorkOutcome<T> =
  | { kind: "done"; value: T }
  /** Not run: a newer update replaced it while it waited, or it found itself stale (StaleWorkError). */
  | { kind: "superseded" }
  /** Not run: the worker is terminating or terminated, and this was no request to restart the pod. */
  | { kind: "ignored"; state: WorkerState };

interface Waiter {
  resolve(o: WorkOutcome<unknown>): void;
  reject(e: unknown): void;
}
interface Pending {
  work: PodWork<unknown>;
  waiters: Waiter[];
  /** Called when a newer update replaces it before it started (it may be waiting for a slot). */
  replaced?: (() => void) | undefined;
}
interface Worker {
  state: WorkerState;
  working: boolean;
  /** The work running now. */
  current: Pending | undefined;
  pending: Pending | undefined;
  /** A request's update that came while terminating: run on a fresh worker once the termination ends. */
  restart: Pending | undefined;
  /** The state before the pending kill, to return to if the kill turns out stale. */
  before: WorkerState;
}

export interface PodWorkersOptions {
  /** Told after each work item of a pod ran (or failed): the sync loop's bookkeeping. */
  onDone?: (uid: string, type: UpdateType, outcome: "done" | "error") => void;
}

const SUPERSEDED: WorkOutcome<never> = { kind: "superseded" };

export class PodWorkers {
  private readonly workers = new Map<string, Worker>();
  private readonly running = new Set<Promise<void>>();
  constructor(private readonly o: PodWorkersOptions = {}) {}

  /** kubelet's UpdatePod: hand the pod's worker this work; resolves with what became of it. */
  update<T>(uid: string, work: PodWork<T>): Promise<WorkOutcome<T>> {
    return new Promise<WorkOutcome<T>>((resolve, reject) => {
      const waiter = { resolve: resolve as Waiter["resolve"], reject };
      let w = this.workers.get(uid);
      if (!w) {
        // A kill takes a new worker to terminating as it takes a syncing one.
        const state = "syncing";
        w = { state, working: false, current: undefined, pending: undefined, restart: undefined, before: "syncing" };
        this.workers.set(uid, w);
      }
      this.accept(w, { work: work as PodWork<unknown>, waiters: [waiter] });
      if (!w.working && w.pending) this.start(uid, w);
    });
  }

  /** Where the pod's worker is (undefined: no worker). */
  state(uid: string): WorkerState | undefined {
    return this.workers.get(uid)?.state;
  }

  /** Whether a kill waits its turn in the pod's worker (it will tear down whatever the running work makes). */
  killPending(uid: string): boolean {
    return this.workers.get(uid)?.pending?.work.type === "kill";
  }

  /** Whether the pod's worker runs or holds work. */
  busy(uid: string): boolean {
    const w = this.workers.get(uid);
    return !!w && (w.working || w.pending !== undefined);
  }

  /** kubelet's SyncKnownPods: the terminated workers of pods no longer desired are removed (returned); those of pods
   * desired again (a request or a controller put the uid back) sync again on their next update (kubelet's
   * housekeeping restarts a pod whose restart was requested; podsync keeps a pod's uid across its re-creations). */
  syncKnownPods(desired: ReadonlySet<string>): string[] {
    const removed: string[] = [];
    for (const [uid, w] of this.workers) {
      if (w.state !== "terminated" || w.working || w.pending) continue;
      if (desired.has(uid)) w.state = "syncing";
      else {
        this.workers.delete(uid);
        removed.push(uid);
      }
    }
    return removed;
  }

  /** The pod's worker goes if it is terminated and idle (its pod is gone from the desired state): true if it went. */
  forget(uid: string): boolean {
    const w = this.workers.get(uid);
    if (w?.state !== "terminated" || w.working || w.pending) return false;
    return this.workers.delete(uid);
  }

  /** Resolves once no worker runs. */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running]);
  }

  get size(): number {
    return this.workers.size;
  }

  private accept(w: Worker, p: Pending): void {
    const { type } = p.work;
    if (type === "kill") {
      this.acceptKill(w, p);
      return;
    }
    if (w.state !== "syncing") {
      // A request for a pod being torn down restarts it once the teardown ends; the loop's syncs are ignored.
      if (type === "sync") {
        ignore(p, w.state);
        return;
      }
      if (w.state === "terminated" && !w.working) {
        w.state = "syncing";
        w.pending = p;
        return;
      }
      w.restart = replace(w.restart, p);
      return;
    }
    // Syncing: the latest update wins. A loop sync never replaces pending work (that work syncs the pod as well):
    // it is superseded by it at once.
    if (type === "sync" && w.pending) supersede(p);
    else w.pending = replace(w.pending, p);
  }

  /** A kill replaces any pending sync (kubelet: a kill is never lost to a later sync); kills of one kind join each
   * other, and a teardown joins a DELETE's (it does the same). */
  private acceptKill(w: Worker, p: Pending): void {
    const kind = killKind(p.work);
    if (w.state === "terminated" && kind !== "always") {
      ignore(p, w.state);
      return;
    }
    const pending = w.pending?.work.type === "kill" ? w.pending : undefined;
    const current = w.current?.work.type === "kill" ? w.current : undefined;
    const joins = (q: Pending) => {
      const k = killKind(q.work);
      return k === kind || (kind === "kill" && k === "always");
    };
    if (pending && joins(pending)) {
      pending.waiters.push(...p.waiters);
      return;
    }
    if (current && !pending && kind !== "always" && joins(current)) {
      current.waiters.push(...p.waiters);
      return;
    }
    // An eviction of a pod already being torn down is moot (kubelet evicts only pods that still run).
    if (kind === "evict" && w.state !== "syncing") {
      ignore(p, w.state);
      return;
    }
    // A DELETE's kill takes a waiting teardown's place and its waiters (it tears the pod down as well); any other
    // waiting work (a sync, an eviction) is superseded by the kill.
    if (pending && kind === "always" && killKind(pending.work) === "kill") {
      pending.replaced?.();
      p.waiters.unshift(...pending.waiters);
    } else supersede(w.pending);
    if (w.state === "syncing") w.before = "syncing";
    w.state = "terminating";
    w.pending = p;
  }

  private start(uid: string, w: Worker): void {
    w.working = true;
    const job = this.loop(uid, w).finally(() => this.running.delete(job));
    this.running.add(job);
  }

  /** kubelet's podWorkerLoop: take the pending update, run it, until none is left. The worker is idle before the
   * last work's waiters hear its outcome, so what they do next (a resync's scheduling, a new update) sees it so. */
  private async loop(uid: string, w: Worker): Promise<void> {
    while (w.pending) {
      const p = w.pending;
      const release = await this.slotFor(p);
      if (w.pending !== p) {
        release?.(); // replaced while it waited for its slot: the newer update goes next
        continue;
      }
      w.pending = undefined;
      w.current = p;
      let settle: () => void;
      try {
        settle = await this.runOne(uid, w, p);
      } finally {
        release?.();
      }
      const last = !w.pending;
      if (last) this.finish(uid, w);
      settle();
      if (last) return;
    }
    this.finish(uid, w);
  }

  /** No work left: the worker is idle; the restart of a terminated pod runs on a fresh worker. */
  private finish(uid: string, w: Worker): void {
    w.working = false;
    w.current = undefined;
    if (w.state === "terminated" && w.restart) {
      w.pending = w.restart;
      w.restart = undefined;
      w.state = "syncing";
      this.start(uid, w);
    }
  }

  /** The work's slot, or undefined as soon as a newer update replaces it. */
  private async slotFor(p: Pending): Promise<(() => void) | undefined> {
    if (!p.work.slot) return undefined;
    const got = p.work.slot();
    const replaced = new Promise<undefined>((r) => (p.replaced = () => r(undefined)));
    const release = await Promise.race([got, replaced]);
    p.replaced = undefined;
    if (!release) void got.then((r) => r());
    return release;
  }

  /** Runs the work and updates the worker's state; returns how to tell its waiters (the caller does, once the
   * worker's own state is settled). */
  private async runOne(uid: string, w: Worker, p: Pending): Promise<() => void> {
    const kill = p.work.type === "kill";
    try {
      const value = await p.work.run();
      if (kill) this.endKill(w, true);
      this.o.onDone?.(uid, p.work.type, "done");
      return () => p.waiters.forEach((x) => x.resolve({ kind: "done", value }));
    } catch (e) {
      if (e instanceof StaleWorkError) {
        if (kill) this.endKill(w, false);
        return () => supersede(p);
      }
      if (kill) {
        // A failed teardown: the worker goes, so the next kill (or sync) starts over; a restart waiting runs now.
        this.workers.delete(uid);
        w.state = "syncing";
        w.pending = w.restart;
        w.restart = undefined;
        if (w.pending) this.workers.set(uid, w);
      }
      this.o.onDone?.(uid, p.work.type, "error");
      return () => p.waiters.forEach((x) => x.reject(e));
    }
  }

  /** A kill ran (`terminated`), or was dropped as stale: back to where the worker was, unless another kill waits. */
  private endKill(w: Worker, terminated: boolean): void {
    if (w.pending?.work.type === "kill") return;
    if (terminated) {
      w.state = "terminated";
      return;
    }
    w.state = w.before;
    if (w.restart && w.state === "syncing" && !w.pending) {
      w.pending = w.restart;
      w.restart = undefined;
    }
  }
}

/** `newer` takes the place of `older`: older's waiters join it when it does the same, else they are superseded. */
function replace(older: Pending | undefined, newer: Pending): Pending {
  if (older?.work.key && newer.work.key && older.work.key() === newer.work.key()) {
    older.replaced?.();
    newer.waiters.unshift(...older.waiters);
  } else supersede(older);
  return newer;
}

function supersede(p: Pending | undefined): void {
  p?.replaced?.();
  p?.waiters.forEach((x) => x.resolve(SUPERSEDED));
}

function ignore(p: Pending, state: WorkerState): void {
  for (const x of p.waiters) x.resolve({ kind: "ignored", state });
}
