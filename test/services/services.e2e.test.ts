// Services on the REAL containerd (issue 37, the Service half): a guestbook-shaped file (three Deployments, three
// Services) applied with `podsync apply`, its Services given addresses, the EndpointSlices following the pods'
// readiness (an exec readiness probe that starts failing takes its pod out of the ready endpoints), the Service
// env vars in a container's environment (its log), and kubectl's get svc / endpointslices / endpoints / describe.
// With the data plane on (nftables `inet podsync`, cluster DNS on the lab bridge's gateway, forwarding only to a stub
// resolver on 127.0.0.1), the traffic too: the frontend reaches its backends by Service name, StatefulSet pods reach
// each other as web-0.nginx, readiness removal stops traffic, a NodePort answers at the bridge's address, an
// ExternalName is a CNAME, and a podsync restart drops no established connection and reconciles the table. This file
// runs in the project `dataplane` (one such file at a time). kubectl is /usr/bin/kubectl (or PODSYNC_KUBECTL).
import { execFile, execFileSync } from "node:child_process";
import { createSocket } from "node:dgram";
import { request } from "node:http";
import { connect } from "node:net";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import * as dnsPacket from "dns-packet";
import { importJWK, SignJWT, type JWK } from "jose";
import type { Running } from "../../src/node.js";
import { flushServiceTable } from "../../src/services/proxy/flush.js";
import { MACHINE_LOCK_WAIT_MS, machineLock } from "../support/machine-lock.js";
import { until } from "../support/wait.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const KUBECTL = process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl";
const NODE = "svc-e2e";
const dir = mkdtempSync(join(tmpdir(), "podsync-services-e2e-"));
const GUESTBOOK = fileURLToPath(new URL("../fixtures/guestbook.yaml", import.meta.url));
// The lab's bridge (scripts/containerd-lab.sh): podsync0, 10.244.78.0/24; the cluster DNS listens on its gateway.
const GATEWAY = "10.244.78.1";
let running: Running;
let stub: { port: number; close: () => void };
let key: JWK & { alg: string };

async function sign(claims: Record<string, unknown>): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, ...(key.kid ? { kid: key.kid } : {}) })
    .setIssuer("podsync-dev")
    .setAudience(NODE)
    .setIssuedAt()
    .setExpirationTime("5m")
    .setJti(crypto.randomUUID())
    .sign(await importJWK(key, key.alg));
}

const run = (cmd: string, args: string[], env: Record<string, string> = {}) =>
  new Promise<{ code: number; out: string; err: string }>((res) =>
    execFile(cmd, args, { env: { ...process.env, ...env }, timeout: 120_000 }, (e, out, err) =>
      res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
const kubectl = (...args: string[]) => run(KUBECTL, args, { KUBECONFIG: join(dir, "kubeconfig") });
const podsync = (...args: string[]) =>
  run(process.execPath, [
    fileURLToPath(new URL("../../bin/podsync.mjs", import.meta.url)),
    "--url",
    running.url,
    "--key",
    join(dir, "dev-key.json"),
    "--aud",
    NODE,
    ...args,
  ]);

interface Slice {
  metadata: { labels: Record<string, string> };
  endpoints: { addresses: string[]; conditions: { ready: boolean }; targetRef: { name: string } }[];
}
const slicesOf = async (svc: string): Promise<Slice[]> => {
  const r = await kubectl("get", "endpointslices", "-l", `kubernetes.io/service-name=${svc}`, "-o", "json");
  if (r.code !== 0) throw new Error(r.err);
  return (JSON.parse(r.out) as { items: Slice[] }).items;
};
const readyCount = async (svc: string) =>
  (await slicesOf(svc)).flatMap((s) => s.endpoints).filter((e) => e.conditions.ready).length;
const firstPod = async (selector: string) =>
  (await kubectl("get", "pods", "-l", selector, "-o", "name")).out.trim().split("\n")[0]!;
const clusterIP = (svc: string) =>
  until(`${svc}'s ClusterIP`, async () => {
    const r = await kubectl("get", "svc", svc, "-o", "jsonpath={.spec.clusterIP}");
    return /^\d+\.\d+\.\d+\.\d+$/.test(r.out) ? r.out : undefined;
  });
/** An HTTP/1.0 GET from inside a pod by name or address (busybox nc): the body's last line, or undefined. */
const getFrom = async (pod: string, host: string, port: number) => {
  const r = await kubectl(
    "exec",
    pod,
    "--",
    "sh",
    "-c",
    `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | busybox nc -w 3 ${host} ${port}`,
  );
  return r.code === 0 ? r.out.trim().split("\n").at(-1)?.trim() : undefined;
};

/** The stub upstream resolver (127.0.0.1): db.example.test A 192.0.2.10, else NXDOMAIN. */
function stubResolver(): Promise<{ port: number; close: () => void }> {
  const sock = createSocket("udp4");
  sock.on("message", (msg, r) => {
    const q = dnsPacket.decode(msg);
    const known = q.questions?.[0]?.name === "db.example.test" && q.questions[0].type === "A";
    const answers = known ? [{ name: "db.example.test", type: "A" as const, ttl: 60, data: "192.0.2.10" }] : [];
    sock.send(
      dnsPacket.encode({ id: q.id, type: "response", flags: known ? 0 : 3, questions: q.questions, answers }),
      r.port,
      r.address,
    );
  });
  return new Promise((res) =>
    sock.bind(0, "127.0.0.1", () => res({ port: sock.address().port, close: () => sock.close() })),
  );
}
/** An HTTP GET from the host: the body. */
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
/** A TCP connect from the host: "connected", or the error's code (ECONNREFUSED for a rejected Service). */
const hostConnect = (host: string, port: number) =>
  new Promise<string>((res) => {
    const c = connect({ host, port });
    c.setTimeout(3000, () => (c.destroy(), res("timeout")));
    c.on("connect", () => (c.destroy(), res("connected")));
    c.on("error", (e: NodeJS.ErrnoException) => res(e.code ?? String(e)));
  });

describe.skipIf(skip)("Services on the node", () => {
  let release: (() => void) | undefined;
  beforeAll(async () => {
    // The machine's one data plane: one such file at a time (test/support/machine-lock.ts).
    release = await machineLock("dataplane");
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    if (!existsSync(KUBECTL)) throw new Error(`kubectl is missing at ${KUBECTL} (set PODSYNC_KUBECTL)`);
    stub = await stubResolver();
    running = await start();
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { alg: string };
    await writeKubeconfig();
  }, MACHINE_LOCK_WAIT_MS + 120_000);

  afterAll(async () => {
    // An empty set: every Service, Deployment and pod of this suite goes.
    await podsync("apply", "-f", join(dir, "empty.yaml"), "--prune-all").catch(() => undefined);
    await until(
      "the suite's pods gone",
      async () => {
        const r = await fetch(`${running.url}/v1/pods`, {
          headers: { authorization: `Bearer ${await sign({ act: "status" })}` },
        });
        return ((await r.json()) as { items: unknown[] }).items.length === 0;
      },
      60_000,
    ).catch(() => undefined);
    await running?.close();
    await flushServiceTable();
    stub?.close();
    release?.();
  }, 120_000);

  // The kubeconfig's read token lives 5 minutes, and this file runs longer on a loaded machine: a fresh one each test.
  beforeEach(async () => {
    if (running) await writeKubeconfig();
  });

  async function start(): Promise<Running> {
    const { startNode } = await import("../../src/node.js");
    return startNode(
      {
        PODSYNC_CRI_ENDPOINT: endpoint,
        PODSYNC_PORT: "0",
        PODSYNC_NODE_NAME: NODE,
        PODSYNC_DEV_DIR: dir,
        PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
        PODSYNC_RELIST_INTERVAL_MS: "300",
        PODSYNC_ALLOW_EXEC: "true",
        PODSYNC_SERVICE_CIDR: "10.96.0.0/16",
        PODSYNC_SERVICE_DATAPLANE: "on",
        PODSYNC_DNS_UPSTREAM: `127.0.0.1:${stub.port}`,
      },
      true,
    );
  }
  async function writeKubeconfig() {
    if (!running.tls) throw new Error("the server serves no TLS");
    writeFileSync(
      join(dir, "kubeconfig"),
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: NODE,
            cluster: {
              server: running.tls.url,
              "certificate-authority-data": Buffer.from(running.tls.caCert).toString("base64"),
            },
          },
        ],
        users: [{ name: "reader", user: { token: await sign({ act: "read", exec: true }) } }],
        contexts: [{ name: NODE, context: { cluster: NODE, user: "reader", namespace: "default" } }],
        "current-context": NODE,
      }),
    );
  }

  it("the guestbook file: dry run, apply, addresses; every pod ready in its Service's slice", async () => {
    writeFileSync(join(dir, "empty.yaml"), "");
    const dry = await podsync("apply", "-f", GUESTBOOK, "--dry-run");
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toContain("service/redis-leader created (dry run)");
    expect(dry.out).toContain("service/frontend created (dry run)");
    const applied = await podsync("apply", "-f", GUESTBOOK);
    expect(applied.code, `${applied.out}\n${applied.err}`).toBe(0);
    expect(applied.err + applied.out).not.toMatch(/Service .* skipped/);
    await until(
      "the guestbook's pods ready in their slices",
      async () =>
        (await readyCount("redis-leader")) === 1 &&
        (await readyCount("redis-follower")) === 2 &&
        (await readyCount("frontend")) === 1
          ? true
          : undefined,
      90_000,
    );
    const svc = await kubectl("get", "svc", "-o", "wide");
    expect(svc.code, svc.err).toBe(0);
    expect(svc.out).toMatch(/^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\s+SELECTOR\n/);
    expect(svc.out).toMatch(
      /\nfrontend\s+NodePort\s+10\.96\.\d+\.\d+\s+<none>\s+80:3\d{4}\/TCP\s+\S+\s+app=guestbook,tier=frontend/,
    );
    expect(svc.out).toMatch(/\nredis-leader\s+ClusterIP\s+10\.96\.\d+\.\d+\s+<none>\s+6379\/TCP\s/);
    // A second apply of the same file changes nothing: the same addresses (they are stored with the Services).
    const ips = (await kubectl("get", "svc", "-o", "jsonpath={.items[*].spec.clusterIP}")).out;
    expect((await podsync("apply", "-f", GUESTBOOK)).code).toBe(0);
    expect((await kubectl("get", "svc", "-o", "jsonpath={.items[*].spec.clusterIP}")).out).toBe(ips);
    // podsync's own CLI prints the same table.
    const mine = await podsync("get", "svc");
    expect(mine.code, mine.err).toBe(0);
    expect(mine.out).toMatch(/NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE/);
    expect(mine.out).toContain("redis-follower");
  }, 180_000);

  it("kubectl get endpointslices, get endpoints and describe svc", async () => {
    const slices = await kubectl("get", "endpointslices");
    expect(slices.code, slices.err).toBe(0);
    expect(slices.out).toMatch(/^NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE\n/);
    expect(slices.out).toMatch(/\nfrontend-\w{5}\s+IPv4\s+80\s+10\.244\.78\.\d+\s/);
    const eps = await kubectl("get", "endpoints", "redis-follower");
    expect(eps.code, eps.err).toBe(0);
    expect(eps.out).toMatch(/redis-follower\s+10\.244\.78\.\d+:6379,10\.244\.78\.\d+:6379\s/);
    const d = await kubectl("describe", "svc", "frontend");
    expect(d.code, d.err).toBe(0);
    expect(d.out).toMatch(/Name:\s+frontend/);
    expect(d.out).toMatch(/Type:\s+NodePort/);
    expect(d.out).toMatch(/IP:\s+10\.96\.\d+\.\d+/);
    expect(d.out).toMatch(/Endpoints:\s+10\.244\.78\.\d+:80/);
  }, 60_000);

  it("the frontend reaches its backends by Service name; the NodePort answers at the bridge's address", async () => {
    const frontend = await firstPod("tier=frontend");
    // redis-leader.default.svc.cluster.local from the pod's search path, answered by the cluster DNS; the
    // ClusterIP DNATed by the kernel to the pod.
    expect(await until("redis-leader by name", async () => getFrom(frontend, "redis-leader", 6379))).toBe("leader");
    // (each through `until`: a CRI exec and busybox nc's 3 s on a loaded machine can miss once)
    expect(await until("redis-follower by name", async () => getFrom(frontend, "redis-follower", 6379))).toBe(
      "follower",
    );
    expect(
      await until("the full name", async () => getFrom(frontend, "redis-leader.default.svc.cluster.local", 6379)),
    ).toBe("leader");
    const nodePort = (await kubectl("get", "svc", "frontend", "-o", "jsonpath={.spec.ports[0].nodePort}")).out;
    expect(await hostGet(`http://${GATEWAY}:${nodePort}/`)).toBe("frontend");
    expect(await hostGet(`http://${await clusterIP("frontend")}/`)).toBe("frontend");
    const listing = execFileSync("nft", ["list", "table", "inet", "podsync"]).toString();
    expect(listing).toMatch(/map service-ips \{/);
  }, 120_000);

  it("kubectl explain reads the served kinds' schemas from the node's OpenAPI", async () => {
    // (kubectl falls back to /openapi/v2, which is JSON only here, when a v3 fetch fails: once under load)
    const explain = (what: string) =>
      until(`kubectl explain ${what}`, async () => {
        const r = await kubectl("explain", what);
        return r.code === 0 ? r.out : undefined;
      });
    const svc = await explain("svc.spec");
    expect(svc).toMatch(/KIND:\s+Service/);
    expect(svc).toContain("clusterIP");
    for (const [what, kind] of [
      ["endpointslices", "EndpointSlice"],
      ["endpoints", "Endpoints"],
      ["rc.spec", "ReplicationController"],
      ["hpa.spec", "HorizontalPodAutoscaler"],
      ["pdb.spec", "PodDisruptionBudget"],
    ]) {
      expect(await explain(what!)).toMatch(new RegExp(`KIND:\\s+${kind}`));
    }
  }, 180_000);

  it("the Service env vars are in the frontend's environment, and $(VAR) expands to them", async () => {
    const name = (await kubectl("get", "pods", "-l", "tier=frontend", "-o", "name")).out.trim().split("\n")[0]!;
    const logs = await until("the frontend's env in its log", async () => {
      const r = await kubectl("logs", name);
      return r.out.includes("HOSTNAME=") ? r.out : undefined;
    });
    const leaderIP = (await kubectl("get", "svc", "redis-leader", "-o", "jsonpath={.spec.clusterIP}")).out;
    expect(logs).toContain(`REDIS_LEADER_SERVICE_HOST=${leaderIP}`);
    expect(logs).toContain("REDIS_LEADER_SERVICE_PORT=6379");
    expect(logs).toContain(`REDIS_LEADER_PORT=tcp://${leaderIP}:6379`);
    expect(logs).toContain(`REDIS_LEADER_PORT_6379_TCP_ADDR=${leaderIP}`);
    expect(logs).toContain("REDIS_LEADER_PORT_6379_TCP_PROTO=tcp");
    expect(logs).toContain("FRONTEND_SERVICE_PORT_HTTP=80");
    expect(logs).toContain(`LEADER=${leaderIP}:6379`);
    expect(logs).not.toContain("KUBERNETES_SERVICE_HOST");
  }, 60_000);

  it("a pod whose readiness probe starts failing leaves its Service's ready endpoints, and comes back", async () => {
    const name = (await kubectl("get", "pods", "-l", "tier=frontend", "-o", "name")).out.trim().split("\n")[0]!;
    const rm = await kubectl("exec", name, "--", "sh", "-c", "echo no > /tmp/ready");
    expect(rm.code, rm.err).toBe(0);
    await until("the frontend's endpoint not ready", async () =>
      (await readyCount("frontend")) === 0 ? true : undefined,
    );
    // Its only endpoint gone from the data plane: a connection to the ClusterIP is rejected, not left hanging.
    const ip = await clusterIP("frontend");
    await until("frontend's ClusterIP rejected", async () =>
      (await hostConnect(ip, 80)) === "ECONNREFUSED" ? true : undefined,
    );
    const [slice] = await slicesOf("frontend");
    expect(slice!.endpoints).toHaveLength(1);
    expect(slice!.endpoints[0]!.conditions.ready).toBe(false);
    expect(
      (await kubectl("get", "endpoints", "frontend", "-o", "jsonpath={.subsets[0].notReadyAddresses[0].ip}")).out,
    ).toMatch(/^10\.244\.78\.\d+$/);
    expect((await kubectl("exec", name, "--", "sh", "-c", "echo yes > /tmp/ready")).code).toBe(0);
    await until("the frontend's endpoint ready again", async () =>
      (await readyCount("frontend")) === 1 ? true : undefined,
    );
    expect(await until("traffic back", async () => hostGet(`http://${ip}/`).catch(() => undefined))).toBe("frontend");
  }, 120_000);

  it("a StatefulSet behind its headless Service: slices carry each pod's hostname; ExternalName has none; removing a Service removes its slices", async () => {
    const synced = await podsync(
      "sync",
      "-f",
      fileURLToPath(new URL("../fixtures/web-statefulset.yaml", import.meta.url)),
    );
    expect(synced.code, `${synced.out}\n${synced.err}`).toBe(0);
    const hostnames = await until(
      "web-0 and web-1 ready in nginx's slice, with their hostnames",
      async () => {
        const eps = (await slicesOf("nginx")).flatMap((s) => s.endpoints) as (Slice["endpoints"][number] & {
          hostname?: string;
        })[];
        const ready = eps.filter((e) => e.conditions.ready).map((e) => e.hostname);
        return ready.length === 2 ? ready.sort() : undefined;
      },
      90_000,
    );
    expect(hostnames).toEqual(["web-0", "web-1"]);
    // The pods reach each other as web-N.nginx (the headless Service's hostname records, through the search path).
    expect(await until("web-1.nginx from web-0", async () => getFrom("web-0", "web-1.nginx", 80))).toBe("web-1");
    expect(await until("web-0.nginx from web-1", async () => getFrom("web-1", "web-0.nginx", 80))).toBe("web-0");
    // ExternalName: a CNAME to db.example.test, whose address the stub upstream on 127.0.0.1 gave.
    const ns = await kubectl("exec", "web-0", "--", "busybox", "nslookup", "-type=a", "db.default.svc.cluster.local");
    expect(ns.out).toContain("db.example.test");
    expect(ns.out).toContain("192.0.2.10");
    expect((await slicesOf("nginx"))[0]!.metadata.labels["service.kubernetes.io/headless"]).toBe("");
    const svc = await kubectl("get", "svc", "nginx", "db");
    expect(svc.out).toMatch(/\nnginx\s+ClusterIP\s+None\s+<none>\s+80\/TCP\s/);
    expect(svc.out).toMatch(/\ndb\s+ExternalName\s+<none>\s+db\.example\.test\s+<none>\s/);
    expect(await slicesOf("db")).toEqual([]);
    // The Service goes: its slices and Endpoints with it (the StatefulSet and its pods stay).
    const uid = (await kubectl("get", "svc", "nginx", "-o", "jsonpath={.metadata.uid}")).out;
    const del = await fetch(`${running.url}/v1/workloads/${uid}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await sign({ act: "delete", uid })}` },
    });
    expect(del.status).toBe(200);
    await until("nginx's slices gone", async () => ((await slicesOf("nginx")).length === 0 ? true : undefined));
    expect((await kubectl("get", "svc", "nginx")).code).not.toBe(0);
    expect((await kubectl("get", "endpoints", "nginx")).code).not.toBe(0);
  }, 240_000);

  it("a podsync restart during traffic drops no established connection, and reconciles the table", async () => {
    const ip = await clusterIP("redis-leader");
    const sock = connect({ host: ip, port: 6379 });
    let got = "";
    sock.on("data", (d: Buffer) => (got += d.toString()));
    const ended = new Promise<void>((res) => sock.on("close", () => res()));
    await new Promise<void>((res, rej) => (sock.once("connect", () => res()), sock.once("error", rej)));
    await running.close();
    // The table outlives the process; something (or a crash) left it wrong meanwhile.
    execFileSync("nft", ["add chain inet podsync stray-chain"]);
    running = await start();
    await writeKubeconfig();
    // The connection made before the restart is served after it (busybox httpd reads the request only now).
    sock.write("GET / HTTP/1.0\r\n\r\n");
    await ended;
    expect(got.trim().split("\n").at(-1)?.trim()).toBe("leader");
    await until("the stray chain reconciled away", async () =>
      execFileSync("nft", ["list", "table", "inet", "podsync"]).toString().includes("stray-chain") ? undefined : true,
    );
    expect(await hostGet(`http://${ip}:6379/`)).toBe("leader");
    const frontend = await firstPod("tier=frontend");
    expect(await until("by name after the restart", async () => getFrom(frontend, "redis-leader", 6379))).toBe(
      "leader",
    );
  }, 120_000);
});
