// npm run bench:eviction: what the eviction manager's local storage pass costs beside a relist, for 30 pods
// that each declare an ephemeral-storage limit and a disk emptyDir sizeLimit, on a real containerd of its own
// (scripts/containerd-lab.sh with PODSYNC_LAB_DIR=/tmp/podsync-lab-eviction-bench, started and stopped here;
// the shared lab is not touched). Each pod's container writes 64 KiB into its emptyDir. Measured: the relist
// (the loop's two list calls and the statuses built from them) and the pass (one ListContainerStats, du for
// each pod's logs and hosts file, its emptyDir from the volume stats cache), and a pass that also measures every
// emptyDir (as once per aggregation period), and the pass's ListContainerStats alone, each over BENCH_PASSES
// (20), in wall time, podsync CPU and CRI calls. Writes bench/results/eviction-<time>.json.
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
import { createRelister } from "../src/pleg/relist.js";
import { evictionPass } from "../src/eviction/manager.js";
import { writableLayers } from "../src/eviction/stats.js";
import { nodeDiskUsage } from "../src/host/metrics/disk-usage.js";
import { nodePodDirs } from "../src/host/volumes/pod-dirs.js";
import { nodeVolumeHost } from "../src/host/volumes/volume-host.js";
import { Pod } from "../src/pod/schema.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-eviction-bench";
const PODS = 30;
const PASSES = Number(process.env["BENCH_PASSES"] ?? 20);

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
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const newPod = (i: number) =>
  Pod.parse({
    metadata: { name: `ev-${process.pid}-${i}`, namespace: "bench", uid: `eviction-bench-${process.pid}-${i}` },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: "scratch", emptyDir: { sizeLimit: "64Mi" } }],
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          imagePullPolicy: "Never",
          command: [
            "sh",
            "-c",
            'a=0123456789abcdef; i=0; while [ $i -lt 12 ]; do a=$a$a; i=$((i+1)); done; echo "$a" > /scratch/f; exec sleep 3600',
          ],
          volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
          resources: { limits: { "ephemeral-storage": "256Mi" } },
        },
      ],
    },
  });

async function main() {
  const started = Date.now();
  const sock = lab("start");
  const cri = connectGrpc({ endpoint: `unix://${sock}`, timeoutMs: 60_000 });
  const node = {
    ...defaultNodeConfig(),
    podLogsDir: mkdtempSync(join(tmpdir(), "podsync-evbench-logs-")),
    rootDir: mkdtempSync(join(tmpdir(), "podsync-evbench-root-")),
  };
  const runtime = createPodRuntime(cri, {
    node,
    podDirs: nodePodDirs,
    volumeHost: nodeVolumeHost,
    localStorageLimits: true,
  });
  const desired = new MemoryDesiredState();
  const pods = Array.from({ length: PODS }, (_, i) => newPod(i));
  const results: Record<string, unknown> = {
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
    pods: PODS,
    passes: PASSES,
  };
  try {
    for (const p of pods) await desired.put({ pod: p, audit: { iss: "bench", iat: 0 }, storedAt: Date.now() });
    const loop = startReconcileLoop({ runtime, cri, desired, manual: true, maxConcurrentSyncs: 8 });
    await loop.tick();
    await loop.tick();
    await loop.stop();
    // The relister and the pass each over a client that counts its calls (the relister keeps its caches).
    const rc = requestView(cri);
    const pc = requestView(cri);
    const relister = createRelister(rc.client);
    const measure = async (counter: { calls: number }, fn: () => Promise<unknown>) => {
      const wall: number[] = [];
      const cpu: number[] = [];
      const calls0 = counter.calls;
      for (let i = 0; i < PASSES; i++) {
        const c0 = cpuMs();
        const w0 = performance.now();
        await fn();
        wall.push(performance.now() - w0);
        cpu.push(cpuMs() - c0);
      }
      return {
        "wall (ms, median)": r2(median(wall)),
        "podsync CPU (ms, median)": r2(median(cpu)),
        "CRI calls per pass": (counter.calls - calls0) / PASSES,
      };
    };
    const wants = { wants: () => true, wantsStartTimes: () => false };
    // A relist as the loop makes it (caches warm: the converged case).
    await relister.relist(wants, Date.now);
    const relist = await measure(rc, async () => relister.relist(wants, Date.now));
    const view = await relister.relist(wants, Date.now);
    const entries = pods.map((p) => ({ pod: p, status: view.pods.get(p.metadata.uid)?.status }));
    const passWith = (o: Parameters<typeof evictionPass>[0]) => async () => {
      const r = await evictionPass(o, runtime, entries, Date.now());
      if (r.evicted.length) throw new Error(`unexpected eviction: ${JSON.stringify(r.evicted[0])}`);
    };
    // As the loop runs it: one manager, so the emptyDirs come from its volume stats cache (measured on the first
    // pass, then once per aggregation period); and a pass that measures every emptyDir (a fresh manager each time).
    const steady = { cri: pc.client, disk: nodeDiskUsage, node };
    const pass = await measure(pc, passWith(steady));
    const measuring = await measure(pc, async () => passWith({ cri: pc.client, disk: nodeDiskUsage, node })());
    // The pass's one CRI call alone (containerd measures every writable layer; podsync decodes 30 stats).
    const statsCall = await measure(pc, async () => writableLayers(pc.client));
    results["relist"] = relist;
    results["evictionPass"] = pass;
    results["evictionPassMeasuringVolumes"] = measuring;
    results["listContainerStats"] = statsCall;
  } finally {
    for (let i = 0; i < pods.length; i += 8)
      await Promise.all(pods.slice(i, i + 8).map((p) => runtime.delete(p.metadata.uid, 0).catch(() => undefined)));
    cri.close();
    lab("stop");
  }
  results["seconds"] = Math.round((Date.now() - started) / 1000);
  console.log(`\n${PODS} pods with local storage limits, ${PASSES} passes each`);
  console.table({
    relist: results["relist"],
    "eviction pass": results["evictionPass"],
    "pass measuring emptyDirs": results["evictionPassMeasuringVolumes"],
    "ListContainerStats alone": results["listContainerStats"],
  });
  const dir = resolve("bench/results");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `eviction-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify(results, null, 2));
  console.log(`\nwritten ${file}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
