// Package host/metrics/ — measurements on this node: prom-client's /metrics, the node's CPU and memory, disk usage.
// Implements metrics/'s and eviction/'s ports; imports layers below; never HTTP, state/ or an entry point.
//
// The node agent's metrics with prom-client (Node only: prom-client needs Node's process and perf APIs, so it
// stays out of the Worker bundle, which serves no /metrics). Implements the engine's NodeMetrics port on a
// registry of its own, plus prom-client's default process metrics (CPU, memory, event-loop lag).
import { createRequire } from "node:module";
import type * as PromClient from "prom-client";
import type { MetricsSource, NodeMetrics } from "../../metrics/metrics.js";
import type { PodStatusCacheStats } from "../../container/cache.js";

export interface PromMetrics extends NodeMetrics {
  /** The Prometheus text exposition. */
  render(): Promise<string>;
  readonly contentType: string;
}

// prom-client's classes and default metrics from their own files, not from its index. The index also loads the
// Summary (and tdigest), the Pushgateway, the cluster aggregator and, through its process CPU metric,
// @opentelemetry/api (for exemplars, which podsync does not use): 65 of its 89 modules and 1 MiB of the 1.5 MiB of
// heap it costs, on every node that serves /metrics. The version is pinned; test/http/metrics.test.ts reads the
// exposition, default metrics included.
const require = createRequire(import.meta.url);
const Registry = require("prom-client/lib/registry") as typeof PromClient.Registry;
const Counter = require("prom-client/lib/counter") as typeof PromClient.Counter;
const Gauge = require("prom-client/lib/gauge") as typeof PromClient.Gauge;
const Histogram = require("prom-client/lib/histogram") as typeof PromClient.Histogram;
type DefaultMetric = (
  registry: PromClient.Registry,
  config: PromClient.DefaultMetricsCollectorConfiguration<PromClient.RegistryContentType>,
) => void;
/** collectDefaultMetrics's list (lib/defaultMetrics.js) without processCpuTotal, which processCpu below replaces. */
const DEFAULT_METRICS = [
  "processStartTime",
  "osMemoryHeap",
  "processOpenFileDescriptors",
  "processMaxFileDescriptors",
  "eventLoopLag",
  "processResources",
  "processHandles",
  "processRequests",
  "heapSizeAndUsed",
  "heapSpacesSizeAndUsed",
  "version",
  "gc",
];

/** prom-client's processCpuTotal without exemplars: the same three counters, counted from when they were made. */
function processCpu(registry: PromClient.Registry): void {
  let last = process.cpuUsage();
  const registers = [registry];
  const user = new Counter({
    name: "process_cpu_user_seconds_total",
    help: "Total user CPU time spent in seconds.",
    registers,
    // One collect sets all three, as prom-client's does.
    collect() {
      const now = process.cpuUsage();
      const u = (now.user - last.user) / 1e6;
      const s = (now.system - last.system) / 1e6;
      last = now;
      user.inc(u);
      system.inc(s);
      total.inc(u + s);
    },
  });
  const system = new Counter({
    name: "process_cpu_system_seconds_total",
    help: "Total system CPU time spent in seconds.",
    registers,
  });
  const total = new Counter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
    registers,
  });
}

export function createPromMetrics(): PromMetrics {
  const registry = new Registry();
  // The event-loop lag histogram sampled every 100 ms, not prom-client's 10 ms: at 10 ms its timer alone was about
  // 0.5 % of a core on an idle node (measured: an idle server with 30 pods, 1.1 % → 0.6 %).
  processCpu(registry);
  for (const name of DEFAULT_METRICS)
    (require(`prom-client/lib/metrics/${name}`) as DefaultMetric)(registry, { eventLoopMonitoringPrecision: 100 });
  let source: MetricsSource | undefined;
  let cacheStats: (() => PodStatusCacheStats) | undefined;

  const syncs = new Counter({
    name: "podsync_syncs_total",
    help: "Pod syncs by what started them (request, loop) and how they ended (ok, failed: a step failed, error: the sync threw).",
    labelNames: ["trigger", "result"] as const,
    registers: [registry],
  });
  const syncSeconds = new Histogram({
    name: "podsync_sync_duration_seconds",
    help: "Pod sync latency (status read, steps, read-back), by trigger.",
    labelNames: ["trigger"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const criCalls = new Counter({
    name: "podsync_cri_calls_total",
    help: "CRI calls by method and gRPC code (OK on success).",
    labelNames: ["method", "code"] as const,
    registers: [registry],
  });
  const relistSeconds = new Histogram({
    name: "podsync_relist_duration_seconds",
    help: "How long one relist of the node took (list calls, detail reads, decisions).",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const relistLag = new Histogram({
    name: "podsync_relist_lag_seconds",
    help: "How late a relist started against its schedule (a busy event loop or a slow previous relist).",
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10],
    registers: [registry],
  });
  const relistFailures = new Counter({
    name: "podsync_relist_failures_total",
    help: "Relists that failed (the runtime unreachable, or a list call failed).",
    registers: [registry],
  });
  const relistLast = new Gauge({
    name: "podsync_relist_last_success_timestamp_seconds",
    help: "When the last relist succeeded (alert on time() minus this).",
    registers: [registry],
  });
  const eventsUp = new Gauge({
    name: "podsync_runtime_events_up",
    help: "1 while the runtime's event stream is open (exits restart containers at once, the relist is the safety net); 0 while the loop falls back to relisting at its interval. By source: cri (GetContainerEvents) or containerd (its event service).",
    labelNames: ["source"] as const,
    registers: [registry],
  });
  const eventStreamDowns = new Counter({
    name: "podsync_runtime_event_stream_failures_total",
    help: "Times the runtime's event stream could not be opened or was lost (it is opened again with a back-off).",
    registers: [registry],
  });
  const events = new Counter({
    name: "podsync_runtime_events_total",
    help: "Events received from the runtime's stream, by kind (exited, changed).",
    labelNames: ["kind"] as const,
    registers: [registry],
  });
  let eventSource = "";
  const restarts = new Counter({
    name: "podsync_loop_container_restarts_total",
    help: "Containers the reconcile loop started again after they had run (restarts, not first starts).",
    registers: [registry],
  });
  registerSourceGauges(registry, () => source);
  registerCacheCounters(registry, () => cacheStats);

  return {
    sync: (trigger, result, seconds) => {
      syncs.inc({ trigger, result });
      syncSeconds.observe({ trigger }, seconds);
    },
    criCall: (method, code) => criCalls.inc({ method, code }),
    relist: (seconds, lag, ok) => {
      relistSeconds.observe(seconds);
      relistLag.observe(lag);
      if (ok) relistLast.set(Date.now() / 1000);
      else relistFailures.inc();
    },
    loopRestart: () => restarts.inc(),
    eventStream: (up, source) => {
      if (source !== eventSource && eventSource) eventsUp.remove({ source: eventSource });
      if (source) eventSource = source;
      eventsUp.set({ source: eventSource || "none" }, up ? 1 : 0);
      if (!up) eventStreamDowns.inc();
    },
    runtimeEvent: (kind) => events.inc({ kind }),
    setSource: (s) => {
      source = s;
    },
    setStatusCache: (stats) => {
      cacheStats = stats;
    },
    render: () => registry.metrics(),
    contentType: registry.contentType,
  };
}

/** The gauges read from the loop's source at collection: pods by phase, orphan pods, the desired generation. */
function registerSourceGauges(registry: PromClient.Registry, get: () => MetricsSource | undefined): void {
  new Gauge({
    name: "podsync_pods",
    help: "Desired pods by phase of their last relisted status.",
    labelNames: ["phase"] as const,
    registers: [registry],
    collect() {
      const source = get();
      if (!source) return;
      for (const [phase, n] of Object.entries(source.podPhases())) this.set({ phase }, n);
    },
  });
  new Gauge({
    name: "podsync_orphan_pods",
    help: "Pods with podsync's labels that the desired state does not hold (the loop leaves them alone).",
    registers: [registry],
    collect() {
      const source = get();
      if (source) this.set(source.orphanPods());
    },
  });
  new Gauge({
    name: "podsync_desired_generation",
    help: "The desired set's generation (0 before any PUT /v1/node/pods).",
    registers: [registry],
    collect() {
      const source = get();
      if (source) this.set(source.generation());
    },
  });
}

/** The pod status cache's reads and invalidations, counted by the cache itself. */
function registerCacheCounters(
  registry: PromClient.Registry,
  get: () => (() => PodStatusCacheStats) | undefined,
): void {
  // Counted by the cache itself; copied at collection (a sync's hot path pays no metric call for it).
  new Counter({
    name: "podsync_pod_status_cache_reads_total",
    help: "Sync decisions that read the pod's status from the status cache (hit: no CRI call) or from the runtime (miss), while runtime events are on.",
    labelNames: ["result"] as const,
    registers: [registry],
    collect() {
      const st = get()?.();
      if (!st) return;
      this.reset();
      this.inc({ result: "hit" }, st.hits);
      this.inc({ result: "miss" }, st.misses);
    },
  });
  new Counter({
    name: "podsync_pod_status_cache_invalidations_total",
    help: "Cached pod statuses dropped: a runtime event for the pod (or for an unknown container), the event stream going down or up, or a sync that acted.",
    registers: [registry],
    collect() {
      const st = get()?.();
      if (!st) return;
      this.reset();
      this.inc(st.invalidations);
    },
  });
}
