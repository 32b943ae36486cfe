// `null` as Go's encoding/json reads it: a null into a map, slice or pointer sets it to nil, into anything else it
// has no effect (encoding/json Unmarshal). So to the API server a field that is null is a field that is absent,
// and Go clients write one for every empty map or list they hold (`data: null` from Helm, `labels: null`,
// `env: null`, `volumes: null`, `creationTimestamp: null` from kubectl create --dry-run). Every document is read
// through this before its schema, once, generically: a required field that is null is then missing and gets the
// schema's "Required value", so nothing required is weakened. Elements of a list are kept (a null container is an
// error, as its zero value is on a cluster). A map's null value is dropped too; Go would keep the key with "" there.
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v);

/** A copy of `v` without the object keys whose value is null, at every depth (the input is not changed). */
export function withoutNulls<T>(v: T): T {
  if (Array.isArray(v)) return v.map(withoutNulls) as T;
  if (!isPlainObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = withoutNulls(x);
  return out as T;
}
