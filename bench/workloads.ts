// npm run bench:workloads (also the last part of npm run bench): what the node's workload controllers cost, on a real
// containerd of its own (scripts/containerd-lab.sh with PODSYNC_LAB_DIR=/tmp/podsync-lab-workloads-bench, started
// and stopped here). Prints tables and writes bench/results/workloads-<time>.json.
//   1. 10 Deployments x 3 replicas, converged: CRI calls per loop pass (all of them, relist and any sync), and the
//      controllers' CPU per pass (their pure steps and the store reads, measured around the pass);
//   2. a 3-replica rolling update (maxSurge 1, maxUnavailable 0, readiness = running) from the new template to the
//      Deployment complete, against 3 sequential create-and-ready cycles of the same pod through the front door.
// hostNetwork pods (no CNI work), the loop driven by back-to-back manual passes; every loop bounded.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { requestView } from "../src/cri/request-view.js";
import { createPodRuntime } from "../src/kubelet/pod-runtime.js";
import { defaultNodeConfig } from "../src/container/node-config.js";
import { MemoryDesiredState } from "../src/pleg/desired-state.js";
import { startReconcileLoop } from "../src/syncloop/sync-loop.js";
import { createControllers, type Controllers } from "../src/controllers/run.js";
import { MemoryWorkloadStore, type StoredWorkload } from "../src/controllers/store.js";
import { Deployment } from "../src/pod/workloads/schema.js";
import { Pod } from "../src/pod/schema.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-workloads-bench";
const PASSES = 20;
const lab = (cmd: "start" | "stop") =>
  execFileSync("bash", ["scripts/containerd-lab.sh", cmd], {
    env: { ...process.env, PODSYNC_LAB_DIR: LAB },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  })
    .trim()
    .split("\n")
    .pop() ?? "";
const r2 = (n: number) => Math.round(n * 100) / 100;
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const spec = (command: string[]) => ({
  hostNetwork: true,
  terminationGracePeriodSeconds: 1,
  containers: [{ name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never" as const, command }],
});
const deployment = (name: string, command: string[]) =>
  Deployment.parse({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "bench" },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: name } },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: { metadata: { labels: { app: name } }, spec: spec(command) },
    },
  });
const entry = (w: ReturnType<typeof deployment>, uid: string): StoredWorkload => ({
  workload: { ...w, metadata: { ...w.metadata, uid } },
  audit: { iss: "bench", iat: 0 },
  storedAt: Date.now(),
  generation: 1,
});

async function main() {
  const started = Date.now();
  const sock = lab("start");
  const raw = connectGrpc({ endpoint: `unix://${sock}`, timeoutMs: 60_000 });
  const counted = requestView(raw);
  const cri = counted.client;
  const node = {
    ...defaultNodeConfig(),
    podLogsDir: mkdtempSync(join(tmpdir(), "podsync-wlbench-logs-")),
    rootDir: mkdtempSync(join(tmpdir(), "podsync-wlbench-root-")),
  };
  const runtime = createPodRuntime(cri, { node });
  const desired = new MemoryDesiredState();
  const workloads = new MemoryWorkloadStore();
  const inner = createControllers({ workloads, desired, runtime, nodeName: "bench-node" });
  // The controllers' CPU, measured around each pass.
  let passCpu = 0;
  let passes = 0;
  const controllers: Controllers = {
    settle: () => inner.settle(),
    watching: () => inner.watching(),
    deleting: () => inner.deleting(),
    async pass(now, observe) {
      const c0 = cpuMs();
      const r = await inner.pass(now, observe);
      passCpu += cpuMs() - c0;
      passes++;
      return r;
    },
  };
  const loop = startReconcileLoop({ runtime, cri, desired, controllers, manual: true, maxConcurrentSyncs: 8 });
  const results: Record<string, unknown> = {
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
  };
  const complete = async (name: string) => {
    const d = (await workloads.list()).find(
      (w) => w.workload.metadata.name === name && w.workload.kind === "Deployment",
    );
    const s = d?.status as { updatedReplicas?: number; availableReplicas?: number; replicas?: number } | undefined;
    return s?.updatedReplicas === 3 && s.availableReplicas === 3 && s.replicas === 3;
  };
  const tickUntil = async (what: string, done: () => Promise<boolean>, maxMs = 120_000) => {
    const t0 = Date.now();
    while (!(await done())) {
      if (Date.now() - t0 > maxMs) throw new Error(`${what}: not within ${maxMs} ms`);
      await loop.tick();
    }
  };
  try {
    // 1. 10 Deployments x 3 replicas, converged.
    const names = Array.from({ length: 10 }, (_, i) => `web${i}`);
    await workloads.putAll(names.map((n, i) => entry(deployment(n, ["sleep", "3600"]), `bench-d-${i}`)));
    const t0 = Date.now();
    await tickUntil("10 Deployments converged", async () => (await Promise.all(names.map(complete))).every(Boolean));
    const convergeMs = Date.now() - t0;
    await loop.tick();
    await inner.settle();
    const calls: number[] = [];
    passCpu = 0;
    passes = 0;
    const cpu0 = cpuMs();
    for (let i = 0; i < PASSES; i++) {
      const before = counted.calls;
      const r = await loop.tick();
      if (r.synced.length) throw new Error(`not converged: ${JSON.stringify(r.synced.slice(0, 3))}`);
      calls.push(counted.calls - before);
    }
    results["converged"] = {
      deployments: 10,
      pods: (await desired.list()).length,
      "CRI calls per pass": [...new Set(calls)].join(","),
      "controllers CPU per pass (ms)": r2(passCpu / passes),
      "whole pass CPU (ms)": r2((cpuMs() - cpu0) / PASSES),
      "converge from nothing (ms)": convergeMs,
    };

    // 2. A 3-replica rolling update vs 3 sequential create-and-ready cycles.
    const w0 = (await workloads.list()).find((w) => w.workload.metadata.name === "web0")!;
    const rolled = deployment("web0", ["sleep", "3601"]);
    const r0 = Date.now();
    await workloads.put({
      ...w0,
      workload: { ...rolled, metadata: { ...rolled.metadata, uid: w0.workload.metadata.uid } },
      generation: 2,
    });
    await tickUntil("web0 rolled", async () => {
      const d = (await workloads.list()).find(
        (w) => w.workload.metadata.name === "web0" && w.workload.kind === "Deployment",
      );
      return (
        (d?.status as { observedGeneration?: number } | undefined)?.observedGeneration === 2 && (await complete("web0"))
      );
    });
    const rollMs = Date.now() - r0;
    const seq0 = Date.now();
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const p = Pod.parse({
        metadata: { name: `seq-${i}`, namespace: "bench", uid: `bench-seq-${process.pid}-${i}` },
        spec: spec(["sleep", "3600"]),
      });
      made.push(p.metadata.uid);
      const r = await runtime.sync(p);
      if (r.apiStatus.phase !== "Running") throw new Error(`seq-${i} not running after its sync`);
    }
    const seqMs = Date.now() - seq0;
    for (const uid of made) await runtime.delete(uid, 0);
    results["rollingUpdate"] = {
      replicas: 3,
      "rolling update wall time (ms)": rollMs,
      "3 sequential create-and-ready (ms)": seqMs,
      ratio: r2(rollMs / seqMs),
    };
  } finally {
    await loop.stop();
    await workloads.replace([]);
    await controllers.pass(Date.now(), () => undefined).catch(() => undefined);
    await inner.settle();
    for (const e of await desired.list()) await runtime.delete(e.pod.metadata.uid, 0).catch(() => undefined);
    raw.close();
    lab("stop");
  }
  results["seconds"] = Math.round((Date.now() - started) / 1000);
  console.log("\nWorkloads: 10 Deployments x 3 replicas, converged (manual passes)");
  console.table([results["converged"]]);
  console.log("\nA 3-replica rolling update (maxSurge 1, maxUnavailable 0) vs 3 sequential create-and-ready cycles");
  console.table([results["rollingUpdate"]]);
  const dir = resolve("bench/results");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `workloads-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify(results, null, 2));
  console.log(`\nwritten ${file}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
