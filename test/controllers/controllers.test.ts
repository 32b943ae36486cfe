// The node's controllers as pure steps, with upstream's own tables where they fit: TestComputeHash
// (pkg/controller/controller_utils_test.go), TestControllerSyncJob (pkg/controller/job/job_controller_test.go),
// and the Deployment's rolling update and Recreate steps (pkg/controller/deployment/rolling_test.go's counts).
import { describe, expect, it } from "vitest";
import { computeHash } from "../../src/controllers/hash.js";
import { syncJob, type JobStatus } from "../../src/controllers/job/sync.js";
import { syncReplicaSet } from "../../src/controllers/replicaset/sync.js";
import { syncDeployment, type DeploymentStatus, type ReplicaSetView } from "../../src/controllers/deployment/sync.js";
import { syncDaemonSet } from "../../src/controllers/daemon/sync.js";
import type { ObservedPod } from "../../src/controllers/pods.js";
import type { ControllerContext } from "../../src/controllers/types.js";
import { DaemonSet, Deployment, Job, ReplicaSet } from "../../src/pod/workloads/schema.js";
import { jobSelectorDefaults, JOB_COMPLETION_INDEX_ANNOTATION } from "../../src/pod/workloads/job-labels.js";
import { makePod } from "../../src/pod/workloads/template.js";
import type { V1PodStatus } from "../../src/status/api-status.js";

const NOW = Date.parse("2026-01-01T00:00:00Z");
let seq = 0;
const ctx = (now = NOW): ControllerContext => ({
  now,
  nodeName: "node-a",
  suffix: () => `s${String(++seq).padStart(4, "0")}`.slice(-5),
});
const template = (restartPolicy = "Always") => ({
  metadata: { labels: { app: "web" } },
  spec: { containers: [{ name: "c", image: "localhost/busybox:1" }], restartPolicy },
});

function status(phase: V1PodStatus["phase"], ready = false, readySince = NOW - 60_000): V1PodStatus {
  return {
    phase,
    conditions: [
      {
        type: "Ready",
        status: ready ? "True" : "False",
        lastProbeTime: null,
        lastTransitionTime: new Date(readySince).toISOString(),
      },
    ],
    containerStatuses: [],
    initContainerStatuses: [],
    qosClass: "BestEffort",
  } as unknown as V1PodStatus;
}
function observed(
  owner: { metadata: { name: string; namespace: string } },
  phase: V1PodStatus["phase"],
  o: {
    ready?: boolean;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    createdAt?: number;
  } = {},
): ObservedPod {
  const name = `${owner.metadata.name}-${++seq}`;
  const pod = makePod(template("Never") as never, {
    name,
    namespace: owner.metadata.namespace,
    uid: `uid-${seq}`,
    ...(o.annotations ? { annotations: o.annotations } : {}),
    ...(o.labels ? { labels: o.labels } : {}),
  });
  return { pod, status: status(phase, o.ready ?? phase === "Running"), createdAt: o.createdAt ?? NOW - seq };
}

describe("ComputeHash (TestComputeHash)", () => {
  it("simple / using math.MaxInt64: another collision count is another hash", () => {
    const t = {};
    expect(computeHash(t, 1)).not.toBe(computeHash(t, 2));
    expect(computeHash(t, undefined)).not.toBe(computeHash(t, 2 ** 31 - 1));
  });
  it("stable for one template, changed by any template change; SafeEncodeString's alphabet", () => {
    const t = template();
    expect(computeHash(t)).toBe(computeHash(structuredClone(t)));
    expect(computeHash(t)).not.toBe(computeHash({ ...t, spec: { ...t.spec, restartPolicy: "Never" } }));
    expect(computeHash(t)).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
  });
});

// TestControllerSyncJob: parallelism, completions (-1: none), backoffLimit, pods by phase or by index;
// the creations, deletions, active (after the step), succeeded, failed, completed indexes and condition.
type JobCase = {
  parallelism: number;
  completions: number;
  backoffLimit?: number;
  indexed?: boolean;
  suspend?: boolean;
  wasSuspended?: boolean;
  pendingPods?: number;
  activePods?: number;
  succeededPods?: number;
  failedPods?: number;
  podsWithIndexes?: [string, V1PodStatus["phase"]][];
  expectedCreations?: number;
  expectedDeletions?: number;
  expectedActive?: number;
  expectedSucceeded?: number;
  expectedFailed?: number;
  expectedCompletedIdxs?: string;
  expectedCondition?: [string, "True" | "False", string?];
  expectedCreatedIndexes?: number[];
};
const jobCases: Record<string, JobCase> = {
  "job start": { parallelism: 2, completions: 5, backoffLimit: 6, expectedCreations: 2, expectedActive: 2 },
  "WQ job start": { parallelism: 2, completions: -1, backoffLimit: 6, expectedCreations: 2, expectedActive: 2 },
  "pending pods": { parallelism: 2, completions: 5, backoffLimit: 6, pendingPods: 2, expectedActive: 2 },
  "correct # of pods": { parallelism: 2, completions: 5, backoffLimit: 6, activePods: 2, expectedActive: 2 },
  "WQ job: correct # of pods": { parallelism: 2, completions: -1, backoffLimit: 6, activePods: 2, expectedActive: 2 },
  "too few active pods": {
    parallelism: 2,
    completions: 5,
    backoffLimit: 6,
    activePods: 1,
    succeededPods: 1,
    expectedCreations: 1,
    expectedActive: 2,
    expectedSucceeded: 1,
  },
  "too few active pods with a dynamic job": {
    parallelism: 2,
    completions: -1,
    backoffLimit: 6,
    activePods: 1,
    expectedCreations: 1,
    expectedActive: 2,
  },
  "too many active pods": {
    parallelism: 2,
    completions: 5,
    backoffLimit: 6,
    activePods: 3,
    expectedDeletions: 1,
    expectedActive: 2,
  },
  "new failed pod": {
    parallelism: 2,
    completions: 5,
    backoffLimit: 6,
    activePods: 1,
    failedPods: 1,
    expectedCreations: 1,
    expectedActive: 2,
    expectedFailed: 1,
  },
  "job finish": {
    parallelism: 2,
    completions: 5,
    backoffLimit: 6,
    succeededPods: 5,
    expectedSucceeded: 5,
    expectedCondition: ["Complete", "True"],
  },
  "WQ job finishing": {
    parallelism: 2,
    completions: -1,
    backoffLimit: 6,
    activePods: 1,
    succeededPods: 1,
    expectedActive: 1,
    expectedSucceeded: 1,
  },
  "WQ job all finished": {
    parallelism: 2,
    completions: -1,
    backoffLimit: 6,
    succeededPods: 2,
    expectedSucceeded: 2,
    expectedCondition: ["Complete", "True"],
  },
  "WQ job all finished despite one failure": {
    parallelism: 2,
    completions: -1,
    backoffLimit: 6,
    succeededPods: 1,
    failedPods: 1,
    expectedSucceeded: 1,
    expectedFailed: 1,
    expectedCondition: ["Complete", "True"],
  },
  "more active pods than parallelism": {
    parallelism: 2,
    completions: 5,
    backoffLimit: 6,
    activePods: 10,
    expectedDeletions: 8,
    expectedActive: 2,
  },
  "more active pods than remaining completions": {
    parallelism: 3,
    completions: 4,
    backoffLimit: 6,
    activePods: 3,
    succeededPods: 2,
    expectedDeletions: 1,
    expectedActive: 2,
    expectedSucceeded: 2,
  },
  "status change": {
    parallelism: 2,
    completions: 5,
    backoffLimit: 6,
    activePods: 2,
    succeededPods: 2,
    expectedActive: 2,
    expectedSucceeded: 2,
  },
  "too many job failures": {
    parallelism: 2,
    completions: 5,
    failedPods: 1,
    expectedFailed: 1,
    expectedCondition: ["Failed", "True", "BackoffLimitExceeded"],
  },
  "indexed job start": {
    parallelism: 2,
    completions: 5,
    backoffLimit: 6,
    indexed: true,
    expectedCreations: 2,
    expectedActive: 2,
    expectedCreatedIndexes: [0, 1],
  },
  "indexed job completed": {
    parallelism: 2,
    completions: 3,
    backoffLimit: 6,
    indexed: true,
    podsWithIndexes: [
      ["0", "Succeeded"],
      ["1", "Failed"],
      ["1", "Succeeded"],
      ["2", "Succeeded"],
    ],
    expectedSucceeded: 3,
    expectedFailed: 1,
    expectedCompletedIdxs: "0-2",
    expectedCondition: ["Complete", "True"],
  },
  "indexed job repeated completed index": {
    parallelism: 2,
    completions: 3,
    backoffLimit: 6,
    indexed: true,
    podsWithIndexes: [
      ["0", "Succeeded"],
      ["1", "Succeeded"],
      ["1", "Succeeded"],
    ],
    expectedCreations: 1,
    expectedActive: 1,
    expectedSucceeded: 2,
    expectedCompletedIdxs: "0,1",
    expectedCreatedIndexes: [2],
  },
  "indexed job some running and completed pods": {
    parallelism: 8,
    completions: 20,
    backoffLimit: 6,
    indexed: true,
    podsWithIndexes: [
      ["0", "Running"],
      ["2", "Succeeded"],
      ["3", "Pending"],
      ["4", "Succeeded"],
      ["5", "Succeeded"],
      ["7", "Succeeded"],
      ["8", "Succeeded"],
      ["9", "Succeeded"],
    ],
    expectedCreations: 6,
    expectedActive: 8,
    expectedSucceeded: 6,
    expectedCompletedIdxs: "2,4,5,7-9",
    expectedCreatedIndexes: [1, 6, 10, 11, 12, 13],
  },
  "indexed job some failed pods": {
    parallelism: 3,
    completions: 4,
    backoffLimit: 6,
    indexed: true,
    podsWithIndexes: [
      ["0", "Failed"],
      ["1", "Pending"],
      ["2", "Failed"],
    ],
    expectedCreations: 2,
    expectedActive: 3,
    expectedFailed: 2,
    expectedCreatedIndexes: [0, 2],
  },
  "suspending a job with satisfied expectations": {
    parallelism: 2,
    completions: 4,
    backoffLimit: 6,
    suspend: true,
    activePods: 2,
    expectedDeletions: 2,
    expectedActive: 0,
    expectedCondition: ["Suspended", "True", "JobSuspended"],
  },
  "resuming a suspended job": {
    parallelism: 2,
    completions: 4,
    backoffLimit: 6,
    wasSuspended: true,
    expectedCreations: 2,
    expectedActive: 2,
    expectedCondition: ["Suspended", "False", "JobResumed"],
  },
};

function newJob(tc: JobCase) {
  const j = Job.parse({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "foobar", uid: "job-uid" },
    spec: {
      parallelism: tc.parallelism,
      ...(tc.completions >= 0 ? { completions: tc.completions } : {}),
      backoffLimit: tc.backoffLimit ?? 0,
      ...(tc.indexed ? { completionMode: "Indexed" } : {}),
      suspend: tc.suspend ?? false,
      template: template("Never"),
    },
  });
  jobSelectorDefaults(j);
  return j;
}

describe("Job controller (TestControllerSyncJob)", () => {
  for (const [name, tc] of Object.entries(jobCases))
    it(name, () => {
      const job = newJob(tc);
      const pods: ObservedPod[] = [];
      const add = (n: number | undefined, phase: V1PodStatus["phase"]) => {
        for (let i = 0; i < (n ?? 0); i++) pods.push(observed(job, phase));
      };
      add(tc.pendingPods, "Pending");
      add(tc.activePods, "Running");
      add(tc.succeededPods, "Succeeded");
      add(tc.failedPods, "Failed");
      for (const [index, phase] of tc.podsWithIndexes ?? [])
        pods.push(observed(job, phase, { annotations: { [JOB_COMPLETION_INDEX_ANNOTATION]: index } }));
      const prev: JobStatus | undefined = tc.wasSuspended
        ? {
            active: 0,
            succeeded: 0,
            failed: 0,
            ready: 0,
            conditions: [
              {
                type: "Suspended",
                status: "True",
                reason: "JobSuspended",
                message: "Job suspended",
                lastTransitionTime: new Date(NOW - 1000).toISOString(),
              },
            ],
          }
        : undefined;
      const r = syncJob(job, pods, prev, ctx());
      const s = r.status as JobStatus;
      expect(r.create.length).toBe(tc.expectedCreations ?? 0);
      expect(r.delete.length).toBe(tc.expectedDeletions ?? 0);
      expect(s.active).toBe(tc.expectedActive ?? 0);
      expect(s.succeeded).toBe(tc.expectedSucceeded ?? 0);
      expect(s.failed).toBe(tc.expectedFailed ?? 0);
      if (tc.expectedCompletedIdxs !== undefined) expect(s.completedIndexes).toBe(tc.expectedCompletedIdxs);
      if (tc.expectedCondition) {
        const [type, st, reason] = tc.expectedCondition;
        expect(s.conditions).toContainEqual(
          expect.objectContaining({ type, status: st, ...(reason ? { reason } : {}) }),
        );
      } else expect(s.conditions.filter((c) => c.status === "True")).toEqual([]);
      if (tc.expectedCreatedIndexes)
        expect(
          r.create.map((p) => Number(p.metadata.annotations![JOB_COMPLETION_INDEX_ANNOTATION])).sort((a, b) => a - b),
        ).toEqual(tc.expectedCreatedIndexes);
      // Every pod made: `<job>-<5 chars>` (Indexed: `<job>-<index>-<5 chars>`), the job-name and controller-uid labels, a controller reference.
      for (const p of r.create) {
        expect(p.metadata.name).toMatch(tc.indexed ? /^foobar-[0-9]+-[a-z0-9]{5}$/ : /^foobar-[a-z0-9]{5}$/);
        expect(p.metadata.labels).toMatchObject({
          "batch.kubernetes.io/job-name": "foobar",
          "job-name": "foobar",
          "batch.kubernetes.io/controller-uid": "job-uid",
          "controller-uid": "job-uid",
        });
        expect(p.metadata.ownerReferences).toEqual([
          {
            apiVersion: "batch/v1",
            kind: "Job",
            name: "foobar",
            uid: "job-uid",
            controller: true,
            blockOwnerDeletion: true,
          },
        ]);
        if (tc.indexed)
          expect(p.spec.containers[0]!.env).toContainEqual({
            name: "JOB_COMPLETION_INDEX",
            value: "",
            valueFrom: {
              fieldRef: { apiVersion: "v1", fieldPath: `metadata.annotations['${JOB_COMPLETION_INDEX_ANNOTATION}']` },
            },
          });
      }
    });
});

describe("Job controller: back-off, deadline, pod failure policy, ttl", () => {
  const failedAt = (job: ReturnType<typeof newJob>, finished: number, exitCode = 1) => {
    const p = observed(job, "Failed");
    (p.status as unknown as { containerStatuses: unknown[] }).containerStatuses = [
      { name: "c", state: { terminated: { exitCode, finishedAt: new Date(finished).toISOString() } }, restartCount: 0 },
    ];
    return p;
  };
  it("a new pod waits out the back-off after failures: 10 s, doubling per failure since the last success", () => {
    const job = newJob({ parallelism: 1, completions: 1, backoffLimit: 6 });
    const one = syncJob(job, [failedAt(job, NOW - 4000)], undefined, ctx());
    expect(one.create).toEqual([]);
    expect(one.requeueAt).toBe(NOW + 6000);
    expect(syncJob(job, [failedAt(job, NOW - 10_000)], undefined, ctx()).create).toHaveLength(1);
    const two = syncJob(job, [failedAt(job, NOW - 30_000), failedAt(job, NOW - 15_000)], undefined, ctx());
    expect(two.requeueAt).toBe(NOW + 5000);
  });
  it("activeDeadlineSeconds: DeadlineExceeded, active pods deleted", () => {
    const job = Job.parse({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "dl", uid: "u" },
      spec: { activeDeadlineSeconds: 5, template: template("Never") },
    });
    const running = observed(job, "Running");
    const r = syncJob(
      job,
      [running],
      { active: 1, succeeded: 0, failed: 0, ready: 1, startTime: new Date(NOW - 6000).toISOString(), conditions: [] },
      ctx(),
    );
    expect(r.delete.map((d) => d.uid)).toEqual([running.pod.metadata.uid]);
    expect((r.status as JobStatus).conditions).toContainEqual(
      expect.objectContaining({
        type: "Failed",
        status: "True",
        reason: "DeadlineExceeded",
        message: "Job was active longer than specified deadline",
      }),
    );
  });
  it("podFailurePolicy: FailJob on an exit code, Ignore leaves the failure uncounted", () => {
    const spec = (action: string) => ({
      backoffLimit: 3,
      podFailurePolicy: { rules: [{ action, onExitCodes: { operator: "In", values: [42] } }] },
      template: template("Never"),
    });
    const fail = Job.parse({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "pf", uid: "u" },
      spec: spec("FailJob"),
    });
    const r = syncJob(fail, [failedAt(fail, NOW - 60_000, 42)], undefined, ctx());
    expect((r.status as JobStatus).conditions).toContainEqual(
      expect.objectContaining({
        type: "Failed",
        reason: "PodFailurePolicy",
        message: expect.stringContaining("failed with exit code 42 matching FailJob rule at index 0"),
      }),
    );
    const ignore = Job.parse({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "pi", uid: "u" },
      spec: spec("Ignore"),
    });
    const r2 = syncJob(ignore, [failedAt(ignore, NOW - 60_000, 42)], undefined, ctx());
    expect((r2.status as JobStatus).failed).toBe(0);
    expect(r2.create).toHaveLength(1);
  });
  it("ttlSecondsAfterFinished: the Job goes that long after it finished", () => {
    const job = Job.parse({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "t", uid: "u" },
      spec: { ttlSecondsAfterFinished: 10, template: template("Never") },
    });
    const done: JobStatus = {
      active: 0,
      succeeded: 1,
      failed: 0,
      ready: 0,
      conditions: [{ type: "Complete", status: "True", lastTransitionTime: new Date(NOW - 5000).toISOString() }],
    };
    expect(syncJob(job, [], done, ctx()).requeueAt).toBe(NOW + 5000);
    expect(syncJob(job, [], done, ctx(NOW + 5000)).removeSelf).toBe(true);
  });
});

describe("ReplicaSet controller", () => {
  const rs = ReplicaSet.parse({
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: { name: "web-abc", uid: "rs-uid" },
    spec: { replicas: 3, selector: { matchLabels: { app: "web" } }, template: template() },
  });
  it("makes the missing pods `<rs>-<5 chars>` with the template's labels and a controller reference", () => {
    const r = syncReplicaSet(rs, [observed(rs, "Running")], ctx());
    expect(r.create).toHaveLength(2);
    expect(r.create[0]!.metadata).toMatchObject({
      labels: { app: "web" },
      ownerReferences: [{ kind: "ReplicaSet", name: "web-abc", uid: "rs-uid", controller: true }],
    });
    expect(r.create[0]!.metadata.name).toMatch(/^web-abc-[a-z0-9]{5}$/);
  });
  it("deletes the surplus in ActivePodsWithRanks order: pending, then not ready, then newest", () => {
    const ready = observed(rs, "Running", { ready: true, createdAt: NOW - 100 });
    const notReady = observed(rs, "Running", { ready: false, createdAt: NOW - 200 });
    const pending = observed(rs, "Pending", { createdAt: NOW - 300 });
    const older = observed(rs, "Running", { ready: true, createdAt: NOW - 400 });
    const small = ReplicaSet.parse({ ...rs, spec: { ...rs.spec, replicas: 1 } });
    const r = syncReplicaSet(small, [ready, notReady, pending, older], ctx());
    expect(r.delete.map((d) => d.uid)).toEqual([pending, notReady, ready].map((p) => p.pod.metadata.uid));
    expect(r.status).toMatchObject({ replicas: 4, readyReplicas: 2, availableReplicas: 2 });
  });
});

describe("Deployment controller (rolling update and Recreate on one node)", () => {
  const dep = (
    replicas: number,
    image: string,
    strategy: unknown = { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
  ) =>
    Deployment.parse({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", uid: "d-uid" },
      spec: {
        replicas,
        selector: { matchLabels: { app: "web" } },
        strategy,
        template: { ...template(), spec: { ...template().spec, containers: [{ name: "c", image }] } },
      },
    });
  /** Run the Deployment's step, then apply its ReplicaSet changes to the views (the runner's job). */
  function step(d: ReturnType<typeof dep>, views: ReplicaSetView[], prev?: DeploymentStatus) {
    const r = syncDeployment(d, views, prev, ctx());
    for (const rs of r.putChildren ?? []) {
      const v = views.find((x) => x.rs.metadata.name === rs.metadata.name);
      if (v) v.rs = rs as ReplicaSetView["rs"];
      else views.push({ rs: rs as ReplicaSetView["rs"], pods: [], createdAt: NOW + views.length });
    }
    return r;
  }
  const readyPods = (v: ReplicaSetView) => {
    v.pods = Array.from({ length: v.rs.spec.replicas }, () => observed(v.rs, "Running", { ready: true }));
  };

  it("a new Deployment: ReplicaSet `<name>-<pod-template-hash>` with the hash label, selector and template label", () => {
    const d = dep(3, "localhost/busybox:1");
    const views: ReplicaSetView[] = [];
    const r = step(d, views);
    const rs = views[0]!.rs;
    const hash = computeHash(d.spec.template);
    expect(rs.metadata.name).toBe(`web-${hash}`);
    expect(rs.metadata.labels).toMatchObject({ app: "web", "pod-template-hash": hash });
    expect(rs.spec.selector.matchLabels).toEqual({ app: "web", "pod-template-hash": hash });
    expect(rs.spec.template.metadata.labels).toEqual({ app: "web", "pod-template-hash": hash });
    expect(rs.metadata.annotations).toMatchObject({ "deployment.kubernetes.io/revision": "1" });
    // maxSurge 1 over 3 replicas from nothing: all 3 at once (the surge bounds the total, 3 + 1).
    expect(rs.spec.replicas).toBe(3);
    expect((r.status as DeploymentStatus).conditions).toContainEqual(
      expect.objectContaining({ type: "Progressing", reason: "NewReplicaSetCreated" }),
    );
  });

  it("a template change rolls with maxSurge 1, maxUnavailable 0: one new, then one old down once it is available, to the end", () => {
    const v1 = dep(3, "localhost/busybox:1");
    const views: ReplicaSetView[] = [];
    step(v1, views);
    readyPods(views[0]!);
    let prev = step(v1, views).status as DeploymentStatus;
    expect(prev).toMatchObject({ replicas: 3, updatedReplicas: 3, availableReplicas: 3 });
    expect(prev.conditions).toContainEqual(
      expect.objectContaining({ type: "Progressing", reason: "NewReplicaSetAvailable" }),
    );
    const v2 = dep(3, "localhost/busybox:2");
    const counts: [number, number][] = [];
    for (
      let i = 0;
      i < 12 &&
      !(
        views.length === 2 &&
        views[0]!.rs.spec.replicas === 0 &&
        views[1]!.rs.spec.replicas === 3 &&
        views[1]!.pods.length === 3
      );
      i++
    ) {
      prev = step(v2, views, prev).status as DeploymentStatus;
      for (const v of views) readyPods(v);
      counts.push([views[0]!.rs.spec.replicas, views[1]?.rs.spec.replicas ?? 0]);
      // Never more than replicas + maxSurge pods, never fewer than replicas - maxUnavailable available.
      expect(views.reduce((n, v) => n + v.rs.spec.replicas, 0)).toBeLessThanOrEqual(4);
      expect(views.reduce((n, v) => n + v.pods.length, 0)).toBeGreaterThanOrEqual(3);
    }
    expect(counts).toEqual([
      [3, 1],
      [2, 1],
      [2, 2],
      [1, 2],
      [1, 3],
      [0, 3],
    ]);
  });

  it("Recreate: the old ReplicaSet to 0 first, the new one only once no old pod is left", () => {
    const views: ReplicaSetView[] = [];
    const v1 = dep(2, "localhost/busybox:1", { type: "Recreate" });
    step(v1, views);
    readyPods(views[0]!);
    const v2 = dep(2, "localhost/busybox:2", { type: "Recreate" });
    step(v2, views);
    expect(views.map((v) => v.rs.spec.replicas)).toEqual([0]);
    step(v2, views); // old pods still there: nothing new
    expect(views).toHaveLength(1);
    views[0]!.pods = [];
    step(v2, views);
    expect(views.map((v) => v.rs.spec.replicas)).toEqual([0, 2]);
  });

  it("revisionHistoryLimit: idle old ReplicaSets beyond it are removed once the rollout is complete", () => {
    const d = Deployment.parse({
      ...dep(1, "localhost/busybox:3"),
      spec: { ...dep(1, "localhost/busybox:3").spec, revisionHistoryLimit: 1 },
    });
    const views: ReplicaSetView[] = [];
    step(d, views);
    readyPods(views[0]!);
    const old = (name: string, at: number): ReplicaSetView => ({
      rs: ReplicaSet.parse({
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        metadata: { name, uid: name },
        spec: {
          replicas: 0,
          selector: { matchLabels: { app: "web" } },
          template: { metadata: { labels: { app: "web", v: name } }, spec: template().spec },
        },
      }),
      pods: [],
      createdAt: at,
    });
    views.push(old("web-old1", NOW - 2000), old("web-old2", NOW - 1000));
    const r = step(d, views);
    expect((r.removeChildren ?? []).map((w) => w.metadata.name)).toEqual(["web-old1"]);
  });

  it("a rollback (rollout undo): the old ReplicaSet whose template is the Deployment's again takes the next revision", () => {
    const views: ReplicaSetView[] = [];
    const v1 = dep(1, "localhost/busybox:1");
    step(v1, views);
    readyPods(views[0]!);
    const v2 = dep(1, "localhost/busybox:2");
    for (let i = 0; i < 6; i++) {
      step(v2, views);
      for (const v of views) readyPods(v);
    }
    const rev = (v: ReplicaSetView) => v.rs.metadata.annotations?.["deployment.kubernetes.io/revision"];
    expect(views.map(rev)).toEqual(["1", "2"]);
    step(v1, views); // back to v1's template: its ReplicaSet is revision 3, as SetNewReplicaSetAnnotations makes it
    expect(views.map(rev)).toEqual(["3", "2"]);
    step(v1, views);
    expect(views.map(rev)).toEqual(["3", "2"]);
  });

  it("progressDeadlineSeconds: no progress for that long is ProgressDeadlineExceeded", () => {
    const d = Deployment.parse({
      ...dep(1, "localhost/busybox:1"),
      spec: { ...dep(1, "localhost/busybox:1").spec, progressDeadlineSeconds: 10 },
    });
    const views: ReplicaSetView[] = [];
    const s0 = step(d, views).status as DeploymentStatus;
    views[0]!.pods = [observed(views[0]!.rs, "Pending")];
    // The pod appearing is progress (the deadline starts again then); nothing after it for 10 s is not.
    const s1 = syncDeployment(d, views, s0, ctx(NOW + 1000)).status as DeploymentStatus;
    expect(s1.conditions).toContainEqual(
      expect.objectContaining({ type: "Progressing", status: "True", reason: "ReplicaSetUpdated" }),
    );
    expect(syncDeployment(d, views, s1, ctx(NOW + 10_500)).status).toEqual(s1);
    const r = syncDeployment(d, views, s1, ctx(NOW + 11_500));
    expect((r.status as DeploymentStatus).conditions).toContainEqual(
      expect.objectContaining({ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded" }),
    );
  });
});

describe("DaemonSet controller", () => {
  const node = {
    name: "node-a",
    labels: { "kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux" },
    taints: [{ key: "dedicated", value: "edge", effect: "NoSchedule" as const }],
    allocatable: {},
  };
  const ds = (spec: Record<string, unknown> = {}) =>
    DaemonSet.parse({
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name: "agent", uid: "ds-uid" },
      spec: {
        selector: { matchLabels: { app: "web" } },
        template: { ...template(), spec: { ...template().spec, ...spec } },
      },
    });
  it("a node whose taint the template does not tolerate runs none, and the status says why", () => {
    const r = syncDaemonSet(ds(), [], undefined, ctx(), { node });
    expect(r.create).toEqual([]);
    expect(r.status).toMatchObject({
      desiredNumberScheduled: 0,
      conditions: [expect.objectContaining({ type: "NodeEligible", status: "False", reason: "TaintToleration" })],
    });
  });
  it("a node that admits it runs one pod `<name>-<5 chars>` with controller-revision-hash", () => {
    const r = syncDaemonSet(ds({ tolerations: [{ key: "dedicated", operator: "Exists" }] }), [], undefined, ctx(), {
      node,
    });
    expect(r.create).toHaveLength(1);
    expect(r.create[0]!.metadata.name).toMatch(/^agent-[a-z0-9]{5}$/);
    expect(r.create[0]!.metadata.labels).toHaveProperty("controller-revision-hash");
    expect(r.status).toMatchObject({ desiredNumberScheduled: 1 });
  });
});
