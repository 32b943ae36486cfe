// Where an idle node's CPU goes (issue #42): the server as it ships (harness `startServer`, npm start's flags) on a
// lab containerd of its own, BENCH_PODS (40) hostNetwork busybox pods, an exec readiness probe every 10 s on half of
// them (BENCH_PROBES=0: none), BENCH_SETTLE_S (40) to converge, then BENCH_IDLE_S (60) of idle; BENCH_RESYNC_MS sets
// PODSYNC_RESYNC_INTERVAL_MS. (Each pod's first resync, 60-90 s after its start, reads the runtime: BENCH_SETTLE_S=100
// leaves it out of the window.) Prints the server's CPU over the idle window, by thread (/proc). With BENCH_PROFILE=1
// the server runs under `--cpu-prof` (whose own sampling costs CPU: read its shares, not its total) and the command
// that gives the window's shares by step (bench/sync-profile.ts's BENCH_ANALYSE) is printed.
//   npx tsx bench/idle-profile.ts        (npm run bench:idle-profile)
import { mkdtempSync, readdirSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { lab, procCpuMs, r2, sleep, startServer, threadCpu } from "./harness.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-idle-profile";
const PODS = Number(process.env["BENCH_PODS"] ?? 40);
const PROBES = process.env["BENCH_PROBES"] !== "0";
const SETTLE_S = Number(process.env["BENCH_SETTLE_S"] ?? 40);
const IDLE_S = Number(process.env["BENCH_IDLE_S"] ?? 60);
const PROFILE = process.env["BENCH_PROFILE"] === "1";

const pod = (i: number) => ({
  metadata: { name: `idle-${i}`, namespace: "bench", uid: `idle-${i}-uid` },
  spec: {
    hostNetwork: true,
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "main",
        image: "localhost/busybox:1",
        imagePullPolicy: "IfNotPresent",
        command: ["sleep", "3600"],
        ...(PROBES && i % 2 === 0 ? { readinessProbe: { exec: { command: ["true"] }, periodSeconds: 10 } } : {}),
      },
    ],
  },
});

async function main() {
  const endpoint = `unix://${lab(LAB, "start")}`;
  const dir = mkdtempSync(join(tmpdir(), "podsync-idle-"));
  const profDir = join(dir, "prof");
  const flags = PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`, "--cpu-prof-interval=500"] : [];
  const resync = process.env["BENCH_RESYNC_MS"];
  const env: Record<string, string> = resync ? { PODSYNC_RESYNC_INTERVAL_MS: resync } : {};
  const server = await startServer(dir, endpoint, "idle-node", env, flags);
  let window: [number, number];
  try {
    await server.putSet(
      1,
      Array.from({ length: PODS }, (_, i) => pod(i)),
    );
    await sleep(SETTLE_S * 1000);
    const load0 = loadavg();
    const us = () => Number(process.hrtime.bigint() / 1000n);
    const c0 = procCpuMs(server.pid);
    const th0 = threadCpu(server.pid);
    const t0 = us();
    await sleep(IDLE_S * 1000);
    window = [t0, us()];
    const cpu = procCpuMs(server.pid) - c0;
    const threads = [...threadCpu(server.pid)].map(([k, v]) => [k, v - (th0.get(k) ?? 0)] as const);
    console.log(
      `idle CPU, ${PODS} pods, ${PROBES ? PODS / 2 : 0} exec probes at 10 s: ${r2((cpu / (IDLE_S * 1000)) * 100)} % of a core over ${IDLE_S} s (load ${load0.map(r2).join("/")})`,
    );
    console.log(
      `by thread: ${threads
        .filter(([, v]) => v > 0)
        .map(([k, v]) => `${k} ${v} ms`)
        .join(", ")}`,
    );
    await server.putSet(2, []);
  } finally {
    server.proc.kill("SIGTERM");
    await new Promise((r) => server.proc.once("exit", r));
    lab(LAB, "stop");
  }
  if (!PROFILE) return;
  const file = readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
  console.log(`shares: BENCH_ANALYSE=${join(profDir, file!)},${window[0]},${window[1]} npx tsx bench/sync-profile.ts`);
}

await main();
