// npm run bench:loop: what the node agent's reconcile loop costs and how fast it repairs, on a real containerd
// of its own (scripts/containerd-lab.sh with PODSYNC_LAB_DIR=/tmp/podsync-lab-loop-bench, started and stopped
// here; the shared lab is not touched). Prints tables and writes bench/results/loop-<time>.json.
//   1. CRI calls and podsync CPU per relist for 1, 10, 100 converged pods (manual ticks);
//   2. the idle loop's CPU (% of one core) for 100 converged pods at a 1 s relist, over BENCH_IDLE_S (30 s),
//      with containerd's CPU over the same window beside it;
//   3. crash-to-restart latency: SIGKILL (ctr) a container's task, time until its replacement started
//      (the new instance's startedAt), first crash of fresh containers so no back-off; BENCH_CRASHES (20).
// hostNetwork pods (no CNI work); every loop bounded in count or time.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { ContainerState } from "../src/gen/runtime/v1/api_pb.js";
import { createPodRuntime } from "../src/kubelet/pod-runtime.js";
import { defaultNodeConfig } from "../src/container/node-config.js";
import { MemoryDesiredState } from "../src/pleg/desired-state.js";
import { startReconcileLoop } from "../src/syncloop/sync-loop.js";
import { nsToMs } from "../src/kuberuntime/pod-status.js";
import { Pod } from "../src/pod/schema.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-loop-bench";
const IDLE_S = Number(process.env["BENCH_IDLE_S"] ?? 30);
const CRASHES = Number(process.env["BENCH_CRASHES"] ?? 20);
const TICKS = 20;

const lab = (cmd: "start" | "stop") =>
  execFileSync("bash", ["scripts/containerd-lab.sh", cmd], {
    env: { ...process.env, PODSYNC_LAB_DIR: LAB },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  })
    .trim()
    .split("\n")
    .pop() ?? "";
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const r2 = (n: number) => Math.round(n * 100) / 100;
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** A process's CPU time (ms) from /proc (utime + stime, in clock ticks of 10 ms). */
const procCpuMs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) * 10;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let seq = 0;
const newPod = () =>
  Pod.parse({
    metadata: { name: `lb-${process.pid}-${seq}`, namespace: "bench", uid: `loop-bench-${process.pid}-${seq++}` },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] },
      ],
    },
  });

async function main() {
  const started = Date.now();
  const sock = lab("start");
  const cri = connectGrpc({ endpoint: `unix://${sock}`, timeoutMs: 60_000 });
  const node = {
    ...defaultNodeConfig(),
    podLogsDir: mkdtempSync(join(tmpdir(), "podsync-loopbench-logs-")),
    rootDir: mkdtempSync(join(tmpdir(), "podsync-loopbench-root-")),
  };
  const runtime = createPodRuntime(cri, { node });
  const desired = new MemoryDesiredState();
  const containerdPid = Number(readFileSync(join(LAB, "containerd.pid"), "utf8"));
  const results: Record<string, unknown> = {
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
  };
  const made: string[] = [];
  try {
    // 1. Calls and CPU per relist, converged.
    const perRelist: Record<string, unknown>[] = [];
    for (const n of [1, 10, 100]) {
      while (made.length < n) {
        const p = newPod();
        made.push(p.metadata.uid);
        await desired.put({ pod: p, audit: { iss: "bench", iat: 0 }, storedAt: Date.now() });
      }
      const loop = startReconcileLoop({ runtime, cri, desired, manual: true, maxConcurrentSyncs: 8 });
      const t0 = Date.now();
      await loop.tick(); // start-up: creates the new pods, finds the others converged
      const settleMs = Date.now() - t0;
      await loop.tick();
      const calls: number[] = [];
      const cpu0 = cpuMs();
      const wall0 = performance.now();
      for (let i = 0; i < TICKS; i++) {
        const r = await loop.tick();
        if (r.synced.length) throw new Error(`not converged: ${JSON.stringify(r.synced.slice(0, 3))}`);
        calls.push(r.relistCalls);
      }
      const cpuPer = (cpuMs() - cpu0) / TICKS;
      const wallPer = (performance.now() - wall0) / TICKS;
      await loop.stop();
      perRelist.push({
        pods: n,
        "CRI calls per relist": [...new Set(calls)].join(","),
        "podsync CPU per relist (ms)": r2(cpuPer),
        "relist wall time (ms)": r2(wallPer),
        "start-up tick (ms)": settleMs,
      });
    }
    results["perRelist"] = perRelist;

    // 2. Idle CPU at a 1 s relist, 100 converged pods.
    {
      const loop = startReconcileLoop({ runtime, cri, desired, relistIntervalMs: 1000 });
      await sleep(3000); // start-up syncs (all converged) out of the window
      const c0 = cpuMs();
      const d0 = procCpuMs(containerdPid);
      const w0 = performance.now();
      await sleep(IDLE_S * 1000);
      const wall = performance.now() - w0;
      results["idle"] = {
        pods: made.length,
        relistMs: 1000,
        seconds: r2(wall / 1000),
        "podsync CPU % of a core": r2(((cpuMs() - c0) / wall) * 100),
        "containerd CPU % of a core": r2(((procCpuMs(containerdPid) - d0) / wall) * 100),
      };

      // 3. Crash to restart, first crash of each container (no back-off), kills at random phases of the relist.
      const lat: number[] = [];
      for (const uid of made.slice(0, CRASHES)) {
        const list = async () =>
          (await cri.listContainers({ filter: { labelSelector: { "io.kubernetes.pod.uid": uid } } })).containers;
        const before = (await list()).find((c) => c.state === ContainerState.CONTAINER_RUNNING)!;
        await sleep(Math.random() * 1000);
        const t = Date.now();
        execFileSync("ctr", ["-a", sock, "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", before.id]);
        let next: string | undefined;
        for (let i = 0; i < 200 && !next; i++) {
          await sleep(50);
          next = (await list()).find((c) => c.id !== before.id && c.state === ContainerState.CONTAINER_RUNNING)?.id;
        }
        if (!next) throw new Error(`no restart of ${uid} within 10 s`);
        const st = await cri.containerStatus({ containerId: next });
        lat.push(nsToMs(st.status!.startedAt) - t);
      }
      await loop.stop();
      results["crashToRestart"] = {
        samples: lat.length,
        "p50 (ms)": pct(lat, 50),
        "p99 (ms)": pct(lat, 99),
        "min (ms)": Math.min(...lat),
        "max (ms)": Math.max(...lat),
      };
    }
  } finally {
    for (let i = 0; i < made.length; i += 8)
      await Promise.all(made.slice(i, i + 8).map((uid) => runtime.delete(uid, 0).catch(() => undefined)));
    cri.close();
    lab("stop");
  }
  results["seconds"] = Math.round((Date.now() - started) / 1000);
  console.log("\nCRI calls and CPU per relist (converged)");
  console.table(results["perRelist"]);
  console.log("\nIdle loop");
  console.table([results["idle"]]);
  console.log("\nCrash to restart (first crash, no back-off; relist 1 s)");
  console.table([results["crashToRestart"]]);
  const dir = resolve("bench/results");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `loop-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify(results, null, 2));
  console.log(`\nwritten ${file}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
