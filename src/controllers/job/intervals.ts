// Indexed Jobs' sets of indexes in compressed form, as upstream keeps them (pkg/controller/job/indexed_job_utils.go:
// orderedIntervals, withOrderedIndexes, merge, has, total, String, parseIndexesFromString; firstPendingIndexes).
// A set is sorted, disjoint, non-adjacent [first, last] intervals, so "0-2147483646" costs one pair, not 2^31
// numbers: nothing here allocates per completion, only per interval and per pod.

/** [first, last], both included. */
export type Interval = readonly [number, number];
export type Intervals = readonly Interval[];

/** withOrderedIndexes over nothing: the set of some indexes (any order, repeats allowed). */
export function intervalsOf(xs: Iterable<number>): Intervals {
  const sorted = [...new Set(xs)].sort((a, b) => a - b);
  const out: [number, number][] = [];
  for (const x of sorted) {
    const last = out[out.length - 1];
    if (last && x === last[1] + 1) last[1] = x;
    else out.push([x, x]);
  }
  return out;
}

/** orderedIntervals.merge: the union of two sets. */
export function mergeIntervals(a: Intervals, b: Intervals): Intervals {
  const all = [...a, ...b].sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [f, l] of all) {
    const last = out[out.length - 1];
    if (last && f <= last[1] + 1) last[1] = Math.max(last[1], l);
    else out.push([f, l]);
  }
  return out;
}

/** orderedIntervals.has (a binary search). */
export function intervalsHas(iv: Intervals, x: number): boolean {
  let lo = 0;
  let hi = iv.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [f, l] = iv[mid]!;
    if (x < f) hi = mid - 1;
    else if (x > l) lo = mid + 1;
    else return true;
  }
  return false;
}

/** orderedIntervals.total: how many indexes. */
export const intervalsSize = (iv: Intervals): number => iv.reduce((n, [f, l]) => n + l - f + 1, 0);

/** orderedIntervals.String: "1,3-5"; two in a row are written as two ("4,5"), longer runs as a range. */
export const formatIntervals = (iv: Intervals): string =>
  iv.map(([f, l]) => (l === f ? `${f}` : l === f + 1 ? `${f},${l}` : `${f}-${l}`)).join(",");

/** parseIndexesFromString: the intervals of "1,3-5" below completions (what does not parse is left out). */
export function parseIntervals(s: string | undefined, completions: number): Intervals {
  const parts: [number, number][] = [];
  for (const part of (s ?? "").split(",")) {
    const m = /^([0-9]{1,10})(?:-([0-9]{1,10}))?$/.exec(part.trim());
    if (!m) continue;
    const first = Number(m[1]);
    const last = Math.min(m[2] === undefined ? first : Number(m[2]), completions - 1);
    if (first <= last) parts.push([first, last]);
  }
  return mergeIntervals(parts, []);
}

/** firstPendingIndexes: the lowest `count` indexes below completions that are not in `taken` and that `accept`
 * takes, walking the gaps between taken intervals: bounded by the intervals and `count`, never by completions
 * (an index `accept` refuses, one in back-off, costs one step; there are at most as many as pods). */
export function firstPendingIndexes(
  taken: Intervals,
  count: number,
  completions: number,
  accept: (i: number) => boolean = () => true,
): number[] {
  const out: number[] = [];
  let candidate = 0;
  const fill = (below: number) => {
    for (; candidate < Math.min(below, completions) && out.length < count; candidate++)
      if (accept(candidate)) out.push(candidate);
  };
  for (const [f, l] of taken) {
    fill(f);
    if (out.length >= count || candidate >= completions) return out;
    candidate = Math.max(candidate, l + 1);
  }
  fill(completions);
  return out;
}
