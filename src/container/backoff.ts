// Back-off without in-memory state where the runtime has a record (crash loops), and a small pluggable
// store where it has none (image pulls).
import type { Container } from "../pod/schema.js";
import { containerChanged } from "./hash.js";
import type { ContainerStatus, PodStatus } from "./types.js";

export interface PullBackOffStore {
  /** ms timestamp until which pulls of this key are backed off, and the current delay. */
  get(key: string): { until: number; delayMs: number } | undefined;
  set(key: string, value: { until: number; delayMs: number }): void;
  delete(key: string): void;
}

/** kubelet's container restart back-off (pkg/kubelet/kubelet.go: backOffPeriod 10 s, MaxContainerBackOff 300 s). */
export const BACKOFF_INITIAL_MS = 10_000;
export const BACKOFF_MAX_MS = 300_000;

export class MemoryPullBackOff implements PullBackOffStore {
  private readonly map = new Map<string, { until: number; delayMs: number }>();
  get(key: string) {
    return this.map.get(key);
  }
  set(key: string, v: { until: number; delayMs: number }) {
    if (this.map.size > 10_000) this.map.clear();
    this.map.set(key, v);
  }
  delete(key: string) {
    this.map.delete(key);
  }
}

/** The crash-loop delay after an instance with this back-off streak exited: 0, 10 s, 20 s, 40 s ... 300 s. */
export function backOffDelayMs(streak: number): number {
  if (streak <= 0) return 0;
  return Math.min(BACKOFF_MAX_MS, BACKOFF_INITIAL_MS * 2 ** Math.min(streak - 1, 30));
}

/** flowcontrol.Backoff resets when an instance ran longer than twice the maximum back-off. */
function backOffExpired(s: ContainerStatus): boolean {
  return s.startedAt > 0 && s.finishedAt - s.startedAt > 2 * BACKOFF_MAX_MS;
}

/** doBackOff, stateless: [in back-off, delay] from the newest exited instance of this container. kubelet keys its
 * back-off by getStableKey, which includes the container hash, so a changed container starts at once with a fresh
 * streak; podsync does the same for any spec change (its spec hash), not only name and image. */
export function crashLoopBackOff(
  container: Container,
  status: PodStatus,
  now: number,
): { inBackOff: boolean; delayMs: number; streak: number } {
  const last = status.containerStatuses.find((c) => c.name === container.name && c.state === "exited");
  if (!last || containerChanged(container, last)) return { inBackOff: false, delayMs: 0, streak: 0 };
  if (backOffExpired(last)) return { inBackOff: false, delayMs: 0, streak: 1 };
  const delayMs = backOffDelayMs(last.backoffStreak);
  const inBackOff = delayMs > 0 && now - last.finishedAt < delayMs;
  return { inBackOff, delayMs, streak: last.backoffStreak + 1 };
}

/** Go's time.Duration.String for a whole number of milliseconds ("10s", "1m20s", "5m0s", "1h0m0s", "1.5s",
 * "250ms", "0s"), so back-off messages read exactly as kubelet prints them. */
export function formatGoDuration(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`not a duration: ${ms}`);
  const neg = ms < 0;
  let rest = Math.round(Math.abs(ms));
  if (rest === 0) return "0s";
  if (rest < 1000) return `${neg ? "-" : ""}${rest}ms`;
  const frac = rest % 1000;
  rest = (rest - frac) / 1000;
  const secs = rest % 60;
  let out = `${secs}${frac ? `.${String(frac).padStart(3, "0").replace(/0+$/, "")}` : ""}s`;
  rest = (rest - secs) / 60;
  if (rest > 0) {
    const mins = rest % 60;
    out = `${mins}m${out}`;
    rest = (rest - mins) / 60;
    if (rest > 0) out = `${rest}h${out}`;
  }
  return neg ? `-${out}` : out;
}
