// JSON with object keys sorted, for comparing and hashing values that may arrive, or be stored, with their keys in
// another order. Members JSON.stringify leaves out (undefined, functions) are left out; in arrays they are null,
// as JSON.stringify writes them. Built by string concatenation, not a replacer: a converged sync compares a pod
// this way several times, and a replacer's sorted copies cost twice as much.

export function canonicalJSON(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (typeof (v as { toJSON?: unknown }).toJSON === "function") return canonicalJSON(JSON.parse(JSON.stringify(v)));
  if (Array.isArray(v)) {
    let s = "[";
    for (let i = 0; i < v.length; i++) s += (i ? "," : "") + canonicalJSON(v[i]);
    return `${s}]`;
  }
  const o = v as Record<string, unknown>;
  let s = "{";
  for (const k of Object.keys(o).sort()) {
    const x = o[k];
    if (x === undefined || typeof x === "function" || typeof x === "symbol") continue;
    s += `${s.length > 1 ? "," : ""}${JSON.stringify(k)}:${canonicalJSON(x)}`;
  }
  return `${s}}`;
}
