// Package metrics/ — the metrics port the engine and the loop report to.
// Imports status/ and the front door's types only; prom-client lives in src/host/.
//
// The engine's metrics port: what the node agent reports (syncs, CRI calls, relists, pods by phase, the
// loop's restarts, the desired set's generation). The engine only calls these methods; the Node entry
// implements them with prom-client (src/host/metrics/metrics.ts) and serves them at GET /metrics. Workers pass none.
import type { PodPhase } from "../status/api-status.js";
import { SupersededError, type PodRuntime } from "../kubelet/pod-runtime.js";
import type { PodStatusCacheStats } from "../container/cache.js";

/** What started a sync: an HTTP request, or the node agent's loop. */
export type SyncTrigger = "request" | "loop";
/** ok: every step succeeded; failed: the sync ran but a step failed; error: the sync threw. */
export type SyncOutcome = "ok" | "failed" | "error";

/** Point-in-time values read when metrics are collected (not pushed on every relist). */
export interface MetricsSource {
  /** Desired pods by the phase of their last relisted status. */
  podPhases(): Record<PodPhase, number>;
  /** Pods with podsync's labels that the desired set does not hold (left alone by the loop). */
  orphanPods(): number;
  /** The desired set's generation as last read. */
  generation(): number;
}

export interface NodeMetrics {
  sync(trigger: SyncTrigger, outcome: SyncOutcome, seconds: number): void;
  criCall(method: string, code: string, seconds: number): void;
  /** One relist: how long it took, and how late it started against its schedule. */
  relist(seconds: number, lagSeconds: number, ok: boolean): void;
  /** A container the loop started again after it had run before (a restart, not a first start). */
  loopRestart(): void;
  /** The runtime's event stream went up or down (down: the loop relists at its interval). */
  eventStream?(up: boolean, source: string): void;
  /** One event from the runtime's stream (exited, changed). */
  runtimeEvent?(kind: string): void;
  setSource(source: MetricsSource): void;
  /** The status cache's counts (container/cache.ts), read when metrics are collected. */
  setStatusCache?(stats: () => PodStatusCacheStats): void;
}

/** The runtime's front door with each sync timed and counted under `trigger`. The lock, the fence and
 * everything else stay the wrapped runtime's, so a request and the loop still share one per-pod lock. */
export function instrumentRuntime(
  runtime: PodRuntime,
  metrics: NodeMetrics | undefined,
  trigger: SyncTrigger,
): PodRuntime {
  if (!metrics) return runtime;
  return {
    ...runtime,
    async sync(pod, probes, objects, guard) {
      const t0 = performance.now();
      try {
        const r = await runtime.sync(pod, probes, objects, guard);
        metrics.sync(trigger, r.ok ? "ok" : "failed", (performance.now() - t0) / 1000);
        return r;
      } catch (e) {
        // A superseded sync did nothing: not a sync to count.
        if (!(e instanceof SupersededError)) metrics.sync(trigger, "error", (performance.now() - t0) / 1000);
        throw e;
      }
    },
  };
}
