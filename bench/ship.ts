// npm run bench: podsync as it ships, beside the runtime's floor measured in the same run (issue #21's table).
// The server is `node dist/node.js`, npm start's configuration: the file desired state, the used-jti log and the
// request log (to a file, as a service manager would keep it), the runtime event stream on, default intervals.
// It runs on a lab containerd of its own (scripts/containerd-lab.sh, PODSYNC_LAB_DIR=/tmp/podsync-lab-ship-bench,
// started and stopped here), hostNetwork busybox pods. Every figure is a ratio to its floor from this run; the
// machine is shared, so the load average is printed with them. `npm run bench:peer` (BENCH_PEER=podman) also
// times Debian's podman (installed with apt-get when missing; its own --root/--runroot/--tmpdir) for the
// crash-to-restart and a 30-pod `kube play`. Writes bench/results/ship-<time>.json.
//   BENCH_SYNCS (400 converged syncs, after BENCH_WARMUP: 200 untimed, and as many untimed raw reads), BENCH_SETTLE_S (10) then BENCH_IDLE_S (20), BENCH_CRASHES (5), BENCH_PODS (30), BENCH_RELISTS (100)
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import {
  relistCpu as relistCpuOf,
  lab as labIn,
  med,
  podmanCli,
  rawPod,
  NODE_FLAGS,
  pool,
  procCpuMs,
  r2,
  rssMiB,
  selfCpuMs,
  type Server,
  sleep,
  startServer,
} from "./harness.js";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { ContainerState } from "../src/gen/runtime/v1/api_pb.js";
import { nsToMs } from "../src/kuberuntime/pod-status.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-ship-bench";
const SYNCS = Number(process.env["BENCH_SYNCS"] ?? 400);
const WARMUP = Number(process.env["BENCH_WARMUP"] ?? 200);
const IDLE_S = Number(process.env["BENCH_IDLE_S"] ?? 20);
/** Seconds of idle before the idle CPU window: the server's one collection after the load runs in it. */
const SETTLE_S = Number(process.env["BENCH_SETTLE_S"] ?? 10);
const CRASHES = Number(process.env["BENCH_CRASHES"] ?? 5);
const PODS = Number(process.env["BENCH_PODS"] ?? 30);
const RELISTS = Number(process.env["BENCH_RELISTS"] ?? 100);
const PEER = process.env["BENCH_PEER"] === "podman";
const CONCURRENCY = 8;
/** The raw floor's pods ask for what podsync's hostNetwork busybox pod gets by default: the runtime's default
 * seccomp profile for the sandbox and the container (kubelet's --seccomp-default, which podsync turns on). Before
 * run Y the floor asked for none: runc then installs no filter, 45 ms a pod less on this VM (measured, 6 pairs). */
/** The pause before each timed first sync, raw or podsync's, so neither runs into the other's leftover work. */
const QUIET_MS = 500;
/** The same before each side of the 30-pod comparison. */
const SET_QUIET_MS = 2000;

const lab = (cmd: "start" | "stop") => labIn(LAB, cmd);

const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`;
let seq = 0;
const podInput = (name = `ship-${tag}-${seq++}`) => ({
  metadata: { name, namespace: "bench", uid: `${name}-uid` },
  spec: {
    hostNetwork: true,
    terminationGracePeriodSeconds: 2,
    containers: [
      { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] },
    ],
  },
});

async function main() {
  mkdirSync("bench/results", { recursive: true });
  execFileSync("node", ["bin/build.mjs", "--if-stale"], { stdio: "inherit" }); // what npm start runs
  const sock = lab("start");
  const endpoint = `unix://${sock}`;
  const cri = connectGrpc({ endpoint, timeoutMs: 60_000 });
  const dir = mkdtempSync(join(tmpdir(), "podsync-ship-"));
  const logFile = join(dir, "requests.log"); // startServer's request log
  const results: Record<string, unknown> = {
    cores: cpus().length,
    node: process.version,
    nodeFlags: NODE_FLAGS,
    load: [] as number[][],
  };
  const loads = results["load"] as number[][];
  const made: string[] = [];
  let server: Server | undefined;
  try {
    // The server as `npm start` runs it (bench/harness.ts), with the bench's signer.
    server = await startServer(dir, endpoint, "ship-node");
    const { pid, url, sign } = server;
    const lastLog = () =>
      JSON.parse(readFileSync(logFile, "utf8").trim().split("\n").pop()!) as {
        criCalls: number;
        route: string;
        status: number;
      };
    /** POST /v1/pods/sync with a signed token; anything but 200 ends the bench. */
    const postToken = async (token: string) => {
      const r = await fetch(`${url}/v1/pods/sync`, {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: token,
      });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`sync answered ${r.status}`);
    };
    const post = async (pod: unknown) => postToken(await sign({ act: "sync", pod }));
    const running = async (uid: string) =>
      (await cri.listContainers({ filter: { labelSelector: { "io.kubernetes.pod.uid": uid } } })).containers.filter(
        (c) => c.state === ContainerState.CONTAINER_RUNNING,
      );
    await sleep(1500); // start-up: the event stream opens, the first relist runs
    loads.push(loadavg());

    // 1. First sync of a 1-container pod: wall time and CRI calls; the floor is RunPodSandbox + CreateContainer +
    //    StartContainer alone, for an equivalent hostNetwork pod. Each side starts from a quiet runtime (QUIET_MS
    //    after the last work of either: the raw pod's removal, the server's relist after its sync), and they take
    //    turns going first; before, podsync's sync always came right after the raw pod's removal, and the raw
    //    creation right after podsync's sync.
    const first: number[] = [];
    const firstCalls: number[] = [];
    const rawFirst: number[] = [];
    const timePodsync = async () => {
      const p = podInput();
      made.push(p.metadata.uid);
      const token = await sign({ act: "sync", pod: p });
      await sleep(QUIET_MS);
      const t0 = performance.now();
      await postToken(token);
      first.push(performance.now() - t0);
      firstCalls.push(lastLog().criCalls);
    };
    const timeRaw = async (i: number) => {
      await sleep(QUIET_MS);
      const r0 = performance.now();
      const { podSandboxId: sb } = await rawPod(
        cri,
        join(dir, "raw-logs"),
        `raw-${tag}-${i}`,
        "bench",
        `raw-${tag}-${i}`,
        {
          hostNetwork: true,
        },
      );
      rawFirst.push(performance.now() - r0);
      await cri.stopPodSandbox({ podSandboxId: sb });
      await cri.removePodSandbox({ podSandboxId: sb });
    };
    for (let i = 0; i < CRASHES; i++) {
      if (i % 2 === 0) {
        await timePodsync();
        await timeRaw(i);
      } else {
        await timeRaw(i);
        await timePodsync();
      }
    }

    // 2. Converged syncs of one pod: the server's CPU per sync against the same three status reads made directly
    //    (ListPodSandbox and ListContainers for the pod's uid, PodSandboxStatus), CPU of this process per read.
    const target = podInput();
    made.push(target.metadata.uid);
    await post(target);
    // Both sides warmed alike before they are timed: WARMUP converged syncs (which also lets the pod's own creation
    // events settle, so the status cache holds it as it does on a node in use) and as many raw reads.
    const warm = await Promise.all(Array.from({ length: WARMUP }, () => sign({ act: "sync", pod: target })));
    await pool(warm, 4, postToken);
    const tokens = await Promise.all(Array.from({ length: SYNCS }, () => sign({ act: "sync", pod: target })));
    const cacheReads = async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const n = (result: string) =>
        Number(
          new RegExp(`^podsync_pod_status_cache_reads_total\\{result="${result}"\\} (\\S+)$`, "m").exec(text)?.[1] ?? 0,
        );
      return { hit: n("hit"), miss: n("miss") };
    };
    const reads0 = await cacheReads();
    const cpu0 = procCpuMs(pid);
    const w0 = performance.now();
    await pool(tokens, 4, postToken);
    const syncCpu = (procCpuMs(pid) - cpu0) / SYNCS;
    const syncWall = (performance.now() - w0) / SYNCS;
    const convergedCalls = lastLog().criCalls;
    const reads1 = await cacheReads();
    const cached = { hit: reads1.hit - reads0.hit, miss: reads1.miss - reads0.miss };
    const filter = { labelSelector: { "io.kubernetes.pod.uid": target.metadata.uid } };
    const sbId = (await cri.listPodSandbox({ filter })).items[0]!.id;
    const readOnce = async () => {
      await Promise.all([cri.listPodSandbox({ filter }), cri.listContainers({ filter })]);
      await cri.podSandboxStatus({ podSandboxId: sbId });
    };
    await pool(
      Array.from({ length: WARMUP }, (_, i) => i),
      4,
      readOnce,
    );
    const reads = Array.from({ length: SYNCS }, (_, i) => i);
    const f0 = selfCpuMs();
    await pool(reads, 4, readOnce);
    const floorCpu = (selfCpuMs() - f0) / SYNCS;
    loads.push(loadavg());

    // 3. Crash → restart through the running server: SIGKILL (from this process, by pid) the first instance of each
    //    first-sync pod, time to the replacement's startedAt.
    const crash: number[] = [];
    for (const uid of made.slice(0, CRASHES)) {
      const [before] = await running(uid);
      // The container's init process, killed from here as podman's is below (no `ctr` process started in the timing).
      const { pid: victim } = JSON.parse(
        (await cri.containerStatus({ containerId: before!.id, verbose: true })).info["info"]!,
      ) as { pid: number };
      await sleep(QUIET_MS);
      const t0 = Date.now();
      process.kill(victim, "SIGKILL");
      let after;
      for (const end = Date.now() + 30_000; Date.now() < end; await sleep(20)) {
        const r = await running(uid);
        if (r.length === 1 && r[0]!.id !== before!.id) {
          after = r[0]!;
          break;
        }
      }
      if (!after) throw new Error(`pod ${uid} was not restarted within 30 s`);
      crash.push(nsToMs((await cri.containerStatus({ containerId: after.id })).status!.startedAt) - t0);
    }

    // 4. 30-pod PUT /v1/node/pods from empty → all Running, against raw creation of 30 at the same parallelism.
    //    (The pods of 1-3 are the request's; the PUT's set replaces them, so they are drained first.)
    const drain = async () => {
      const r = await fetch(`${url}/v1/node/pods`, {
        method: "PUT",
        headers: { "content-type": "application/jose" },
        body: await sign({ act: "apply", generation: ++generation, pods: [] }),
      });
      await r.arrayBuffer();
    };
    let generation = 0;
    await drain();
    await sleep(SET_QUIET_MS); // the drain's removals finished in containerd, as before the raw creation below
    const set = Array.from({ length: PODS }, () => podInput());
    const putCpu0 = procCpuMs(pid);
    const a0 = performance.now();
    const put = await fetch(`${url}/v1/node/pods`, {
      method: "PUT",
      headers: { "content-type": "application/jose" },
      body: await sign({ act: "apply", generation: ++generation, pods: set }),
    });
    await put.arrayBuffer();
    for (const end = Date.now() + 120_000; Date.now() < end; await sleep(50)) {
      const n = (
        await cri.listContainers({ filter: { labelSelector: { "io.kubernetes.pod.namespace": "bench" } } })
      ).containers.filter(
        (c) =>
          c.state === ContainerState.CONTAINER_RUNNING &&
          set.some((p) => p.metadata.uid === c.labels["io.kubernetes.pod.uid"]),
      ).length;
      if (n === PODS) break;
    }
    const applyMs = performance.now() - a0;
    /** The server's CPU over the PUT (ms), in the JSON: what it takes from the two cores containerd and runc share. */
    const putCpuMs = procCpuMs(pid) - putCpu0;
    // The server's CPU each second from here to the end of the idle window (in the JSON): where its collections
    // after the load fall, against the phases that follow.
    const sinceLoad: number[] = [];
    let prevCpu = procCpuMs(pid);
    const sinceLoadTimer = setInterval(() => {
      const now = procCpuMs(pid);
      sinceLoad.push(now - prevCpu);
      prevCpu = now;
    }, 1000);
    const rawIds: string[] = [];
    await sleep(SET_QUIET_MS); // the server's relists after the PUT done
    const r0 = performance.now();
    await pool(
      Array.from({ length: PODS }, (_, i) => i),
      CONCURRENCY,
      async (i) => {
        const name = `rawset-${tag}-${i}`;
        const { podSandboxId } = await rawPod(cri, join(dir, "raw-logs"), name, "bench-raw", name, {
          hostNetwork: true,
        });
        rawIds.push(podSandboxId);
      },
    );
    const rawApplyMs = performance.now() - r0;
    await pool(rawIds, CONCURRENCY, async (sb) => {
      await cri.stopPodSandbox({ podSandboxId: sb });
      await cri.removePodSandbox({ podSandboxId: sb });
    });
    loads.push(loadavg());

    // 5. A relist of the node (30 pods) against its 2 list calls alone, CPU of this process, RELISTS each,
    //    alternated (a relist, then the lists), so a change of load or a collection falls on both alike; a few
    //    ms each, so 20 of them moved the ratio by a quarter with one collection.
    const { relist: relistCpu, lists: listCpu } = await relistCpuOf(cri, RELISTS);

    // 6. Idle: the server with the 30 converged pods, nobody calling.
    //    RSS and CPU each second from the end of the load: the series show the peak and where it settles. The first
    //    SETTLE_S seconds let V8's own collections after the load run (nothing forces one); their CPU is reported
    //    apart, and the idle CPU is the IDLE_S seconds after them.
    const rssSeries: number[] = [];
    /** The server's CPU (ms) in each second of the windows: a spike is one piece of work, not a steady cost. */
    const cpuSeries: number[] = [];
    let lastCpu = procCpuMs(pid);
    const sampleWindow = async (seconds: number) => {
      for (const end = Date.now() + seconds * 1000; Date.now() < end; await sleep(Math.min(1000, end - Date.now()))) {
        rssSeries.push(r2(rssMiB(pid)));
        const now = procCpuMs(pid);
        cpuSeries.push(now - lastCpu);
        lastCpu = now;
      }
    };
    const s0 = procCpuMs(pid);
    await sampleWindow(SETTLE_S);
    const i0 = procCpuMs(pid);
    const settleCpuMs = i0 - s0;
    await sampleWindow(IDLE_S);
    const idlePct = ((procCpuMs(pid) - i0) / (IDLE_S * 1000)) * 100;
    clearInterval(sinceLoadTimer);
    const rss = rssMiB(pid);
    // What the RSS holds: V8's heap (committed, in use), memory outside it, from the server's own /metrics.
    const heap = await server.heap();
    loads.push(loadavg());
    await drain();

    // 7. The peer: podman, crash → restart (restartPolicy Always) and a 30-pod kube play.
    const peer = PEER ? await podman(dir) : undefined;

    const rows: [string, string, string, string][] = [
      [
        "server CPU per converged sync ÷ the same 3 CRI reads made directly",
        `${r2(syncCpu / floorCpu)}× (${r2(syncCpu)} ms vs ${r2(floorCpu)} ms; wall ${r2(syncWall)} ms per sync at 4 in flight)`,
        "≤ 1.5×",
        "",
      ],
      [
        "CRI calls per converged sync",
        `${convergedCalls} (status cache: ${cached.hit} of ${cached.hit + cached.miss} timed syncs decided from it; a read is 3 calls)`,
        "≤ 3",
        "",
      ],
      [
        "crash → restart p50 (SIGKILL, first crash)",
        `${Math.round(med(crash))} ms (of ${crash.map(Math.round).join(", ")})${peer ? `; podman ${Math.round(med(peer.crash))} ms (of ${peer.crash.map(Math.round).join(", ")}): ${r2(med(crash) / med(peer.crash))}×` : ""}`,
        "≤ 500 ms, and ≤ podman",
        "",
      ],
      [
        "CPU per relist (30 pods) ÷ its 2 list calls",
        `${r2(relistCpu / listCpu)}× (${r2(relistCpu)} ms vs ${r2(listCpu)} ms)`,
        "≤ 2×",
        "",
      ],
      [
        `idle CPU, ${PODS} pods, default intervals (events on)`,
        `${r2(idlePct)} % of a core over ${IDLE_S} s (after ${SETTLE_S} s of settling: ${Math.round(settleCpuMs)} ms CPU; ms a second: ${cpuSeries.join(" ")})`,
        "≤ 0.5 %",
        "",
      ],
      [
        `${PODS}-pod PUT from empty → all running ÷ raw creation at ${CONCURRENCY} in flight`,
        `${r2(applyMs / rawApplyMs)}× (${r2(applyMs / 1000)} s vs ${r2(rawApplyMs / 1000)} s)${peer ? `; podman kube play ${r2(peer.playMs / 1000)} s` : ""}`,
        "≤ 1.1×, and ≤ 8 s",
        "",
      ],
      ["CRI calls for a first sync of a 1-container pod", `${firstCalls.join(", ")}`, "≤ 6", ""],
      [
        "first sync ÷ raw RunPodSandbox + CreateContainer + StartContainer",
        `${r2(med(first) / med(rawFirst))}× (${Math.round(med(first))} ms vs ${Math.round(med(rawFirst))} ms)`,
        "≤ 1.2×",
        "",
      ],
      [
        "idle RSS",
        `${r2(rss)} MiB after ${SETTLE_S + IDLE_S} s idle (${r2(Math.max(...rssSeries))} MiB at most in it); V8 heap ${heap.committed} MiB committed, ${heap.used} MiB in use (live or not yet collected)`,
        "≤ 70 MiB (#42)",
        "",
      ],
    ];
    Object.assign(results, {
      first,
      firstCalls,
      rawFirst,
      syncCpu,
      floorCpu,
      syncWall,
      convergedCalls,
      cached,
      warmup: WARMUP,
      crash,
      applyMs,
      putCpuMs,
      rawApplyMs,
      relistCpu,
      listCpu,
      idlePct,
      settleCpuMs,
      cpuSeries,
      sinceLoad,
      rss,
      rssSeries,
      heap,
      peer,
    });
    console.log(
      `\npodsync as shipped (node ${NODE_FLAGS.join(" ")} dist/node.js: file state, jti log, request log, events on), ${cpus().length} cores, load average ${loads.map((l) => l.map(r2).join("/")).join(" → ")}\n`,
    );
    console.log("| figure | this run | goal |\n|---|---|---|");
    for (const r of rows) console.log(`| ${r[0]} | ${r[1]} | ${r[2]} |`);
  } finally {
    if (server && server.proc.exitCode === null) {
      const exited = new Promise((r) => server!.proc.once("exit", r));
      server.proc.kill("SIGTERM");
      await exited;
    }
    lab("stop");
    cri.close();
  }
  const file = `bench/results/ship-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\n${file}`);
}

/** podman beside podsync (harness.ts `podmanCli`): crash → restart, then a PODS-pod `kube play`. */
async function podman(dir: string): Promise<{ crash: number[]; playMs: number }> {
  const pm = podmanCli(LAB);
  const crash: number[] = [];
  for (let i = 0; i < CRASHES; i++) {
    const name = `ship-peer-${tag}-${i}`;
    const yaml = join(dir, `${name}.yaml`);
    writeFileSync(
      yaml,
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  hostNetwork: true\n  restartPolicy: Always\n  containers:\n  - name: main\n    image: localhost/busybox:1\n    command: ["sleep", "3600"]\n`,
    );
    pm("kube", "play", yaml);
    const ctrName = `${name}-main`;
    const pid = Number(pm("inspect", "-f", "{{.State.Pid}}", ctrName));
    await sleep(QUIET_MS);
    const t0 = Date.now();
    process.kill(pid, "SIGKILL");
    let started = 0;
    for (const end = Date.now() + 30_000; Date.now() < end; await sleep(20)) {
      const p = Number(pm("inspect", "-f", "{{.State.Pid}}", ctrName));
      if (p > 0 && p !== pid) {
        started = Date.parse(
          pm("inspect", "-f", '{{.State.StartedAt.Format "2006-01-02T15:04:05.000Z07:00"}}', ctrName),
        );
        break;
      }
    }
    crash.push(started ? started - t0 : NaN);
    pm("kube", "down", yaml);
  }
  const many = join(dir, "peer-set.yaml");
  writeFileSync(
    many,
    Array.from(
      { length: PODS },
      (_, i) =>
        `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ship-set-${tag}-${i}\nspec:\n  hostNetwork: true\n  containers:\n  - name: main\n    image: localhost/busybox:1\n    command: ["sleep", "3600"]\n`,
    ).join("---\n"),
  );
  const p0 = performance.now();
  pm("kube", "play", many);
  const playMs = performance.now() - p0;
  pm("kube", "down", many);
  return { crash, playMs };
}

await main();
