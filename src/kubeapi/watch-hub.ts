// One kind's objects as the API server's watch cache holds them: the current objects, each stamped with the
// resourceVersion of its last change, a bounded history of changes, and the watchers. A change is made once
// (by whoever feeds the hub: the reconcile loop's relist for pods, the event recorder for events) and handed
// to every watcher; a watch costs no runtime call.
//
// resourceVersions come from one clock per node shared by every hub, so they increase across kinds. The clock
// starts at the process's start time in milliseconds: a resourceVersion from an earlier process is older than
// anything this one holds, and a watch from it gets 410 Expired (the client lists again), as a watch from a
// compacted resourceVersion does on an API server.
import { expired } from "./status.js";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

export interface KubeObject {
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export interface Change<T> {
  type: Exclude<WatchEventType, "BOOKMARK">;
  object: T;
  rv: number;
}

export class RvClock {
  private n: number;
  constructor(start = Date.now()) {
    this.n = start;
  }
  get current(): number {
    return this.n;
  }
  next(): number {
    return ++this.n;
  }
}

export interface WatchOptions<T> {
  /** Only changes after this resourceVersion; undefined: the current objects as ADDED first, then changes. */
  since: number | undefined;
  filter: (obj: T) => boolean;
  send: (c: Change<T>) => void;
}

export interface HubOptions<T> {
  key: (obj: T) => string;
  /** Changes kept for watches that resume from a resourceVersion (the API server's watch cache: 100 by default
   * per resource, growing under load). */
  history?: number;
}

export class WatchHub<T extends KubeObject> {
  private readonly objects = new Map<string, { obj: T; json: string; source: T }>();
  private readonly history: Change<T>[] = [];
  private readonly capacity: number;
  /** Changes at or before this resourceVersion are no longer in the history. */
  private compactedRv: number;
  private readonly watchers = new Set<WatchOptions<T>>();
  private fed = false;
  private readonly firstFeed: Promise<void>;
  private markFed!: () => void;

  constructor(
    readonly clock: RvClock,
    private readonly o: HubOptions<T>,
  ) {
    this.capacity = o.history ?? 1000;
    this.compactedRv = clock.current;
    this.firstFeed = new Promise((r) => (this.markFed = r));
  }

  /** Resolves once the hub was first fed (at most `ms` later: then it answers with what it has). */
  ready(ms: number): Promise<void> {
    if (this.fed) return Promise.resolve();
    return Promise.race([this.firstFeed, new Promise<void>((r) => setTimeout(r, ms).unref?.())]);
  }

  get resourceVersion(): number {
    return this.clock.current;
  }

  get watcherCount(): number {
    return this.watchers.size;
  }

  list(): T[] {
    return [...this.objects.values()].map((e) => e.obj);
  }

  get(key: string): T | undefined {
    return this.objects.get(key)?.obj;
  }

  /** Put an object; a change only if it differs from the one held (resourceVersion aside). */
  upsert(obj: T): void {
    const key = this.o.key(obj);
    const had = this.objects.get(key);
    // The very object put last time (a feed that rebuilt nothing): no change, and nothing to compare.
    if (had?.source === obj) return;
    const { resourceVersion: _, ...meta } = obj.metadata;
    const json = JSON.stringify({ ...obj, metadata: meta });
    if (had?.json === json) {
      had.source = obj;
      return;
    }
    const rv = this.clock.next();
    const stamped = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
    this.objects.set(key, { obj: stamped, json, source: obj });
    this.emit({ type: had ? "MODIFIED" : "ADDED", object: stamped, rv });
  }

  remove(key: string): void {
    const had = this.objects.get(key);
    if (!had) return;
    this.objects.delete(key);
    const rv = this.clock.next();
    this.emit({
      type: "DELETED",
      object: { ...had.obj, metadata: { ...had.obj.metadata, resourceVersion: String(rv) } },
      rv,
    });
  }

  /** The whole set: what is not in it is deleted. */
  replaceAll(objs: readonly T[]): void {
    const keep = new Set<string>();
    for (const obj of objs) {
      keep.add(this.o.key(obj));
      this.upsert(obj);
    }
    for (const key of [...this.objects.keys()]) if (!keep.has(key)) this.remove(key);
    this.fed = true;
    this.markFed();
  }

  /** Start a watch; returns its stop. 410 Expired when `since` is older than the history holds. */
  watch(w: WatchOptions<T>): () => void {
    if (w.since !== undefined && w.since < this.compactedRv)
      throw expired(`too old resource version: ${w.since} (${this.compactedRv + 1})`);
    if (w.since === undefined) {
      for (const { obj } of this.objects.values())
        if (w.filter(obj)) w.send({ type: "ADDED", object: obj, rv: Number(obj.metadata.resourceVersion) });
    } else for (const c of this.history) if (c.rv > w.since && w.filter(c.object)) w.send(c);
    this.watchers.add(w);
    return () => this.watchers.delete(w);
  }

  private emit(c: Change<T>): void {
    this.history.push(c);
    if (this.history.length > this.capacity) this.compactedRv = this.history.shift()!.rv;
    for (const w of [...this.watchers]) if (w.filter(c.object)) w.send(c);
  }
}
