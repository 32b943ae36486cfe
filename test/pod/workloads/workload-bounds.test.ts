// Issue #34, items 1, 2 and 7: bounds on every number a workload carries (a 400 naming the field and the bound, for
// plan as for sync and apply), controllers that never build a pod per replica or completion beyond what the node
// holds, Indexed Jobs' indexes as intervals, the node owner's policy in force on the controllers' pods, and refused
// replicas that cost nothing on the next passes.
import { describe, expect, it } from "vitest";
import { createControllers } from "../../../src/controllers/run.js";
import { MemoryWorkloadStore, type StoredWorkload } from "../../../src/controllers/store.js";
import { syncJob, type JobStatus } from "../../../src/controllers/job/sync.js";
import { firstPendingIndexes, formatIntervals, parseIntervals } from "../../../src/controllers/job/intervals.js";
import { MemoryDesiredState } from "../../../src/pleg/desired-state.js";
import { CronJob, Deployment, Job, type Workload } from "../../../src/pod/workloads/schema.js";
import { jobSelectorDefaults } from "../../../src/pod/workloads/job-labels.js";
import { bodyFromDocuments } from "../../../src/pod/bundle.js";
import { policyRefusal } from "../../../src/auth/pod-security.js";
import type { NodeInfo } from "../../../src/lifecycle/predicates.js";
import { templateRefusal } from "../../../src/usecases/admission/templates.js";
import { createPodRuntime } from "../../../src/kubelet/pod-runtime.js";
import type { CriClient } from "../../../src/cri/client.js";
import { defaultNodeConfig } from "../../../src/container/node-config.js";
import type { Pod } from "../../../src/pod/schema.js";
import type { V1PodStatus } from "../../../src/status/api-status.js";
import { errorsOf } from "../../support/pods.js";
import { Harness } from "../../support/http.js";
import { useFakeCri } from "../../support/fake-cri-suite.js";

const audit = { iss: "t", iat: 1 };
const stored = (w: Workload, generation = 1): StoredWorkload => ({ workload: w, audit, storedAt: 0, generation });
const node = (pods = 110, labels: Record<string, string> = {}): NodeInfo => ({
  name: "node-a",
  labels: { "kubernetes.io/hostname": "node-a", ...labels },
  taints: [],
  allocatable: { pods },
});
const intake = { nodeName: "node-a", serviceAccountTokens: "drop" as const, limits: { maxPods: 110 } };
const tmpl = (labels: Record<string, string>, spec: Record<string, unknown> = {}) => ({
  metadata: { labels },
  spec: { containers: [{ name: "c", image: "localhost/busybox:1" }], ...spec },
});
const deploymentDoc = (spec: Record<string, unknown>, name = "web") => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, uid: `d-${name}` },
  spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: tmpl({ app: name }), ...spec },
});
const jobDoc = (spec: Record<string, unknown>) => ({
  apiVersion: "batch/v1",
  kind: "Job",
  metadata: { name: "batch", uid: "j1" },
  spec: {
    template: { spec: { containers: [{ name: "c", image: "localhost/busybox:1" }], restartPolicy: "Never" } },
    ...spec,
  },
});
const cronDoc = (spec: Record<string, unknown>) => ({
  apiVersion: "batch/v1",
  kind: "CronJob",
  metadata: { name: "tick", uid: "c1" },
  spec: { schedule: "* * * * *", jobTemplate: { spec: jobDoc({}).spec }, ...spec },
});
const refusedAt = (doc: unknown) => errorsOf(() => bodyFromDocuments([doc], intake));

function runner(
  o: {
    node?: NodeInfo;
    limits?: { maxPods: number };
    policy?: "baseline";
    admit?: (p: Pod) => string | undefined;
  } = {},
) {
  const workloads = new MemoryWorkloadStore();
  const desired = new MemoryDesiredState();
  const logs: Record<string, unknown>[] = [];
  const events: string[] = [];
  let built = 0;
  const c = createControllers({
    workloads,
    desired,
    node: o.node ?? node(),
    nodeName: "node-a",
    runtime: { delete: async () => ({ ok: true, deleted: true, steps: [], criCalls: 0 }) as never },
    suffix: () => {
      built++;
      return Math.random().toString(36).slice(2, 7);
    },
    log: (r) => logs.push(r),
    ...(o.limits ? { limits: o.limits } : {}),
    ...(o.policy ? { admitTemplate: policyRefusal({ level: o.policy, hostPathAllow: [] }) } : {}),
    ...(o.admit ? { admitTemplate: o.admit } : {}),
    onWorkloadRefused: (w, f) => void events.push(`${w.kind}/${w.metadata.name} ${f.reason}`),
  });
  const pass = (now = Date.now(), status?: V1PodStatus) => c.pass(now, () => status);
  return { workloads, desired, logs, events, c, pass, built: () => built };
}
const conditionOf = async (s: ReturnType<typeof runner>, kind: string) =>
  ((await s.workloads.list()).find((w) => w.workload.kind === kind)?.status?.["conditions"] as
    | { type: string; reason: string; message: string }[]
    | undefined) ?? [];

describe("every number a workload carries has a bound, named in the 400", () => {
  it("maxSurge and maxUnavailable: int32 or a percentage of at most 100; maxSurge resolved against replicas", () => {
    expect(refusedAt(deploymentDoc({ strategy: { rollingUpdate: { maxSurge: 2147483647 } } }))).toEqual([
      {
        path: "spec.strategy.rollingUpdate.maxSurge",
        message: expect.stringContaining(
          "resolves to 2147483647 pods over 1 replicas: replicas + maxSurge must be at most 110 (PODSYNC_MAX_PODS)",
        ),
      },
    ]);
    expect(refusedAt(deploymentDoc({ strategy: { rollingUpdate: { maxSurge: "2147483647%" } } }))).toEqual([
      { path: "spec.strategy.rollingUpdate.maxSurge", message: expect.stringContaining("percentage") },
    ]);
    expect(refusedAt(deploymentDoc({ strategy: { rollingUpdate: { maxUnavailable: 2 ** 40 } } }))).toEqual([
      { path: "spec.strategy.rollingUpdate.maxUnavailable", message: expect.stringContaining("2147483647") },
    ]);
    expect(refusedAt(deploymentDoc({ strategy: { rollingUpdate: { maxUnavailable: "101%" } } }))).toEqual([
      { path: "spec.strategy.rollingUpdate.maxUnavailable", message: expect.stringContaining("at most 100%") },
    ]);
    // ResolveFenceposts: 100% of 55 rounds up to 55, and 55 + 55 = 110 fits; of 56 it does not.
    expect(() =>
      bodyFromDocuments([deploymentDoc({ replicas: 55, strategy: { rollingUpdate: { maxSurge: "100%" } } })], intake),
    ).not.toThrow();
    expect(refusedAt(deploymentDoc({ replicas: 56, strategy: { rollingUpdate: { maxSurge: "100%" } } }))).toEqual([
      {
        path: "spec.strategy.rollingUpdate.maxSurge",
        message: expect.stringContaining("resolves to 56 pods over 56 replicas"),
      },
    ]);
  });

  it("replicas, parallelism and completions: at most PODSYNC_MAX_PODS; Indexed completions at most 100000", () => {
    expect(refusedAt(deploymentDoc({ replicas: 111, strategy: { type: "Recreate" } }))).toEqual([
      { path: "spec.replicas", message: expect.stringContaining("must be at most 110 (PODSYNC_MAX_PODS") },
    ]);
    expect(refusedAt(jobDoc({ parallelism: 500, completions: 2 }))).toEqual([
      { path: "spec.parallelism", message: expect.stringContaining("must be at most 110 (PODSYNC_MAX_PODS") },
    ]);
    expect(refusedAt(jobDoc({ completions: 2147483647, completionMode: "Indexed" }))).toEqual([
      { path: "spec.completions", message: "must be at most 100000 when completion mode is Indexed" },
    ]);
    expect(refusedAt(jobDoc({ completions: 5000 }))).toEqual([
      { path: "spec.completions", message: expect.stringContaining("must be at most 110 (PODSYNC_MAX_PODS") },
    ]);
    expect(refusedAt(cronDoc({ jobTemplate: { spec: { ...jobDoc({}).spec, parallelism: 200 } } }))).toEqual([
      { path: "spec.jobTemplate.spec.parallelism", message: expect.stringContaining("PODSYNC_MAX_PODS") },
    ]);
  });

  it("history limits, deadlines and back-off limits: int32, history at most 1000", () => {
    expect(refusedAt(deploymentDoc({ revisionHistoryLimit: 2147483647 }))).toEqual([
      { path: "spec.revisionHistoryLimit", message: "revisionHistoryLimit must be at most 1000" },
    ]);
    expect(refusedAt(cronDoc({ successfulJobsHistoryLimit: 5000, failedJobsHistoryLimit: -1 }))).toEqual([
      { path: "spec.successfulJobsHistoryLimit", message: "successfulJobsHistoryLimit must be at most 1000" },
      { path: "spec.failedJobsHistoryLimit", message: "failedJobsHistoryLimit must be at least 0" },
    ]);
    expect(refusedAt(jobDoc({ backoffLimit: 2 ** 31, activeDeadlineSeconds: 2 ** 40 }))).toEqual([
      { path: "spec.activeDeadlineSeconds", message: "activeDeadlineSeconds must be at most 2147483647" },
      { path: "spec.backoffLimit", message: "backoffLimit must be at most 2147483647" },
    ]);
  });
});

describe("controllers never build a pod per completion or per replica beyond what the node holds", () => {
  it("an Indexed Job of 2147483647 completions (stored before the bound): its first wave, in little memory", () => {
    const job = Job.parse(jobDoc({ completions: 10, parallelism: 3, completionMode: "Indexed" }));
    jobSelectorDefaults(job);
    job.spec.completions = 2 ** 31 - 1;
    const before = process.memoryUsage().heapUsed;
    const r = syncJob(job, [], undefined, { now: Date.now(), nodeName: "node-a", suffix: () => "abcde" });
    expect(r.create.map((p) => p.metadata.name)).toEqual(["batch-0-abcde", "batch-1-abcde", "batch-2-abcde"]);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(32 * 1024 * 1024);
  });

  it("indexes are intervals: completed and failed indexes as upstream writes them, pending ones past a huge range", () => {
    expect(formatIntervals(parseIntervals("0-2147483645,7", 2 ** 31 - 1))).toBe("0-2147483645");
    expect(formatIntervals(parseIntervals("1,3-5,4,9", 8))).toBe("1,3-5");
    expect(firstPendingIndexes(parseIntervals("0-2147483644", 2 ** 31 - 1), 5, 2 ** 31 - 1)).toEqual([
      2147483645, 2147483646,
    ]);
    expect(firstPendingIndexes(parseIntervals("0,2-3", 10), 3, 10, (i) => i !== 4)).toEqual([1, 5, 6]);
    // A stored status of a Job with backoffLimitPerIndex: its failed indexes stay one interval.
    const job = Job.parse(
      jobDoc({ completions: 100000, parallelism: 2, completionMode: "Indexed", backoffLimitPerIndex: 1 }),
    );
    jobSelectorDefaults(job);
    job.spec.completions = 2 ** 31 - 1;
    const prev: JobStatus = {
      active: 0,
      succeeded: 0,
      failed: 0,
      ready: 0,
      conditions: [],
      failedIndexes: "0-2147483640",
    };
    const r = syncJob(job, [], prev, { now: Date.now(), nodeName: "node-a", suffix: () => "abcde" });
    expect(r.status["failedIndexes"]).toBe("0-2147483640");
    expect(r.create.map((p) => p.metadata.name)).toEqual(["batch-2147483641-abcde", "batch-2147483642-abcde"]);
  });

  it("maxSurge 2147483647 stored before the bound, a rollout that never becomes Ready, a scale to 3: bounded by the node", async () => {
    const s = runner({ node: node(110) });
    const d = Deployment.parse(deploymentDoc({ replicas: 1 }));
    d.spec.strategy = { type: "RollingUpdate", rollingUpdate: { maxSurge: 2147483647, maxUnavailable: 0 } };
    await s.workloads.put(stored(d));
    await s.pass();
    // A new template whose pods never become Ready (the pods are never observed), then a scale to 3.
    const d2 = structuredClone(d);
    d2.spec.template.spec = { containers: [{ name: "c", image: "localhost/busybox:2" }] };
    await s.workloads.put(stored(d2, 2));
    await s.pass();
    const d3 = structuredClone(d2);
    d3.spec.replicas = 3;
    await s.workloads.put(stored(d3, 3));
    for (let i = 0; i < 3; i++) await s.pass();
    // Proportional scaling hands the ReplicaSets up to 2^31 replicas: they make what the node holds, no more.
    expect((await s.desired.list()).length).toBeLessThanOrEqual(110);
    expect(s.built()).toBeLessThanOrEqual(4 * 111);
  });

  it("a workload past a bound lowered after it was stored makes no pods; a condition, a log line and an event say so once", async () => {
    const s = runner({ node: node(20), limits: { maxPods: 20 } });
    await s.workloads.put(stored(Deployment.parse(deploymentDoc({ replicas: 50, strategy: { type: "Recreate" } }))));
    await s.pass();
    await s.pass();
    expect(await s.desired.list()).toEqual([]);
    expect((await s.workloads.list()).map((w) => w.workload.kind)).toEqual(["Deployment"]);
    expect(await conditionOf(s, "Deployment")).toEqual([
      expect.objectContaining({
        type: "ReplicaFailure",
        status: "True",
        reason: "ExceedsNodeLimits",
        message: expect.stringContaining("spec.replicas: replicas 50 is more than this node holds: must be at most 20"),
      }),
    ]);
    expect(s.events).toEqual(["Deployment/web ExceedsNodeLimits"]);
    expect(s.logs.filter((l) => l["event"] === "refused")).toEqual([
      expect.objectContaining({ what: "workload", workload: "Deployment/default/web", reason: "ExceedsNodeLimits" }),
    ]);
  });
});

describe("the controllers' pods pass the node owner's policy in force", () => {
  const privileged = tmpl(
    { app: "web" },
    {
      hostNetwork: true,
      containers: [{ name: "c", image: "localhost/busybox:1", securityContext: { privileged: true } }],
    },
  );

  it("a Deployment stored under privileged makes no pods at baseline: ReplicaFailure and an event, once", async () => {
    const s = runner({ policy: "baseline" });
    await s.workloads.put(stored(Deployment.parse(deploymentDoc({ replicas: 2, template: privileged }))));
    await s.pass();
    await s.pass();
    expect(await s.desired.list()).toEqual([]);
    for (const kind of ["Deployment", "ReplicaSet"])
      expect(await conditionOf(s, kind)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            type: "ReplicaFailure",
            reason: "FailedCreate",
            message: expect.stringMatching(/are forbidden: violates PodSecurity "baseline:latest": .*host namespaces/),
          }),
        ]),
      );
    expect(s.events.sort()).toEqual([
      "Deployment/web FailedCreate",
      expect.stringMatching(/^ReplicaSet\/web-\w+ FailedCreate$/),
    ]);
    // The same template is fine where the owner allows it.
    const open = runner();
    await open.workloads.put(stored(Deployment.parse(deploymentDoc({ replicas: 2, template: privileged }))));
    await open.pass();
    expect(await open.desired.list()).toHaveLength(2);
  });

  it("the runtime's refusals too (kubelet's sysctl admit handler), as for a pod sent directly", async () => {
    const rt = createPodRuntime({} as CriClient, { node: { ...defaultNodeConfig(), allowedUnsafeSysctls: [] } });
    const s = runner({ admit: templateRefusal({ level: "privileged", hostPathAllow: [] }, rt) });
    const unsafe = tmpl({ app: "web" }, { securityContext: { sysctls: [{ name: "kernel.msgmax", value: "65536" }] } });
    await s.workloads.put(stored(Deployment.parse(deploymentDoc({ replicas: 2, template: unsafe }))));
    await s.pass();
    expect(await s.desired.list()).toEqual([]);
    expect(await conditionOf(s, "Deployment")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: "ReplicaFailure",
          reason: "FailedCreate",
          message: expect.stringContaining('forbidden sysctl: "kernel.msgmax" not allowlisted'),
        }),
      ]),
    );
  });

  it("a CronJob whose pods the policy refuses makes no Job when its schedule comes due", async () => {
    const s = runner({ policy: "baseline" });
    const cj = CronJob.parse(
      cronDoc({
        jobTemplate: { spec: { template: { ...privileged, spec: { ...privileged.spec, restartPolicy: "Never" } } } },
      }),
    );
    await s.workloads.put({ ...stored(cj), storedAt: Date.parse("2026-12-07T00:00:00Z") });
    await s.pass(Date.parse("2026-12-07T00:05:10Z"));
    expect((await s.workloads.list()).map((w) => w.workload.kind)).toEqual(["CronJob"]);
    expect(await s.desired.list()).toEqual([]);
    expect(await conditionOf(s, "CronJob")).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: "ReplicaFailure", reason: "FailedCreate" })]),
    );
  });
});

describe("refused replicas cost nothing", () => {
  it("20 Deployments × 1000 unschedulable replicas: after the first pass, no pod is built per missing replica", async () => {
    const s = runner({ node: node(110) });
    const spec = (i: number) =>
      Deployment.parse(
        deploymentDoc({ replicas: 1000, template: tmpl({ app: `w${i}` }, { nodeSelector: { disk: "ssd" } }) }, `w${i}`),
      );
    await s.workloads.putAll(Array.from({ length: 20 }, (_, i) => stored(spec(i))));
    await s.pass();
    const first = s.built();
    // The first pass: the template's first look at admission refuses it, so one pod per ReplicaSet, not 1000.
    expect(first).toBeLessThanOrEqual(20);
    await s.pass();
    await s.pass();
    // Later passes: the refusal remembered for the template and node state, one pod built per ReplicaSet at most.
    expect(s.built() - first).toBeLessThanOrEqual(2 * 20);
    expect(await s.desired.list()).toEqual([]);
    const rs = (await s.workloads.list()).filter((w) => w.workload.kind === "ReplicaSet");
    expect(rs).toHaveLength(20);
    for (const w of rs)
      expect(w.status?.["conditions"]).toEqual([
        expect.objectContaining({ type: "ReplicaFailure", message: expect.stringContaining("NodeAffinity") }),
      ]);
  });
});

describe("PODSYNC_MAX_WORKLOADS", () => {
  const suite = useFakeCri();
  it("a sync past it, and a PUT of a set past it, are a 400 naming the first workload over; plan too", async () => {
    const workloads = new MemoryWorkloadStore();
    const h = await Harness.start(suite.cri, {
      workloads,
      maxWorkloads: 2,
      nodeInfo: { ...node(110), labels: { ...node().labels, "kubernetes.io/os": "linux" } },
    });
    try {
      const post = async (path: string, act: string, claims: Record<string, unknown>) =>
        h.fetch(path, {
          method: path === "/v1/node/pods" ? "PUT" : "POST",
          headers: { "content-type": "application/jose" },
          body: await h.sign({ act, ...claims }),
        });
      const two = [deploymentDoc({}, "a"), deploymentDoc({}, "b")];
      expect((await post("/v1/pods/sync", "sync", { items: two })).status).toBe(200);
      // The same two again: still two.
      expect((await post("/v1/pods/sync", "sync", { items: [two[1]] })).status).toBe(200);
      for (const [path, act] of [
        ["/v1/pods/sync", "sync"],
        ["/v1/pods/plan", "plan"],
      ] as const) {
        const r = await post(path, act, { items: [deploymentDoc({}, "c")] });
        expect(r.status).toBe(400);
        expect(r.body.errors).toEqual([
          {
            path: "items[0]",
            message: expect.stringContaining("a node stores at most 2 workloads sent to it (PODSYNC_MAX_WORKLOADS)"),
          },
        ]);
      }
      const put = await post("/v1/node/pods", "apply", {
        generation: 1,
        pods: [deploymentDoc({}, "x"), deploymentDoc({}, "y"), deploymentDoc({}, "z")],
      });
      expect(put.status, JSON.stringify(put.body)).toBe(400);
      expect(put.body.errors).toEqual([{ path: "pods[2]", message: expect.stringContaining("PODSYNC_MAX_WORKLOADS") }]);
      expect((await workloads.list()).map((w) => w.workload.metadata.name).sort()).toEqual(["a", "b"]);
    } finally {
      await h.close();
    }
  });
});
