// Pull mode end to end (issue #38's done-when): the Worker in workerd, three REAL node agents (startNode, each with
// its own state dir) in pull mode on the lab containerd. They enroll with join tokens and `podsync fleet nodes`
// lists them Ready; a Deployment sent to one node through the Worker runs there; with the Worker stopped a
// SIGKILLed container comes back and a restarted agent brings its pods back from its local store; when the Worker
// returns (restarted, its storage kept) the agents reconnect, nothing unchanged restarts, and the registry's status
// is current again. Node 3 runs as its own process (dist/node.js) and is SIGKILLed in the middle of an update: it
// comes back to the whole set. Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK } from "jose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { startNode, type Running } from "../../src/node.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import type { FleetNode } from "../../src/http/fleet/node-view.js";
import { ISSUER, makeKey, type TestKey } from "../support/http.js";
import { startWorkerd, type Workerd } from "../support/workerd.js";
import { until } from "../support/wait.js";
import { listNodes, ownerToken, putSet } from "../support/fleet.js";
import { selfSignedCert } from "../../src/host/serving/serving-cert.js";
import { freePort } from "../support/free-port.js";
import { deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const dir = mkdtempSync(join(tmpdir(), "podsync-fleet-e2e-"));
const suffix = Date.now().toString(36).slice(-6);
const NODES = [1, 2, 3].map((i) => `fleet-e2e-${i}-${suffix}`);
const NS = `fleet-${suffix}`;
/** How long the Worker stays away (issue #38 says 60 s; the point holds with less: the agents' back-off here is at
 * most 2 s, so a longer outage only waits longer). */
const OUTAGE_S = Number(process.env["PODSYNC_FLEET_E2E_OUTAGE_S"] ?? 10);
/** The Cloud SDK's bundled kubectl (docs/kubectl.md). */
const KUBECTL = `${process.env["PODSYNC_KUBECTL_DIR"] ?? "/usr/lib/google-cloud-sdk/bin"}/kubectl.1.33`;

let key: TestKey;
let keyFile: string;
let cri: CriClient;
let worker: Workerd | undefined;
let base: URL;
let port: number;
let tls: HttpsServer | undefined;
let tlsUrl: string;
const agents = new Map<string, Running>();
/** Node 3: an agent in its own process (it is SIGKILLed mid-update). */
let child: ChildProcess | undefined;

const startWorker = async () => {
  ({ worker, base } = await startWorkerd({
    nodes: {},
    jwk: key.publicJwk,
    proxyToken: "unused",
    port,
    persist: join(dir, "worker-state"),
    env: { PODSYNC_FLEET_SHARDS: "4" },
  }));
};

const agentEnv = (name: string, token?: string): Record<string, string> => ({
  // Node 1's owner allows exec (kubectl exec through the Worker); the others leave it off.
  ...(name === NODES[0] ? { PODSYNC_ALLOW_EXEC: "true" } : {}),
  PODSYNC_CRI_ENDPOINT: endpoint,
  PODSYNC_SERVICE_DATAPLANE: "off",
  // PODSYNC_HOST is left at its default: the agents' only listener is on loopback.
  PODSYNC_PORT: "0",
  PODSYNC_NODE_NAME: name,
  PODSYNC_POLICY: "privileged",
  PODSYNC_STATE_DIR: join(dir, name, "state"),
  PODSYNC_ROOT_DIR: join(dir, name, "root"),
  PODSYNC_POD_LOGS_DIR: join(dir, name, "logs"),
  PODSYNC_JWKS: JSON.stringify({ keys: [key.publicJwk] }),
  PODSYNC_ISSUERS: ISSUER,
  PODSYNC_RELIST_INTERVAL_MS: "1000",
  PODSYNC_FLEET_URL: base.origin,
  PODSYNC_FLEET_HEARTBEAT_MS: "1000",
  PODSYNC_FLEET_BACKOFF_MAX_MS: "2000",
  ...(token ? { PODSYNC_FLEET_JOIN_TOKEN: token } : {}),
});

const cli = (...args: string[]) =>
  new Promise<string>((res, rej) =>
    execFile(
      process.execPath,
      ["bin/podsync.mjs", ...args, "--url", base.origin, "--key", keyFile],
      { env: { ...process.env, PODSYNC_URL: "" } },
      (e, out, err) => (e ? rej(new Error(`${e.message}\n${err}`)) : res(out)),
    ),
  );

const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: NS },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "IfNotPresent",
            command: ["sh", "-c", "echo hello-from-web; exec sleep 3600"],
          },
        ],
      },
    },
  },
};
const plainPod = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: NS, uid: `${name}-${suffix}` },
  spec: {
    hostNetwork: true,
    terminationGracePeriodSeconds: 1,
    containers: [
      { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] },
    ],
  },
});

/** The running containers of the namespace's pods, by pod name: id, restart count. */
async function containers(ns = NS): Promise<Map<string, { id: string; attempt: number }>> {
  const sandboxes = (await cri.listPodSandbox({})).items.filter((s) => s.metadata?.namespace === ns && s.state === 0);
  const out = new Map<string, { id: string; attempt: number }>();
  const cs = (await cri.listContainers({})).containers;
  for (const sb of sandboxes)
    for (const c of cs)
      if (c.podSandboxId === sb.id && c.state === 1)
        out.set(sb.metadata!.name, { id: c.id, attempt: c.metadata?.attempt ?? 0 });
  return out;
}
const pidOf = async (id: string) =>
  (JSON.parse((await cri.containerStatus({ containerId: id, verbose: true })).info["info"]!) as { pid: number }).pid;
const nodeOf = async (name: string): Promise<FleetNode | undefined> =>
  (await listNodes(base, key)).find((n) => n.metadata.name === name);

/** Node 3's agent as its own process (npm start's entry), so it can be SIGKILLed. */
function startChild(env: Record<string, string>): ChildProcess {
  const c = spawn(process.execPath, ["dist/node.js"], { env: { ...process.env, ...env }, stdio: "ignore" });
  c.on("error", () => undefined);
  return c;
}

/** kubectl sends its token only over https: a TLS front on loopback for the Worker (wrangler dev serves http). */
async function startTlsFront(): Promise<void> {
  const c = selfSignedCert("fleet-e2e", ["localhost"], ["127.0.0.1"], new Date());
  tls = createHttpsServer({ cert: c.cert, key: c.key }, (req, res) => {
    const up = request({ host: "127.0.0.1", port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  // kubectl exec's upgrade: the raw bytes both ways.
  tls.on("upgrade", (req, socket, head) => {
    const up = connect(port, "127.0.0.1", () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      up.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on("error", () => socket.destroy());
    socket.on("error", () => up.destroy());
  });
  await new Promise<void>((r) => tls!.listen(0, "127.0.0.1", () => r()));
  const a = tls.address();
  tlsUrl = `https://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`;
}

/** A kubeconfig for `server` with `token`. */
function kubeconfig(file: string, server: string, token: string): string {
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server, "insecure-skip-tls-verify": true } }],
      users: [{ name: "u", user: { token } }],
      contexts: [{ name: "c", context: { cluster: "c", user: "u", namespace: NS } }],
      "current-context": "c",
    }),
  );
  return file;
}

const kubectl = (config: string, ...args: string[]) =>
  new Promise<string>((res, rej) =>
    execFile(
      KUBECTL,
      ["--kubeconfig", config, "--cache-dir", join(dir, "kube-cache"), ...args],
      { timeout: 60_000 },
      (e, out, err) => (e ? rej(new Error(`kubectl ${args.join(" ")}: ${e.message}\n${err}`)) : res(out)),
    ),
  );

/** kubectl with `input` on its stdin. */
const kubectlIn = (config: string, input: Buffer, ...args: string[]) =>
  new Promise<string>((res, rej) => {
    const p = execFile(
      KUBECTL,
      ["--kubeconfig", config, "--cache-dir", join(dir, "kube-cache"), ...args],
      { timeout: 60_000 },
      (e, out, err) => (e ? rej(new Error(`kubectl ${args.join(" ")}: ${e.message}\n${err}`)) : res(out)),
    );
    p.stdin!.end(input);
  });

/** `kubectl logs -f` until `text` shows (the follow stays open: it is ended here). */
const followUntil = (config: string, pod: string, text: string) =>
  new Promise<string>((res, rej) => {
    const p = spawn(KUBECTL, ["logs", "-f", pod, "--kubeconfig", config, "--cache-dir", join(dir, "kube-cache")]);
    let out = "";
    let err = "";
    const t = setTimeout(() => (p.kill(), rej(new Error(`no "${text}" in logs -f: ${out} ${err}`))), 60_000);
    p.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes(text)) {
        clearTimeout(t);
        p.kill();
        res(out);
      }
    });
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("exit", () => !out.includes(text) && (clearTimeout(t), rej(new Error(`logs -f ended: ${out} ${err}`))));
  });

/** The TCP ports this process (agents 1 and 2 run in it) and node 3's listen on, from `ss -ltnp`. */
const listening = (pids: number[]) =>
  new Promise<string[]>((res, rej) =>
    execFile("ss", ["-ltnpH"], (e, out) =>
      e
        ? rej(e)
        : res(
            out
              .split("\n")
              .filter((l) => pids.some((p) => l.includes(`pid=${p},`)))
              .map((l) => l.trim().split(/\s+/)[3]!),
          ),
    ),
  );

describe.skipIf(skip)("pull mode on real containerd, three agents", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    key = await makeKey("ES256", "owner-e2e");
    keyFile = join(dir, "owner-key.json");
    writeFileSync(
      keyFile,
      JSON.stringify({ ...(await exportJWK(key.privateKey)), kid: key.kid, alg: "ES256", iss: ISSUER }),
      {
        mode: 0o600,
      },
    );
    port = await freePort();
    await startWorker();
    await startTlsFront();
  }, 120_000);

  afterAll(async () => {
    child?.kill("SIGKILL");
    await Promise.all([...agents.values()].map((a) => a.close().catch(() => undefined)));
    await worker?.dispose();
    tls?.close();
    if (cri) {
      const rt = createPodRuntime(cri);
      const listed = (await cri.listPodSandbox({})).items.filter((s) => s.metadata?.namespace?.startsWith(NS));
      await deleteAll(
        rt,
        listed.map((sb) => sb.metadata!.uid),
      );
      cri.close();
    }
  }, 120_000);

  it("enroll, run a Deployment through the Worker, survive the Worker's absence, reconcile on its return", async () => {
    // Enroll: three agents, each with a join token the CLI mints.
    for (const [i, name] of NODES.entries()) {
      const token = (await cli("fleet", "join-token", "--labels", `site=s${i}`, "--ttl", "15m", "-q")).trim();
      if (i === 2) child = startChild(agentEnv(name, token));
      else agents.set(name, await startNode(agentEnv(name, token), true));
    }
    const listed = await until("three nodes Ready", async () => {
      const j = JSON.parse(await cli("fleet", "nodes", "-o", "json")) as { items: FleetNode[] };
      const mine = j.items.filter((n) => NODES.includes(n.metadata.name));
      return mine.length === 3 && mine.every((n) => n.status.condition === "Ready") && mine;
    });
    expect(listed.map((n) => n.metadata.labels["site"])).toEqual(["s0", "s1", "s2"]);
    expect(await cli("fleet", "nodes", "-l", "site=s1")).toMatch(new RegExp(`${NODES[1]}\\s+Ready\\s+site=s1`));

    // A Deployment to node 1, a plain pod to node 2, both through the Worker.
    expect((await putSet(base, key, NODES[0]!, 1, [deployment])).status).toBe(202);
    expect((await putSet(base, key, NODES[1]!, 1, [plainPod("solo")])).status).toBe(202);
    const before = await until(
      "both pods running",
      async () => {
        const c = await containers();
        return c.size === 2 && [...c.keys()].some((n) => n.startsWith("web-")) && c.has("solo") && c;
      },
      60_000,
    );
    await until(
      "node 1's status in the registry",
      async () => {
        const n = await nodeOf(NODES[0]!);
        return n?.status.generation === 1 && n.status.pods.length === 1 && n.status.pods[0]!.ready;
      },
      30_000,
    );

    // kubectl through the Worker (its TLS front): the registry as Nodes, node 1's pods and its log, followed.
    const fleetRead = await ownerToken(key, { act: "read" }, { ttlS: 300 });
    const fleetKube = kubeconfig(join(dir, "kube-fleet"), `${tlsUrl}/fleet`, fleetRead);
    const nodesOut = await kubectl(fleetKube, "get", "nodes", "--show-labels", "-l", `site in (s0,s1,s2)`);
    for (const [i, n] of NODES.entries()) expect(nodesOut).toMatch(new RegExp(`${n}\\s+Ready\\s+<none>.*site=s${i}`));
    expect(nodesOut.split("\n")[0]).toMatch(/^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\s+LABELS/);
    const nodeRead = await ownerToken(key, { act: "read" }, { aud: NODES[0]!, ttlS: 300 });
    const node1Kube = kubeconfig(join(dir, "kube-node1"), `${tlsUrl}/fleet/nodes/${NODES[0]}`, nodeRead);
    const web0 = [...before.keys()].find((n) => n.startsWith("web-"))!;
    expect(await kubectl(node1Kube, "get", "pods")).toMatch(new RegExp(`${web0}\\s+1/1\\s+Running`));
    expect(await followUntil(node1Kube, web0, "hello-from-web")).toContain("hello-from-web");
    // kubectl exec through the Worker, over node 1's link (its owner allows exec; the token is minted with exec):
    // a command's output, then 200 KiB through stdin and back out (many frames, several windows each way; the
    // command ends by itself: the node does not pass on v5's stdin close, exec-stream.ts).
    const execRead = await ownerToken(key, { act: "read", exec: true }, { aud: NODES[0]!, ttlS: 300 });
    const execKube = kubeconfig(join(dir, "kube-exec"), `${tlsUrl}/fleet/nodes/${NODES[0]}`, execRead);
    expect(await kubectl(execKube, "exec", web0, "--", "sh", "-c", "echo exec-$((6*7))")).toBe("exec-42\n");
    const input = Buffer.alloc(200 * 1024, 97);
    const echoed = await kubectlIn(
      execKube,
      input,
      "exec",
      "-i",
      web0,
      "--",
      "busybox",
      "head",
      "-c",
      `${input.length}`,
    );
    expect([echoed.length, echoed === input.toString()]).toEqual([input.length, true]);
    // The node's gates decide, as on its own port: a token without exec, and node 2 whose owner left exec off.
    await expect(kubectl(node1Kube, "exec", web0, "--", "true")).rejects.toThrow(/does not allow exec/);
    const execRead2 = await ownerToken(key, { act: "read", exec: true }, { aud: NODES[1]!, ttlS: 300 });
    const node2Kube = kubeconfig(join(dir, "kube-node2"), `${tlsUrl}/fleet/nodes/${NODES[1]}`, execRead2);
    await expect(kubectl(node2Kube, "exec", "solo", "--", "true")).rejects.toThrow(/exec is off on this node/);
    // The agents (in this process) listen on loopback only; the link is outbound.
    const ports = await listening([process.pid, child!.pid!]);
    expect(ports.length).toBeGreaterThan(0);
    for (const a of ports) expect(a).toMatch(/^(127\.0\.0\.1|\[::1\]|\[::ffff:127\.0\.0\.1\]):\d+$/);

    // Node 3 (its own process) is SIGKILLed in the middle of an update: four pods, killed at its first sandbox.
    // Restarted (enrolled: no token), it comes back to the whole set, one sandbox a pod, and reports it.
    const NS3 = `${NS}-mid`;
    const mids = [1, 2, 3, 4].map((i) => ({
      ...plainPod(`mid-${i}`),
      metadata: { name: `mid-${i}`, namespace: NS3, uid: `mid-${i}-${suffix}` },
    }));
    expect((await putSet(base, key, NODES[2]!, 1, mids)).status).toBe(202);
    await until(
      "node 3's first sandbox",
      async () => (await cri.listPodSandbox({})).items.some((s) => s.metadata?.namespace === NS3),
      60_000,
      50,
    );
    const atKill = await containers(NS3);
    const exited = new Promise((r) => child!.once("exit", r));
    child!.kill("SIGKILL");
    await exited;
    expect(atKill.size).toBeLessThan(mids.length);
    child = startChild(agentEnv(NODES[2]!));
    await until("node 3's whole set after the kill", async () => (await containers(NS3)).size === mids.length, 90_000);
    const sandboxes = (await cri.listPodSandbox({})).items.filter(
      (s) => s.metadata?.namespace === NS3 && s.state === 0,
    );
    expect(sandboxes.map((s) => s.metadata!.name).sort()).toEqual(mids.map((m) => m.metadata.name));
    await until(
      "node 3's status in the registry",
      async () => {
        const n = await nodeOf(NODES[2]!);
        return (
          n?.status.generation === 1 && n.status.pods.length === mids.length && n.status.pods.every((p) => p.ready)
        );
      },
      30_000,
    );

    // The Worker goes away. A container is SIGKILLed on node 1, node 2's agent restarts.
    await worker!.dispose();
    const stoppedAt = Date.now();
    worker = undefined;
    const web = [...before.entries()].find(([n]) => n.startsWith("web-"))!;
    process.kill(await pidOf(web[1].id), "SIGKILL");
    await agents.get(NODES[1]!)!.close();
    agents.set(NODES[1]!, await startNode(agentEnv(NODES[1]!), true));
    const during = await until(
      "the killed container restarted, without the Worker",
      async () => {
        const c = await containers();
        const w = c.get(web[0]);
        return w && w.id !== web[1].id && c.get("solo") && c;
      },
      60_000,
    );
    expect(during.get(web[0])!.attempt).toBe(web[1].attempt + 1);
    // The restarted agent kept its pod (brought back from its store; the container was never stopped).
    expect(during.get("solo")!.id).toBe(before.get("solo")!.id);
    await until("the outage's length", async () => Date.now() - stoppedAt >= OUTAGE_S * 1000, OUTAGE_S * 1000 + 5000);

    // The Worker returns: the agents reconnect, nothing restarts, the status is current.
    await startWorker();
    const back = Date.now();
    // The fresh workerd's first answer (its objects start cold), then the node's status.
    await until("the registry answers", async () => (await listNodes(base, key)).length > 0, 60_000);
    const answered = Date.now() - back;
    // Issue #38's goal: the node's status is current in the registry within 5 s (counted from the fresh workerd's
    // first answer: its cold start is the runtime's, not the node's). The time is printed below and recorded in
    // docs/fleet.md from a quiet run; the wait is generous, as a timed assertion on a shared machine is not a figure.
    await until(
      "node 1's status current after the registry's return",
      async () => {
        const n = await nodeOf(NODES[0]!);
        return n?.status.condition === "Ready" && n.status.pods[0]?.restarts === 1;
      },
      30_000,
    );
    const current = Date.now() - back;
    await until(
      "all three Ready again",
      async () => {
        const all = await Promise.all(NODES.map(nodeOf));
        return all.every((n) => n?.status.condition === "Ready");
      },
      30_000,
    );
    const after = await containers();
    expect(after.get(web[0])!.id).toBe(during.get(web[0])!.id);
    expect(after.get("solo")!.id).toBe(before.get("solo")!.id);
    console.log(
      `fleet e2e: outage ${OUTAGE_S} s; status current ${current} ms after the Worker's ready; its first registry answer took ${answered} ms (the agents' back-off is at most 2 s here)`,
    );
  }, 300_000);
});
