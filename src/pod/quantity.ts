// Kubernetes resource quantities ("500m", "1.5", "128Mi", "1G", "1e3"), enough for cpu and memory.
const SUFFIX: Record<string, number> = {
  "": 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const QUANTITY = /^([+]?[0-9]+(?:\.[0-9]*)?|[+]?\.[0-9]+)(?:([eE][+-]?[0-9]+)|(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei))?$/;

/** The quantity's value in base units (cores for cpu, bytes for memory), or undefined if malformed. */
export function parseQuantity(q: string | number): number | undefined {
  if (typeof q === "number") return Number.isFinite(q) && q >= 0 ? q : undefined;
  const m = QUANTITY.exec(q.trim());
  if (!m) return undefined;
  const base = Number(m[1]);
  const v = m[2] ? base * 10 ** Number(m[2].slice(1)) : base * SUFFIX[m[3] ?? ""]!;
  return Number.isFinite(v) ? v : undefined;
}

/** cpu quantity → millicores, rounded up the way resource.Quantity.MilliValue does. */
export function milliCPU(q: string | number): number {
  return Math.ceil((parseQuantity(q) ?? 0) * 1000 - 1e-9);
}

export function bytes(q: string | number): number {
  return Math.ceil((parseQuantity(q) ?? 0) - 1e-9);
}
