// Package controllers/podautoscaler/ — the HPA: replica calculation (pure) and the pods' usage read from CRI stats.
// Imports ../ (the controllers' types), cri/ (metrics.ts only) and pod/workloads/; never HTTP.
//
// The HorizontalPodAutoscaler's reconcile on one node (pkg/controller/podautoscaler/horizontal.go:
// reconcileAutoscaler, computeReplicasForMetrics, normalizeDesiredReplicas (no behavior: the downscale
// stabilisation window and the scale-up limit max(2×current, 4)), normalizeDesiredReplicasWithBehaviors,
// stabilizeRecommendationWithBehaviors, convertDesiredReplicasWithBehaviorRate,
// calculateScaleUpLimitWithScalingRules, calculateScaleDownLimitWithBehaviors, getReplicasChangePerPeriod,
// storeScaleEvent; pkg/apis/autoscaling/v2/defaults.go GenerateHPAScaleUpRules/GenerateHPAScaleDownRules).
// Pure: the HPA, its target's replicas and pods, their usage and the controller's memory (recommendations and
// scale events, kept in memory as upstream keeps them) in; the replicas to set, the status and the memory out.
import type { HorizontalPodAutoscaler } from "../../pod/workloads/schema.js";
import type { ObservedPod } from "../pods.js";
import { setCondition, type Condition } from "../types.js";
import {
  rawResourceReplicas,
  resourceReplicas,
  type CalculatorOptions,
  type PodMetric,
  type Proposal,
  type ResourceName,
} from "./replica-calculator.js";
import { bytes, milliCPU } from "../../pod/quantity.js";

export interface HpaOptions extends CalculatorOptions {
  /** --horizontal-pod-autoscaler-downscale-stabilization: 5 min. */
  downscaleStabilisationWindowMs: number;
}

/** What the controller remembers per HPA (upstream: a.recommendations, a.scaleUpEvents, a.scaleDownEvents). */
export interface HpaMemory {
  recommendations: { replicas: number; at: number }[];
  scaleUpEvents: { change: number; at: number }[];
  scaleDownEvents: { change: number; at: number }[];
}
export const emptyMemory = (): HpaMemory => ({ recommendations: [], scaleUpEvents: [], scaleDownEvents: [] });

/** Per pod and container name, the usage the runtime reported (cpu millicores, memory bytes). */
export type PodUsage = ReadonlyMap<
  string,
  { timestamp: number; windowMs: number; containers: ReadonlyMap<string, { cpu: number; memory: number }> }
>;

export interface HpaStatus {
  currentReplicas: number;
  desiredReplicas: number;
  currentMetrics: unknown[];
  lastScaleTime?: string;
  conditions: Condition[];
  [k: string]: unknown;
}

export type Policy = { type: "Pods" | "Percent"; value: number; periodSeconds: number };
export type Rules = {
  stabilizationWindowSeconds: number;
  selectPolicy: "Max" | "Min" | "Disabled";
  policies: Policy[];
};

/** GenerateHPAScaleUpRules / GenerateHPAScaleDownRules (the scale-down window: the controller's flag). */
export function behaviorRules(hpa: HorizontalPodAutoscaler, downWindowS: number): { up: Rules; down: Rules } {
  const b = hpa.spec.behavior ?? {};
  return {
    up: {
      stabilizationWindowSeconds: b.scaleUp?.stabilizationWindowSeconds ?? 0,
      selectPolicy: b.scaleUp?.selectPolicy ?? "Max",
      policies: b.scaleUp?.policies ?? [
        { type: "Pods", value: 4, periodSeconds: 15 },
        { type: "Percent", value: 100, periodSeconds: 15 },
      ],
    },
    down: {
      stabilizationWindowSeconds: b.scaleDown?.stabilizationWindowSeconds ?? downWindowS,
      selectPolicy: b.scaleDown?.selectPolicy ?? "Max",
      policies: b.scaleDown?.policies ?? [{ type: "Percent", value: 100, periodSeconds: 15 }],
    },
  };
}

/** getReplicasChangePerPeriod. */
const changeIn = (periodSeconds: number, events: HpaMemory["scaleUpEvents"], now: number) =>
  events.filter((e) => e.at > now - periodSeconds * 1000).reduce((a, e) => a + e.change, 0);

/** calculateScaleUpLimitWithScalingRules. */
export function scaleUpLimit(current: number, m: HpaMemory, r: Rules, now: number): number {
  if (r.selectPolicy === "Disabled") return current;
  const pick = r.selectPolicy === "Min" ? Math.min : Math.max;
  let result = r.selectPolicy === "Min" ? 2 ** 31 - 1 : -(2 ** 31);
  for (const p of r.policies) {
    const start =
      current - changeIn(p.periodSeconds, m.scaleUpEvents, now) + changeIn(p.periodSeconds, m.scaleDownEvents, now);
    const proposed = p.type === "Pods" ? start + p.value : Math.ceil(start * (1 + p.value / 100));
    result = pick(result, proposed);
  }
  return result;
}

/** calculateScaleDownLimitWithBehaviors. */
export function scaleDownLimit(current: number, m: HpaMemory, r: Rules, now: number): number {
  if (r.selectPolicy === "Disabled") return current;
  const pick = r.selectPolicy === "Min" ? Math.max : Math.min;
  let result = r.selectPolicy === "Min" ? -(2 ** 31) : 2 ** 31 - 1;
  for (const p of r.policies) {
    const start =
      current - changeIn(p.periodSeconds, m.scaleUpEvents, now) + changeIn(p.periodSeconds, m.scaleDownEvents, now);
    const proposed = p.type === "Pods" ? start - p.value : Math.trunc(start * (1 - p.value / 100));
    result = pick(result, proposed);
  }
  return result;
}

type Limited = { replicas: number; reason: string; message: string };

/** stabilizeRecommendationWithBehaviors (records the unstabilized recommendation in `m`). */
export function stabilizeWithBehaviors(
  current: number,
  desired: number,
  up: Rules,
  down: Rules,
  m: HpaMemory,
  now: number,
): Limited {
  const upCutoff = now - up.stabilizationWindowSeconds * 1000;
  const downCutoff = now - down.stabilizationWindowSeconds * 1000;
  let upRec = desired;
  let downRec = desired;
  let old = -1;
  m.recommendations.forEach((rec, i) => {
    if (rec.at > upCutoff) upRec = Math.min(rec.replicas, upRec);
    if (rec.at > downCutoff) downRec = Math.max(rec.replicas, downRec);
    if (rec.at < upCutoff && rec.at < downCutoff) old = i;
  });
  let replicas = current;
  if (replicas < upRec) replicas = upRec;
  if (replicas > downRec) replicas = downRec;
  if (old >= 0) m.recommendations[old] = { replicas: desired, at: now };
  else m.recommendations.push({ replicas: desired, at: now });
  return desired >= current
    ? {
        replicas,
        reason: "ScaleUpStabilized",
        message: "recent recommendations were lower than current one, applying the lowest recent recommendation",
      }
    : {
        replicas,
        reason: "ScaleDownStabilized",
        message: "recent recommendations were higher than current one, applying the highest recent recommendation",
      };
}

/** convertDesiredReplicasWithBehaviorRate. */
export function withBehaviorRate(
  current: number,
  desired: number,
  min: number,
  max: number,
  up: Rules,
  down: Rules,
  m: HpaMemory,
  now: number,
): Limited {
  if (desired > current) {
    const limit = Math.max(scaleUpLimit(current, m, up, now), current);
    const [allowed, reason, message] =
      max > limit
        ? [limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"]
        : [max, "TooManyReplicas", "the desired replica count is more than the maximum replica count"];
    if (desired > allowed) return { replicas: allowed, reason, message };
  } else if (desired < current) {
    const limit = Math.min(scaleDownLimit(current, m, down, now), current);
    const [allowed, reason, message] =
      min < limit
        ? [limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"]
        : [min, "TooFewReplicas", "the desired replica count is less than the minimum replica count"];
    if (desired < allowed) return { replicas: allowed, reason, message };
  }
  return {
    replicas: desired,
    reason: "DesiredWithinRange",
    message: "the desired count is within the acceptable range",
  };
}

/** normalizeDesiredReplicas without behavior: stabilizeRecommendation and convertDesiredReplicasWithRules. */
export function normalizeWithoutBehavior(
  current: number,
  desired: number,
  min: number,
  max: number,
  windowMs: number,
  m: HpaMemory,
  now: number,
): { stabilized: number; limited: Limited } {
  let stabilized = desired;
  let old = -1;
  m.recommendations.forEach((rec, i) => {
    if (rec.at < now - windowMs) old = i;
    else if (rec.replicas > stabilized) stabilized = rec.replicas;
  });
  if (old >= 0) m.recommendations[old] = { replicas: desired, at: now };
  else m.recommendations.push({ replicas: desired, at: now });
  const upLimit = Math.max(2 * current, 4);
  const [allowed, reason, message] =
    max > upLimit
      ? [upLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"]
      : [max, "TooManyReplicas", "the desired replica count is more than the maximum replica count"];
  if (stabilized < min)
    return {
      stabilized,
      limited: {
        replicas: min,
        reason: "TooFewReplicas",
        message: "the desired replica count is less than the minimum replica count",
      },
    };
  if (stabilized > allowed) return { stabilized, limited: { replicas: allowed, reason, message } };
  return {
    stabilized,
    limited: {
      replicas: stabilized,
      reason: "DesiredWithinRange",
      message: "the desired count is within the acceptable range",
    },
  };
}

/** storeScaleEvent (only with behavior; events older than the longest policy period are dropped). */
function storeScaleEvent(
  hpa: HorizontalPodAutoscaler,
  rules: { up: Rules; down: Rules },
  m: HpaMemory,
  prev: number,
  next: number,
  now: number,
) {
  if (!hpa.spec.behavior) return;
  const longest = (r: Rules) => Math.max(0, ...r.policies.map((p) => p.periodSeconds)) * 1000;
  m.scaleUpEvents = m.scaleUpEvents.filter((e) => e.at > now - longest(rules.up));
  m.scaleDownEvents = m.scaleDownEvents.filter((e) => e.at > now - longest(rules.down));
  if (next > prev) m.scaleUpEvents.push({ change: next - prev, at: now });
  else m.scaleDownEvents.push({ change: prev - next, at: now });
}

type MetricSpec = HorizontalPodAutoscaler["spec"]["metrics"][number];

/** One metric's proposal and its status entry (computeStatusForResourceMetric / ContainerResource). */
function proposeFor(
  spec: MetricSpec,
  current: number,
  pods: readonly ObservedPod[],
  usage: PodUsage,
  now: number,
  o: HpaOptions,
): { proposal: Proposal; status: Record<string, unknown> } {
  const r = spec.type === "Resource" ? spec.resource : spec.containerResource;
  const container = spec.type === "ContainerResource" ? spec.containerResource.container : undefined;
  const name = r.name as ResourceName;
  const metrics = new Map<string, PodMetric>();
  for (const p of pods) {
    const u = usage.get(p.pod.metadata.uid);
    if (!u) continue;
    let value = 0;
    let found = false;
    for (const [c, v] of u.containers)
      if (container === undefined || c === container) {
        value += name === "cpu" ? v.cpu : v.memory;
        found = true;
      }
    if (found) metrics.set(p.pod.metadata.name, { value, timestamp: u.timestamp, windowMs: u.windowMs });
  }
  const quantity = (v: number) => (name === "cpu" ? `${v}m` : String(v));
  let proposal: Proposal;
  let current2: Record<string, unknown>;
  if (r.target.type === "Utilization") {
    proposal = resourceReplicas(current, r.target.averageUtilization!, name, pods, metrics, container, now, o);
    current2 = { averageUtilization: proposal.utilization, averageValue: quantity(proposal.rawAverage) };
  } else {
    const raw = r.target.averageValue!;
    const target = name === "cpu" ? milliCPU(raw) : bytes(raw);
    proposal = rawResourceReplicas(current, target, name, pods, metrics, now, o);
    current2 = { averageValue: quantity(proposal.rawAverage) };
  }
  const key = spec.type === "Resource" ? "resource" : "containerResource";
  return {
    proposal,
    status: { type: spec.type, [key]: { name, ...(container ? { container } : {}), current: current2 } },
  };
}

export interface HpaInput {
  hpa: HorizontalPodAutoscaler;
  /** The target's spec.replicas (scale.Spec.Replicas); undefined when the target is not stored. */
  targetReplicas: number | undefined;
  /** The target's pods (its selector's, as scale.Status.Selector selects them). */
  pods: readonly ObservedPod[];
  usage: PodUsage;
  prev: HpaStatus | undefined;
  memory: HpaMemory;
  now: number;
}

/** reconcileAutoscaler: the replicas to set (undefined: leave the target as it is) and the status. */
export function reconcileHpa(i: HpaInput, o: HpaOptions): { scaleTo?: number; status: HpaStatus } {
  const { hpa, now, memory } = i;
  const nowIso = new Date(now).toISOString();
  let conditions = i.prev?.conditions ?? [];
  const set = (type: string, status: "True" | "False", reason: string, message: string) =>
    (conditions = setCondition(conditions, { type, status, reason, message }, nowIso));
  const base = (current: number, desired: number, metrics: unknown[]): HpaStatus => ({
    currentReplicas: current,
    desiredReplicas: desired,
    currentMetrics: metrics,
    ...(i.prev?.lastScaleTime ? { lastScaleTime: i.prev.lastScaleTime } : {}),
    conditions,
  });
  const ref = hpa.spec.scaleTargetRef;
  if (i.targetReplicas === undefined) {
    set(
      "AbleToScale",
      "False",
      "FailedGetScale",
      `the HPA controller was unable to get the target's current scale: ${ref.kind.toLowerCase()}s "${ref.name}" not found`,
    );
    return { status: base(i.prev?.currentReplicas ?? 0, i.prev?.desiredReplicas ?? 0, i.prev?.currentMetrics ?? []) };
  }
  set("AbleToScale", "True", "SucceededGetScale", "the HPA controller was able to get the target's current scale");
  const current = i.targetReplicas;
  const { minReplicas: min, maxReplicas: max } = hpa.spec;
  let desired = 0;
  let metricStatuses: unknown[] = [];
  if (current === 0 && min !== 0) {
    set(
      "ScalingActive",
      "False",
      "ScalingDisabled",
      "scaling is disabled since the replica count of the target is zero",
    );
    return { status: base(current, 0, []) };
  }
  if (current > max) desired = max;
  else if (current < min) desired = min;
  else {
    let best = -1;
    let bestMetric = "";
    let invalid = 0;
    let lastError = "";
    for (const m of hpa.spec.metrics) {
      try {
        const r = proposeFor(m, current, i.pods, i.usage, now, o);
        metricStatuses.push(r.status);
        if (r.proposal.replicas > best) {
          best = r.proposal.replicas;
          bestMetric = `${m.type === "Resource" ? m.resource.name : m.containerResource.name} resource${m.type === "ContainerResource" ? ` of container "${m.containerResource.container}"` : ""}${(m.type === "Resource" ? m.resource : m.containerResource).target.type === "Utilization" ? " utilization (percentage of request)" : ""}`;
        }
      } catch (e) {
        invalid++;
        lastError = (e as Error).message;
        metricStatuses.push({});
      }
    }
    // computeReplicasForMetrics: all invalid, or some invalid and the others would scale down: no decision.
    if (invalid >= hpa.spec.metrics.length || (invalid > 0 && best < current)) {
      set(
        "ScalingActive",
        "False",
        "FailedGetResourceMetric",
        `the HPA was unable to compute the replica count: ${lastError}`,
      );
      metricStatuses = metricStatuses.filter((s) => Object.keys(s as object).length > 0);
      return { status: base(current, current, metricStatuses) };
    }
    set(
      "ScalingActive",
      "True",
      "ValidMetricFound",
      `the HPA was able to successfully calculate a replica count from ${bestMetric}`,
    );
    desired = best;
    const rules = behaviorRules(hpa, o.downscaleStabilisationWindowMs / 1000);
    let stabilized: number;
    let limited: Limited;
    if (!hpa.spec.behavior) {
      const n = normalizeWithoutBehavior(current, desired, min, max, o.downscaleStabilisationWindowMs, memory, now);
      stabilized = n.stabilized;
      limited = n.limited;
      if (stabilized !== desired)
        set(
          "AbleToScale",
          "True",
          "ScaleDownStabilized",
          "recent recommendations were higher than current one, applying the highest recent recommendation",
        );
      else set("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size");
    } else {
      const s = stabilizeWithBehaviors(current, desired, rules.up, rules.down, memory, now);
      stabilized = s.replicas;
      if (stabilized !== desired) set("AbleToScale", "True", s.reason, s.message);
      else set("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size");
      limited = withBehaviorRate(current, stabilized, min, max, rules.up, rules.down, memory, now);
    }
    set("ScalingLimited", limited.replicas === stabilized ? "False" : "True", limited.reason, limited.message);
    desired = limited.replicas;
    metricStatuses = metricStatuses.filter((s) => Object.keys(s as object).length > 0);
  }
  if (desired === current) return { status: base(current, desired, metricStatuses) };
  storeScaleEvent(hpa, behaviorRules(hpa, o.downscaleStabilisationWindowMs / 1000), memory, current, desired, now);
  set(
    "AbleToScale",
    "True",
    "SucceededRescale",
    `the HPA controller was able to update the target scale to ${desired}`,
  );
  return { scaleTo: desired, status: { ...base(current, desired, metricStatuses), lastScaleTime: nowIso } };
}
