// Validated bodies, remembered by the canonical hash of their input (issue #42 item 3): a converged sync sends the
// very pod the node already validated and stored, and validating it again (cleaning, zod, references) gives the
// same result, since validation is a pure function of the input and the intake options. So a body whose input
// hashes to one validated before is answered with a copy of that result, and anything else (a changed pod, a new
// one, a refused one: only bodies that validated are remembered) is validated in full. Bounded: the most recently
// used `max` bodies, so about the node's pods (kubelet's maxPods is 110) and never more.
import { createHash } from "node:crypto";
import type { Body } from "./bundle.js";
import type { IntakeOptions, Item } from "./workloads/intake.js";

/** JSON with object keys sorted and undefined members left out (JSON.stringify's), so the same object sent with
 * its keys in another order hashes alike. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? "null" : canonicalJson(x))).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const parts: string[] = [];
    for (const k of Object.keys(o).sort())
      if (o[k] !== undefined) parts.push(`${JSON.stringify(k)}:${canonicalJson(o[k])}`);
    return `{${parts.join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

export interface BodyMemo {
  /** `validate(items, payload, o)`'s result for this input: remembered if it was validated before, else
   * validated now (and remembered if it passed). The caller owns the body it gets (a copy). */
  body(
    items: readonly Item[],
    payload: Record<string, unknown>,
    o: IntakeOptions,
    validate: (items: readonly Item[], payload: Record<string, unknown>, o: IntakeOptions) => Body,
  ): Body;
  readonly size: number;
  /** Hits and misses since it was made (tests, /metrics-free diagnostics). */
  readonly stats: { hits: number; misses: number };
}

export function bodyMemo(max = 256): BodyMemo {
  const seen = new Map<string, Body>();
  const stats = { hits: 0, misses: 0 };
  return {
    body(items, payload, o, validate) {
      // Everything validation reads: the items (input, place), the payload's objects and the options.
      const key = createHash("sha256")
        .update(
          canonicalJson({
            items: items.map((i) => [i.at, i.podByPlace === true, i.input]),
            configMaps: payload["configMaps"],
            secrets: payload["secrets"],
            o: { ...o, bodies: undefined },
          }),
        )
        .digest("base64url");
      const known = seen.get(key);
      if (known) {
        stats.hits++;
        seen.delete(key); // most recently used last
        seen.set(key, known);
        return structuredClone(known);
      }
      stats.misses++;
      const body = validate(items, payload, o); // throws for a bad body: nothing remembered
      seen.set(key, structuredClone(body));
      if (seen.size > max) seen.delete(seen.keys().next().value!);
      return body;
    },
    get size() {
      return seen.size;
    },
    stats,
  };
}
