// Every CRI call's deadline, kept finite and in range whatever a caller computed. grpc-js throws
// "Deadline is too far in the future" for a deadline past ~1e8 hours, and it throws asynchronously, which
// crashes the process; NaN does the same. Node timers (and AbortSignal.timeout) cannot wait past 2^31-1 ms.

/** The longest a CRI call may wait: the largest delay a Node timer holds (about 24.8 days). */
export const MAX_DEADLINE_MS = 2 ** 31 - 1;

/** A usable per-call timeout: `fallback` when absent or NaN, then within [1, MAX_DEADLINE_MS] ms. */
export function clampTimeoutMs(ms: number | undefined, fallback: number): number {
  const t = ms === undefined || Number.isNaN(ms) ? fallback : ms;
  if (!(t >= 1)) return 1;
  return Math.min(MAX_DEADLINE_MS, Math.ceil(t));
}

/** The grpc-timeout header for a clamped timeout: at most 8 digits, as the gRPC wire spec requires. */
export function grpcTimeoutHeader(ms: number): string {
  return ms < 1e8 ? `${Math.max(1, Math.ceil(ms))}m` : `${Math.ceil(ms / 1000)}S`;
}

/** A call's deadline from its options: `timeoutMs`, else the transport's default plus the call's `workMs`. */
export function callTimeoutMs(options: { timeoutMs?: number; workMs?: number } | undefined, fallback: number): number {
  const work = options?.workMs;
  return clampTimeoutMs(options?.timeoutMs ?? (work === undefined ? undefined : fallback + work), fallback);
}
