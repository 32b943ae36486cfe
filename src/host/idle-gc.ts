// One full garbage collection when the process goes quiet after a burst of work that left garbage behind (Node only,
// and only when node runs with --expose-gc, as `npm start` does).
//
// Why: V8 collects when allocation fills its heap, so a server that stops allocating keeps whatever its last burst
// left (measured: 54 MiB in use of a 59 MiB heap, RSS 119 MiB, 20 s after a 30-pod PUT; about 27 MiB of it live).
// V8's memory reducer hands it back only once its own sampling finds the allocation rate low, which the loop's
// periodic work can put off for minutes. Collecting once the work stops returns it (RSS 87 MiB in the same bench).
// Only after a burst: the heap in use must have grown by `minGarbageBytes` since the last collection here, or the
// heap V8 holds beyond what is in use (a burst V8's own collections emptied, but whose pages it kept: measured, 52
// MiB committed for 30 in use, RSS 111 MiB) by as much, or the committed heap by half that, and only after a busy
// second (100 ms of CPU or more): the loop's small periodic passes (a resync slot) never bring one, not even once
// their garbage adds up (V8's own collections take that; a full collection here costs 100-250 ms of CPU, which an
// idle node should not pay at random moments). docs/performance.md has the figures.
import { getHeapStatistics, setFlagsFromString } from "node:v8";

export interface IdleGcOptions {
  /** The collector (globalThis.gc under --expose-gc). */
  gc: () => void;
  /** This process's CPU time so far, in microseconds. Default process.cpuUsage() (user + system). */
  cpuMicros?: () => number;
  /** V8's heap in use and committed, bytes. Default v8.getHeapStatistics()'s used_heap_size and total_heap_size. */
  heapBytes?: () => HeapSample;
  /** Whether the next full collections move every live object out of partly used pages (V8's
   * --compact-on-every-full-gc, set and cleared around the first collection here). */
  compactAll?: (on: boolean) => void;
}

export interface HeapSample {
  used: number;
  committed: number;
}

/** Once a second: quiet is at most 10 ms of CPU in it (1 % of a core), six quiet seconds in a row after a busy one
 * (100 ms; six, not three, so that V8 finds the allocation rate of its last 5 s low and shrinks the young generation
 * in the same collection, Heap::ReduceNewSpaceSize: 4 MiB committed to 1), when the heap in use, or the committed
 * heap beyond it, grew by 8 MiB since the last collection here (16 MiB left a run at 100 MiB RSS: 42.5 MiB committed
 * for 30.5 in use after a 30-pod PUT), or the committed heap alone by 4 MiB (V8's own collections during a burst can
 * leave both of the others under 8 while it holds more: measured, 33 MiB committed for 27 in use and RSS 87.8 MiB,
 * where a collection here brings it back to 24 and 79). */
const SAMPLE_MS = 1000;
const THRESHOLDS = {
  minGarbageBytes: 8 * 1024 * 1024,
  minCommittedGrowthBytes: 4 * 1024 * 1024,
  quietMs: 10,
  quietSamples: 6,
  busyMs: 100,
};

export interface IdleGcDecider {
  /** One sample: the CPU used since the last one (ms) and the heap now; true when a collection is due. */
  sample(cpuMs: number, heap: HeapSample): boolean;
  /** The heap after a collection (the baselines the next growth is measured from). */
  collected(heap: HeapSample): void;
}

/** Pure: the decision, fed one sample at a time. */
export function idleGcDecider(
  o: {
    minGarbageBytes: number;
    minCommittedGrowthBytes?: number;
    quietMs: number;
    quietSamples: number;
    busyMs: number;
  },
  heapAtStart: HeapSample,
): IdleGcDecider {
  const slackOf = (h: HeapSample) => Math.max(0, h.committed - h.used);
  const minCommittedGrowth = o.minCommittedGrowthBytes ?? o.minGarbageBytes;
  let used = heapAtStart.used;
  let slack = slackOf(heapAtStart);
  let committed = heapAtStart.committed;
  let quiet = 0;
  /** A busy sample came since the last collection here (a burst of work, not the loop's trickle). */
  let burst = false;
  return {
    sample(cpuMs, heap) {
      quiet = cpuMs <= o.quietMs ? quiet + 1 : 0;
      burst ||= cpuMs >= o.busyMs;
      // A collection V8 made itself lowers the heap in use (or hands pages back): measure the next growth from there.
      used = Math.min(used, heap.used);
      slack = Math.min(slack, slackOf(heap));
      committed = Math.min(committed, heap.committed);
      return (
        burst &&
        quiet >= o.quietSamples &&
        (heap.used - used >= o.minGarbageBytes ||
          slackOf(heap) - slack >= o.minGarbageBytes ||
          heap.committed - committed >= minCommittedGrowth)
      );
    },
    collected(heap) {
      used = heap.used;
      slack = slackOf(heap);
      committed = heap.committed;
      quiet = 0;
      burst = false;
    },
  };
}

/** Starts the sampler (an unref'd timer); returns its stop. */
export function startIdleGc(o: IdleGcOptions): () => void {
  const cpu =
    o.cpuMicros ??
    (() => {
      const u = process.cpuUsage();
      return u.user + u.system;
    });
  const heap =
    o.heapBytes ??
    (() => {
      const h = getHeapStatistics();
      return { used: h.used_heap_size, committed: h.total_heap_size };
    });
  const compactAll =
    o.compactAll ??
    ((on: boolean) => setFlagsFromString(on ? "--compact-on-every-full-gc" : "--no-compact-on-every-full-gc"));
  const d = idleGcDecider(THRESHOLDS, heap());
  let last = cpu();
  const timer = setInterval(() => {
    const now = cpu();
    const ms = (now - last) / 1000;
    last = now;
    if (!d.sample(ms, heap())) return;
    // Twice: the first frees the garbage, and only the next one hands the pages it emptied back (a bare node
    // holding 100 MiB of garbage: heap 116 MiB; after one gc() 107, after two 63.5). The first also compacts
    // every page: V8's own full collections move objects only out of pages about 70 % empty, which left 3.5-4.7
    // MiB of partly used pages committed after a 30-pod PUT (27 MiB committed for 22.5 in use). V8's memory
    // reducer would compact them (it picks pages a fifth empty), but it starts only when the old generation grew by
    // 10 MiB over where its last run left it, which after a burst it often had not. The flag is V8's own, read when
    // a collection starts; it is on for this one collection only (a full compaction of ~22 MiB costs ~100 ms more,
    // once after a burst).
    compactAll(true);
    try {
      o.gc();
    } finally {
      compactAll(false);
    }
    o.gc();
    d.collected(heap());
    last = cpu(); // the collections' own CPU is not work
  }, SAMPLE_MS);
  timer.unref();
  return () => clearInterval(timer);
}
