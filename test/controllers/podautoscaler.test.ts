// The HPA's algorithm as pure functions, with upstream's rows: pkg/controller/podautoscaler/replica_calculator_test.go
// (TestReplicaCalcScaleUp, ContainerScaleUp, ScaleUpUnreadyLessScale, ScaleUpUnreadyNoScale, ScaleUpIgnoresFailedPods,
// ScaleUpIgnoresDeletionPods, ScaleDown, ContainerScaleDown, DisjointResourcesMetrics, Tolerance, SuperfluousMetrics,
// EmptyCPURequest, DuringRollingUpdateWithMaxSurge and the MissingMetrics* rows; numContainersPerPod = 2, every pod
// started long ago), and the scale-limit rows of TestCalculateScaleUpLimitWithScalingRules /
// TestCalculateScaleDownLimitWithBehaviors (as karmada's port of horizontal.go carries them), the no-behavior
// scale-up limit max(2×current, 4), horizontal_test.go's TestConvertDesiredReplicasWithRules and
// TestNormalizeDesiredReplicas rows, stabilization windows with behavior, and reconcileHpa's min/max and
// missing-metrics paths.
import { describe, expect, it } from "vitest";
import {
  DEFAULT_CALCULATOR,
  resourceReplicas,
  type PodMetric,
} from "../../src/controllers/podautoscaler/replica-calculator.js";
import {
  behaviorRules,
  emptyMemory,
  normalizeWithoutBehavior,
  reconcileHpa,
  scaleDownLimit,
  scaleUpLimit,
  stabilizeWithBehaviors,
  type HpaMemory,
  type PodUsage,
  type Rules,
} from "../../src/controllers/podautoscaler/horizontal.js";
import type { ObservedPod } from "../../src/controllers/pods.js";
import { makePod } from "../../src/pod/workloads/template.js";
import { HorizontalPodAutoscaler } from "../../src/pod/workloads/schema.js";
import type { V1PodStatus } from "../../src/status/api-status.js";

const NOW = Date.parse("2026-01-01T00:00:00Z");
const LONG_AGO = "2000-01-01T00:00:00Z";

interface Row {
  name: string;
  currentReplicas: number;
  expectedReplicas?: number;
  expectedError?: string;
  requests: string[];
  /** Per pod, per container (millicores); a pod past the list has no metrics. */
  levels: number[][];
  podNames?: string[];
  readiness?: ("True" | "False")[];
  phase?: V1PodStatus["phase"][];
  deleting?: boolean[];
  container?: string;
  targetUtilization: number;
  expectedUtilization?: number;
  expectedValue?: number;
}
const both = (...v: number[]) => v.map((x) => [x, x]);

function pods(r: Row): ObservedPod[] {
  const n = Math.max(r.currentReplicas, r.phase?.length ?? 0);
  return Array.from({ length: n }, (_, i) => {
    const req = r.requests[i];
    const res = req ? { resources: { requests: { cpu: req } } } : {};
    const pod = makePod(
      {
        metadata: { labels: { name: "test-pod" } },
        spec: {
          containers: [
            { name: "container1", image: "i", ...res },
            { name: "container2", image: "i", ...res },
          ],
        },
      },
      { name: `test-pod-${i}`, namespace: "test-namespace", uid: `uid-${i}` },
    );
    const status = {
      phase: r.phase?.[i] ?? "Running",
      startTime: LONG_AGO,
      conditions: [
        { type: "Ready", status: r.readiness?.[i] ?? "True", lastProbeTime: null, lastTransitionTime: LONG_AGO },
      ],
      containerStatuses: [],
      initContainerStatuses: [],
      qosClass: "Burstable",
    } as unknown as V1PodStatus;
    return { pod, status, createdAt: 0, ...(r.deleting?.[i] ? { terminating: true } : {}) };
  });
}
function metrics(r: Row): Map<string, PodMetric> {
  const out = new Map<string, PodMetric>();
  r.levels.forEach((lv, i) => {
    const values = r.container ? [lv[r.container === "container1" ? 0 : 1] ?? 0] : lv;
    if (r.container && lv[r.container === "container1" ? 0 : 1] === undefined) return;
    out.set(r.podNames?.[i] ?? `test-pod-${i}`, {
      value: values.reduce((a, b) => a + b, 0),
      timestamp: NOW,
      windowMs: 60_000,
    });
  });
  return out;
}

const ROWS: Row[] = [
  {
    name: "TestReplicaCalcTolerance",
    currentReplicas: 3,
    expectedReplicas: 3,
    requests: ["0.9", "1.0", "1.1"],
    levels: both(1010, 1030, 1020),
    targetUtilization: 100,
    expectedUtilization: 102,
    expectedValue: 2 * 1020,
  },
  {
    name: "TestReplicaCalcSuperfluousMetrics",
    currentReplicas: 4,
    expectedReplicas: 24,
    requests: ["1.0", "1.0", "1.0", "1.0"],
    levels: both(4000, 9500, 3000, 7000, 3200, 2000),
    targetUtilization: 100,
    expectedUtilization: 587,
    expectedValue: 2 * 5875,
  },
  {
    name: "TestReplicaCalcMissingMetrics",
    currentReplicas: 4,
    expectedReplicas: 3,
    requests: ["1.0", "1.0", "1.0", "1.0"],
    levels: both(400, 95),
    targetUtilization: 100,
    expectedUtilization: 24,
    expectedValue: 495,
  },
  {
    name: "TestReplicaCalcEmptyCPURequest",
    currentReplicas: 1,
    expectedError: "missing request for",
    requests: [],
    levels: both(200),
    targetUtilization: 100,
  },
  {
    name: "TestReplicaCalcMissingMetricsNoChangeEq",
    currentReplicas: 2,
    expectedReplicas: 2,
    requests: ["1.0", "1.0"],
    levels: both(1000),
    targetUtilization: 100,
    expectedUtilization: 100,
    expectedValue: 2 * 1000,
  },
  {
    name: "TestReplicaCalcMissingMetricsNoChangeGt",
    currentReplicas: 2,
    expectedReplicas: 2,
    requests: ["1.0", "1.0"],
    levels: both(1900),
    targetUtilization: 100,
    expectedUtilization: 190,
    expectedValue: 2 * 1900,
  },
  {
    name: "TestReplicaCalcMissingMetricsNoChangeLt",
    currentReplicas: 2,
    expectedReplicas: 2,
    requests: ["1.0", "1.0"],
    levels: both(600),
    targetUtilization: 100,
    expectedUtilization: 60,
    expectedValue: 2 * 600,
  },
  {
    name: "TestReplicaCalcMissingMetricsUnreadyChange",
    currentReplicas: 3,
    expectedReplicas: 3,
    readiness: ["False", "True", "True"],
    requests: ["1.0", "1.0", "1.0"],
    levels: both(100, 450),
    targetUtilization: 50,
    expectedUtilization: 45,
    expectedValue: 2 * 450,
  },
  {
    name: "TestReplicaCalcMissingMetricsUnreadyScaleUp",
    currentReplicas: 3,
    expectedReplicas: 4,
    readiness: ["False", "True", "True"],
    requests: ["1.0", "1.0", "1.0"],
    levels: both(100, 2000),
    targetUtilization: 50,
    expectedUtilization: 200,
    expectedValue: 2 * 2000,
  },
  {
    name: "TestReplicaCalcMissingMetricsUnreadyScaleDown",
    currentReplicas: 4,
    expectedReplicas: 3,
    readiness: ["False", "True", "True", "True"],
    requests: ["1.0", "1.0", "1.0", "1.0"],
    levels: both(100, 100, 100),
    targetUtilization: 50,
    expectedUtilization: 10,
    expectedValue: 2 * 100,
  },
  {
    name: "TestReplicaCalcMissingMetricsScaleDownTargetOver100",
    currentReplicas: 4,
    expectedReplicas: 2,
    readiness: ["False", "True", "True", "True"],
    requests: ["1.0", "1.0", "2.0", "2.0"],
    levels: both(200, 100, 100),
    targetUtilization: 300,
    expectedUtilization: 6,
    expectedValue: 2 * 100,
  },
  {
    name: "TestReplicaCalcDuringRollingUpdateWithMaxSurge",
    currentReplicas: 2,
    expectedReplicas: 2,
    phase: ["Running", "Running", "Running"],
    requests: ["1.0", "1.0", "1.0"],
    levels: both(100, 100),
    targetUtilization: 50,
    expectedUtilization: 10,
    expectedValue: 2 * 100,
  },
  {
    name: "TestReplicaCalcDisjointResourcesMetrics",
    currentReplicas: 1,
    expectedError: "no metrics returned matched known pods",
    requests: ["1.0"],
    levels: both(100),
    podNames: ["an-older-pod-name"],
    targetUtilization: 100,
  },
  {
    name: "TestReplicaCalcScaleUp",
    currentReplicas: 3,
    expectedReplicas: 5,
    requests: ["1.0", "1.0", "1.0"],
    levels: both(300, 500, 700),
    targetUtilization: 30,
    expectedUtilization: 50,
    expectedValue: 2 * 500,
  },
  {
    name: "TestReplicaCalcContainerScaleUp",
    currentReplicas: 3,
    expectedReplicas: 5,
    requests: ["1.0", "1.0", "1.0"],
    levels: [
      [1000, 300],
      [1000, 500],
      [1000, 700],
    ],
    container: "container2",
    targetUtilization: 30,
    expectedUtilization: 50,
    expectedValue: 500,
  },
  {
    name: "TestReplicaCalcScaleUpUnreadyLessScale",
    currentReplicas: 3,
    expectedReplicas: 4,
    readiness: ["False", "True", "True"],
    requests: ["1.0", "1.0", "1.0"],
    levels: both(300, 500, 700),
    targetUtilization: 30,
    expectedUtilization: 60,
    expectedValue: 2 * 600,
  },
  {
    name: "TestReplicaCalcScaleUpUnreadyNoScale",
    currentReplicas: 3,
    expectedReplicas: 3,
    readiness: ["True", "False", "False"],
    requests: ["1.0", "1.0", "1.0"],
    levels: both(400, 500, 700),
    targetUtilization: 30,
    expectedUtilization: 40,
    expectedValue: 2 * 400,
  },
  {
    name: "TestReplicaCalcScaleUpIgnoresFailedPods",
    currentReplicas: 2,
    expectedReplicas: 4,
    readiness: ["True", "True", "False", "False"],
    phase: ["Running", "Running", "Failed", "Failed"],
    requests: ["1.0", "1.0", "1.0", "1.0"],
    levels: both(500, 700),
    targetUtilization: 30,
    expectedUtilization: 60,
    expectedValue: 2 * 600,
  },
  {
    name: "TestReplicaCalcScaleUpIgnoresDeletionPods",
    currentReplicas: 2,
    expectedReplicas: 4,
    readiness: ["True", "True", "False", "False"],
    phase: ["Running", "Running", "Running", "Running"],
    deleting: [false, false, true, true],
    requests: ["1.0", "1.0", "1.0", "1.0"],
    levels: both(500, 700),
    targetUtilization: 30,
    expectedUtilization: 60,
    expectedValue: 2 * 600,
  },
  {
    name: "TestReplicaCalcScaleDown",
    currentReplicas: 5,
    expectedReplicas: 3,
    requests: ["1.0", "1.0", "1.0", "1.0", "1.0"],
    levels: both(100, 300, 500, 250, 250),
    targetUtilization: 50,
    expectedUtilization: 28,
    expectedValue: 2 * 280,
  },
  {
    name: "TestReplicaCalcContainerScaleDown",
    currentReplicas: 5,
    expectedReplicas: 3,
    requests: ["1.0", "1.0", "1.0", "1.0", "1.0"],
    levels: [
      [1000, 100],
      [1000, 300],
      [1000, 500],
      [1000, 250],
      [1000, 250],
    ],
    container: "container2",
    targetUtilization: 50,
    expectedUtilization: 28,
    expectedValue: 280,
  },
];

describe("replica calculator (replica_calculator_test.go)", () => {
  for (const r of ROWS)
    it(r.name, () => {
      const run = () =>
        resourceReplicas(
          r.currentReplicas,
          r.targetUtilization,
          "cpu",
          pods(r),
          metrics(r),
          r.container,
          NOW,
          DEFAULT_CALCULATOR,
        );
      if (r.expectedError) {
        expect(run).toThrow(r.expectedError);
        return;
      }
      expect(run()).toEqual({
        replicas: r.expectedReplicas,
        utilization: r.expectedUtilization,
        rawAverage: r.expectedValue,
      });
    });
  it("within the tolerance (0.1) nothing changes; a missing request is an error naming the container", () => {
    const r: Row = {
      name: "tol",
      currentReplicas: 3,
      requests: ["0.9", "1.0", "1.1"],
      levels: both(1010, 1030, 1020),
      targetUtilization: 100,
    };
    expect(resourceReplicas(3, 100, "cpu", pods(r), metrics(r), undefined, NOW, DEFAULT_CALCULATOR)).toMatchObject({
      replicas: 3,
      utilization: 102,
    });
    const noReq: Row = { ...r, requests: [] };
    expect(() =>
      resourceReplicas(3, 100, "cpu", pods(noReq), metrics(noReq), undefined, NOW, DEFAULT_CALCULATOR),
    ).toThrow("missing request for cpu in container container1 of Pod test-pod-0");
  });
});

describe("scale limits (calculateScaleUpLimitWithScalingRules, calculateScaleDownLimitWithBehaviors)", () => {
  const rules = (
    policies: { type: "Pods" | "Percent"; value: number; periodSeconds: number }[],
    selectPolicy: "Max" | "Min" | "Disabled" = "Max",
  ): Rules => ({ stabilizationWindowSeconds: 0, selectPolicy, policies });
  const mem = (up: number[] = [], down: number[] = []): HpaMemory => ({
    recommendations: [],
    scaleUpEvents: up.map((change) => ({ change, at: NOW - 30_000 })),
    scaleDownEvents: down.map((change) => ({ change, at: NOW - 30_000 })),
  });
  it.each([
    ["No previous events", 5, mem(), rules([{ type: "Pods", value: 4, periodSeconds: 60 }]), 9],
    ["With previous scale up event", 5, mem([2]), rules([{ type: "Pods", value: 4, periodSeconds: 60 }]), 7],
    ["Disabled policy", 5, mem(), rules([{ type: "Pods", value: 4, periodSeconds: 60 }], "Disabled"), 5],
    [
      "MinChange policy",
      5,
      mem(),
      rules(
        [
          { type: "Pods", value: 4, periodSeconds: 60 },
          { type: "Pods", value: 2, periodSeconds: 60 },
        ],
        "Min",
      ),
      7,
    ],
    ["Percent scaling policy", 10, mem(), rules([{ type: "Percent", value: 50, periodSeconds: 60 }]), 15],
  ] satisfies [string, number, HpaMemory, Rules, number][])("up: %s", (_n, current, m, r, want) => {
    expect(scaleUpLimit(current, m, r, NOW)).toBe(want);
  });
  it.each([
    ["No previous events", 10, mem(), rules([{ type: "Percent", value: 20, periodSeconds: 60 }]), 8],
    ["With previous scale down event", 10, mem([], [1]), rules([{ type: "Percent", value: 20, periodSeconds: 60 }]), 8],
    [
      "Multiple policies",
      100,
      mem(),
      rules([
        { type: "Percent", value: 10, periodSeconds: 60 },
        { type: "Pods", value: 5, periodSeconds: 60 },
      ]),
      90,
    ],
    ["Disabled policy", 10, mem(), rules([{ type: "Percent", value: 20, periodSeconds: 60 }], "Disabled"), 10],
    [
      "MinChange policy",
      100,
      mem(),
      rules(
        [
          { type: "Percent", value: 10, periodSeconds: 60 },
          { type: "Pods", value: 15, periodSeconds: 60 },
        ],
        "Min",
      ),
      90,
    ],
  ] satisfies [string, number, HpaMemory, Rules, number][])("down: %s", (_n, current, m, r, want) => {
    expect(scaleDownLimit(current, m, r, NOW)).toBe(want);
  });
  it("an event older than the policy's period no longer counts", () => {
    const m = { recommendations: [], scaleUpEvents: [{ change: 2, at: NOW - 61_000 }], scaleDownEvents: [] };
    expect(scaleUpLimit(5, m, rules([{ type: "Pods", value: 4, periodSeconds: 60 }]), NOW)).toBe(9);
  });
});

describe("horizontal_test.go: TestConvertDesiredReplicasWithRules, TestNormalizeDesiredReplicas", () => {
  it.each([
    [5, 7, 3, 8, 7, "DesiredWithinRange"],
    [3, 1, 2, 8, 2, "TooFewReplicas"],
    [1, 0, 0, 10, 0, "DesiredWithinRange"],
    [20, 1000, 1, 10, 10, "TooManyReplicas"],
    [3, 1000, 1, 2000, 6, "ScaleUpLimit"], // calculateScaleUpLimit(3)
  ])("current %i, desired %i, min %i, max %i → %i (%s)", (current, desired, min, max, want, reason) => {
    const n = normalizeWithoutBehavior(current, desired, min, max, 300_000, emptyMemory(), NOW);
    expect(n.limited).toMatchObject({ replicas: want, reason });
  });
  const MIN = 60_000;
  it.each([
    ["empty log", [], 5, 5, 1],
    [
      "stabilize",
      [
        [4, -2 * MIN],
        [5, -1 * MIN],
      ],
      3,
      5,
      3,
    ],
    [
      "no stabilize",
      [
        [1, -2 * MIN],
        [2, -1 * MIN],
      ],
      3,
      3,
      3,
    ],
    [
      "no stabilize - old recommendations",
      [
        [10, -10 * MIN],
        [9, -9 * MIN],
      ],
      3,
      3,
      2,
    ],
    [
      "stabilize - old recommendations",
      [
        [10, -10 * MIN],
        [4, -1 * MIN],
        [5, -2 * MIN],
        [9, -9 * MIN],
      ],
      3,
      5,
      4,
    ],
  ] satisfies [string, [number, number][], number, number, number][])(
    "%s",
    (_name, recs, desired, stabilized, logLength) => {
      const m = emptyMemory();
      m.recommendations = recs.map(([replicas, ago]) => ({ replicas, at: NOW + ago }));
      // The rows' current replicas do not matter to the stabilization (upstream passes only the recommendation).
      expect(normalizeWithoutBehavior(10, desired, 1, 100, 5 * MIN, m, NOW).stabilized).toBe(stabilized);
      expect(m.recommendations).toHaveLength(logLength);
    },
  );
});

describe("stabilization", () => {
  it("without behavior: the highest recommendation of the downscale window, and the scale-up limit max(2×current, 4)", () => {
    const m = emptyMemory();
    expect(normalizeWithoutBehavior(5, 5, 1, 10, 300_000, m, NOW - 100_000).limited.replicas).toBe(5);
    const n = normalizeWithoutBehavior(5, 2, 1, 10, 300_000, m, NOW);
    expect(n).toMatchObject({ stabilized: 5, limited: { replicas: 5, reason: "DesiredWithinRange" } });
    // After the window the old recommendation is replaced and the scale-down goes through.
    expect(normalizeWithoutBehavior(5, 2, 1, 10, 300_000, m, NOW + 300_001).limited.replicas).toBe(2);
    expect(normalizeWithoutBehavior(1, 9, 1, 10, 300_000, emptyMemory(), NOW).limited).toEqual({
      replicas: 4,
      reason: "ScaleUpLimit",
      message: "the desired replica count is increasing faster than the maximum scale rate",
    });
    expect(normalizeWithoutBehavior(3, 0, 1, 10, 300_000, emptyMemory(), NOW).limited.reason).toBe("TooFewReplicas");
  });
  it("with behavior: a scale-up window keeps the lowest recent recommendation, a scale-down window the highest", () => {
    const hpa = HorizontalPodAutoscaler.parse({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "h" },
      spec: {
        scaleTargetRef: { kind: "Deployment", name: "web" },
        maxReplicas: 10,
        behavior: { scaleUp: { stabilizationWindowSeconds: 60 }, scaleDown: { stabilizationWindowSeconds: 120 } },
      },
    });
    const { up, down } = behaviorRules(hpa, 300);
    expect(up.policies).toEqual([
      { type: "Pods", value: 4, periodSeconds: 15 },
      { type: "Percent", value: 100, periodSeconds: 15 },
    ]);
    const m = emptyMemory();
    m.recommendations.push({ replicas: 2, at: NOW - 30_000 });
    expect(stabilizeWithBehaviors(2, 6, up, down, m, NOW)).toMatchObject({ replicas: 2, reason: "ScaleUpStabilized" });
    const m2 = emptyMemory();
    m2.recommendations.push({ replicas: 6, at: NOW - 30_000 });
    expect(stabilizeWithBehaviors(6, 1, up, down, m2, NOW)).toMatchObject({
      replicas: 6,
      reason: "ScaleDownStabilized",
    });
    // Outside both windows the old sample is replaced by this one.
    const m3 = { ...emptyMemory(), recommendations: [{ replicas: 6, at: NOW - 200_000 }] };
    expect(stabilizeWithBehaviors(6, 1, up, down, m3, NOW).replicas).toBe(1);
    expect(m3.recommendations).toEqual([{ replicas: 1, at: NOW }]);
  });
});

describe("reconcileHpa (reconcileAutoscaler)", () => {
  const hpa = (spec: Record<string, unknown> = {}) =>
    HorizontalPodAutoscaler.parse({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "h", uid: "h-uid" },
      spec: { scaleTargetRef: { kind: "Deployment", name: "web" }, minReplicas: 2, maxReplicas: 5, ...spec },
    });
  const o = { ...DEFAULT_CALCULATOR, downscaleStabilisationWindowMs: 300_000 };
  const r: Row = {
    name: "",
    currentReplicas: 2,
    requests: ["100m", "100m"],
    levels: both(90, 90),
    targetUtilization: 80,
  };
  const usage = (per: number): PodUsage =>
    new Map(
      pods(r).map((p) => [
        p.pod.metadata.uid,
        {
          timestamp: NOW,
          windowMs: 1000,
          containers: new Map([
            ["container1", { cpu: per, memory: 0 }],
            ["container2", { cpu: per, memory: 0 }],
          ]),
        },
      ]),
    );
  it("defaults: minReplicas 1 and 80 % CPU when no metrics are given", () => {
    const h = HorizontalPodAutoscaler.parse({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "h" },
      spec: { scaleTargetRef: { kind: "Deployment", name: "web" }, maxReplicas: 3 },
    });
    expect(h.spec.minReplicas).toBe(1);
    expect(h.spec.metrics).toEqual([
      { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } } },
    ]);
  });
  it("below minReplicas: scaled to it without metrics", () => {
    const out = reconcileHpa(
      { hpa: hpa(), targetReplicas: 1, pods: [], usage: new Map(), prev: undefined, memory: emptyMemory(), now: NOW },
      o,
    );
    expect(out.scaleTo).toBe(2);
    expect(out.status).toMatchObject({
      currentReplicas: 1,
      desiredReplicas: 2,
      lastScaleTime: new Date(NOW).toISOString(),
    });
  });
  it("90 % of requests against a target of 80 on 2 pods: 3 (ceil 2.25); the status says why", () => {
    const out = reconcileHpa(
      {
        hpa: hpa(),
        targetReplicas: 2,
        pods: pods(r),
        usage: usage(90),
        prev: undefined,
        memory: emptyMemory(),
        now: NOW,
      },
      o,
    );
    expect(out.scaleTo).toBe(3);
    expect(out.status.currentMetrics).toEqual([
      { type: "Resource", resource: { name: "cpu", current: { averageUtilization: 90, averageValue: "180m" } } },
    ]);
    expect(out.status.conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: "ScalingActive",
          status: "True",
          reason: "ValidMetricFound",
          message:
            "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
        }),
        expect.objectContaining({ type: "AbleToScale", status: "True", reason: "SucceededRescale" }),
        expect.objectContaining({ type: "ScalingLimited", status: "False", reason: "DesiredWithinRange" }),
      ]),
    );
  });
  it("no metrics: no decision, ScalingActive False", () => {
    const out = reconcileHpa(
      {
        hpa: hpa(),
        targetReplicas: 2,
        pods: pods(r),
        usage: new Map(),
        prev: undefined,
        memory: emptyMemory(),
        now: NOW,
      },
      o,
    );
    expect(out.scaleTo).toBeUndefined();
    expect(out.status.conditions).toContainEqual(
      expect.objectContaining({ type: "ScalingActive", status: "False", reason: "FailedGetResourceMetric" }),
    );
  });
  it("a target that is not stored: AbleToScale False (FailedGetScale)", () => {
    const out = reconcileHpa(
      {
        hpa: hpa(),
        targetReplicas: undefined,
        pods: [],
        usage: new Map(),
        prev: undefined,
        memory: emptyMemory(),
        now: NOW,
      },
      o,
    );
    expect(out.status.conditions).toContainEqual(
      expect.objectContaining({ type: "AbleToScale", status: "False", reason: "FailedGetScale" }),
    );
  });
});
