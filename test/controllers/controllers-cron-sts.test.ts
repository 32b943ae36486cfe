// The CronJob controller's schedule tables (TestMostRecentScheduleTime, pkg/controller/cronjob/utils_test.go) and its
// sync; the StatefulSet controller's ordering (OrderedReady, Parallel, reverse-ordinal updates, claims).
import { describe, expect, it } from "vitest";
import {
  mostRecentScheduleTime,
  syncCronJob,
  jobName,
  type ChildJob,
  type CronJobStatus,
} from "../../src/controllers/cronjob/sync.js";
import { syncStatefulSet, type StatefulSetStatus } from "../../src/controllers/statefulset/sync.js";
import { parseSchedule, type Schedule } from "../../src/pod/workloads/cron.js";
import { CronJob, StatefulSet } from "../../src/pod/workloads/schema.js";
import type { ObservedPod } from "../../src/controllers/pods.js";
import type { ControllerContext } from "../../src/controllers/types.js";
import type { V1PodStatus } from "../../src/status/api-status.js";

const TOP = Date.parse("2016-05-19T10:00:00Z");
const after = (ms: number) => TOP + ms;
const S = 1000;
const M = 60 * S;
const H = 60 * M;
const sched = (s: string): Schedule => {
  const r = parseSchedule(s);
  if (typeof r === "string") throw new Error(r);
  return r;
};

describe("TestMostRecentScheduleTime", () => {
  const cases: {
    name: string;
    schedule: string;
    created: number;
    last?: number;
    sds?: number;
    includeSDS?: boolean;
    now: number;
    earliest: number;
    recent: number | undefined;
    missed?: string;
  }[] = [
    {
      name: "now before next schedule",
      schedule: "0 * * * *",
      created: TOP,
      now: after(30 * S),
      earliest: TOP,
      recent: undefined,
    },
    {
      name: "now just after next schedule",
      schedule: "0 * * * *",
      created: TOP,
      now: after(61 * M),
      earliest: TOP,
      recent: after(60 * M),
    },
    {
      name: "missed 5 schedules",
      schedule: "0 * * * *",
      created: after(10 * S),
      now: after(301 * M),
      earliest: after(10 * S),
      recent: after(300 * M),
      missed: "few",
    },
    {
      name: "complex schedule",
      schedule: "30 6-16/4 * * 1-5",
      created: TOP,
      last: after(30 * M),
      now: after(24 * H + 31 * M),
      earliest: after(30 * M),
      recent: after(24 * H + 30 * M),
      missed: "few",
    },
    {
      name: "another complex schedule",
      schedule: "30 10,11,12 * * 1-5",
      created: TOP,
      last: after(30 * M),
      now: after(30 * H + 30 * M),
      earliest: after(30 * M),
      recent: undefined,
      missed: "few",
    },
    {
      name: "complex schedule with longer diff between executions",
      schedule: "30 6-16/4 * * 1-5",
      created: TOP,
      last: after(30 * M),
      now: after(96 * H + 31 * M),
      earliest: after(30 * M),
      recent: after(96 * H + 30 * M),
      missed: "few",
    },
    {
      name: "complex schedule with shorter diff between executions",
      schedule: "30 6-16/4 * * 1-5",
      created: TOP,
      now: after(24 * H + 31 * M),
      earliest: TOP,
      recent: after(24 * H + 30 * M),
      missed: "few",
    },
    {
      name: "earliestTime being CreationTimestamp and LastScheduleTime",
      schedule: "0 * * * *",
      created: TOP,
      last: TOP,
      now: after(30 * S),
      earliest: TOP,
      recent: undefined,
    },
    {
      name: "earliestTime being LastScheduleTime",
      schedule: "*/5 * * * *",
      created: TOP,
      last: after(30 * M),
      now: after(31 * M),
      earliest: after(30 * M),
      recent: undefined,
    },
    {
      name: "earliestTime being LastScheduleTime (within StartingDeadlineSeconds)",
      schedule: "*/5 * * * *",
      created: TOP,
      last: after(30 * M),
      sds: 60,
      now: after(31 * M),
      earliest: after(30 * M),
      recent: undefined,
    },
    {
      name: "earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)",
      schedule: "*/5 * * * *",
      created: TOP,
      last: after(30 * M),
      sds: 60,
      includeSDS: true,
      now: after(32 * M),
      earliest: after(31 * M),
      recent: undefined,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const r = mostRecentScheduleTime(
        sched(c.schedule),
        { created: c.created, lastScheduleTime: c.last, startingDeadlineSeconds: c.sds },
        c.now,
        c.includeSDS ?? false,
      );
      expect(r.earliest).toBe(c.earliest);
      expect(r.mostRecent).toBe(c.recent);
      expect(r.missed).toBe(c.missed ?? "none");
    });
  it("rogue cronjob", () => {
    expect(() => mostRecentScheduleTime(sched("59 23 31 2 *"), { created: after(10 * S) }, after(H), false)).toThrow();
  });
});

const ctx = (now: number): ControllerContext => ({ now, nodeName: "node-a", suffix: () => "abcde" });
const cronJob = (spec: Record<string, unknown> = {}) =>
  CronJob.parse({
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name: "tick", uid: "cj-uid" },
    spec: {
      schedule: "* * * * *",
      jobTemplate: {
        spec: {
          template: { spec: { containers: [{ name: "c", image: "localhost/busybox:1" }], restartPolicy: "Never" } },
        },
      },
      ...spec,
    },
  });
const child = (name: string, done?: "Complete" | "Failed", startTime = "2016-05-19T10:00:00Z"): ChildJob => ({
  job: {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, namespace: "default", uid: `u-${name}` },
    spec: cronJob().spec.jobTemplate.spec,
    status: undefined,
  },
  status: done
    ? {
        startTime,
        completionTime: startTime,
        conditions: [{ type: done, status: "True", lastTransitionTime: startTime }],
      }
    : { startTime, conditions: [] },
  createdAt: Date.parse(startTime),
});

describe("CronJob controller", () => {
  it("a Job `<name>-<minutes since the epoch>` for the schedule time, with the scheduled-timestamp annotation and the Job's labels", () => {
    const r = syncCronJob(cronJob(), [], undefined, TOP, ctx(after(61 * S)));
    expect(r.putChildren!.map((j) => j.metadata.name)).toEqual([`tick-${Math.floor(after(M) / M)}`]);
    const job = r.putChildren![0]! as ChildJob["job"];
    expect(job.metadata.annotations).toMatchObject({
      "batch.kubernetes.io/cronjob-scheduled-timestamp": "2016-05-19T10:01:00Z",
    });
    expect(job.spec.selector?.matchLabels).toEqual({ "batch.kubernetes.io/controller-uid": job.metadata.uid });
    expect(r.status).toMatchObject({
      lastScheduleTime: "2016-05-19T10:01:00Z",
      active: [{ kind: "Job", name: job.metadata.name }],
    });
    expect(r.requeueAt).toBe(after(2 * M));
  });
  it("after a restart: only the most recent missed time runs, never a burst; none past startingDeadlineSeconds", () => {
    const last: CronJobStatus = { lastScheduleTime: "2016-05-19T10:01:00Z" };
    const r = syncCronJob(cronJob(), [], last, TOP, ctx(after(30 * M + 10 * S)));
    expect(r.putChildren!.map((j) => j.metadata.name)).toEqual([jobName(cronJob(), after(30 * M))]);
    const late = syncCronJob(cronJob({ startingDeadlineSeconds: 5 }), [], last, TOP, ctx(after(30 * M + 10 * S)));
    expect(late.putChildren).toEqual([]);
    // The same pass again (the Job recorded): nothing more.
    expect(syncCronJob(cronJob(), [], r.status as CronJobStatus, TOP, ctx(after(30 * M + 20 * S))).putChildren).toEqual(
      [],
    );
  });
  it("concurrencyPolicy: Forbid skips while one runs, Replace removes the running one", () => {
    const running = [child("tick-1")];
    expect(
      syncCronJob(cronJob({ concurrencyPolicy: "Forbid" }), running, undefined, TOP, ctx(after(61 * S))).putChildren,
    ).toEqual([]);
    const r = syncCronJob(cronJob({ concurrencyPolicy: "Replace" }), running, undefined, TOP, ctx(after(61 * S)));
    expect(r.removeChildren!.map((j) => j.metadata.name)).toEqual(["tick-1"]);
    expect(r.putChildren).toHaveLength(1);
  });
  it("suspend makes nothing; the history limits remove the oldest finished Jobs", () => {
    expect(syncCronJob(cronJob({ suspend: true }), [], undefined, TOP, ctx(after(61 * S))).putChildren).toEqual([]);
    const done = [
      child("a", "Complete", "2016-05-19T09:00:00Z"),
      child("b", "Complete", "2016-05-19T09:10:00Z"),
      child("c", "Failed", "2016-05-19T09:20:00Z"),
      child("d", "Failed", "2016-05-19T09:30:00Z"),
    ];
    const r = syncCronJob(
      cronJob({ successfulJobsHistoryLimit: 1, failedJobsHistoryLimit: 1, suspend: true }),
      done,
      undefined,
      TOP,
      ctx(after(61 * S)),
    );
    expect(r.removeChildren!.map((j) => j.metadata.name)).toEqual(["a", "c"]);
    expect(r.status).toMatchObject({ lastSuccessfulTime: "2016-05-19T09:10:00Z" });
  });
});

describe("StatefulSet controller (ordering)", () => {
  const NOW = Date.parse("2026-01-01T00:00:00Z");
  const sts = (spec: Record<string, unknown> = {}) =>
    StatefulSet.parse({
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name: "db", uid: "sts-uid" },
      spec: {
        replicas: 3,
        serviceName: "db",
        selector: { matchLabels: { app: "db" } },
        template: {
          metadata: { labels: { app: "db" } },
          spec: { containers: [{ name: "c", image: "localhost/busybox:1" }] },
        },
        volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"] } }],
        ...spec,
      },
    });
  const c = (now = NOW): ControllerContext => ({ now, nodeName: "node-a", suffix: () => "x" });
  const ready = (p: ObservedPod["pod"], yes = true): ObservedPod => ({
    pod: p,
    status: {
      phase: "Running",
      conditions: [
        {
          type: "Ready",
          status: yes ? "True" : "False",
          lastProbeTime: null,
          lastTransitionTime: new Date(NOW - 60_000).toISOString(),
        },
      ],
      containerStatuses: [],
    } as unknown as V1PodStatus,
    createdAt: NOW,
  });
  /** Run steps, each pod made becoming Running and Ready (or not) before the next. */
  function run(set: ReturnType<typeof sts>, pods: ObservedPod[], steps: number, makeReady = true) {
    const made: string[][] = [];
    for (let i = 0; i < steps; i++) {
      const r = syncStatefulSet(set, pods, undefined, c());
      made.push([...r.create.map((p) => `+${p.metadata.name}`), ...r.delete.map((d) => `-${d.name}`)]);
      for (const d of r.delete)
        pods.splice(
          pods.findIndex((p) => p.pod.metadata.uid === d.uid),
          1,
        );
      pods.push(...r.create.map((p) => ready(p, makeReady)));
    }
    return made;
  }

  it("OrderedReady: one ordinal at a time, each once the one before is Running and Ready", () => {
    const pods: ObservedPod[] = [];
    expect(run(sts(), pods, 4)).toEqual([["+db-0"], ["+db-1"], ["+db-2"], []]);
    const p = pods[0]!.pod;
    expect(p.metadata.labels).toMatchObject({
      app: "db",
      "statefulset.kubernetes.io/pod-name": "db-0",
      "apps.kubernetes.io/pod-index": "0",
    });
    expect(p.metadata.labels!["controller-revision-hash"]).toMatch(/^db-[a-z0-9]+$/);
    expect(p.spec.hostname).toBe("db-0");
    expect(p.spec.subdomain).toBe("db");
    expect(p.spec.volumes).toEqual([
      { name: "data", persistentVolumeClaim: { claimName: "data-db-0", readOnly: false } },
    ]);
    // A pod not ready holds the next ordinal.
    const stuck: ObservedPod[] = [];
    expect(run(sts(), stuck, 2, false)).toEqual([["+db-0"], []]);
  });
  it("Parallel: all at once; scale-down: the highest ordinals (OrderedReady: one at a time)", () => {
    const pods: ObservedPod[] = [];
    expect(run(sts({ podManagementPolicy: "Parallel" }), pods, 1)).toEqual([["+db-0", "+db-1", "+db-2"]]);
    expect(run(sts({ podManagementPolicy: "Parallel", replicas: 1 }), [...pods], 1)).toEqual([["-db-2", "-db-1"]]);
    expect(run(sts({ replicas: 1 }), pods, 3)).toEqual([["-db-2"], ["-db-1"], []]);
  });
  it("a template change updates in reverse ordinal order, one at a time, down to the partition", () => {
    const pods: ObservedPod[] = [];
    run(sts(), pods, 3);
    const v2 = sts({
      template: {
        metadata: { labels: { app: "db" } },
        spec: { containers: [{ name: "c", image: "localhost/busybox:2" }] },
      },
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 1 } },
    });
    expect(run(v2, pods, 5)).toEqual([["-db-2"], ["+db-2"], ["-db-1"], ["+db-1"], []]);
    const s = syncStatefulSet(v2, pods, undefined, c()).status as StatefulSetStatus;
    expect(s).toMatchObject({ replicas: 3, updatedReplicas: 2, readyReplicas: 3 });
  });
});
