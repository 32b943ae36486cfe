// The plan of a body's workloads (src/controllers/plan.ts): the controllers' passes on copies of the node's stores,
// every kept pod taken to become Ready, until they would do nothing more. Names as the controllers make them:
// exact for ordinals and ReplicaSets, `<generateName><random>` where the API server would add random characters.
import { describe, expect, it } from "vitest";
import { planWorkloads } from "../../src/controllers/plan.js";
import { createControllers } from "../../src/controllers/run.js";
import { MemoryWorkloadStore, type StoredWorkload } from "../../src/controllers/store.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { Deployment, Job, StatefulSet, type Workload } from "../../src/pod/workloads/schema.js";
import { jobSelectorDefaults } from "../../src/pod/workloads/job-labels.js";
import { useFakeCri } from "../support/fake-cri-suite.js";
import { Harness, ISSUER, NODE } from "../support/http.js";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK } from "jose";

const audit = { iss: "t", iat: 1 };
const stored = (w: Workload): StoredWorkload => ({ workload: w, audit, storedAt: 0 });
const node = { name: "node-a", labels: { "kubernetes.io/hostname": "node-a" }, taints: [], allocatable: {} };
const container = (image = "localhost/busybox:1", ports: unknown[] = []) => ({ name: "c", image, ports });
const deployment = (replicas: number, image?: string, ports?: unknown[]) =>
  Deployment.parse({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", uid: "d1" },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [container(image, ports)] } },
    },
  });
const sts = (replicas: number) =>
  StatefulSet.parse({
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "db", uid: "s1" },
    spec: {
      replicas,
      selector: { matchLabels: { app: "db" } },
      template: { metadata: { labels: { app: "db" } }, spec: { containers: [container()] } },
    },
  });
const base = { nodeName: "node-a", node, now: Date.parse("2026-12-03T12:00:00Z") };

describe("plan of a body's workloads", () => {
  it("a new Deployment: its ReplicaSet's pods, named <rs>-<random> with generateName; a StatefulSet's by ordinal", async () => {
    const p = await planWorkloads({
      ...base,
      stored: [],
      incoming: [stored(deployment(3)), stored(sts(2))],
      desired: [],
    });
    const web = p.pods.filter((x) => x.workload.kind === "Deployment");
    expect(web).toHaveLength(3);
    const rs = web[0]!.owner.name;
    expect(rs).toMatch(/^web-[bcdfghjklmnpqrstvwxz2456789]+$/);
    for (const x of web)
      expect(x).toEqual({
        namespace: "default",
        name: `${rs}-<random>`,
        generateName: `${rs}-`,
        owner: { kind: "ReplicaSet", name: rs },
        workload: { kind: "Deployment", name: "web" },
        action: "create",
      });
    // OrderedReady: every ordinal, each once the one before is Ready (taken to be, in a plan).
    expect(
      p.pods
        .filter((x) => x.workload.kind === "StatefulSet")
        .map((x) => [x.name, x.action, x.owner.name, typeof x.uid]),
    ).toEqual([
      ["db-0", "create", "db", "string"],
      ["db-1", "create", "db", "string"],
    ]);
    expect(p.refused).toEqual([]);
  });

  it("a rolling update: the new ReplicaSet's pods created, the old one's deleted, by their real names; a scale-down names the pods that go", async () => {
    const workloads = new MemoryWorkloadStore();
    const desired = new MemoryDesiredState();
    const c = createControllers({
      workloads,
      desired,
      node,
      nodeName: "node-a",
      runtime: { delete: async () => ({}) as never },
    });
    await workloads.put(stored(deployment(2)));
    await c.pass(base.now, () => undefined);
    const old = (await desired.list()).map((e) => e.pod.metadata.name).sort();
    const now = { stored: await workloads.list(), desired: await desired.list() };

    const update = await planWorkloads({ ...base, ...now, incoming: [stored(deployment(2, "localhost/busybox:2"))] });
    expect(
      update.pods
        .filter((x) => x.action === "delete")
        .map((x) => x.name)
        .sort(),
    ).toEqual(old);
    const created = update.pods.filter((x) => x.action === "create");
    expect(created).toHaveLength(2);
    expect(created[0]!.owner.name).not.toBe(
      now.stored.find((w) => w.workload.kind === "ReplicaSet")!.workload.metadata.name,
    );

    const down = await planWorkloads({ ...base, ...now, incoming: [stored(deployment(1))] });
    expect(down.pods.map((x) => x.action).sort()).toEqual(["delete", "keep"]);
    expect(down.pods.every((x) => old.includes(x.name) && x.uid)).toBe(true);
    // Nothing of the node changed.
    expect((await desired.list()).map((e) => e.pod.metadata.name).sort()).toEqual(old);
    expect((await workloads.list()).find((w) => w.workload.kind === "Deployment")!.workload.spec).toMatchObject({
      replicas: 2,
    });
  });

  it("a Job: its first wave (parallelism), Indexed pods <job>-<index>-<random>; a pod the node would refuse is said", async () => {
    const job = Job.parse({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "batch", uid: "j1" },
      spec: {
        completions: 4,
        parallelism: 2,
        completionMode: "Indexed",
        template: { spec: { containers: [container()], restartPolicy: "Never" } },
      },
    });
    jobSelectorDefaults(job);
    const p = await planWorkloads({ ...base, stored: [], incoming: [stored(job)], desired: [] });
    expect(p.pods.map((x) => x.name)).toEqual(["batch-0-<random>", "batch-1-<random>"]);
    const ported = await planWorkloads({
      ...base,
      stored: [],
      incoming: [stored(deployment(2, undefined, [{ containerPort: 80, hostPort: 18081 }]))],
      desired: [],
    });
    expect(ported.pods).toHaveLength(1);
    expect(ported.refused).toEqual([
      expect.objectContaining({ kind: "ReplicaSet", message: expect.stringContaining("NodePorts") }),
    ]);
  });
});

describe("POST /v1/pods/plan with workloads", () => {
  const suite = useFakeCri();
  it("answers the pods the controllers would make, with their actions; stores nothing; the CLI prints them", async () => {
    const { cri } = suite;
    const workloads = new MemoryWorkloadStore();
    const h = await Harness.start(cri, { workloads });
    try {
      const dep = {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "web" },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: "web" } },
          template: { metadata: { labels: { app: "web" } }, spec: { containers: [container()] } },
        },
      };
      const token = await h.sign({ act: "plan", items: [dep] });
      const r = await h.fetch("/v1/pods/plan", {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: token,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.workloads).toEqual([
        expect.objectContaining({ kind: "Deployment", name: "web", action: "created" }),
      ]);
      expect(r.body.pods).toHaveLength(2);
      expect(r.body.pods[0]).toMatchObject({
        name: expect.stringMatching(/^web-[a-z0-9]+-<random>$/),
        action: "create",
        owner: { kind: "ReplicaSet" },
        workload: { kind: "Deployment", name: "web" },
      });
      expect(await workloads.list()).toEqual([]);

      // The CLI: podsync plan and apply --dry-run print each pod with its action and maker; a file of several
      // objects with a kind-less one is refused before signing.
      const key = h.keys[0]!;
      const tmp = mkdtempSync(join(tmpdir(), "podsync-plan-cli-"));
      const keyFile = join(tmp, "key.json");
      writeFileSync(
        keyFile,
        JSON.stringify({ ...(await exportJWK(key.privateKey)), kid: key.kid, alg: key.alg, iss: ISSUER }),
      );
      const cli = (...args: string[]) =>
        new Promise<{ code: number; stdout: string; stderr: string }>((res) =>
          execFile(
            process.execPath,
            ["bin/podsync.mjs", "--url", h.url, "--key", keyFile, "--aud", NODE, ...args],
            (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
          ),
        );
      const file = join(tmp, "web.json");
      writeFileSync(file, JSON.stringify(dep));
      const plan = await cli("plan", "-f", file);
      expect(plan.code, plan.stderr).toBe(0);
      expect(plan.stdout).toMatch(
        /^deployment\.apps\/web \(default\) would be created\n {2}pod\/web-[a-z0-9]+-<random> \(default\) would be created by ReplicaSet\/web-[a-z0-9]+ \(deployment web\)\n {2}pod\/web-[a-z0-9]+-<random> /,
      );
      const dry = await cli("apply", "-f", file, "--dry-run");
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toMatch(
        /^deployment\/web created \(dry run\)\n {2}pod\/web-[a-z0-9]+-<random> \(default\) would be created by ReplicaSet/,
      );
      const mixed = join(tmp, "mixed.yaml");
      writeFileSync(
        mixed,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n",
      );
      const refused = await cli("plan", "-f", mixed);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("object 2 of 2 has no kind");
    } finally {
      await h.close();
    }
  }, 60_000);
});
