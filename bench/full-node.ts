// npm run bench:full-node (part of `npm run bench`): a full node, kubelet's default maxPods (110), on the server as
// it ships (bench/harness.ts: dist/node.js with npm start's flags) and a lab containerd of its own. 110 pods in 10
// Deployments of 11 (pod network, busybox), exec readiness probes (`true`, every 10 s) on half of them.
// Each figure beside its floor, measured in this run:
//   - PUT of all 110 at once → each pod Ready, from a watch, ÷ each raw pod's start at the same parallelism (with
//     the same exec probes made from each probed pod's start, as the node's prober adds them);
//   - the pod start-up SLO (p50/p99 ≤ 5 s, no pulls: the image is local) as kubelet's density test measures it on
//     one node: BENCH_SEQ (10) pods created one after another on the full node, PUT → Ready, ÷ the same made raw;
//   - PUT → all Running ÷ raw RunPodSandbox + CreateContainer + StartContainer of 110 pods at BENCH_RAW_PARALLEL;
//   - idle CPU with 110 converged pods ÷ the same 55 ExecSync probes every 10 s made directly (this process, each
//     on its own period as the prober's workers, with the prober's call deadline; failed probes are counted);
//   - one relist at 110 pods ÷ its 2 list calls (CPU of this process, alternated);
//   - RSS empty, at 110 pods, and per pod above empty;
//   - GET /api/v1/pods (what `kubectl get pods -A` asks, as a Table) at 110 pods, server round trip p50/p99.
// With BENCH_PEER=podman (npm run bench:peer), podman's `kube play` of the same 110 pods, after podsync's figures.
// Settings: BENCH_PODS_PER_DEPLOY (11), BENCH_DEPLOYS (10), BENCH_RAW_PARALLEL (8), BENCH_IDLE_S (60),
// BENCH_SETTLE_S (20), BENCH_IDLE_SETTLE_S (100), BENCH_LISTS (100), BENCH_RELISTS (50). Writes
// bench/results/full-node-<time>.json.
import { mkdtempSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import type { CriClient } from "../src/cri/client.js";
import { ContainerState, PodSandboxState } from "../src/gen/runtime/v1/api_pb.js";
import {
  lab,
  med,
  pct,
  pool,
  procCpuMs,
  r2,
  rssMiB,
  rssParts,
  relistCpu,
  selfCpuMs,
  sleep,
  startServer,
  NODE_FLAGS,
  podmanCli,
  rawPod,
  type Server,
} from "./harness.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-full-bench";
const PER = Number(process.env["BENCH_PODS_PER_DEPLOY"] ?? 11);
const DEPLOYS = Number(process.env["BENCH_DEPLOYS"] ?? 10);
const PODS = PER * DEPLOYS;
const RAW_PARALLEL = Number(process.env["BENCH_RAW_PARALLEL"] ?? 8);
const IDLE_S = Number(process.env["BENCH_IDLE_S"] ?? 60);
const SETTLE_S = Number(process.env["BENCH_SETTLE_S"] ?? 20);
/** From the last pod Ready to the idle window: each pod's first resync (60 to 90 s after its last sync) reads the
 * runtime, later ones the status cache; the window is the node as it stays, after them. */
const IDLE_SETTLE_S = Number(process.env["BENCH_IDLE_SETTLE_S"] ?? 100);
const LISTS = Number(process.env["BENCH_LISTS"] ?? 100);
const RELISTS = Number(process.env["BENCH_RELISTS"] ?? 50);
/** Pods started one after another on the full node (kubelet's density test "create a sequence of pods"). */
const SEQ = Math.min(Number(process.env["BENCH_SEQ"] ?? 10), PER - 1);
const PROBE_PERIOD_S = 10;
/** BENCH_PEER=podman (npm run bench:peer runs it): podman's `kube play` of the same pods, after podsync's figures. */
const PEER = process.env["BENCH_PEER"] === "podman";

/** Deployment i: PER busybox replicas; the even ones carry an exec readiness probe. */
const deployment = (i: number, replicas = PER) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: `full-${i}`, namespace: "bench" },
  spec: {
    replicas,
    selector: { matchLabels: { app: `full-${i}` } },
    template: {
      metadata: { labels: { app: `full-${i}` } },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "IfNotPresent",
            command: ["sleep", "360000"],
            ...(i % 2 === 0 ? { readinessProbe: { exec: { command: ["true"] }, periodSeconds: PROBE_PERIOD_S } } : {}),
          },
        ],
      },
    },
  },
});

/** One exec readiness probe as the node's prober makes it: `true`, the runtime's 1 s timeout, and the call deadline
 * the prober gives it (the default runtime request timeout, 10 s, beyond the 1 s). Answers whether it passed. */
const execProbe = (cri: CriClient, containerId: string) =>
  cri
    .execSync({ containerId, cmd: ["true"], timeout: 1n }, { timeoutMs: 11_000 })
    .then((r) => r.exitCode === 0)
    .catch(() => false);

/** Raw creation of `n` pods at `parallel` in flight, the pod network and the seccomp profile as podsync's get them;
 * with `probe`, every other pod gets the node's exec readiness probe from its start, each on its own period with the
 * prober's call deadline, until the last pod has started (the runtime work the node's probes add while it starts).
 * Answers the wall time and each pod's start, and removes them. */
async function rawCreate(cri: CriClient, dir: string, n: number, parallel: number, probe = false) {
  const ids: string[] = [];
  let creating = true;
  const probes: Promise<void>[] = [];
  const probeLoop = async (containerId: string) => {
    while (creating) {
      const tick = Date.now();
      await execProbe(cri, containerId);
      for (const end = tick + PROBE_PERIOD_S * 1000; creating && Date.now() < end; ) await sleep(100);
    }
  };
  /** Each pod's time from the start to its container started: the per-pod floor of PUT → Ready. */
  const done: number[] = [];
  const t0 = performance.now();
  await pool(
    Array.from({ length: n }, (_, i) => i),
    parallel,
    async (i) => {
      const { podSandboxId: sb, containerId } = await rawPod(
        cri,
        join(dir, "raw-logs"),
        `raw-${i}`,
        "bench-raw",
        `raw-${process.pid}-${i}`,
      );
      done.push(performance.now() - t0);
      ids.push(sb);
      if (probe && i % 2 === 0) probes.push(probeLoop(containerId));
    },
  );
  const ms = performance.now() - t0;
  creating = false;
  await Promise.all(probes);
  await pool(ids, parallel, async (sb) => {
    await cri.stopPodSandbox({ podSandboxId: sb });
    await cri.removePodSandbox({ podSandboxId: sb });
  });
  return { ms, done };
}

interface WatchEvent {
  object: {
    metadata: { name: string };
    status?: { phase?: string; conditions?: { type: string; status: string }[] };
  };
}

/** Watches /api/v1/pods from `t0`: the first time each pod is seen Running and Ready. */
function watchPods(url: string, token: () => Promise<string>, t0: number) {
  const running = new Map<string, number>();
  const ready = new Map<string, number>();
  const ctl = new AbortController();
  // The server ends a watch now and then (as the API server does): watch again; the ADDED events of the new watch
  // carry each pod's state as it is.
  const once = async () => {
    const r = await fetch(`${url}/api/v1/namespaces/bench/pods?watch=1`, {
      headers: { authorization: `Bearer ${await token()}` },
      signal: ctl.signal,
    });
    if (!r.ok) throw new Error(`watch answered ${r.status}`);
    let buf = "";
    const dec = new TextDecoder();
    for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
      buf += dec.decode(chunk, { stream: true });
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) seen(JSON.parse(line) as WatchEvent);
      }
    }
  };
  const seen = (e: WatchEvent) => {
    const name = e.object.metadata.name;
    const now = performance.now() - t0;
    if (e.object.status?.phase === "Running" && !running.has(name)) running.set(name, now);
    if (e.object.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") && !ready.has(name))
      ready.set(name, now);
  };
  const done = (async () => {
    while (!ctl.signal.aborted) await once().catch(() => sleep(100));
  })();
  return { running, ready, stop: () => (ctl.abort(), done.catch(() => {})) };
}

/** The CPU (ms) this process spends making the node's readiness probes itself: 55 ExecSync every 10 s. */
async function probeFloor(cri: CriClient, seconds: number) {
  const { containers } = await cri.listContainers({ filter: {} });
  const running = containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING);
  const probed = running.filter((c) => /^full-\d*[02468]-/.test(c.labels["io.kubernetes.pod.name"] ?? ""));
  const c0 = selfCpuMs();
  let failed = 0;
  let made = 0;
  // Each probe on its own period, spread over it as the prober's workers are (not all 55 at once); a probe that
  // fails counts.
  await Promise.all(
    probed.map(async (c, i) => {
      await sleep((i * PROBE_PERIOD_S * 1000) / probed.length);
      for (const end = Date.now() + seconds * 1000; Date.now() < end; ) {
        const tick = Date.now();
        made++;
        if (!(await execProbe(cri, c.id))) failed++;
        await sleep(Math.max(0, PROBE_PERIOD_S * 1000 - (Date.now() - tick)));
      }
    }),
  );
  return { cpuMs: selfCpuMs() - c0, probes: probed.length, made, failed };
}

/** podman's `kube play` of PODS pods as the Deployments' (busybox, podman's default bridge network; podman has no
 * exec readiness probe, so none): the wall time until it returns with every container started; then `kube down`. */
function podmanPlay(dir: string): number {
  const pm = podmanCli(LAB);
  const file = join(dir, "peer-full.yaml");
  const pod = (i: number) =>
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: full-peer-${i}\nspec:\n  containers:\n  - name: main\n    image: localhost/busybox:1\n    command: ["sleep", "360000"]\n`;
  writeFileSync(file, Array.from({ length: PODS }, (_, i) => pod(i)).join("---\n"));
  const t0 = performance.now();
  pm("kube", "play", file);
  const ms = performance.now() - t0;
  pm("kube", "down", file);
  return ms;
}

/** Until the runtime holds `n` ready sandboxes. */
async function untilSandboxes(cri: CriClient, n: number) {
  const filter = { state: { state: PodSandboxState.SANDBOX_READY } };
  for (const end = Date.now() + 300_000; Date.now() < end; await sleep(500))
    if ((await cri.listPodSandbox({ filter })).items.length === n) return;
  throw new Error(`the runtime did not come to ${n} ready sandboxes`);
}

/** kubelet's density test "create a sequence of pods" (test/e2e_node/density_test.go, createBatchPodSequential): SEQ
 * pods one after another on the full node, each PUT once the one before is Ready, timed PUT → Ready (the watch).
 * Room is made first by taking SEQ replicas off the last Deployment, so the node holds PODS pods at the end. The
 * floor: SEQ pods created raw one after another on the same node (PODS - SEQ pods), each RunPodSandbox +
 * CreateContainer + StartContainer. Answers both, and the next generation to PUT. */
async function sequence(server: Server, cri: CriClient, dir: string, generation: number) {
  let g = generation;
  const base = Array.from({ length: DEPLOYS }, (_, i) => deployment(i, i === DEPLOYS - 1 ? PER - SEQ : PER));
  await server.putSet(g++, base);
  await untilSandboxes(cri, PODS - SEQ);
  await sleep(SETTLE_S * 1000);
  const watch = watchPods(server.url, () => server.sign({ act: "read" }), 0);
  const pods: unknown[] = [];
  const ms: number[] = [];
  // The odd Deployments' pod: no probe.
  const spec = deployment(1).spec.template.spec;
  for (let i = 0; i < SEQ; i++) {
    const name = `seq-${i}`;
    pods.push({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "bench" }, spec });
    const t0 = performance.now();
    await server.putSet(g++, [...base, ...pods]);
    for (const end = Date.now() + 120_000; !watch.ready.has(name); await sleep(10))
      if (Date.now() > end) throw new Error(`${name} was not Ready within 120 s`);
    ms.push(watch.ready.get(name)! - t0);
  }
  await watch.stop();
  await server.putSet(g++, base);
  await untilSandboxes(cri, PODS - SEQ);
  await sleep(SETTLE_S * 1000);
  const { done } = await rawCreate(cri, dir, SEQ, 1);
  const raw = done.map((t, i) => t - (i > 0 ? done[i - 1]! : 0));
  return { ms, raw, generation: g };
}

async function main() {
  const sock = lab(LAB, "start");
  const endpoint = `unix://${sock}`;
  const cri = connectGrpc({ endpoint, timeoutMs: 60_000 });
  const dir = mkdtempSync(join(tmpdir(), "podsync-full-"));
  const loads: number[][] = [loadavg()];
  const server = await startServer(dir, endpoint, "full-node");
  try {
    await sleep(SETTLE_S * 1000);
    const emptyRss = rssMiB(server.pid);
    const emptyHeap = await server.heap();
    const emptyParts = rssParts(server.pid);

    // The floor first, on a quiet runtime: 110 raw pods, then gone.
    const { ms: rawMs, done: rawDone } = await rawCreate(cri, dir, PODS, RAW_PARALLEL, true);
    loads.push(loadavg());
    await sleep(5000);

    // The PUT of 10 Deployments; the watch times each pod's Running and Ready.
    const t0 = performance.now();
    const startCpu0 = procCpuMs(server.pid);
    const watch = watchPods(server.url, () => server.sign({ act: "read" }), t0);
    const items = Array.from({ length: DEPLOYS }, (_, i) => deployment(i));
    await server.putSet(1, items);
    for (const end = Date.now() + 600_000; watch.ready.size < PODS / 2 + PODS / 2 || watch.running.size < PODS; ) {
      if (Date.now() > end) {
        // What the node says of the pods the watch never saw Ready: a lost event, or pods really not Ready.
        const r = await fetch(`${server.url}/api/v1/namespaces/bench/pods`, {
          headers: { authorization: `Bearer ${await server.sign({ act: "read" })}` },
        });
        const list = (await r.json()) as { items: WatchEvent["object"][] };
        for (const p of list.items.filter((p) => !watch.ready.has(p.metadata.name)))
          console.error(`not seen Ready: ${p.metadata.name} ${JSON.stringify(p.status)}`);
        // The other figures are still worth having: the row below says how many converged.
        console.error(`after 600 s: ${watch.running.size} running, ${watch.ready.size} ready`);
        break;
      }
      await sleep(200);
    }
    await watch.stop();
    const allRunningMs = Math.max(...watch.running.values());
    /** The server's own CPU from the PUT to the last pod Ready: what it took from the runtime on the 2 cores. */
    const startCpuMs = procCpuMs(server.pid) - startCpu0;
    const readyMs = [...watch.ready.values()];
    loads.push(loadavg());

    // Idle: settle, then the server's CPU over IDLE_S; then the probes' floor over as long.
    await sleep(IDLE_SETTLE_S * 1000);
    const i0 = procCpuMs(server.pid);
    // RSS every 5 s of the window: V8 collects its old generation when it chooses, so one reading can land
    // anywhere between a collection and the next; the median and the range say what the node keeps.
    const rssSeen: number[] = [];
    for (let t = 0; t < IDLE_S; t += 5) {
      await sleep(5000);
      rssSeen.push(rssMiB(server.pid));
    }
    const idlePct = ((procCpuMs(server.pid) - i0) / (IDLE_S * 1000)) * 100;
    const fullRss = med(rssSeen);
    const fullHeap = await server.heap();
    const fullParts = rssParts(server.pid);
    loads.push(loadavg());
    const floor = await probeFloor(cri, IDLE_S);
    const floorPct = (floor.cpuMs / (IDLE_S * 1000)) * 100;

    // One relist at 110 pods against its 2 list calls, alternated.
    const relist = await relistCpu(cri, RELISTS, 3);

    // kubectl get pods -A's request: a Table of every pod.
    const read = await server.sign({ act: "read" });
    const table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    const listMs: number[] = [];
    for (let i = 0; i < LISTS + 5; i++) {
      const l0 = performance.now();
      const r = await fetch(`${server.url}/api/v1/pods`, {
        headers: { authorization: `Bearer ${read}`, accept: table },
      });
      await r.arrayBuffer();
      if (!r.ok) throw new Error(`GET /api/v1/pods answered ${r.status}`);
      if (i >= 5) listMs.push(performance.now() - l0);
    }
    loads.push(loadavg());
    const seq = await sequence(server, cri, dir, 2);
    loads.push(loadavg());
    // The peer last, so none of podsync's figures shares the machine with podman's pods.
    await server.putSet(seq.generation, []);
    for (const end = Date.now() + 300_000; Date.now() < end; await sleep(1000))
      if ((await cri.listPodSandbox({})).items.length === 0) break;
    const peerMs = PEER ? podmanPlay(dir) : undefined;

    const rows: [string, string, string][] = [
      [
        `PUT of all ${PODS} at once → each pod Ready (readiness-probed and not), p50 / p99`,
        `${r2(med(readyMs) / 1000)} s / ${r2(pct(readyMs, 99) / 1000)} s; ÷ each raw pod's start at ${RAW_PARALLEL} in flight (${r2(med(rawDone) / 1000)} s / ${r2(pct(rawDone, 99) / 1000)} s): ${r2(med(readyMs) / med(rawDone))}× / ${r2(pct(readyMs, 99) / pct(rawDone, 99))}×${readyMs.length < PODS ? ` (only ${readyMs.length} of ${PODS} Ready within 600 s)` : ""}`,
        "near 1× its floor (the SLO is the next row)",
      ],
      [
        `PUT → Ready of ${SEQ} pods one after another on the full node (no probe), p50 / p99`,
        `${r2(med(seq.ms) / 1000)} s / ${r2(pct(seq.ms, 99) / 1000)} s; ÷ raw creation one after another (${r2(med(seq.raw) / 1000)} s / ${r2(pct(seq.raw, 99) / 1000)} s): ${r2(med(seq.ms) / med(seq.raw))}× / ${r2(pct(seq.ms, 99) / pct(seq.raw, 99))}×`,
        "≤ 5 s / ≤ 5 s",
      ],
      [
        `PUT → all ${PODS} Running ÷ raw creation at ${RAW_PARALLEL} in flight`,
        `${r2(allRunningMs / rawMs)}× (${r2(allRunningMs / 1000)} s vs ${r2(rawMs / 1000)} s; the server's CPU meanwhile ${r2(startCpuMs / 1000)} s)${peerMs ? `; podman kube play of ${PODS} pods ${r2(peerMs / 1000)} s` : ""}`,
        "≤ 1.1×",
      ],
      [
        `idle CPU, ${PODS} pods, ${floor.probes} exec probes at ${PROBE_PERIOD_S} s`,
        `${r2(idlePct)} % of a core (the probes alone, made directly: ${r2(floorPct)} %; ${floor.failed} of ${floor.made} failed)`,
        "≤ 1 %",
      ],
      [
        `CPU per relist (${PODS} pods) ÷ its 2 list calls`,
        `${r2(relist.relist / relist.lists)}× (${r2(relist.relist)} ms vs ${r2(relist.lists)} ms)`,
        "≤ 2×",
      ],
      [
        `RSS: empty / ${PODS} pods / per pod above empty`,
        `${r2(emptyRss)} / ${r2(fullRss)} (median of the idle window's ${rssSeen.length} readings, ${r2(Math.min(...rssSeen))}–${r2(Math.max(...rssSeen))}) / ${r2((fullRss - emptyRss) / PODS)} MiB (heap used ${emptyHeap.used} → ${fullHeap.used} MiB, committed ${emptyHeap.committed} → ${fullHeap.committed}; the RSS anonymous ${emptyParts.anon} → ${fullParts.anon}, file-backed ${emptyParts.file} → ${fullParts.file})`,
        "≤ 0.2 MiB a pod",
      ],
      [
        `GET /api/v1/pods as a Table (${PODS} pods), p50 / p99`,
        `${r2(med(listMs))} ms / ${r2(pct(listMs, 99))} ms`,
        "p99 ≤ 50 ms",
      ],
    ];
    for (const [f, v, g] of rows) console.log(`${f}: ${v}   (goal ${g})`);
    console.log(
      `load: ${loads.map((l) => l.map(r2).join("/")).join("  ")}   cores ${cpus().length}   node flags: ${NODE_FLAGS.join(" ") || "none"}`,
    );
    const stamp = new Date().toISOString().replace(/[:.]/g, "-");
    writeFileSync(
      `bench/results/full-node-${stamp}.json`,
      `${JSON.stringify({ pods: PODS, rawParallel: RAW_PARALLEL, nodeFlags: NODE_FLAGS, loads, rawMs, rawDone, allRunningMs, startCpuMs, readyMs, idlePct, floorPct, floorFailed: floor.failed, floorMade: floor.made, relistMs: relist.relist, listMs: relist.lists, emptyRss, fullRss, rssSeen, emptyHeap, fullHeap, tableMs: listMs, seqMs: seq.ms, seqRawMs: seq.raw, podmanPlayMs: peerMs }, null, 1)}\n`,
    );
  } finally {
    await server.putSet(1000, []).catch(() => {});
    server.proc.kill("SIGTERM");
    await new Promise((r) => server.proc.once("exit", r));
    lab(LAB, "stop");
  }
}

await main();
