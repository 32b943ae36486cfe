// The controllers' runner over memory stores: what a pass stores and deletes, what happens when a workload goes,
// admission of derived pods, and one workload's error not stopping the others.
import { describe, expect, it } from "vitest";
import { createControllers } from "../../src/controllers/run.js";
import { MemoryWorkloadStore, type StoredWorkload } from "../../src/controllers/store.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { Deployment, Job, type Workload } from "../../src/pod/workloads/schema.js";
import { jobSelectorDefaults } from "../../src/pod/workloads/job-labels.js";

const audit = { iss: "t", iat: 1 };
const stored = (w: Workload): StoredWorkload => ({ workload: w, audit, storedAt: 0 });
const node = { name: "node-a", labels: { "kubernetes.io/hostname": "node-a" }, taints: [], allocatable: {} };
const deployment = (replicas: number, ports: unknown[] = []) =>
  Deployment.parse({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", uid: "d1" },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: { containers: [{ name: "c", image: "localhost/busybox:1", ports }] },
      },
    },
  });

function setup() {
  const workloads = new MemoryWorkloadStore();
  const desired = new MemoryDesiredState();
  const deleted: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const refused: string[] = [];
  const c = createControllers({
    workloads,
    desired,
    node,
    nodeName: "node-a",
    runtime: {
      delete: async (uid: string) => (deleted.push(uid), { ok: true, deleted: true, steps: [], criCalls: 0 }) as never,
    },
    log: (r) => logs.push(r),
    onRefused: (p, reason) => void refused.push(`${p.metadata.name.replace(/-[a-z0-9]{5}$/, "")} ${reason}`),
  });
  return { workloads, desired, deleted, logs, refused, c, pass: () => c.pass(Date.now(), () => undefined) };
}

describe("the controllers' runner", () => {
  it("a Deployment's ReplicaSet and pods are made in one pass; dropping the Deployment removes both", async () => {
    const s = setup();
    await s.workloads.put(stored(deployment(2)));
    const r = await s.pass();
    expect(r.created).toHaveLength(2);
    const list = await s.workloads.list();
    expect(list.map((w) => w.workload.kind).sort()).toEqual(["Deployment", "ReplicaSet"]);
    expect(list.find((w) => w.workload.kind === "ReplicaSet")!.owner).toMatchObject({
      kind: "Deployment",
      uid: "d1",
      controller: true,
    });
    expect((await s.desired.list()).map((e) => e.pod.metadata.ownerReferences![0]!.kind)).toEqual([
      "ReplicaSet",
      "ReplicaSet",
    ]);
    // A converged pass writes nothing new.
    expect(await s.pass()).toMatchObject({ created: [], deleted: [] });

    await s.workloads.remove("Deployment/default/web");
    await s.pass();
    await s.c.settle();
    expect(await s.workloads.list()).toEqual([]);
    expect(await s.desired.list()).toEqual([]);
    expect(s.deleted).toHaveLength(2);
  });

  it("a derived pod the node cannot admit (a host port taken) is not made; the status says why", async () => {
    const s = setup();
    await s.workloads.put(stored(deployment(2, [{ containerPort: 8080, hostPort: 18080 }])));
    await s.pass();
    expect(await s.desired.list()).toHaveLength(1);
    const rs = (await s.workloads.list()).find((w) => w.workload.kind === "ReplicaSet")!;
    expect(rs.status?.["conditions"]).toEqual([
      expect.objectContaining({
        type: "ReplicaFailure",
        status: "True",
        reason: "FailedCreate",
        message: expect.stringContaining("NodePorts"),
      }),
    ]);
    // kubelet's rejectPod event on the refused pod: once when the refusal begins, not on every pass that tries again.
    await s.pass();
    expect(s.refused).toEqual([expect.stringMatching(/^web-[a-z0-9]+ NodePorts$/)]);
  });

  it("one workload's error is logged once and the others still run", async () => {
    const s = setup();
    const broken = Job.parse({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "broken", uid: "j1" },
      spec: {
        template: { spec: { containers: [{ name: "c", image: "x" }], restartPolicy: "Never", volumes: "not a list" } },
      },
    });
    const fine = Job.parse({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "fine", uid: "j2" },
      spec: {
        template: { spec: { containers: [{ name: "c", image: "localhost/busybox:1" }], restartPolicy: "Never" } },
      },
    });
    jobSelectorDefaults(broken);
    jobSelectorDefaults(fine);
    await s.workloads.putAll([stored(broken), stored(fine)]);
    await s.pass();
    await s.pass();
    expect((await s.desired.list()).map((e) => e.pod.metadata.name)).toEqual([
      expect.stringMatching(/^fine-[a-z0-9]{5}$/),
    ]);
    expect(s.logs.filter((l) => l["event"] === "error" && l["workload"] === "Job/default/broken")).toHaveLength(1);
  });
});
