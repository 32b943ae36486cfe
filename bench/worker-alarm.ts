// npm run bench:worker-alarm: what one reconcile alarm pass of the Workers node object costs, measured in
// workerd (wrangler's local runtime) through a real cri-proxy on a real containerd of its own
// (scripts/containerd-lab.sh with PODSYNC_LAB_DIR=BENCH_LAB_DIR, started and stopped here; the shared lab is not
// touched). For 1 and 10 converged pods (PUT /v1/node/pods, then BENCH_PASSES passes with nobody calling):
// CRI calls per pass as the proxy served them, the proxy's time per call, and the pass's wall time inside
// workerd (bench/worker-alarm-entry.ts times each alarm()). Then the first pass after a SIGKILL: its calls and
// time (the restart). Writes bench/results/worker-alarm-<time>.json. hostNetwork pods; every wait bounded.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { startProxy } from "../src/proxy/cri-proxy.js";
import { Harness, makeKey } from "../test/support/http.js";
import { startWorkerd } from "../test/support/workerd.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-worker-alarm-bench";
const PASSES = Number(process.env["BENCH_PASSES"] ?? 20);
const INTERVAL_MS = Number(process.env["BENCH_INTERVAL_MS"] ?? 500);
const NODE = "bench-node";
const TOKEN = "bench-proxy-token";

const lab = (cmd: "start" | "stop") =>
  execFileSync("bash", ["scripts/containerd-lab.sh", cmd], {
    env: { ...process.env, PODSYNC_LAB_DIR: LAB },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  })
    .trim()
    .split("\n")
    .pop() ?? "";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const r2 = (n: number) => Math.round(n * 100) / 100;
/** "ListPodSandbox×2 ContainerStatus×1 …", in first-seen order. */
const counted = (xs: string[]) =>
  [...xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<string, number>())]
    .map(([k, v]) => `${k}×${v}`)
    .join(" ");

// The alarm passes, as the entry's console.log lines reach wrangler's stdout (kept off the terminal).
const passes: { ms: number; seen: number }[] = [];
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
  const m = /\{"benchAlarmPassMs":(\d+)/.exec(text);
  if (m) {
    passes.push({ ms: Number(m[1]), seen: calls.length });
    return true;
  }
  return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stdout.write;
const calls: { method: string; ms: number }[] = [];

async function main() {
  const sock = lab("start");
  const proxy = await startProxy({
    upstream: `unix://${sock}`,
    grpcWebListen: "127.0.0.1:0",
    token: TOKEN,
    policy: { level: "privileged", hostPathAllow: [] },
    log: (r) =>
      void (
        r["front"] === "grpc-web" &&
        calls.push({ method: String(r["method"]).split("/").pop()!, ms: Number(r["durationMs"]) })
      ),
  });
  const key = await makeKey("EdDSA", "bench-1");
  const signer = new Harness([key], undefined as never);
  const { worker, base } = await startWorkerd({
    nodes: { [NODE]: { url: `http://127.0.0.1:${proxy.grpcWebPort}` } },
    jwk: key.publicJwk,
    proxyToken: TOKEN,
    entrypoint: "bench/worker-alarm-entry.ts",
    logLevel: "log",
    env: { PODSYNC_POLICY: "privileged", PODSYNC_RELIST_INTERVAL_MS: String(INTERVAL_MS) },
  });
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const pod = (i: number) => ({
    metadata: { name: `wab-${tag}-${i}`, namespace: "bench", uid: `wab-${tag}-${i}` },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] },
      ],
    },
  });
  let generation = 0;
  const put = async (pods: unknown[]) => {
    const r = await fetch(new URL(`/nodes/${NODE}/v1/node/pods`, base), {
      method: "PUT",
      headers: { "content-type": "application/jose" },
      body: await signer.sign({ act: "apply", generation: ++generation, pods }, { aud: NODE }),
    });
    if (r.status !== 200) throw new Error(`PUT answered ${r.status}: ${await r.text()}`);
    return (await r.json()) as { pods: { status: { containerStatuses: { containerID: string }[] } }[] };
  };
  /** The next `n` passes that start after now: the calls each made (proxy) and its time (workerd). */
  const nextPasses = async (n: number) => {
    const from = passes.length;
    for (let i = 0; passes.length < from + n + 1 && i < (n + 5) * 40; i++) await sleep(INTERVAL_MS / 4);
    if (passes.length < from + n + 1) throw new Error(`only ${passes.length - from} alarm passes seen`);
    return passes.slice(from + 1, from + n + 1).map((p, i) => {
      const made = calls.slice(passes[from + i]!.seen, p.seen);
      return { ms: p.ms, calls: made.length, methods: made.map((c) => c.method), proxyMs: made.map((c) => c.ms) };
    });
  };
  const results: Record<string, unknown> = {
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
    intervalMs: INTERVAL_MS,
  };
  try {
    const converged: Record<string, unknown>[] = [];
    for (const n of [1, 10]) {
      await put(Array.from({ length: n }, (_, i) => pod(i)));
      await nextPasses(2); // the object's first pass is a start-up pass (every pod synced once)
      const ps = await nextPasses(PASSES);
      const list = ps.flatMap((p) => p.proxyMs);
      converged.push({
        pods: n,
        passes: ps.length,
        "CRI calls per pass": [...new Set(ps.map((p) => p.calls))].join(","),
        methods: [...new Set(ps.flatMap((p) => p.methods))].join(","),
        "pass ms p50": pct(
          ps.map((p) => p.ms),
          50,
        ),
        "pass ms p99": pct(
          ps.map((p) => p.ms),
          99,
        ),
        "proxy ms per list call p50": r2(pct(list, 50)),
      });
    }
    results["converged"] = converged;

    // The pass that repairs: SIGKILL one container, then the first pass that calls StartContainer.
    const first = await put(Array.from({ length: 10 }, (_, i) => pod(i)));
    const id = first.pods[0]!.status.containerStatuses[0]!.containerID.replace("containerd://", "");
    await nextPasses(1); // the PUT's own calls fall in a pass window that ends before the kill
    execFileSync("ctr", ["-a", sock, "--connect-timeout", "3s", "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id]);
    // The passes that ended from here on, each with the calls made since the one before it ended; containerd
    // reports the exit on its own time, so the repair may come a pass or two later.
    const k0 = Math.max(1, passes.length);
    let repair: { ms: number; methods: string[] } | undefined;
    let j = k0;
    for (const end = Date.now() + INTERVAL_MS * 40; !repair && Date.now() < end; await sleep(INTERVAL_MS / 4))
      for (; !repair && j < passes.length; j++) {
        const methods = calls.slice(passes[j - 1]!.seen, passes[j]!.seen).map((c) => c.method);
        if (methods.includes("StartContainer")) repair = { ms: passes[j]!.ms, methods };
      }
    if (!repair) throw new Error("no pass restarted the container in 40 intervals");
    const before = j - k0;
    results["repair"] = {
      pods: 10,
      "passes until the repair": before,
      "CRI calls": repair.methods.length,
      methods: counted(repair.methods),
      "pass ms": repair.ms,
    };

    await put([]);
    await sleep(INTERVAL_MS * 2); // a pass that began before the PUT ends
    const idle0 = calls.length;
    await sleep(INTERVAL_MS * 10);
    results["emptied"] = { "CRI calls over 10 intervals after an empty set": calls.length - idle0 };
  } finally {
    await put([]).catch(() => undefined);
    await worker.dispose();
    await proxy.shutdown(100);
    lab("stop");
  }
  console.table(results["converged"]);
  console.table([results["repair"]]);
  console.log(JSON.stringify(results["emptied"]));
  mkdirSync("bench/results", { recursive: true });
  const out = `bench/results/worker-alarm-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`written: ${out}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
