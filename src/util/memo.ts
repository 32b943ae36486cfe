// Results of a pure function remembered by the hash of its input's JSON: validation of a body the node already
// validated (issue #42 item 3: a converged sync sends the very pod the node stored) is answered with a copy of the
// result instead of being run again. The JSON is as the input is (not key-sorted): a client sends one manifest the
// same way each time, and the same content with its keys in another order is only a miss, validated in full. Only
// results are remembered (a call that throws is not), the caller gets a copy it may change, and the memo is
// bounded: the most recently used `max` entries.
import { createHash } from "node:crypto";

export interface ResultMemo<T> {
  /** `compute()`'s result for `input` (everything it reads): a copy of the remembered one when this input's hash
   * was computed before, else computed now and remembered (when it returns). */
  get(input: unknown, compute: () => T): T;
  readonly size: number;
  /** Hits and misses since it was made. */
  readonly stats: { hits: number; misses: number };
}

export function resultMemo<T>(max = 256): ResultMemo<T> {
  const seen = new Map<string, T>();
  const stats = { hits: 0, misses: 0 };
  return {
    get(input, compute) {
      const key = createHash("sha256").update(JSON.stringify(input)).digest("base64url");
      const known = seen.get(key);
      if (known !== undefined) {
        stats.hits++;
        seen.delete(key); // most recently used last
        seen.set(key, known);
        return structuredClone(known);
      }
      stats.misses++;
      const result = compute(); // a throw remembers nothing
      let copy: T;
      try {
        copy = structuredClone(result);
      } catch {
        return result; // not cloneable (a function in it): answered, not remembered
      }
      seen.set(key, copy);
      if (seen.size > max) seen.delete(seen.keys().next().value!);
      return result;
    },
    get size() {
      return seen.size;
    },
    stats,
  };
}
