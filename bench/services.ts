// npm run bench:services: the Services data plane against its floors, each in one run, on the real kernel and a lab
// containerd of its own (scripts/containerd-lab.sh, PODSYNC_LAB_DIR=/tmp/podsync-lab-services-bench unless
// BENCH_LAB_DIR; started here, stopped at the end unless BENCH_KEEP_LAB=1). The nftables table is
// `inet podsync-bench` (deleted at the end), so a podsync running on the machine keeps its own.
//   1. HTTP requests from the host through a ClusterIP vs the same requests to the pod IP (busybox httpd: a new TCP
//      connection per request, so every request passes the NAT rules), BENCH_REQUESTS each (10,000), in alternated
//      blocks of 500, 8 at a time. Goal ≤ 1.05×.
//   2. The cluster DNS in a process of its own (bench/services-dns-child.ts, 100 Services × 3 endpoints, on
//      127.0.0.1): p50/p99 of a cluster name and of a cached upstream name (the stub upstream on 127.0.0.1 answered
//      it once), 5,000 sequential UDP queries each. Goal p99 ≤ 2 ms.
//   3. 100 Services × 3 endpoints programmed into an empty table (the proxier's start: the probe and one
//      transaction, both through its one `nft -j -i` process), median of 5, with the nft processes started and
//      the lines run. Goal ≤ 200 ms.
//   4. One endpoint of one Service going not-ready → the kernel (an incremental sync), median of 10, with the
//      transaction's commands and the nft processes started (0) and transactions (1) per change. Goal ≤ 1 s,
//      one element-sized change.
//   5. The DNS process under 2,000 queries/s for 10 s, 1 in 10 malformed: answers received, and its RSS before,
//      after and once more after a second 10 s (growth would show between the two).
// BENCH_PARTS (comma-separated: programming, dns, http; default all) picks phases; BENCH_DNS_QUERIES (5,000) and
// BENCH_DNS_LOAD_TICKS (1,000 ticks of 10 ms) shrink the DNS phases for a smoke run on a loaded machine.
// Writes bench/results/services-<time>.json.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createSocket } from "node:dgram";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { cpus, loadavg } from "node:os";
import * as dnsPacket from "dns-packet";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { defaultNodeConfig } from "../src/container/node-config.js";
import { createPodRuntime } from "../src/kubelet/pod-runtime.js";
import { Pod } from "../src/pod/schema.js";
import { nftCli } from "../src/services/proxy/nft.js";
import { startProxier } from "../src/services/proxy/proxier.js";
import { desiredRuleset } from "../src/services/proxy/ruleset.js";
import { fullSyncScript } from "../src/services/proxy/transaction.js";
import { memoryServiceSource } from "../src/services/types.js";
import { fixture } from "./services-fixture.js";

const LAB = process.env["BENCH_LAB_DIR"] ?? "/tmp/podsync-lab-services-bench";
const REQUESTS = Number(process.env["BENCH_REQUESTS"] ?? 10_000);
const PARTS = new Set((process.env["BENCH_PARTS"] ?? "programming,dns,http").split(",").map((p) => p.trim()));
const DNS_QUERIES = Number(process.env["BENCH_DNS_QUERIES"] ?? 5000);
const LOAD_TICKS = Number(process.env["BENCH_DNS_LOAD_TICKS"] ?? 1000);
const TABLE = "podsync-bench";
const CLUSTER_IP = "10.96.99.10";
const lab = (cmd: "start" | "stop") =>
  execFileSync("bash", ["scripts/containerd-lab.sh", cmd], { env: { ...process.env, PODSYNC_LAB_DIR: LAB } })
    .toString()
    .trim()
    .split("\n")
    .at(-1)!;
const nft = nftCli();
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const median = (xs: number[]) => quantile(xs, 0.5);
const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

// --- 1. ClusterIP vs pod IP ---------------------------------------------------------------------------------
async function clusterIpVsPodIp() {
  const sock = lab("start");
  const cri = connectGrpc({ endpoint: `unix://${sock}`, timeoutMs: 30_000 });
  const rt = createPodRuntime(cri, { node: { ...defaultNodeConfig(), clusterDNS: [] } });
  const pod = Pod.parse({
    metadata: { name: "bench-web", namespace: "default", uid: `bench-svc-${process.pid}` },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "web",
          image: "localhost/busybox:1",
          imagePullPolicy: "Never",
          command: ["sh", "-c", "mkdir -p /w && echo ok > /w/index.html && exec httpd -f -p 8080 -h /w"],
        },
      ],
    },
  });
  const r = await rt.sync(pod);
  const podIP = r.apiStatus.podIP!;
  const source = memoryServiceSource({
    services: [
      {
        metadata: { name: "web", namespace: "default" },
        spec: { clusterIP: CLUSTER_IP, ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }] },
      },
    ],
    endpointSlices: [
      {
        metadata: { namespace: "default", labels: { "kubernetes.io/service-name": "web" } },
        addressType: "IPv4",
        endpoints: [{ addresses: [podIP] }],
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      },
    ],
  });
  const proxier = await startProxier({
    source,
    settings: { table: TABLE, serviceCIDRs: ["10.96.0.0/16"], podCIDR: "10.244.78.0/24" },
  });
  const agent = new Agent({ keepAlive: false, maxSockets: 8 });
  const get = (url: string) =>
    new Promise<void>((res, rej) => {
      const q = request(url, { agent }, (s) => {
        s.resume();
        s.on("end", () => res());
      });
      q.on("error", rej);
      q.end();
    });
  const block = async (url: string, n: number) => {
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < n) {
          next++;
          await get(url);
        }
      }),
    );
    return performance.now() - t0;
  };
  for (let i = 0; i < 50; i++) await get(`http://${podIP}:8080/`); // httpd up
  await block(`http://${podIP}:8080/`, 500); // warm-up, both ways
  await block(`http://${CLUSTER_IP}/`, 500);
  let podMs = 0;
  let svcMs = 0;
  const ratios: number[] = [];
  for (let done = 0; done < REQUESTS; done += 500) {
    const a = await block(`http://${podIP}:8080/`, 500);
    const b = await block(`http://${CLUSTER_IP}/`, 500);
    podMs += a;
    svcMs += b;
    ratios.push(b / a);
  }
  await proxier.stop();
  await nft.deleteTable(TABLE);
  await rt.delete(pod.metadata.uid, 0).catch(() => undefined);
  cri.close();
  return {
    requests: REQUESTS,
    podIP: { totalMs: round(podMs, 1), perRequestUs: round((podMs * 1000) / REQUESTS, 1) },
    clusterIP: { totalMs: round(svcMs, 1), perRequestUs: round((svcMs * 1000) / REQUESTS, 1) },
    ratio: round(svcMs / podMs),
    blockRatioMedian: round(median(ratios)),
  };
}

// --- 2 and 5. DNS ------------------------------------------------------------------------------------------
async function stub(): Promise<{ port: number; close: () => void }> {
  const s = createSocket("udp4");
  s.on("message", (m, r) => {
    const q = dnsPacket.decode(m);
    s.send(
      dnsPacket.encode({
        id: q.id,
        type: "response",
        flags: dnsPacket.RECURSION_AVAILABLE,
        questions: q.questions,
        answers: [{ name: q.questions![0]!.name, type: "A", ttl: 300, data: "192.0.2.99" }],
      }),
      r.port,
      r.address,
    );
  });
  await new Promise<void>((res) => s.bind(0, "127.0.0.1", () => res()));
  return { port: s.address().port, close: () => s.close() };
}
const freePort = async () => {
  const s = createSocket("udp4");
  await new Promise<void>((r) => s.bind(0, "127.0.0.1", () => r()));
  const p = s.address().port;
  s.close();
  return p;
};
const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);

async function dns() {
  const up = await stub();
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "bench/services-dns-child.ts"], {
    env: { ...process.env, BENCH_DNS_PORT: String(port), BENCH_DNS_UPSTREAM: `127.0.0.1:${up.port}` },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((res, rej) => {
    child.stdout.on("data", (d: Buffer) => d.toString().includes("ready") && res());
    child.once("exit", (c) => rej(new Error(`the DNS process exited (${c})`)));
  });
  const client = createSocket("udp4");
  await new Promise<void>((r) => client.bind(0, "127.0.0.1", () => r()));
  const waiting = new Map<number, (t: number) => void>();
  let received = 0;
  client.on("message", (m) => {
    received++;
    const id = m.readUInt16BE(0);
    waiting.get(id)?.(performance.now());
    waiting.delete(id);
  });
  let id = 0;
  const q = (name: string) =>
    dnsPacket.encode({
      id: (id = (id + 1) & 0xffff),
      type: "query",
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ name, type: "A" }],
    });
  const one = (msg: Buffer) =>
    new Promise<number>((res) => {
      const t0 = performance.now();
      waiting.set(msg.readUInt16BE(0), (t) => res(t - t0));
      client.send(msg, port, "127.0.0.1");
    });
  const latencies = async (name: (i: number) => string, n: number) => {
    for (let i = 0; i < 500; i++) await one(q(name(i))); // warm-up
    const xs: number[] = [];
    for (let i = 0; i < n; i++) xs.push(await one(q(name(i))));
    return {
      queries: n,
      p50Ms: round(quantile(xs, 0.5)),
      p99Ms: round(quantile(xs, 0.99)),
      maxMs: round(Math.max(...xs)),
    };
  };
  const cluster = await latencies((i) => `svc-${i % 100}.bench.svc.cluster.local`, DNS_QUERIES);
  const cached = await latencies(() => "example.org", DNS_QUERIES);

  // 5. 2,000 queries/s for 10 s, one in ten malformed, twice.
  const junk = Buffer.from(q("svc-1.bench.svc.cluster.local"));
  junk.writeUInt16BE(7, 4); // qdcount 7 with one question: FORMERR
  const load = async () => {
    const sent0 = received;
    let sent = 0;
    let malformed = 0;
    const t0 = performance.now();
    for (let tick = 0; tick < LOAD_TICKS; tick++) {
      // 20 queries every 10 ms: 2,000/s.
      for (let k = 0; k < 20; k++) {
        const i = tick * 20 + k;
        let m: Buffer;
        if (i % 10 === 0) {
          m = i % 20 === 0 ? Buffer.from(junk) : Buffer.from([1, 2, 3, 4, 5]);
          malformed++;
        } else m = i % 10 === 1 ? q("example.org") : q(`svc-${i % 100}.bench.svc.cluster.local`);
        client.send(m, port, "127.0.0.1");
        sent++;
      }
      const wait = t0 + (tick + 1) * 10 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const seconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 500));
    return { sent, malformed, answered: received - sent0, seconds: round(seconds, 2), qps: Math.round(sent / seconds) };
  };
  const rss0 = rssKiB(child.pid!);
  const first = await load();
  const rss1 = rssKiB(child.pid!);
  const second = await load();
  const rss2 = rssKiB(child.pid!);
  // Still answering afterwards.
  const after = await one(q("svc-7.bench.svc.cluster.local"));
  child.kill("SIGTERM");
  client.close();
  up.close();
  return {
    clusterName: cluster,
    cachedUpstream: cached,
    load: { first, second, rssKiB: { before: rss0, after10s: rss1, after20s: rss2 }, answersAfterMs: round(after) },
  };
}

// --- 3 and 4. Programming the kernel ------------------------------------------------------------------------
async function programming() {
  // ms: startProxier as a whole (nft probed, the table read, computed, applied); sync: the first sync alone.
  // processes/transactions: what the proxier's nft runner started and ran (deterministic, unlike the times).
  const fromEmpty: { ms: number; sync: number; commands: number; processes: number; transactions: number }[] = [];
  for (let i = 0; i < 5; i++) {
    await nft.deleteTable(TABLE);
    const source = memoryServiceSource(fixture(100, 3));
    const runner = nftCli();
    const t0 = performance.now();
    const p = await startProxier({ source, settings: { table: TABLE, serviceCIDRs: ["10.96.0.0/16"] }, nft: runner });
    fromEmpty.push({
      ms: performance.now() - t0,
      sync: p.health().lastSync!.ms,
      commands: p.health().lastSync!.commands,
      ...runner.stats!(),
    });
    await p.stop();
  }
  // Where the time goes, in CPU rather than wall (the wall time waits for a CPU on a loaded machine): podsync's
  // computing of the table and its transaction, and the nft process applying it (user + sys, from /usr/bin/time).
  const f = fixture(100, 3);
  const c0 = process.cpuUsage();
  const want = desiredRuleset(f.services, f.endpointSlices, { table: TABLE, serviceCIDRs: ["10.96.0.0/16"] });
  const script = fullSyncScript(want, undefined);
  const c1 = process.cpuUsage(c0);
  await nft.deleteTable(TABLE);
  const timed = spawnSync("/usr/bin/time", ["-f", "%e %U %S", "nft", "-f", "-"], { input: `${script.join("\n")}\n` });
  const [wallS, userS, sysS] = timed.stderr.toString().trim().split("\n").at(-1)!.split(" ").map(Number);
  const cpu = {
    podsyncComputeCpuMs: round((c1.user + c1.system) / 1000, 1),
    nftApplyCpuMs: round(((userS ?? 0) + (sysS ?? 0)) * 1000, 1),
    nftApplyWallMs: round((wallS ?? 0) * 1000, 1),
  };
  await nft.deleteTable(TABLE);
  const source = memoryServiceSource(fixture(100, 3));
  const runner = nftCli();
  const p = await startProxier({ source, settings: { table: TABLE, serviceCIDRs: ["10.96.0.0/16"] }, nft: runner });
  const changes: { ms: number; commands: number; processes: number; transactions: number }[] = [];
  for (let i = 0; i < 10; i++) {
    const before = runner.stats!();
    const t0 = performance.now();
    source.set(fixture(100, 3, i % 2 === 0 ? 1 : -1)); // endpoint 1 of svc-0 not ready, then ready again
    await p.sync();
    const after = runner.stats!();
    changes.push({
      ms: performance.now() - t0,
      commands: p.health().lastSync!.commands,
      processes: after.processes - before.processes,
      transactions: after.transactions - before.transactions,
    });
  }
  const ruleCount = execFileSync("nft", ["list", "table", "inet", TABLE]).toString().split("\n").length;
  await p.stop();
  await nft.deleteTable(TABLE);
  return {
    services: 100,
    endpointsEach: 3,
    fromEmpty: {
      medianMs: round(median(fromEmpty.map((x) => x.ms)), 1),
      syncMedianMs: round(median(fromEmpty.map((x) => x.sync)), 1),
      commands: fromEmpty[0]!.commands,
      nftProcesses: fromEmpty[0]!.processes,
      nftTransactions: fromEmpty[0]!.transactions,
      runs: fromEmpty.map((x) => round(x.ms, 1)),
      ...cpu,
    },
    oneEndpointChange: {
      medianMs: round(median(changes.map((x) => x.ms)), 1),
      maxMs: round(Math.max(...changes.map((x) => x.ms)), 1),
      commands: [...new Set(changes.map((x) => x.commands))],
      nftProcessesEach: [...new Set(changes.map((x) => x.processes))],
      nftTransactionsEach: [...new Set(changes.map((x) => x.transactions))],
      runs: changes.map((x) => round(x.ms, 1)),
    },
    tableLines: ruleCount,
  };
}

const started = new Date();
const load0 = loadavg();
const prog = PARTS.has("programming") ? await programming() : undefined;
console.log("programming", JSON.stringify(prog));
const dnsResult = PARTS.has("dns") ? await dns() : undefined;
console.log("dns", JSON.stringify(dnsResult));
const http = PARTS.has("http") ? await clusterIpVsPodIp() : undefined;
console.log("clusterIP vs pod IP", JSON.stringify(http));
if (http && process.env["BENCH_KEEP_LAB"] !== "1") lab("stop");
const result = {
  when: started.toISOString(),
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  node: process.version,
  kernel: readFileSync("/proc/sys/kernel/osrelease", "utf8").trim(),
  nft: execFileSync("nft", ["--version"]).toString().trim(),
  loadavg: { before: load0, after: loadavg() },
  programming: prog,
  dns: dnsResult,
  clusterIpVsPodIp: http,
};
mkdirSync("bench/results", { recursive: true });
writeFileSync(
  `bench/results/services-${result.when.replace(/[:.]/g, "-")}.json`,
  `${JSON.stringify(result, null, 2)}\n`,
);
console.table({
  "ClusterIP ÷ pod IP (10k requests)": { value: http?.ratio, goal: "≤ 1.05" },
  "DNS cluster name p99 ms": { value: dnsResult?.clusterName.p99Ms, goal: "≤ 2" },
  "DNS cached upstream p99 ms": { value: dnsResult?.cachedUpstream.p99Ms, goal: "≤ 2" },
  "100×3 from empty ms (proxier start)": { value: prog?.fromEmpty.medianMs, goal: "≤ 200" },
  "100×3 from empty ms (first sync)": { value: prog?.fromEmpty.syncMedianMs, goal: "≤ 200" },
  "100×3 CPU: podsync + nft ms": {
    value: prog ? prog.fromEmpty.podsyncComputeCpuMs + prog.fromEmpty.nftApplyCpuMs : undefined,
    goal: "-",
  },
  "one endpoint change ms": { value: prog?.oneEndpointChange.medianMs, goal: "≤ 1000" },
});
