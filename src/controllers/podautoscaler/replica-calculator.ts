// The HPA's replica calculator for resource metrics (pkg/controller/podautoscaler/replica_calculator.go:
// GetResourceReplicas, GetRawResourceReplicas → calcPlainMetricReplicas, groupPods, calculatePodRequests,
// removeMetricsForPods; metrics/utilization.go GetResourceUtilizationRatio, GetMetricUsageRatio). Pure: the pods
// as the relist shows them, their usage as the runtime reported it (src/controllers/podautoscaler/metrics.ts).
import type { Pod } from "../../pod/schema.js";
import { bytes, milliCPU } from "../../pod/quantity.js";
import type { ObservedPod } from "../pods.js";

export type ResourceName = "cpu" | "memory";

/** One pod's usage of a resource (cpu in millicores, memory in bytes), as metrics-server reports it. */
export interface PodMetric {
  value: number;
  /** When it was measured (ms) and over which window (ms). */
  timestamp: number;
  windowMs: number;
}

export interface CalculatorOptions {
  /** --horizontal-pod-autoscaler-tolerance: 0.1. */
  tolerance: number;
  /** --horizontal-pod-autoscaler-cpu-initialization-period: 5 min. */
  cpuInitializationPeriodMs: number;
  /** --horizontal-pod-autoscaler-initial-readiness-delay: 30 s. */
  delayOfInitialReadinessStatusMs: number;
}

export const DEFAULT_CALCULATOR: CalculatorOptions = {
  tolerance: 0.1,
  cpuInitializationPeriodMs: 5 * 60_000,
  delayOfInitialReadinessStatusMs: 30_000,
};

export interface Proposal {
  replicas: number;
  /** The utilization (percent of request) or the average value, as the status reports it. */
  utilization?: number;
  rawAverage: number;
}

/** groupPods: the ready pods with metrics, and the unready, missing and ignored ones. */
export function groupPods(
  pods: readonly ObservedPod[],
  metrics: ReadonlyMap<string, PodMetric>,
  resource: ResourceName,
  now: number,
  o: CalculatorOptions,
): { readyPodCount: number; unready: Set<string>; missing: Set<string>; ignored: Set<string> } {
  const unready = new Set<string>();
  const missing = new Set<string>();
  const ignored = new Set<string>();
  let readyPodCount = 0;
  for (const p of pods) {
    const name = p.pod.metadata.name;
    const phase = p.status?.phase ?? "Pending";
    // A pod being deleted or failed is ignored; a succeeded one is not (TestGroupPods).
    if (p.terminating || phase === "Failed") {
      ignored.add(name);
      continue;
    }
    if (phase === "Pending") {
      unready.add(name);
      continue;
    }
    const metric = metrics.get(name);
    if (!metric) {
      missing.add(name);
      continue;
    }
    if (resource === "cpu") {
      const cond = p.status?.conditions.find((c) => c.type === "Ready");
      const start = p.status?.startTime ? Date.parse(p.status.startTime) : undefined;
      const since = cond?.lastTransitionTime ? Date.parse(cond.lastTransitionTime) : 0;
      let isUnready: boolean;
      if (!cond || start === undefined) isUnready = true;
      else if (start + o.cpuInitializationPeriodMs > now)
        // Within the initialization period: ignore the metric if unready or measured before it became ready.
        isUnready = cond.status === "False" || metric.timestamp < since + metric.windowMs;
      // Ignore the metric if the pod is unready and has never been ready.
      else isUnready = cond.status === "False" && start + o.delayOfInitialReadinessStatusMs > since;
      if (isUnready) {
        unready.add(name);
        continue;
      }
    }
    readyPodCount++;
  }
  return { readyPodCount, unready, missing, ignored };
}

/** calculatePodRequests: each pod's request of the resource (containers summed, or the one container). */
export function podRequests(
  pods: readonly ObservedPod[],
  container: string | undefined,
  resource: ResourceName,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const { pod } of pods) {
    let sum = 0;
    for (const c of pod.spec.containers) {
      if (container !== undefined && c.name !== container) continue;
      const q = requestOf(pod, c.name, resource);
      if (q === undefined)
        throw new Error(`missing request for ${resource} in container ${c.name} of Pod ${pod.metadata.name}`);
      sum += q;
    }
    out.set(pod.metadata.name, sum);
  }
  return out;
}

function requestOf(pod: Pod, container: string, resource: ResourceName): number | undefined {
  const c = pod.spec.containers.find((x) => x.name === container);
  const raw = c?.resources?.requests?.[resource] ?? c?.resources?.limits?.[resource];
  if (raw === undefined) return undefined;
  return resource === "cpu" ? milliCPU(raw) : bytes(raw);
}

/** GetResourceUtilizationRatio: usage over request of the pods that have both, against the target. */
export function utilizationRatio(
  metrics: ReadonlyMap<string, number>,
  requests: ReadonlyMap<string, number>,
  target: number,
): { ratio: number; utilization: number; rawAverage: number } {
  let metricsTotal = 0;
  let requestsTotal = 0;
  let n = 0;
  for (const [pod, value] of metrics) {
    const req = requests.get(pod);
    if (req === undefined) continue;
    metricsTotal += value;
    requestsTotal += req;
    n++;
  }
  if (requestsTotal === 0) throw new Error("no metrics returned matched known pods");
  const utilization = Math.trunc((metricsTotal * 100) / requestsTotal);
  return { ratio: utilization / target, utilization, rawAverage: Math.trunc(metricsTotal / n) };
}

/** removeMetricsForPods of the ignored and unready pods: the values that count. */
const counted = (m: ReadonlyMap<string, PodMetric>, ...drop: Set<string>[]) =>
  new Map([...m].filter(([k]) => !drop.some((d) => d.has(k))).map(([k, v]) => [k, v.value]));

/** GetResourceReplicas: the replicas a Utilization target asks for. */
export function resourceReplicas(
  currentReplicas: number,
  targetUtilization: number,
  resource: ResourceName,
  pods: readonly ObservedPod[],
  podMetrics: ReadonlyMap<string, PodMetric>,
  container: string | undefined,
  now: number,
  o: CalculatorOptions,
): Proposal {
  if (pods.length === 0) throw new Error("no pods returned by selector while calculating replica count");
  const { readyPodCount, unready, missing, ignored } = groupPods(pods, podMetrics, resource, now, o);
  const metrics = counted(podMetrics, ignored, unready);
  const requests = podRequests(pods, container, resource);
  if (metrics.size === 0) throw new Error("did not receive metrics for targeted pods (pods might be unready)");
  const first = utilizationRatio(metrics, requests, targetUtilization);
  const scaleUpWithUnready = unready.size > 0 && first.ratio > 1.0;
  if (!scaleUpWithUnready && missing.size === 0) {
    if (Math.abs(1.0 - first.ratio) <= o.tolerance)
      return { replicas: currentReplicas, utilization: first.utilization, rawAverage: first.rawAverage };
    return {
      replicas: Math.ceil(first.ratio * readyPodCount),
      utilization: first.utilization,
      rawAverage: first.rawAverage,
    };
  }
  if (missing.size > 0) {
    if (first.ratio < 1.0) {
      // On a scale-down, a missing pod counts as using its request (or the target, if above 100 %).
      const fallback = Math.max(100, targetUtilization);
      for (const name of missing) metrics.set(name, ((requests.get(name) ?? 0) * fallback) / 100);
    } else if (first.ratio > 1.0) for (const name of missing) metrics.set(name, 0);
  }
  if (scaleUpWithUnready) for (const name of unready) metrics.set(name, 0);
  const next = utilizationRatio(metrics, requests, targetUtilization);
  if (
    Math.abs(1.0 - next.ratio) <= o.tolerance ||
    (first.ratio < 1.0 && next.ratio > 1.0) ||
    (first.ratio > 1.0 && next.ratio < 1.0)
  )
    return { replicas: currentReplicas, utilization: first.utilization, rawAverage: first.rawAverage };
  const replicas = Math.ceil(next.ratio * metrics.size);
  if ((next.ratio < 1.0 && replicas > currentReplicas) || (next.ratio > 1.0 && replicas < currentReplicas))
    return { replicas: currentReplicas, utilization: first.utilization, rawAverage: first.rawAverage };
  return { replicas, utilization: first.utilization, rawAverage: first.rawAverage };
}

/** GetRawResourceReplicas → calcPlainMetricReplicas: the replicas an AverageValue target asks for. */
export function rawResourceReplicas(
  currentReplicas: number,
  targetAverage: number,
  resource: ResourceName,
  pods: readonly ObservedPod[],
  podMetrics: ReadonlyMap<string, PodMetric>,
  now: number,
  o: CalculatorOptions,
): Proposal {
  if (pods.length === 0) throw new Error("no pods returned by selector while calculating replica count");
  const { readyPodCount, unready, missing, ignored } = groupPods(pods, podMetrics, resource, now, o);
  const metrics = counted(podMetrics, ignored, unready);
  if (metrics.size === 0) throw new Error("did not receive metrics for targeted pods (pods might be unready)");
  const ratioOf = (m: Map<string, number>) => {
    const total = [...m.values()].reduce((a, b) => a + b, 0);
    return { ratio: total / m.size / targetAverage, average: Math.trunc(total / m.size) };
  };
  const first = ratioOf(metrics);
  const scaleUpWithUnready = unready.size > 0 && first.ratio > 1.0;
  if (!scaleUpWithUnready && missing.size === 0) {
    if (Math.abs(1.0 - first.ratio) <= o.tolerance) return { replicas: currentReplicas, rawAverage: first.average };
    return { replicas: Math.ceil(first.ratio * readyPodCount), rawAverage: first.average };
  }
  if (missing.size > 0) {
    if (first.ratio < 1.0) for (const name of missing) metrics.set(name, targetAverage);
    else for (const name of missing) metrics.set(name, 0);
  }
  if (scaleUpWithUnready) for (const name of unready) metrics.set(name, 0);
  const next = ratioOf(metrics);
  if (
    Math.abs(1.0 - next.ratio) <= o.tolerance ||
    (first.ratio < 1.0 && next.ratio > 1.0) ||
    (first.ratio > 1.0 && next.ratio < 1.0)
  )
    return { replicas: currentReplicas, rawAverage: first.average };
  const replicas = Math.ceil(next.ratio * metrics.size);
  if ((next.ratio < 1.0 && replicas > currentReplicas) || (next.ratio > 1.0 && replicas < currentReplicas))
    return { replicas: currentReplicas, rawAverage: first.average };
  return { replicas, rawAverage: first.average };
}
