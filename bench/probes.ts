// npm run bench:probes: what probing costs. 100 pods, one container each with an exec liveness probe at
// periodSeconds 10, on the in-process CRI runtime (test/support/fake-cri.ts over real gRPC on a unix
// socket, in this same process, ExecSync answering at once): the CPU of one probe round (every probe due),
// (a) the prober's tick alone (100 ExecSync) and (b) what the stand-in loop does per round (a full status
// read per pod, then the tick). The fake runtime's own work is in the CPU figures (same process), so they
// are an upper bound for podsync's side; containerd's exec itself (runc exec, ~tens of ms of its CPU per
// probe) is not. Also: the CRI calls a sync's read-back adds. Writes bench/results/probes-<time>.json.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { createPodRuntime } from "../src/kubelet/pod-runtime.js";
import { createProber } from "../src/prober/prober.js";
import { Pod } from "../src/pod/schema.js";
import { startFakeCri } from "../test/support/fake-cri.js";

const PODS = 100;
const ROUNDS = Number(process.env["BENCH_PROBE_ROUNDS"] ?? 20);
const PERIOD_S = 10;

const fake = await startFakeCri();
fake.runtime.runtime["ExecSync"] = () => ({
  exitCode: 0,
  stdout: new TextEncoder().encode("ok"),
  stderr: new Uint8Array(),
});
const cri = connectGrpc({ endpoint: fake.endpoint, timeoutMs: 10_000 });
const rt = createPodRuntime(cri);
const prober = createProber({ cri });

const mk = (i: number, n = 1) =>
  Pod.parse({
    metadata: { name: `probe-${i}`, uid: `bench-probe-${process.pid}-${i}` },
    spec: {
      containers: Array.from({ length: n }, (_, j) => ({
        name: `c${j}`,
        image: "localhost/busybox:1",
        command: ["sleep", "3600"],
        livenessProbe: { exec: { command: ["true"] }, periodSeconds: PERIOD_S },
      })),
    },
  });
const pods = Array.from({ length: PODS }, (_, i) => mk(i));
for (const p of pods) {
  prober.upsert(p);
  prober.observe(p.metadata.uid, (await rt.sync(p)).after);
}

let t = Date.now();
async function measure(what: string, round: (t: number) => Promise<unknown>) {
  await round((t += PERIOD_S * 1000)); // warm up
  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  fake.runtime.resetCalls();
  for (let r = 0; r < ROUNDS; r++) await round((t += PERIOD_S * 1000));
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - w0;
  const cpuMsPerRound = (cpu.user + cpu.system) / 1000 / ROUNDS;
  const calls = fake.runtime.totalCalls() / ROUNDS;
  return {
    what,
    cpuMsPerRound: Math.round(cpuMsPerRound * 10) / 10,
    cpuMsPerProbe: Math.round((cpuMsPerRound / PODS) * 1000) / 1000,
    wallMsPerRound: Math.round((wall / ROUNDS) * 10) / 10,
    criCallsPerRound: calls,
    /** Share of one core at one round per period. */
    corePercentAt10s: Math.round((cpuMsPerRound / (PERIOD_S * 1000)) * 100 * 1000) / 1000,
  };
}

const tickOnly = await measure("prober.tick (100 exec probes)", async (t) => {
  const r = await prober.tick(t);
  if (r.ran !== PODS) throw new Error(`expected ${PODS} probes, ran ${r.ran}`);
});
const loopRound = await measure("loop round (status read per pod + tick)", async (t) => {
  // Every pod's probe is due each round (the rounds are a period apart).
  await Promise.all(pods.map(async ({ metadata: { uid } }) => prober.observe(uid, (await rt.status(uid))!.status)));
  const r = await prober.tick(t);
  if (r.ran !== PODS) throw new Error(`expected ${PODS} probes, ran ${r.ran}`);
});

// What a sync's read-back costs in CRI calls: converged (nothing done) and after starting containers.
const readBack: Record<string, number>[] = [];
for (const n of [1, 10]) {
  const p = mk(1000 + n, n);
  fake.runtime.resetCalls();
  await rt.sync(p);
  const first = fake.runtime.totalCalls();
  fake.runtime.resetCalls();
  await rt.sync(p);
  const converged = fake.runtime.totalCalls();
  readBack.push({
    containers: n,
    firstSync: first,
    firstSyncReadBack: 3 + n,
    convergedSync: converged,
    convergedReadBack: n,
  });
}

const result = {
  when: new Date().toISOString(),
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  node: process.version,
  pods: PODS,
  periodSeconds: PERIOD_S,
  rounds: ROUNDS,
  tickOnly,
  loopRound,
  readBack,
};
console.table([tickOnly, loopRound]);
console.table(readBack);
mkdirSync("bench/results", { recursive: true });
writeFileSync(`bench/results/probes-${result.when.replace(/[:.]/g, "-")}.json`, `${JSON.stringify(result, null, 2)}\n`);
cri.close();
await fake.close();
