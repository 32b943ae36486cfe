// Where a converged signed sync's CPU goes (issue #42 item 3): the server as it ships (bench/harness.ts
// startServer, so `npm start`'s flags) with `--cpu-prof` in its NODE_OPTIONS, one pod synced, BENCH_WARMUP (200)
// converged syncs untimed, then BENCH_SYNCS (1000) timed, 4 in flight, of the same pod (0 CRI calls: answered from
// the status cache). The server's profile is cut to the timed window (V8's profile clock is the monotonic clock
// process.hrtime reads) and each sample is given to the innermost frame of a known step (the rules below); the
// floor is the same 3 CRI reads made directly from this process, as bench/ship.ts measures them.
// Shares and counts are what to read on a loaded machine; the ms figures move with the load.
//   BENCH_LAB_DIR (PODSYNC_LAB_DIR, else /tmp/podsync-lab-sync-profile): the lab containerd, started if needed.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { lab, pool, procCpuMs, r2, selfCpuMs, startServer, threadCpu } from "./harness.js";
import { connectGrpc } from "../src/cri/grpc-transport.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? process.env["PODSYNC_LAB_DIR"] ?? "/tmp/podsync-lab-sync-profile";
const SYNCS = Number(process.env["BENCH_SYNCS"] ?? 1000);
const WARMUP = Number(process.env["BENCH_WARMUP"] ?? 200);
/** BENCH_PROFILE=0: no profiler (its sampling costs CPU itself): the ratio and the threads alone. */
const PROFILE = process.env["BENCH_PROFILE"] !== "0";

/** The steps, matched against a frame's script URL and function name; the first rule that matches wins. */
const RULES: [string, RegExp][] = [
  // The durable appends (state/group-commit.js) count for their caller: the jti log or the desired audit log.
  ["jti write (used-jtis)", /state\/used-jtis\.js/],
  ["JWS verify + key lookup (jose)", /node_modules\/jose\/|auth\/verify\.js/],
  ["pod validation (zod, intake, bundle, memo)", /node_modules\/zod\/|\/pod\/|util\/memo\.js/],
  ["request log", /http\/request-log\.js|logging|pino/],
  ["body read, media type, token decode", /http\/(signed-request|parse-body)\.js/],
  ["admission", /usecases\/admission\/|auth\/(pod-security|pss-rules|cri-policy|policy|host-path)/],
  [
    "desired store: audit append, canonical compare",
    /state\/(desired-pods|sealed-desired-state|atomic-file)|pleg\/(desired-state|tombstones)/,
  ],
  ["pod worker + status", /podworkers\/|kuberuntime\/|status\/|kubelet\//],
  ["use case (sync, entry, identity)", /usecases\/pods\//],
  ["response (serialize, warnings, JSON)", /http\/(serialize|warnings)\.js/],
  ["HTTP server (hono, node-server)", /node_modules\/(hono|@hono)\/|http\/(app|context|routes)\.js|node\/front/],
  ["metrics", /prom-client|host\/metrics/],
];

interface Node {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

/** Samples in [from, to] (µs, monotonic) per step; node internals and unknown frames go to their caller's step. */
function shares(p: Profile, from: number, to: number) {
  const parent = new Map<number, number>();
  const byId = new Map<number, Node>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const stepOf = new Map<number, string>();
  const classify = (id: number): string => {
    const known = stepOf.get(id);
    if (known) return known;
    const n = byId.get(id)!;
    const f = n.callFrame;
    let step: string | undefined;
    if (f.functionName === "(garbage collector)") step = "garbage collection";
    else if (f.functionName === "(idle)") step = "(idle)";
    else if (f.functionName === "(program)") step = "(program: V8/native outside JS)";
    else step = RULES.find(([, re]) => re.test(f.url))?.[0];
    const up = parent.get(id);
    step ??= up === undefined ? "other" : classify(up);
    stepOf.set(id, step);
    return step;
  };
  const counts = new Map<string, number>();
  /** Per step, its samples by leaf frame: what inside the step costs. */
  const leaves = new Map<string, Map<string, number>>();
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    if (t < from || t > to) continue;
    const s = classify(p.samples[i]!);
    counts.set(s, (counts.get(s) ?? 0) + 1);
    const f = byId.get(p.samples[i]!)!.callFrame;
    const k = `${f.functionName || "(anon)"} ${f.url.replace(/^.*\/(node_modules|dist)\//, "$1/")}`;
    const m = leaves.get(s) ?? new Map<string, number>();
    leaves.set(s, m.set(k, (m.get(k) ?? 0) + 1));
  }
  return { counts, leaves };
}

/** BENCH_ANALYSE=<file.cpuprofile>,<from µs>,<to µs>: the shares of a profile taken before, without a run. */
function printShares(file: string, from: number, to: number) {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const { counts, leaves } = shares(profile, from, to);
  const busy = [...counts].filter(([k]) => k !== "(idle)").reduce((a, [, n]) => a + n, 0);
  console.log(`profile: ${busy} busy samples in the timed window (BENCH_ANALYSE=${file},${from},${to})\n`);
  console.log("| step | samples | share of busy |\n|---|---|---|");
  for (const [k, n] of [...counts].sort((a, b) => b[1] - a[1]))
    if (k !== "(idle)") console.log(`| ${k} | ${n} | ${r2((n / busy) * 100)} % |`);
  console.log("\neach step's samples by leaf frame (top 6):");
  for (const [step, m] of leaves) {
    if (step === "(idle)") continue;
    console.log(`  ${step}`);
    for (const [k, n] of [...m].sort((a, b) => b[1] - a[1]).slice(0, 6)) console.log(`    ${n}  ${k}`);
  }
}

async function main() {
  const analyse = process.env["BENCH_ANALYSE"];
  if (analyse) {
    const [file, from, to] = analyse.split(",");
    return printShares(file!, Number(from), Number(to));
  }
  execFileSync("node", ["bin/build.mjs", "--if-stale"], { stdio: "inherit" });
  const endpoint = `unix://${lab(LAB, "start")}`;
  const cri = connectGrpc({ endpoint, timeoutMs: 60_000 });
  const dir = mkdtempSync(join(tmpdir(), "podsync-sync-profile-"));
  const profDir = join(dir, "prof");
  const server = await startServer(
    dir,
    endpoint,
    "prof-node",
    {},
    PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`, "--cpu-prof-interval=200"] : [],
  );
  const name = `prof-${Date.now().toString(36)}`;
  const pod = {
    metadata: { name, namespace: "bench", uid: `${name}-uid` },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 2,
      containers: [
        { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] },
      ],
    },
  };
  const post = async (token: string) => {
    const r = await fetch(`${server.url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: token,
    });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`sync answered ${r.status}`);
  };
  const load0 = loadavg();
  let window: [number, number];
  let syncCpu: number;
  let floorCpu: number;
  /** The server's CPU per sync by thread. */
  const threads = new Map<string, number>();
  try {
    await post(await server.sign({ act: "sync", pod }));
    const sign = (n: number) => Promise.all(Array.from({ length: n }, () => server.sign({ act: "sync", pod })));
    await pool(await sign(WARMUP), 4, post);
    const tokens = await sign(SYNCS);
    const us = () => Number(process.hrtime.bigint() / 1000n);
    const c0 = procCpuMs(server.pid);
    const th0 = threadCpu(server.pid);
    const t0 = us();
    await pool(tokens, 4, post);
    window = [t0, us()];
    syncCpu = (procCpuMs(server.pid) - c0) / SYNCS;
    for (const [k, v] of threadCpu(server.pid)) threads.set(k, (v - (th0.get(k) ?? 0)) / SYNCS);
    const filter = { labelSelector: { "io.kubernetes.pod.uid": pod.metadata.uid } };
    const sb = (await cri.listPodSandbox({ filter })).items[0]!.id;
    const read = async () => {
      await Promise.all([cri.listPodSandbox({ filter }), cri.listContainers({ filter })]);
      await cri.podSandboxStatus({ podSandboxId: sb });
    };
    const reads = (n: number) => Array.from({ length: n }, (_, i) => i);
    await pool(reads(WARMUP), 4, read);
    const f0 = selfCpuMs();
    await pool(reads(SYNCS), 4, read);
    floorCpu = (selfCpuMs() - f0) / SYNCS;
    await fetch(`${server.url}/v1/pods/${pod.metadata.uid}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await server.sign({ act: "delete", uid: pod.metadata.uid })}` },
    }).then((r) => r.arrayBuffer());
  } finally {
    server.proc.kill("SIGTERM");
    await new Promise((r) => server.proc.once("exit", r));
    cri.close();
  }
  console.log(
    `\nconverged signed sync, ${SYNCS} timed after ${WARMUP}; load ${load0.map(r2).join("/")} → ${loadavg().map(r2).join("/")}`,
  );
  console.log(
    `server CPU per sync ${r2(syncCpu)} ms; the 3 CRI reads made directly ${r2(floorCpu)} ms: ${r2(syncCpu / floorCpu)}×`,
  );
  console.log(
    `by thread, ms per sync: ${[...threads]
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${r2(v)}`)
      .join(", ")}`,
  );
  if (!PROFILE) return;
  const file = readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"))!;
  printShares(join(profDir, file), window[0], window[1]);
}

await main();
