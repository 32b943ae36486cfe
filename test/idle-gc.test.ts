// The idle collector (src/host/idle-gc.ts): a full GC once the process goes quiet after a burst that left garbage
// behind; none while it works, none for the small garbage of periodic work, one per burst.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { idleGcDecider, startIdleGc } from "../src/host/idle-gc.js";

const MiB = 1024 * 1024;

describe("idleGcDecider", () => {
  const feed = (samples: [cpuMs: number, heapMiB: number, committedMiB?: number][]) => {
    const d = idleGcDecider(
      { minGarbageBytes: 16 * MiB, quietMs: 10, quietSamples: 3, busyMs: 100 },
      { used: 30 * MiB, committed: 32 * MiB },
    );
    return samples.map(([ms, heap, committed]) => {
      const due = d.sample(ms, { used: heap * MiB, committed: (committed ?? heap + 2) * MiB });
      if (due) d.collected({ used: 30 * MiB, committed: 32 * MiB });
      return due;
    });
  };

  it("idle from the start: never", () => {
    expect(
      feed([
        [0, 30],
        [1, 30],
        [0, 30],
        [0, 30],
        [0, 30],
      ]).some(Boolean),
    ).toBe(false);
  });

  it("a burst that grew the heap by 16 MiB or more, then three quiet samples: once, at the third", () => {
    expect(
      feed([
        [400, 50],
        [300, 70],
        [5, 70],
        [5, 70],
        [5, 70],
        [5, 30],
        [5, 30],
      ]),
    ).toEqual([false, false, false, false, true, false, false]);
  });

  it("never while busy; a busy sample starts the quiet count again", () => {
    expect(
      feed([
        [400, 70],
        [400, 70],
        [400, 70],
        [400, 70],
      ]).some(Boolean),
    ).toBe(false);
    expect(
      feed([
        [400, 70],
        [5, 70],
        [5, 70],
        [60, 72],
        [5, 72],
        [5, 72],
        [5, 72],
      ]),
    ).toEqual([false, false, false, false, false, false, true]);
  });

  it("periodic work that leaves a few MiB (a resync slot every 10 s): never", () => {
    const samples: [number, number][] = [];
    for (let i = 0; i < 60; i++)
      samples.push(i % 10 === 0 ? [80, 30 + (i / 10) * 2] : [2, 30 + Math.floor(i / 10) * 2]);
    expect(feed(samples).some(Boolean)).toBe(false);
  });

  it("a collection V8 made itself (the heap in use fell) moves the baseline down", () => {
    const d = idleGcDecider(
      { minGarbageBytes: 16 * MiB, quietMs: 10, quietSamples: 1, busyMs: 100 },
      { used: 60 * MiB, committed: 62 * MiB },
    );
    expect(d.sample(0, { used: 28 * MiB, committed: 30 * MiB })).toBe(false);
    expect(d.sample(300, { used: 50 * MiB, committed: 52 * MiB })).toBe(false);
    expect(d.sample(0, { used: 50 * MiB, committed: 52 * MiB })).toBe(true);
  });

  it("garbage the loop's trickle adds up, with no busy second: never (V8's own collections take it)", () => {
    const samples: [number, number][] = [];
    for (let i = 0; i < 120; i++) samples.push([i % 10 === 0 ? 40 : 2, 30 + i / 4]); // 30 MiB more over two minutes
    expect(feed(samples).some(Boolean)).toBe(false);
  });

  it("a burst that left the committed heap 4 MiB or more above where the last collection left it, with in use and the slack each under the 8: once", () => {
    // Measured after a 30-pod PUT: V8's own collections took the heap in use back to 22.5 MiB, and it held 33 committed.
    const o = { minGarbageBytes: 8 * MiB, minCommittedGrowthBytes: 4 * MiB, quietMs: 10, quietSamples: 3, busyMs: 100 };
    const d = idleGcDecider(o, { used: 22 * MiB, committed: 24 * MiB });
    const steps: [number, number, number][] = [
      [400, 40, 45],
      [300, 22.5, 33],
      [5, 27, 33],
      [5, 27, 33],
      [5, 27, 33],
      [5, 27, 33],
    ];
    const due = steps.map(([ms, used, committed]) => d.sample(ms, { used: used * MiB, committed: committed * MiB }));
    expect(due).toEqual([false, false, false, false, true, true]);
    d.collected({ used: 22 * MiB, committed: 24 * MiB });
    // Back where it was: 3 MiB of growth is not a reason, nor is a quiet spell with no burst before it.
    for (let i = 0; i < 5; i++) expect(d.sample(5, { used: 25 * MiB, committed: 27 * MiB })).toBe(false);
    expect(d.sample(300, { used: 30 * MiB, committed: 27 * MiB })).toBe(false);
    for (let i = 0; i < 5; i++) expect(d.sample(5, { used: 25 * MiB, committed: 27 * MiB })).toBe(false);
  });

  it("a burst whose garbage V8 collected but whose pages it kept (committed far above in use): once, then not again while that stays", () => {
    // 30 MiB in use of 52 committed after the burst; one collection (which may leave the pages where they are).
    expect(
      feed([
        [400, 45, 52],
        [300, 30, 52],
        [5, 30, 52],
        [5, 30, 52],
        [5, 30, 52],
      ]),
    ).toEqual([false, false, false, false, true]);
    const d = idleGcDecider(
      { minGarbageBytes: 16 * MiB, quietMs: 10, quietSamples: 1, busyMs: 100 },
      { used: 30 * MiB, committed: 32 * MiB },
    );
    expect(d.sample(500, { used: 30 * MiB, committed: 52 * MiB })).toBe(false);
    expect(d.sample(0, { used: 30 * MiB, committed: 52 * MiB })).toBe(true);
    d.collected({ used: 29 * MiB, committed: 50 * MiB }); // V8 kept them
    for (let i = 0; i < 10; i++) expect(d.sample(0, { used: 29 * MiB, committed: 50 * MiB })).toBe(false);
  });
});

describe("startIdleGc", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** The process as the collector sees it: its CPU (µs) and heap, and a burst of work that grows the heap. */
  const fakeProcess = () => {
    const p = {
      cpu: 0,
      heap: 30 * MiB,
      cpuMicros: () => p.cpu,
      heapBytes: () => ({ used: p.heap, committed: p.heap + 2 * MiB }),
      burst() {
        p.cpu += 500_000;
        p.heap = 80 * MiB;
      },
    };
    return p;
  };

  it("samples on its timer, collects twice once quiet after a burst, then not again; stops when told", () => {
    const p = fakeProcess();
    const compacting: boolean[] = [];
    let compactOn = false;
    const compactAll = (on: boolean) => {
      compactOn = on;
      compacting.push(on);
    };
    const gc = vi.fn(() => {
      compacting.push(compactOn); // what each collection ran with
      p.cpu += 30_000; // a collection's own 30 ms does not count as work
      p.heap = 30 * MiB;
    });
    const stop = startIdleGc({ gc, cpuMicros: p.cpuMicros, heapBytes: p.heapBytes, compactAll });
    p.burst();
    vi.advanceTimersByTime(1000);
    expect(gc).not.toHaveBeenCalled();
    vi.advanceTimersByTime(5000);
    expect(gc).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1000);
    expect(gc).toHaveBeenCalledTimes(2);
    // The first collection compacts every page, the second runs as V8's own do.
    expect(compacting).toEqual([true, true, false, false]);
    vi.advanceTimersByTime(10_000);
    expect(gc).toHaveBeenCalledTimes(2);
    p.burst();
    stop();
    vi.advanceTimersByTime(10_000);
    expect(gc).toHaveBeenCalledTimes(2);
  });

  it("clears the compaction flag even when the collection throws", () => {
    const p = fakeProcess();
    const flags: boolean[] = [];
    const gc = vi.fn(() => {
      throw new Error("no gc");
    });
    const stop = startIdleGc({
      gc,
      cpuMicros: p.cpuMicros,
      heapBytes: p.heapBytes,
      compactAll: (on) => flags.push(on),
    });
    p.burst();
    expect(() => vi.advanceTimersByTime(7000)).toThrow("no gc");
    expect(flags).toEqual([true, false]);
    stop();
  });
});
