// Services on the REAL containerd (issue 37, the Service half): a guestbook-shaped file (three Deployments, three
// Services) applied with `podsync apply`, its Services given addresses, the EndpointSlices following the pods'
// readiness (an exec readiness probe that starts failing takes its pod out of the ready endpoints), the Service
// env vars in a container's environment (its log), and kubectl's get svc / endpointslices / endpoints / describe.
// kubectl is /usr/bin/kubectl (or PODSYNC_KUBECTL); its absence fails the suite.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { importJWK, SignJWT, type JWK } from "jose";
import type { Running } from "../src/node.js";
import { until } from "./support/wait.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const KUBECTL = process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl";
const NODE = "svc-e2e";
const dir = mkdtempSync(join(tmpdir(), "podsync-services-e2e-"));
const GUESTBOOK = fileURLToPath(new URL("./fixtures/guestbook.yaml", import.meta.url));
let running: Running;
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
    fileURLToPath(new URL("../bin/podsync.mjs", import.meta.url)),
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

describe.skipIf(skip)("Services on the node", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    if (!existsSync(KUBECTL)) throw new Error(`kubectl is missing at ${KUBECTL} (set PODSYNC_KUBECTL)`);
    const { startNode } = await import("../src/node.js");
    running = await startNode(
      {
        PODSYNC_CRI_ENDPOINT: endpoint,
        PODSYNC_PORT: "0",
        PODSYNC_NODE_NAME: NODE,
        PODSYNC_DEV_DIR: dir,
        PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
        PODSYNC_RELIST_INTERVAL_MS: "300",
        PODSYNC_ALLOW_EXEC: "true",
        PODSYNC_SERVICE_CIDR: "10.96.0.0/16",
      },
      true,
    );
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { alg: string };
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
  }, 120_000);

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
  }, 120_000);

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
  }, 60_000);

  it("a StatefulSet behind its headless Service: slices carry each pod's hostname; ExternalName has none; removing a Service removes its slices", async () => {
    const synced = await podsync(
      "sync",
      "-f",
      fileURLToPath(new URL("./fixtures/web-statefulset.yaml", import.meta.url)),
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
  }, 150_000);
});
