// npm run bench:apply: how long a node-wide PUT /v1/node/pods takes on REAL containerd (the lab,
// scripts/containerd-lab.sh, or PODSYNC_CRI_ENDPOINT). Per round: PUT 30 new pods (one busybox container each,
// on the CNI bridge) and wait until GET /v1/pods reports all Running; PUT the same 30 again (converged: no
// step); GET /v1/pods once more (its cost for 30 pods); PUT an empty set (drain). The app is the real one
// (HTTP on loopback, verifier, the file store on disk under a temp dir). Writes bench/results/apply-<time>.json.
//   BENCH_APPLY_PODS (30), BENCH_APPLY_ROUNDS (3), BENCH_APPLY_CONCURRENCY (8: PUT's bounded concurrency)
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { createPodRuntime } from "../src/kubelet/pod-runtime.js";
import { FileDesiredState } from "../src/state/desired-pods.js";
import { Harness } from "../test/support/http.js";

const PODS = Number(process.env["BENCH_APPLY_PODS"] ?? 30);
const ROUNDS = Number(process.env["BENCH_APPLY_ROUNDS"] ?? 3);
const CONCURRENCY = Number(process.env["BENCH_APPLY_CONCURRENCY"] ?? 8);

let endpoint = process.env["PODSYNC_CRI_ENDPOINT"] ?? "";
if (!endpoint)
  endpoint = `unix://${execFileSync("bash", ["scripts/containerd-lab.sh", "start"], { encoding: "utf8" }).trim().split("\n").pop()}`;
const cri = connectGrpc({ endpoint, timeoutMs: 60_000 });
const stateDir = mkdtempSync(join(tmpdir(), "podsync-bench-apply-"));
const h = await Harness.start(cri, {
  desired: new FileDesiredState(stateDir),
  applyConcurrency: CONCURRENCY,
  log: (r) => void (lastLog = r),
});
let lastLog: { criCalls: number } | undefined;

const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`;
const pods = (round: number) =>
  Array.from({ length: PODS }, (_, i) => ({
    metadata: { name: `bench-apply-${tag}-${round}-${i}`, namespace: "bench", uid: `bench-apply-${tag}-${round}-${i}` },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] },
      ],
    },
  }));

let generation = 0;
async function put(list: unknown[]) {
  const t0 = performance.now();
  const r = await h.fetch("/v1/node/pods", {
    method: "PUT",
    headers: { "content-type": "application/jose" },
    body: await h.sign({ act: "apply", generation: ++generation, pods: list }),
  });
  if (r.status !== 200) throw new Error(`PUT answered ${r.status}: ${JSON.stringify(r.body).slice(0, 500)}`);
  return {
    ms: performance.now() - t0,
    criCalls: lastLog!.criCalls,
    steps: (r.body.pods as { steps: unknown[] }[]).reduce((n, p) => n + p.steps.length, 0),
  };
}
async function get() {
  const t0 = performance.now();
  const r = await h.fetch("/v1/pods", { headers: { authorization: `Bearer ${await h.sign({ act: "status" })}` } });
  return {
    ms: performance.now() - t0,
    criCalls: lastLog!.criCalls,
    running: (r.body.items as { status: { phase: string } }[]).filter((p) => p.status.phase === "Running").length,
  };
}

const rounds = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    const set = pods(round);
    const t0 = performance.now();
    const create = await put(set);
    let g = await get();
    for (const end = Date.now() + 120_000; g.running < PODS && Date.now() < end; g = await get())
      await new Promise((r) => setTimeout(r, 100));
    if (g.running < PODS) throw new Error(`only ${g.running} of ${PODS} pods Running after 120 s`);
    const allRunning = performance.now() - t0;
    const converged = await put(set);
    const list = await get();
    const drain = await put([]);
    rounds.push({ create, allRunningMs: allRunning, converged, list, drain });
    console.error(
      `round ${round + 1}/${ROUNDS}: ${PODS} pods Running after ${(allRunning / 1000).toFixed(2)} s (PUT ${(create.ms / 1000).toFixed(2)} s); converged PUT ${converged.ms.toFixed(0)} ms; GET ${list.ms.toFixed(0)} ms; drain ${(drain.ms / 1000).toFixed(2)} s`,
    );
  }
} finally {
  // Whatever a failed round left behind.
  const rt = createPodRuntime(cri);
  for (const e of await new FileDesiredState(stateDir).list())
    await rt.delete(e.pod.metadata.uid, 0).catch(() => undefined);
  await h.close();
  cri.close();
}

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows: [string, string, string][] = [
  [
    `PUT ${PODS} new pods → all Running (GET /v1/pods)`,
    `${(med(rounds.map((r) => r.allRunningMs)) / 1000).toFixed(2)} s`,
    `${med(rounds.map((r) => r.create.criCalls))} (PUT)`,
  ],
  [
    `PUT the same ${PODS} again (converged, 0 steps)`,
    `${med(rounds.map((r) => r.converged.ms)).toFixed(0)} ms`,
    String(med(rounds.map((r) => r.converged.criCalls))),
  ],
  [
    `GET /v1/pods, ${PODS} running pods`,
    `${med(rounds.map((r) => r.list.ms)).toFixed(0)} ms`,
    String(med(rounds.map((r) => r.list.criCalls))),
  ],
  [
    `PUT [] (drain ${PODS} pods)`,
    `${(med(rounds.map((r) => r.drain.ms)) / 1000).toFixed(2)} s`,
    String(med(rounds.map((r) => r.drain.criCalls))),
  ],
];
console.log(
  `\nnode-wide PUT on ${endpoint}, ${cpus().length} cores, concurrency ${CONCURRENCY}, median of ${ROUNDS} rounds\n`,
);
console.log("| step | wall | CRI calls |\n|---|---|---|");
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/apply-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
writeFileSync(
  file,
  `${JSON.stringify({ endpoint, pods: PODS, concurrency: CONCURRENCY, cores: cpus().length, rounds }, null, 2)}\n`,
);
console.log(`\n${file}`);
