// Issue #34: POST /v1/pods/plan driven with generated workloads (fast-check), their numbers drawn from the extremes
// (0, -1, 2^31-1, 2^31, 2^53, fractions, numeric and NaN-ish strings, percentages such as "2147483647%"). The
// server answers every body with 200 or a 400 that names each out-of-bound field, never crashes, and its heap
// grows by less than HEAP_BOUND over the whole run (a plan runs the node's controllers on copies of its stores).
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryWorkloadStore } from "../../../src/controllers/store.js";
import { connectGrpc } from "../../../src/cri/grpc-transport.js";
import type { FakeServer } from "../../support/fake-cri.js";
import { Harness } from "../../support/http.js";
import { useFakeCri } from "../../support/fake-cri-suite.js";

/** The most the heap may grow over every plan of the run. */
const HEAP_BOUND = 96 * 1024 * 1024;
const MAX_PODS = 110;
const INT32 = 2 ** 31 - 1;

const extreme = fc.oneof(
  fc.constantFrom(0, -1, 1, 3, 55, 110, 111, 1000, 1001, INT32, 2 ** 31, 2 ** 53, -(2 ** 31), 1.5, 1e308),
  fc.constantFrom("2147483647%", "100%", "101%", "25%", "0%", "-1%", "NaN", "Infinity", "1e9", "0x10", "", "3"),
  fc.constantFrom(null, true),
  fc.integer({ min: -5, max: 200 }),
);

/** Whether a field's value is in bounds: a whole number in [min, max] (intOrPercent: or "N%" with N ≤ 100). A null
 * is the field left out, as Go's JSON decoding reads it (issue #35: src/pod/nulls.ts). */
const inBounds = (v: unknown, min: number, max: number, percent = false) =>
  v === null ||
  (typeof v === "number" && Number.isInteger(v) && v >= min && v <= max) ||
  (percent && typeof v === "string" && /^[0-9]+%$/.test(v) && Number(v.slice(0, -1)) <= 100);

interface Case {
  doc: Record<string, unknown>;
  /** Fields (under spec) whose values are out of bounds on their own: each must be named. */
  bad: string[];
}

const container = { name: "c", image: "localhost/busybox:1" };
const labels = { app: "f" };

const deployment = fc
  .record({
    replicas: extreme,
    maxSurge: extreme,
    maxUnavailable: extreme,
    revisionHistoryLimit: extreme,
    minReadySeconds: extreme,
  })
  .map(({ replicas, maxSurge, maxUnavailable, revisionHistoryLimit, minReadySeconds }): Case => {
    const bad: string[] = [];
    if (!inBounds(replicas, 0, MAX_PODS)) bad.push("spec.replicas");
    if (!inBounds(maxSurge, 0, INT32, true)) bad.push("spec.strategy.rollingUpdate.maxSurge");
    if (!inBounds(maxUnavailable, 0, INT32, true)) bad.push("spec.strategy.rollingUpdate.maxUnavailable");
    if (!inBounds(revisionHistoryLimit, 0, 1000)) bad.push("spec.revisionHistoryLimit");
    if (!inBounds(minReadySeconds, 0, INT32)) bad.push("spec.minReadySeconds");
    return {
      bad,
      doc: {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "f" },
        spec: {
          replicas,
          revisionHistoryLimit,
          minReadySeconds,
          selector: { matchLabels: labels },
          strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge, maxUnavailable } },
          template: { metadata: { labels }, spec: { containers: [container] } },
        },
      },
    };
  });

const job = fc
  .record({
    parallelism: extreme,
    completions: extreme,
    backoffLimit: extreme,
    activeDeadlineSeconds: extreme,
    indexed: fc.boolean(),
  })
  .map(({ parallelism, completions, backoffLimit, activeDeadlineSeconds, indexed }): Case => {
    const bad: string[] = [];
    if (!inBounds(parallelism, 0, MAX_PODS)) bad.push("spec.parallelism");
    if (!inBounds(completions, 0, MAX_PODS)) bad.push("spec.completions");
    if (!inBounds(backoffLimit, 0, INT32)) bad.push("spec.backoffLimit");
    if (!inBounds(activeDeadlineSeconds, 1, INT32)) bad.push("spec.activeDeadlineSeconds");
    return {
      bad,
      doc: {
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name: "f" },
        spec: {
          parallelism,
          completions,
          backoffLimit,
          activeDeadlineSeconds,
          ...(indexed ? { completionMode: "Indexed" } : {}),
          template: { spec: { containers: [container], restartPolicy: "Never" } },
        },
      },
    };
  });

const cronJob = fc
  .record({ successful: extreme, failed: extreme, starting: extreme, parallelism: extreme })
  .map(({ successful, failed, starting, parallelism }): Case => {
    const bad: string[] = [];
    if (!inBounds(successful, 0, 1000)) bad.push("spec.successfulJobsHistoryLimit");
    if (!inBounds(failed, 0, 1000)) bad.push("spec.failedJobsHistoryLimit");
    if (!inBounds(starting, 0, INT32)) bad.push("spec.startingDeadlineSeconds");
    if (!inBounds(parallelism, 0, MAX_PODS)) bad.push("spec.jobTemplate.spec.parallelism");
    return {
      bad,
      doc: {
        apiVersion: "batch/v1",
        kind: "CronJob",
        metadata: { name: "f" },
        spec: {
          schedule: "*/5 * * * *",
          successfulJobsHistoryLimit: successful,
          failedJobsHistoryLimit: failed,
          startingDeadlineSeconds: starting,
          jobTemplate: {
            spec: { parallelism, template: { spec: { containers: [container], restartPolicy: "Never" } } },
          },
        },
      },
    };
  });

const statefulSet = fc
  .record({ replicas: extreme, start: extreme, partition: extreme })
  .map(({ replicas, start, partition }): Case => {
    const bad: string[] = [];
    if (!inBounds(replicas, 0, MAX_PODS)) bad.push("spec.replicas");
    if (!inBounds(start, 0, INT32)) bad.push("spec.ordinals.start");
    if (!inBounds(partition, 0, INT32)) bad.push("spec.updateStrategy.rollingUpdate.partition");
    return {
      bad,
      doc: {
        apiVersion: "apps/v1",
        kind: "StatefulSet",
        metadata: { name: "f" },
        spec: {
          replicas,
          ordinals: { start },
          updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition } },
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [container] } },
        },
      },
    };
  });

describe("plan, fuzzed with extreme numbers", () => {
  let fake: FakeServer;
  let h: Harness;
  const suite = useFakeCri();
  beforeAll(async () => {
    ({ fake } = suite);
    h = await Harness.start(connectGrpc({ endpoint: fake.endpoint, timeoutMs: 5000 }), {
      workloads: new MemoryWorkloadStore(),
      nodeInfo: {
        name: "node-a",
        labels: { "kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux" },
        taints: [],
        allocatable: { pods: MAX_PODS },
      },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("answers 200 or a 400 naming every out-of-bound field, and the heap stays under the bound", async () => {
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    const answered = { ok: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(fc.oneof(deployment, job, cronJob, statefulSet), async ({ doc, bad }) => {
        const token = await h.sign({ act: "plan", items: [doc] });
        const r = await h.fetch("/v1/pods/plan", {
          method: "POST",
          headers: { "content-type": "application/jose" },
          body: token,
        });
        peak = Math.max(peak, process.memoryUsage().heapUsed);
        expect([200, 400], JSON.stringify(r.body).slice(0, 500)).toContain(r.status);
        if (r.status === 200) {
          answered.ok++;
          expect(bad, "accepted a body with an out-of-bound field").toEqual([]);
          expect(r.body.pods.length).toBeLessThanOrEqual(2 * MAX_PODS);
          return;
        }
        answered.refused++;
        // The body's items are named by their place (`items[0].spec.replicas`).
        const paths: string[] = r.body.errors.map((e: { path: string }) => e.path.replace(/^items\[0\]\./, ""));
        for (const f of bad)
          expect(
            paths.some((p) => p === f || p.startsWith(`${f}.`)),
            `${f} in ${paths}`,
          ).toBe(true);
        for (const e of r.body.errors as { path: string; message: string }[])
          expect(e.message.length).toBeGreaterThan(0);
      }),
      { numRuns: 160, seed: 34 },
    );
    expect(answered.ok).toBeGreaterThan(0);
    expect(answered.refused).toBeGreaterThan(0);
    expect(peak - before).toBeLessThan(HEAP_BOUND);
    // The server still answers.
    expect((await h.fetch("/healthz")).status).toBe(200);
  });
});
