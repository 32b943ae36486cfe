// The Services data plane on the REAL kernel and the lab containerd: busybox pods serving httpd on the lab bridge,
// Services and EndpointSlices built by hand in an in-memory ServiceSource, the proxier programming `inet podsync`
// and the cluster DNS on the bridge's gateway forwarding only to a stub resolver on 127.0.0.1. Network: loopback,
// the lab bridge's pod and gateway addresses, and this test's ClusterIPs.
import { createSocket } from "node:dgram";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as dnsPacket from "dns-packet";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";
import { MemoryPodLock } from "../../src/kuberuntime/pod-lock.js";
import { nodeLogFiles } from "../../src/host/logs/log-files.js";
import { nodeTerminationFiles } from "../../src/host/volumes/termination-files.js";
import { nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { startServiceDataplane, type ServiceDataplane } from "../../src/services/dataplane.js";
import { flushServiceTable } from "../../src/services/proxy/flush.js";
import { memoryServiceSource, type EndpointSlice, type Service } from "../../src/services/types.js";
import { pod, uid, deleteAll } from "../support/pods.js";
import { MACHINE_LOCK_WAIT_MS, machineLock } from "../support/machine-lock.js";
import { until } from "../support/wait.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

// The lab's bridge (scripts/containerd-lab.sh): podsync0, 10.244.78.0/24, gateway .1.
const GATEWAY = "10.244.78.1";
const POD_CIDR = "10.244.78.0/24";
const WEB_IP = "10.96.77.10";
const STICKY_IP = "10.96.77.11";
const SELF_IP = "10.96.77.12";
const ECHO_IP = "10.96.77.13";
const DNS_IP = "10.96.77.53";
const EMPTY_IP = "10.96.77.99";
const NODE_PORT = 30877;

let cri: CriClient;
const node = {
  ...defaultNodeConfig(),
  podLogsDir: mkdtempSync(join(tmpdir(), "podsync-svc-logs-")),
  rootDir: mkdtempSync(join(tmpdir(), "podsync-svc-root-")),
  clusterDNS: [GATEWAY],
  clusterDomain: "cluster.local",
};
const runtimeOpts: PodRuntimeOptions = {
  node,
  logFiles: nodeLogFiles,
  terminationFiles: nodeTerminationFiles,
  podDirs: nodePodDirs,
  hostIPs: ["127.0.0.1"],
  lock: new MemoryPodLock(),
};
const made: string[] = [];
const ips: Record<string, string> = {};
const cids: Record<string, string> = {};

async function run(name: string, command: string[]) {
  const p = pod(
    { containers: [{ name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command }] },
    { name, uid: uid(name) },
  );
  made.push(p.metadata.uid);
  const r = await createPodRuntime(cri, runtimeOpts).sync(p);
  expect(r.ok, JSON.stringify(r.steps.filter((s) => s.error))).toBe(true);
  ips[name] = r.apiStatus.podIP!;
  cids[name] = r.apiStatus.containerStatuses![0]!.containerID!.replace("containerd://", "");
}
const serve = (text: string) => [
  "sh",
  "-c",
  `mkdir -p /w && echo ${text} > /w/index.html && (busybox nc -ll -p 9000 -e /bin/cat &) && exec httpd -f -p 8080 -h /w`,
];
const sh = async (name: string, cmd: string, timeoutS = 10) => {
  const r = await cri.execSync({ containerId: cids[name]!, cmd: ["sh", "-c", cmd], timeout: BigInt(timeoutS) });
  return { code: r.exitCode, out: Buffer.from(r.stdout).toString().trim(), err: Buffer.from(r.stderr).toString() };
};
/** An HTTP GET from inside a pod with busybox nc (the static busybox's wget crashes resolving in this image):
 * the body's last line. */
const wget = async (from: string, url: string) => {
  const u = new URL(url);
  const r = await sh(from, `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | busybox nc -w 3 ${u.hostname} ${u.port || 80}`);
  return { ...r, out: r.out.split("\n").at(-1)!.trim() };
};
function hostGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { timeout: 3000 }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d));
      res.on("end", () => resolve(body.trim()));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

const svc = (name: string, ip: string, spec: Partial<Service["spec"]> = {}): Service => ({
  metadata: { name, namespace: "default" },
  spec: {
    type: "ClusterIP",
    clusterIP: ip,
    ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
    ...spec,
  },
});
const slice = (
  name: string,
  eps: { ip: string; ready?: boolean }[],
  port = 8080,
  portName = "http",
  protocol: "TCP" | "UDP" = "TCP",
): EndpointSlice => ({
  metadata: { namespace: "default", name: `${name}-x`, labels: { "kubernetes.io/service-name": name } },
  addressType: "IPv4",
  endpoints: eps.map((e) => ({
    addresses: [e.ip],
    conditions: { ready: e.ready ?? true, serving: e.ready ?? true, terminating: false },
  })),
  ports: [{ name: portName, port, protocol }],
});

/** The stub upstream resolver (127.0.0.1): example.org A 192.0.2.99, else NXDOMAIN. */
function stubResolver(): Promise<{ port: number; close: () => void }> {
  const sock = createSocket("udp4");
  sock.on("message", (msg, r) => {
    const q = dnsPacket.decode(msg);
    const known = q.questions?.[0]?.name === "example.org" && q.questions[0].type === "A";
    sock.send(
      dnsPacket.encode({
        id: q.id,
        type: "response",
        flags: known ? 0 : 3,
        questions: q.questions,
        answers: known ? [{ name: "example.org", type: "A", ttl: 60, data: "192.0.2.99" }] : [],
      }),
      r.port,
      r.address,
    );
  });
  return new Promise((res) =>
    sock.bind(0, "127.0.0.1", () => res({ port: sock.address().port, close: () => sock.close() })),
  );
}

describe.skipIf(skip)("Services data plane on the kernel (nftables) and cluster DNS, with real pods", () => {
  const source = memoryServiceSource();
  let dp: ServiceDataplane;
  let stub: Awaited<ReturnType<typeof stubResolver>>;
  const settings = () => ({
    serviceCIDRs: ["10.96.0.0/16"],
    podCIDR: POD_CIDR,
    clusterDomain: "cluster.local",
    dns: { address: GATEWAY, upstreams: [`127.0.0.1:${stub.port}`] },
  });
  const allServices = () => [
    svc("web", WEB_IP, {
      type: "NodePort",
      ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP", nodePort: NODE_PORT }],
    }),
    svc("sticky", STICKY_IP, {
      sessionAffinity: "ClientIP",
      sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } },
    }),
    svc("self", SELF_IP),
    svc("echo", ECHO_IP, { ports: [{ name: "echo", port: 9000, protocol: "TCP" }] }),
    svc("kube-dns", DNS_IP, { ports: [{ name: "dns", port: 53, protocol: "UDP" }] }),
    svc("empty", EMPTY_IP),
  ];
  const allSlices = (webEps: { ip: string; ready?: boolean }[] = [{ ip: ips["a"]! }, { ip: ips["b"]! }]) => [
    slice("web", webEps),
    slice("sticky", [{ ip: ips["a"]! }, { ip: ips["b"]! }]),
    slice("self", [{ ip: ips["a"]! }]),
    slice("echo", [{ ip: ips["a"]! }], 9000, "echo"),
    // A "kube-dns" Service whose endpoint is the node's own DNS server: UDP through a ClusterIP.
    slice("kube-dns", [{ ip: GATEWAY }], 53, "dns", "UDP"),
  ];

  let release: (() => void) | undefined;
  beforeAll(async () => {
    // The machine's one data plane: one such file at a time (test/support/machine-lock.ts).
    release = await machineLock("dataplane");
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    await Promise.all([run("a", serve("A")), run("b", serve("B")), run("client", ["sleep", "3600"])]);
    for (const n of ["a", "b"])
      await until(`httpd in ${n}`, async () => (await hostGet(`http://${ips[n]}:8080/`)) !== "");
    stub = await stubResolver();
    source.set({ services: allServices(), endpointSlices: allSlices() });
    dp = await startServiceDataplane({ source, settings: settings() });
    expect(dp.health().proxy?.available, dp.health().proxy?.reason).toBe(true);
    await dp.dns!.ready();
  }, MACHINE_LOCK_WAIT_MS + 120_000);
  afterAll(async () => {
    await dp?.stop();
    await flushServiceTable();
    stub?.close();
    const rt = createPodRuntime(cri, runtimeOpts);
    await deleteAll(rt, made);
    cri?.close();
    release?.();
  }, 60_000);

  it("programs inet podsync as kube-proxy's layout, and never another table", () => {
    const listing = execFileSync("nft", ["list", "table", "inet", "podsync"]).toString();
    expect(listing).toMatch(/map service-ips \{/);
    expect(listing).toMatch(/chain service-[A-Z0-9]{8}-default\/web\/tcp\/http \{/);
    expect(listing).toContain(`numgen random mod 2 vmap`);
    expect(listing).toMatch(new RegExp(`${EMPTY_IP} \\. tcp \\. 80 comment "default/empty:http" : goto reject-chain`));
    expect(dp.health().proxy?.lastSync?.full).toBe(true);
  });

  it("a ClusterIP reaches both endpoints from another pod, and from the host", async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 24 && seen.size < 2; i++) {
      const r = await wget("client", `http://${WEB_IP}/`);
      expect(r.code, r.err).toBe(0);
      seen.add(r.out);
    }
    expect([...seen].sort()).toEqual(["A", "B"]);
    expect(["A", "B"]).toContain(await hostGet(`http://${WEB_IP}/`));
  });

  it("a NodePort is reached at the bridge's gateway address, from the host and from a pod", async () => {
    expect(["A", "B"]).toContain(await hostGet(`http://${GATEWAY}:${NODE_PORT}/`));
    const r = await wget("client", `http://${GATEWAY}:${NODE_PORT}/`);
    expect(r.code, r.err).toBe(0);
    expect(["A", "B"]).toContain(r.out);
  });

  it("a Service without endpoints is rejected at once, not left to time out", async () => {
    const started = Date.now();
    const r = await sh("client", `busybox nc -w 5 ${EMPTY_IP} 80 </dev/null; echo rc=$?`);
    const ms = Date.now() - started;
    expect(r.out + r.err).toMatch(/refused|rc=1/);
    // From the host, without CRI exec's own cost: refused, not a timeout.
    const t0 = performance.now();
    const err = await new Promise<NodeJS.ErrnoException>((res) => {
      const c = connect({ host: EMPTY_IP, port: 80 });
      c.on("connect", () => (c.destroy(), res(new Error("connected"))));
      c.on("error", res);
    });
    expect(err.code).toBe("ECONNREFUSED");
    console.log(
      `reject: a pod's nc failed after ${ms} ms (CRI exec included); the host's connect after ${(performance.now() - t0).toFixed(1)} ms`,
    );
    // An unknown port of a known ClusterIP is refused too (cluster-ips-check).
    const p = await sh("client", `busybox nc -w 5 ${WEB_IP} 81 </dev/null; echo rc=$?`);
    expect(p.out + p.err).toMatch(/refused|rc=1/);
  });

  it("sessionAffinity ClientIP keeps a client on one endpoint", async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add((await wget("client", `http://${STICKY_IP}/`)).out);
    expect(seen.size).toBe(1);
  });

  it("hairpin: a pod reaches itself through its own Service", async () => {
    const r = await wget("a", `http://${SELF_IP}/`);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe("A");
  });

  it("removing an endpoint stops its traffic; the last one gone means reject", async () => {
    source.set({ endpointSlices: allSlices([{ ip: ips["a"]! }, { ip: ips["b"]!, ready: false }]) });
    await dp.proxier!.sync();
    const h = dp.health().proxy!;
    expect(h.lastSync?.full).toBe(false);
    // One endpoint chain deleted (flush + delete) and the service chain's rule rewritten: no map element touched.
    expect(h.lastSync?.commands).toBeLessThanOrEqual(5);
    console.log(
      `endpoint removal: ${h.lastSync?.commands} nft commands, ${h.lastSync?.ms.toFixed(1)} ms to the kernel`,
    );
    for (let i = 0; i < 8; i++) expect((await wget("client", `http://${WEB_IP}/`)).out).toBe("A");
    source.set({ endpointSlices: allSlices([]) });
    await dp.proxier!.sync();
    const r = await sh("client", `busybox nc -w 5 ${WEB_IP} 80 </dev/null; echo rc=$?`);
    expect(r.out + r.err).toMatch(/refused|rc=1/);
    source.set({ endpointSlices: allSlices() });
    await dp.proxier!.sync();
    expect(["A", "B"]).toContain((await wget("client", `http://${WEB_IP}/`)).out);
  });

  it("cluster DNS answers a pod (nslookup, on the gateway and through a UDP ClusterIP) and the test over UDP", async () => {
    const conf = await sh("client", "cat /etc/resolv.conf");
    expect(conf.out).toContain(`nameserver ${GATEWAY}`);
    expect(conf.out).toContain("search default.svc.cluster.local svc.cluster.local cluster.local");
    expect(conf.out).toContain("options ndots:5");
    const r = await sh("client", `busybox nslookup web.default.svc.cluster.local ${GATEWAY}`);
    expect(r.out).toContain(WEB_IP);
    const u = await sh("client", `busybox nslookup -type=a sticky.default.svc.cluster.local ${DNS_IP}`);
    expect(u.out).toContain(STICKY_IP);
    const f = await sh("client", `busybox nslookup -type=a example.org ${GATEWAY}`);
    expect(f.out).toContain("192.0.2.99");
  });

  it("a restart of the data plane drops no established connection and reconciles the rules", async () => {
    const sock = connect({ host: ECHO_IP, port: 9000 });
    const lines: string[] = [];
    sock.on("data", (d: Buffer) => lines.push(...d.toString().split("\n").filter(Boolean)));
    await new Promise<void>((res, rej) => (sock.once("connect", () => res()), sock.once("error", rej)));
    sock.write("one\n");
    await until("the first echo", async () => lines.includes("one"), 5000, 20);
    await dp.stop();
    // Someone (or a crash) left the table wrong: a stray chain and a missing map element.
    execFileSync("nft", ["add chain inet podsync stray-chain"]);
    execFileSync("nft", [`delete element inet podsync service-ips { ${WEB_IP} . tcp . 80 }`]);
    dp = await startServiceDataplane({ source, settings: settings() });
    await dp.dns!.ready();
    expect(dp.health().proxy?.lastSync?.full).toBe(true);
    sock.write("two\n");
    await until("the echo after the restart", async () => lines.includes("two"), 5000, 20);
    sock.destroy();
    const listing = execFileSync("nft", ["list", "table", "inet", "podsync"]).toString();
    expect(listing).not.toContain("stray-chain");
    expect(["A", "B"]).toContain(await hostGet(`http://${WEB_IP}/`));
  });

  it("podsync services flush removes the table, and only it", async () => {
    execFileSync("nft", ["add table inet podsync-flush-neighbour"]);
    try {
      await dp.stop();
      const bin = join(process.cwd(), "bin/podsync.mjs");
      const out = spawnSync(process.execPath, [bin, "services", "flush"], { encoding: "utf8" });
      expect(out.status, out.stderr).toBe(0);
      expect(out.stdout).toContain("deleted nftables table inet podsync");
      expect(spawnSync("nft", ["list", "table", "inet", "podsync"]).status).not.toBe(0);
      expect(spawnSync("nft", ["list", "table", "inet", "podsync-flush-neighbour"]).status).toBe(0);
      const again = spawnSync(process.execPath, [bin, "services", "flush"], { encoding: "utf8" });
      expect(again.stdout).toContain("nothing to flush");
    } finally {
      execFileSync("nft", ["delete table inet podsync-flush-neighbour"]);
    }
  });
});
