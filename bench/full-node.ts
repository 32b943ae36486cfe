// npm run bench:full-node (part of `npm run bench`): a full node, kubelet's default maxPods (110), on the server as
// it ships (bench/harness.ts: dist/node.js with npm start's flags) and a lab containerd of its own. 110 pods in 10
// Deployments of 11 (pod network, busybox), exec readiness probes (`true`, every 10 s) on half of them.
// Each figure beside its floor, measured in this run:
//   - PUT → Ready per pod (the pod start-up SLO, p50/p99 ≤ 5 s, no pulls: the image is local), from a watch;
//   - PUT → all Running ÷ raw RunPodSandbox + CreateContainer + StartContainer of 110 pods at BENCH_RAW_PARALLEL;
//   - idle CPU with 110 converged pods ÷ the same 55 ExecSync probes every 10 s made directly (this process);
//   - one relist at 110 pods ÷ its 2 list calls (CPU of this process, alternated);
//   - RSS empty, at 110 pods, and per pod above empty;
//   - GET /api/v1/pods (what `kubectl get pods -A` asks, as a Table) at 110 pods, server round trip p50/p99.
// Settings: BENCH_PODS_PER_DEPLOY (11), BENCH_DEPLOYS (10), BENCH_RAW_PARALLEL (8), BENCH_IDLE_S (60),
// BENCH_SETTLE_S (20), BENCH_LISTS (100), BENCH_RELISTS (50). Writes bench/results/full-node-<time>.json.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import type { CriClient } from "../src/cri/client.js";
import { ContainerState, SecurityProfile_ProfileType } from "../src/gen/runtime/v1/api_pb.js";
import {
  lab,
  med,
  pct,
  pool,
  procCpuMs,
  r2,
  rssMiB,
  relistCpu,
  selfCpuMs,
  sleep,
  startServer,
  NODE_FLAGS,
  type Server,
} from "./harness.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-full-bench";
const PER = Number(process.env["BENCH_PODS_PER_DEPLOY"] ?? 11);
const DEPLOYS = Number(process.env["BENCH_DEPLOYS"] ?? 10);
const PODS = PER * DEPLOYS;
const RAW_PARALLEL = Number(process.env["BENCH_RAW_PARALLEL"] ?? 8);
const IDLE_S = Number(process.env["BENCH_IDLE_S"] ?? 60);
const SETTLE_S = Number(process.env["BENCH_SETTLE_S"] ?? 20);
const LISTS = Number(process.env["BENCH_LISTS"] ?? 100);
const RELISTS = Number(process.env["BENCH_RELISTS"] ?? 50);
const PROBE_PERIOD_S = 10;
const SECCOMP = { profileType: SecurityProfile_ProfileType.RuntimeDefault };

/** Deployment i: PER busybox replicas; the even ones carry an exec readiness probe. */
const deployment = (i: number) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: `full-${i}`, namespace: "bench" },
  spec: {
    replicas: PER,
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

/** Raw creation of `n` pods at `parallel` in flight, the pod network and the seccomp profile as podsync's get them;
 * answers the wall time and removes them. */
async function rawCreate(cri: CriClient, dir: string, n: number, parallel: number) {
  const ids: string[] = [];
  const t0 = performance.now();
  await pool(
    Array.from({ length: n }, (_, i) => i),
    parallel,
    async (i) => {
      const meta = { name: `raw-${i}`, namespace: "bench-raw", uid: `raw-${process.pid}-${i}`, attempt: 0 };
      const linux = { securityContext: { seccomp: SECCOMP } };
      const config = { metadata: meta, logDirectory: join(dir, "raw-logs", meta.uid), linux };
      mkdirSync(config.logDirectory, { recursive: true });
      const sb = (await cri.runPodSandbox({ config })).podSandboxId;
      const { containerId } = await cri.createContainer({
        podSandboxId: sb,
        sandboxConfig: config,
        config: {
          metadata: { name: "main", attempt: 0 },
          image: { image: "localhost/busybox:1" },
          command: ["sleep", "360000"],
          logPath: "main/0.log",
          linux: { securityContext: { seccomp: SECCOMP } },
        },
      });
      await cri.startContainer({ containerId });
      ids.push(sb);
    },
  );
  const ms = performance.now() - t0;
  await pool(ids, parallel, async (sb) => {
    await cri.stopPodSandbox({ podSandboxId: sb });
    await cri.removePodSandbox({ podSandboxId: sb });
  });
  return ms;
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
  for (const end = Date.now() + seconds * 1000; Date.now() < end; ) {
    const tick = Date.now();
    await Promise.all(probed.map((c) => cri.execSync({ containerId: c.id, cmd: ["true"], timeout: 1n })));
    await sleep(Math.max(0, PROBE_PERIOD_S * 1000 - (Date.now() - tick)));
  }
  return { cpuMs: selfCpuMs() - c0, probes: probed.length };
}

/** PUT /v1/node/pods: `items` as the node's whole signed set at `generation`. */
async function putSet(server: Server, generation: number, items: unknown[]) {
  const body = await server.sign({ act: "apply", generation, pods: items });
  const r = await fetch(`${server.url}/v1/node/pods`, {
    method: "PUT",
    headers: { "content-type": "application/jose" },
    body,
  });
  if (!r.ok) throw new Error(`PUT answered ${r.status}: ${await r.text()}`);
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

    // The floor first, on a quiet runtime: 110 raw pods, then gone.
    const rawMs = await rawCreate(cri, dir, PODS, RAW_PARALLEL);
    loads.push(loadavg());
    await sleep(5000);

    // The PUT of 10 Deployments; the watch times each pod's Running and Ready.
    const t0 = performance.now();
    const watch = watchPods(server.url, () => server.sign({ act: "read" }), t0);
    const items = Array.from({ length: DEPLOYS }, (_, i) => deployment(i));
    await putSet(server, 1, items);
    for (const end = Date.now() + 600_000; watch.ready.size < PODS / 2 + PODS / 2 || watch.running.size < PODS; ) {
      if (Date.now() > end) {
        // What the node says of the pods the watch never saw Ready: a lost event, or pods really not Ready.
        const r = await fetch(`${server.url}/api/v1/namespaces/bench/pods`, {
          headers: { authorization: `Bearer ${await server.sign({ act: "read" })}` },
        });
        const list = (await r.json()) as { items: WatchEvent["object"][] };
        for (const p of list.items.filter((p) => !watch.ready.has(p.metadata.name)))
          console.error(`not seen Ready: ${p.metadata.name} ${JSON.stringify(p.status)}`);
        throw new Error(`only ${watch.running.size} running, ${watch.ready.size} ready`);
      }
      await sleep(200);
    }
    await watch.stop();
    const allRunningMs = Math.max(...watch.running.values());
    const readyMs = [...watch.ready.values()];
    loads.push(loadavg());

    // Idle: settle, then the server's CPU over IDLE_S; then the probes' floor over as long.
    await sleep(SETTLE_S * 1000);
    const i0 = procCpuMs(server.pid);
    await sleep(IDLE_S * 1000);
    const idlePct = ((procCpuMs(server.pid) - i0) / (IDLE_S * 1000)) * 100;
    const fullRss = rssMiB(server.pid);
    const fullHeap = await server.heap();
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

    const rows: [string, string, string][] = [
      [
        "PUT → Ready per pod (readiness-probed and not), p50 / p99",
        `${r2(med(readyMs) / 1000)} s / ${r2(pct(readyMs, 99) / 1000)} s`,
        "≤ 5 s / ≤ 5 s",
      ],
      [
        `PUT → all ${PODS} Running ÷ raw creation at ${RAW_PARALLEL} in flight`,
        `${r2(allRunningMs / rawMs)}× (${r2(allRunningMs / 1000)} s vs ${r2(rawMs / 1000)} s)`,
        "≤ 1.1×",
      ],
      [
        `idle CPU, ${PODS} pods, ${floor.probes} exec probes at ${PROBE_PERIOD_S} s`,
        `${r2(idlePct)} % of a core (the probes alone, made directly: ${r2(floorPct)} %)`,
        "≤ 1 %",
      ],
      [
        `CPU per relist (${PODS} pods) ÷ its 2 list calls`,
        `${r2(relist.relist / relist.lists)}× (${r2(relist.relist)} ms vs ${r2(relist.lists)} ms)`,
        "≤ 2×",
      ],
      [
        `RSS: empty / ${PODS} pods / per pod above empty`,
        `${r2(emptyRss)} / ${r2(fullRss)} / ${r2((fullRss - emptyRss) / PODS)} MiB (heap used ${emptyHeap.used} → ${fullHeap.used} MiB)`,
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
      `${JSON.stringify({ pods: PODS, rawParallel: RAW_PARALLEL, nodeFlags: NODE_FLAGS, loads, rawMs, allRunningMs, readyMs, idlePct, floorPct, relistMs: relist.relist, listMs: relist.lists, emptyRss, fullRss, emptyHeap, fullHeap, tableMs: listMs }, null, 1)}\n`,
    );
  } finally {
    await putSet(server, 2, []).catch(() => {});
    server.proc.kill("SIGTERM");
    await new Promise((r) => server.proc.once("exit", r));
    lab(LAB, "stop");
  }
}

await main();
