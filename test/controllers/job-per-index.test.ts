// Indexed Jobs' backoffLimitPerIndex, maxFailedIndexes and successPolicy (src/controllers/job/indexes.ts and
// sync.ts), with upstream's rows: pkg/controller/job/indexed_job_utils_test.go TestIsIndexFailed,
// TestCalculateFailedIndexes and TestGetNewIndexFailureCountValue (the rows about the tracking finalizer, which
// podsync's pods do not carry, are left out: every failed pod counts), then the controller's steps on them.
import { describe, expect, it } from "vitest";
import {
  failedIndexes,
  isIndexFailed,
  JOB_INDEX_FAILURE_COUNT_ANNOTATION,
  JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
  matchSuccessPolicy,
  newIndexFailureCounts,
} from "../../src/controllers/job/indexes.js";
import { matchPodFailurePolicy, syncJob, type JobStatus } from "../../src/controllers/job/sync.js";
import { intervalsOf } from "../../src/controllers/job/intervals.js";
import type { ObservedPod } from "../../src/controllers/pods.js";
import { Job } from "../../src/pod/workloads/schema.js";
import { JOB_COMPLETION_INDEX_ANNOTATION } from "../../src/pod/workloads/job-labels.js";
import { makePod } from "../../src/pod/workloads/template.js";
import type { V1PodStatus } from "../../src/status/api-status.js";

const NOW = Date.parse("2026-01-01T00:00:00Z");
let seq = 0;
const ctx = (now = NOW) => ({ now, nodeName: "node-a", suffix: () => `s${String(++seq).padStart(4, "0")}`.slice(-5) });
const jobOf = (spec: Record<string, unknown>) =>
  Job.parse({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "ix", uid: "j1" },
    spec: {
      completionMode: "Indexed",
      template: { spec: { containers: [{ name: "c", image: "localhost/busybox:1" }], restartPolicy: "Never" } },
      ...spec,
    },
  });

/** buildPod().index(i).indexFailureCount(n).phase(p), optionally with an exit code and a finish time. */
function pod(
  index: string,
  phase: V1PodStatus["phase"],
  failureCount?: string,
  o: { exitCode?: number; finishedAt?: number; ignored?: string; conditions?: { type: string; status: string }[] } = {},
): ObservedPod {
  const annotations: Record<string, string> = { [JOB_COMPLETION_INDEX_ANNOTATION]: index };
  if (failureCount !== undefined) annotations[JOB_INDEX_FAILURE_COUNT_ANNOTATION] = failureCount;
  if (o.ignored !== undefined) annotations[JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = o.ignored;
  const p = makePod(
    { metadata: {}, spec: { containers: [{ name: "c", image: "x" }], restartPolicy: "Never" } } as never,
    { name: `ix-${index}-${++seq}`, namespace: "default", uid: `u${seq}`, annotations },
  );
  const terminated =
    phase === "Failed" || phase === "Succeeded"
      ? {
          terminated: {
            exitCode: o.exitCode ?? (phase === "Failed" ? 1 : 0),
            finishedAt: new Date(o.finishedAt ?? NOW - 60_000).toISOString(),
          },
        }
      : { running: {} };
  const status = {
    phase,
    conditions: o.conditions ?? [],
    containerStatuses: [{ name: "c", state: terminated, restartCount: 0 }],
    qosClass: "BestEffort",
  } as unknown as V1PodStatus;
  return { pod: p, status, createdAt: NOW - 120_000 + seq };
}

describe("TestIsIndexFailed", () => {
  const rows = [
    {
      name: "failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=0",
      job: jobOf({ completions: 2, backoffLimitPerIndex: 0 }),
      pod: pod("0", "Failed", "0"),
      want: true,
    },
    {
      name: "failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=1",
      job: jobOf({ completions: 2, backoffLimitPerIndex: 1 }),
      pod: pod("1", "Failed", "1"),
      want: true,
    },
    {
      name: "matching FailIndex pod failure policy",
      job: jobOf({
        completions: 2,
        backoffLimitPerIndex: 1,
        podFailurePolicy: { rules: [{ action: "FailIndex", onExitCodes: { operator: "In", values: [3] } }] },
      }),
      pod: pod("0", "Failed", "0", { exitCode: 3 }),
      want: true,
    },
  ];
  for (const r of rows) it(r.name, () => expect(isIndexFailed(r.job, r.pod, matchPodFailurePolicy)).toBe(r.want));
});

describe("TestCalculateFailedIndexes", () => {
  const rows = [
    {
      name: "one new index failed",
      job: jobOf({ completions: 2, backoffLimitPerIndex: 1 }),
      pods: [pod("0", "Failed", "0"), pod("1", "Failed", "1")],
      want: [1],
    },
    {
      name: "pod outside completions is ignored",
      job: jobOf({ completions: 2, backoffLimitPerIndex: 0 }),
      pods: [pod("3", "Failed", "0")],
      want: [],
    },
    {
      name: "extend the failed indexes",
      job: jobOf({ completions: 2, backoffLimitPerIndex: 0 }),
      prev: "0",
      pods: [pod("1", "Failed", "0")],
      want: [0, 1],
    },
    {
      name: "prev failed indexes empty",
      job: jobOf({ completions: 2, backoffLimitPerIndex: 0 }),
      prev: "",
      pods: [pod("1", "Failed", "0")],
      want: [1],
    },
    {
      name: "prev failed indexes outside the completions",
      job: jobOf({ completions: 2, backoffLimitPerIndex: 0 }),
      prev: "9",
      pods: [pod("1", "Failed", "0")],
      want: [1],
    },
  ];
  for (const r of rows)
    it(r.name, () => expect(failedIndexes(r.job, r.pods, r.prev, matchPodFailurePolicy)).toEqual(intervalsOf(r.want)));
});

describe("TestGetNewIndexFailureCountValue", () => {
  const ignoreDisruption = jobOf({
    completions: 4,
    backoffLimitPerIndex: 1,
    podFailurePolicy: {
      rules: [{ action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] }],
    },
  });
  const plain = jobOf({ completions: 4, backoffLimitPerIndex: 1 });
  const rows = [
    { name: "first pod created", job: plain, pod: undefined, failures: 0, ignored: 0 },
    {
      name: "failed pod being replaced with 0 index failure count",
      job: plain,
      pod: pod("0", "Failed", "0"),
      failures: 1,
      ignored: 0,
    },
    {
      name: "failed pod being replaced with >0 index failure count",
      job: plain,
      pod: pod("0", "Failed", "3"),
      failures: 4,
      ignored: 0,
    },
    {
      name: "failed pod being replaced, matching the ignore rule",
      job: ignoreDisruption,
      pod: pod("3", "Failed", "3", { conditions: [{ type: "DisruptionTarget", status: "True" }] }),
      failures: 3,
      ignored: 1,
    },
  ];
  for (const r of rows)
    it(r.name, () =>
      expect(newIndexFailureCounts(r.job, r.pod, matchPodFailurePolicy)).toEqual({
        failures: r.failures,
        ignored: r.ignored,
      }),
    );
});

describe("the Job controller with backoffLimitPerIndex", () => {
  it("a failed index is made again after its own back-off, its new pod counting the failure; past the limit the index is failed for good and the Job fails (FailedIndexes) once every index is done", () => {
    const job = jobOf({ completions: 2, parallelism: 2, backoffLimitPerIndex: 1 });
    // Index 0 failed once (count 0), index 1 succeeded.
    const first = [pod("0", "Failed", "0", { finishedAt: NOW - 5_000 }), pod("1", "Succeeded", "0")];
    const early = syncJob(job, first, undefined, ctx());
    expect(early.create).toEqual([]);
    expect(early.requeueAt).toBe(NOW - 5_000 + 10_000);
    expect(early.status).toMatchObject({ failed: 1, succeeded: 1, failedIndexes: "", completedIndexes: "1" });
    const again = syncJob(job, first, undefined, ctx(NOW + 5_000));
    expect(again.create).toHaveLength(1);
    expect(again.create[0]!.metadata.annotations).toMatchObject({
      [JOB_COMPLETION_INDEX_ANNOTATION]: "0",
      [JOB_INDEX_FAILURE_COUNT_ANNOTATION]: "1",
    });
    // Its second failure (count 1 = backoffLimitPerIndex): index 0 failed for good; with index 1 done, the Job fails.
    const second = [...first, pod("0", "Failed", "1", { finishedAt: NOW + 8_000 })];
    const r = syncJob(job, second, again.status as JobStatus, ctx(NOW + 9_000));
    expect(r.create).toEqual([]);
    expect(r.status).toMatchObject({
      failed: 2,
      failedIndexes: "0",
      conditions: expect.arrayContaining([
        expect.objectContaining({ type: "Failed", reason: "FailedIndexes", message: "Job has failed indexes" }),
      ]),
    });
  });

  it("maxFailedIndexes: one failed index more than allowed fails the Job at once (MaxFailedIndexesExceeded), its running pods deleted", () => {
    const job = jobOf({ completions: 4, parallelism: 4, backoffLimitPerIndex: 0, maxFailedIndexes: 0 });
    const r = syncJob(
      job,
      [pod("0", "Failed", "0"), pod("1", "Running", "0"), pod("2", "Running", "0")],
      undefined,
      ctx(),
    );
    expect(r.status).toMatchObject({
      failedIndexes: "0",
      conditions: expect.arrayContaining([
        expect.objectContaining({
          type: "Failed",
          reason: "MaxFailedIndexesExceeded",
          message: "Job has exceeded the specified maximal number of failed indexes",
        }),
      ]),
    });
    expect(r.delete).toHaveLength(2);
    expect(r.create).toEqual([]);
  });

  it("a FailIndex rule fails the index at its first failure; the other indexes go on; an Ignore rule's failure is counted as ignored", () => {
    const job = jobOf({
      completions: 3,
      parallelism: 3,
      backoffLimitPerIndex: 2,
      podFailurePolicy: {
        rules: [
          { action: "FailIndex", onExitCodes: { operator: "In", values: [42] } },
          { action: "Ignore", onExitCodes: { operator: "In", values: [7] } },
        ],
      },
    });
    const r = syncJob(
      job,
      [
        pod("0", "Failed", "0", { exitCode: 42 }),
        pod("1", "Failed", "0", { exitCode: 7, finishedAt: NOW - 60_000 }),
        pod("2", "Running", "0"),
      ],
      undefined,
      ctx(),
    );
    expect(r.status).toMatchObject({ failedIndexes: "0" });
    expect(
      r.create.map((p) => [
        p.metadata.annotations![JOB_COMPLETION_INDEX_ANNOTATION],
        p.metadata.annotations![JOB_INDEX_FAILURE_COUNT_ANNOTATION],
        p.metadata.annotations![JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION],
      ]),
    ).toEqual([["1", "0", "1"]]);
  });
});

describe("successPolicy (success_policy.go matchSuccessPolicy)", () => {
  it("succeededIndexes: all of them; with succeededCount: that many of them; succeededCount alone: that many indexes; the Job completes with reason SuccessPolicy and its other pods go", () => {
    const rules = (r: Record<string, unknown>[]) =>
      jobOf({ completions: 5, parallelism: 5, successPolicy: { rules: r } });
    expect(matchSuccessPolicy(rules([{ succeededIndexes: "0-2" }]), [0, 1])).toBeUndefined();
    expect(matchSuccessPolicy(rules([{ succeededIndexes: "0-2" }]), [0, 1, 2])).toBe("Matched rules at index 0");
    expect(
      matchSuccessPolicy(rules([{ succeededIndexes: "4" }, { succeededIndexes: "0-3", succeededCount: 2 }]), [1, 3]),
    ).toBe("Matched rules at index 1");
    expect(matchSuccessPolicy(rules([{ succeededCount: 3 }]), [0, 2, 4])).toBe("Matched rules at index 0");
    expect(matchSuccessPolicy(rules([{ succeededCount: 1 }]), [])).toBeUndefined();
    const job = rules([{ succeededIndexes: "0" }]);
    const r = syncJob(job, [pod("0", "Succeeded"), pod("1", "Running"), pod("2", "Running")], undefined, ctx());
    expect(r.status).toMatchObject({
      succeeded: 1,
      conditions: expect.arrayContaining([
        expect.objectContaining({ type: "Complete", reason: "SuccessPolicy", message: "Matched rules at index 0" }),
      ]),
    });
    expect(r.delete).toHaveLength(2);
  });
});

describe("validation (pkg/apis/batch/validation)", () => {
  const base = { apiVersion: "batch/v1", kind: "Job", metadata: { name: "v" } };
  const tmpl = { spec: { containers: [{ name: "c", image: "x" }], restartPolicy: "Never" } };
  it("backoffLimitPerIndex needs Indexed; maxFailedIndexes needs backoffLimitPerIndex and at most completions; FailIndex needs backoffLimitPerIndex; backoffLimit defaults to MaxInt32 with it", () => {
    const issues = (spec: Record<string, unknown>) => {
      const r = Job.safeParse({ ...base, spec: { template: tmpl, ...spec } });
      return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    };
    expect(issues({ backoffLimitPerIndex: 1, completions: 2 })).toEqual([
      "spec.backoffLimitPerIndex: requires indexed completion mode",
    ]);
    expect(issues({ completionMode: "Indexed", completions: 2, maxFailedIndexes: 1 })).toEqual([
      "spec.maxFailedIndexes: cannot be set when backoffLimitPerIndex is not set",
    ]);
    expect(issues({ completionMode: "Indexed", completions: 2, backoffLimitPerIndex: 0, maxFailedIndexes: 3 })).toEqual(
      ["spec.maxFailedIndexes: must be less than or equal to completions"],
    );
    expect(
      issues({
        completionMode: "Indexed",
        completions: 2,
        podFailurePolicy: { rules: [{ action: "FailIndex", onExitCodes: { operator: "In", values: [1] } }] },
      }),
    ).toEqual(["spec.podFailurePolicy.rules.0.action: FailIndex is only allowed when backoffLimitPerIndex is set"]);
    expect(issues({ completionMode: "Indexed", completions: 3, successPolicy: { rules: [{}] } })).toEqual([
      "spec.successPolicy.rules.0: at least one of succeededCount or succeededIndexes must be specified",
    ]);
    expect(
      issues({ completionMode: "Indexed", completions: 3, successPolicy: { rules: [{ succeededIndexes: "1-5" }] } }),
    ).toEqual([
      'spec.successPolicy.rules.0.succeededIndexes: "1-5" is not an ordered range of indexes below completions',
    ]);
    expect(
      Job.parse({
        ...base,
        spec: { template: tmpl, completionMode: "Indexed", completions: 2, backoffLimitPerIndex: 1 },
      }).spec.backoffLimit,
    ).toBe(2 ** 31 - 1);
    expect(Job.parse({ ...base, spec: { template: tmpl } }).spec.backoffLimit).toBe(6);
  });
});
