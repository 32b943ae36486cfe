// The field names a schema knows at a path, for "did you mean" on an unknown field (kubectl's strict decoding
// names the unknown field; podsync also names the nearest known one, as a typo usually is).
import type { z } from "zod";

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  getter?: () => z.ZodType;
  options?: z.ZodType[];
  element?: z.ZodType;
  valueType?: z.ZodType;
  left?: z.ZodType;
  right?: z.ZodType;
};
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** The object schemas a value at this schema can be (wrappers and unions opened). */
function objects(s: z.ZodType, depth = 0): Def[] {
  if (depth > 20) return [];
  const d = defOf(s);
  if (d.type === "object") return [d];
  if (d.innerType) return objects(d.innerType, depth + 1);
  if (d.type === "pipe" && d.in) return objects(d.in, depth + 1);
  if (d.type === "lazy" && d.getter) return objects(d.getter(), depth + 1);
  if (d.type === "union" && d.options) return d.options.flatMap((o) => objects(o, depth + 1));
  if (d.type === "intersection" && d.left && d.right)
    return [...objects(d.left, depth + 1), ...objects(d.right, depth + 1)];
  return [];
}

/** The schemas at `path` under `schema` (several where a union branches). */
function at(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType[] {
  let cur = [schema];
  for (const k of path) {
    const next: z.ZodType[] = [];
    for (const s of cur) {
      if (typeof k === "number") {
        const d = unwrapArray(s);
        if (d) next.push(d);
      } else
        for (const o of objects(s)) if (o.shape && Object.hasOwn(o.shape, String(k))) next.push(o.shape[String(k)]!);
    }
    cur = next;
  }
  return cur;
}

function unwrapArray(s: z.ZodType, depth = 0): z.ZodType | undefined {
  if (depth > 20) return undefined;
  const d = defOf(s);
  if (d.type === "array") return d.element;
  if (d.type === "record") return d.valueType;
  if (d.innerType) return unwrapArray(d.innerType, depth + 1);
  if (d.type === "pipe" && d.in) return unwrapArray(d.in, depth + 1);
  if (d.type === "lazy" && d.getter) return unwrapArray(d.getter(), depth + 1);
  return undefined;
}

/** The field names known at `path`; `branches`: for a union of objects (a volume's source), the fields that set
 * its branches apart. */
export function knownFields(schema: z.ZodType, path: readonly PropertyKey[]): { fields: string[]; branches: string[] } {
  const objs = at(schema, path).flatMap((s) => objects(s));
  const keysOf = (o: Def) => Object.keys(o.shape ?? {});
  const fields = [...new Set(objs.flatMap(keysOf))];
  if (objs.length < 2) return { fields, branches: [] };
  const common = fields.filter((f) => objs.every((o) => keysOf(o).includes(f)));
  return { fields, branches: fields.filter((f) => !common.includes(f)) };
}

/** The known field nearest to `name` (same letters in another case, or at most 2 edits, a third of its length). */
export function nearest(name: string, known: readonly string[]): string | undefined {
  let best: { f: string; d: number } | undefined;
  for (const f of known) {
    const d = f.toLowerCase() === name.toLowerCase() ? 0 : distance(name, f);
    if (d <= Math.min(2, Math.floor(f.length / 3)) && (!best || d < best.d)) best = { f, d };
  }
  return best?.f;
}

/** Levenshtein distance. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}
