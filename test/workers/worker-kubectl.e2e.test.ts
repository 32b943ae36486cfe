// kubectl itself against the Worker (workerd, started by wrangler) on the REAL containerd: the node's Kubernetes
// API served by its Durable Object under /nodes/{node}/, reaching the runtime through the node's cri-proxy over
// gRPC-Web. kubectl sends credentials only over https, so wrangler's local server serves TLS here with a serving
// certificate made for loopback (dev.server.secure with our own certificate and key), and the kubeconfig embeds it
// as the CA. Fails, never skips, without a runtime or kubectl (unless PODSYNC_SKIP_E2E=1).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startProxy, type RunningProxy } from "../../src/proxy/cri-proxy.js";
import { loadOrMakeServingCert } from "../../src/host/serving/serving-cert.js";
import { generateSigningKey } from "../../src/auth/keys.js";
import { Harness, ISSUER, makeKey } from "../support/http.js";
import { startWorkerd, type Workerd } from "../support/workerd.js";
import { until } from "../support/wait.js";
import { uid } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const KUBECTL = process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl";
const TOKEN = "kubectl-worker-proxy-token";
const NODE = "kw-node";
const NS = `kw-${uid("")
  .replace(/[^a-z0-9]/g, "")
  .slice(-8)}`;
const dir = mkdtempSync(join(tmpdir(), "podsync-worker-kubectl-"));

let proxy: RunningProxy;
let worker: Workerd;
let base: URL;
let ca: string;
let signer: Harness;
const uids: string[] = [];
const children: ChildProcess[] = [];

/** A request to the Worker over its https (Node's fetch has no per-request CA). A connection of its own (no agent):
 * Node 20's global agent keeps sockets alive, and one reused just as wrangler's server closed it for idling (about
 * 5 s after the last call) failed the next call with "socket hang up". */
function call(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; text: string }> {
  return new Promise((res, rej) => {
    const req = request(new URL(path, base), { method, headers, ca, agent: false }, (r) => {
      let text = "";
      r.setEncoding("utf8");
      r.on("data", (d: string) => (text += d));
      r.on("end", () => res({ status: r.statusCode ?? 0, text }));
    });
    req.on("error", rej);
    req.end(body);
  });
}

async function syncPod(name: string, command: string[]) {
  const id = uid(name);
  uids.push(id);
  const pod = {
    metadata: { name, namespace: NS, uid: id, labels: { app: name } },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: "data", emptyDir: {} }],
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          imagePullPolicy: "IfNotPresent",
          command,
          volumeMounts: [{ name: "data", mountPath: "/data" }],
        },
      ],
    },
  };
  const r = await call(
    "POST",
    `/nodes/${NODE}/v1/pods/sync`,
    { "content-type": "application/jose" },
    await signer.sign({ act: "sync", pod }, { aud: NODE }),
  );
  expect(r.status, r.text).toBe(200);
}

/** A command's exit code and both streams; never throws. */
function run(file: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((res) =>
    execFile(
      file,
      args,
      { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") }, timeout: 120_000 },
      (e, out, err) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

const kubectl = (...args: string[]) => run(KUBECTL, args);

/** A long-running kubectl (-w, -f), read until `want` shows in its output, then stopped. */
async function streamUntil(args: string[], want: (out: string) => boolean, what: string): Promise<string> {
  const child = spawn(KUBECTL, args, { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") } });
  children.push(child);
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  try {
    return await until(what, async () => (want(out) ? out : undefined), 60_000).catch((e: Error) =>
      Promise.reject(new Error(`${e.message}; kubectl printed:\n${out}`)),
    );
  } finally {
    child.kill();
  }
}

describe.skipIf(skip)("kubectl against the Worker (workerd), through cri-proxy on the real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the Worker kubectl e2e: ${setupError}`);
    if (!existsSync(KUBECTL))
      throw new Error(
        `kubectl is missing at ${KUBECTL}: this suite runs the real kubectl (install it, or set PODSYNC_KUBECTL to one)`,
      );
    const logs = join(dir, "logs");
    proxy = await startProxy({
      upstream: endpoint,
      grpcWebListen: "127.0.0.1:0",
      token: TOKEN,
      log: () => undefined,
      podLogsDir: logs,
      policy: { level: "privileged", hostPathAllow: [] },
    });
    const cert = loadOrMakeServingCert(join(dir, "tls"), "worker@podsync", ["localhost"], ["127.0.0.1"]);
    ca = cert.cert;
    const key = await makeKey("EdDSA", "kw-1");
    signer = new Harness([key], undefined as never);
    // kubectl's credentials come from podsync's own plugin (podsync kubeconfig), with a key file the Worker trusts too.
    const reader = await generateSigningKey("EdDSA");
    writeFileSync(join(dir, "reader-key.json"), JSON.stringify({ ...reader.privateJwk, iss: ISSUER }));
    ({ worker, base } = await startWorkerd({
      nodes: { [NODE]: { url: `http://127.0.0.1:${proxy.grpcWebPort}` } },
      jwk: key.publicJwk,
      proxyToken: TOKEN,
      https: { certPath: join(dir, "tls", "serving.crt"), keyPath: join(dir, "tls", "serving.key") },
      // hostNetwork keeps the pods on loopback (baseline refuses it); a short relist so a restart shows soon.
      env: {
        PODSYNC_POLICY: "privileged",
        PODSYNC_POD_LOGS_DIR: logs,
        PODSYNC_RELIST_INTERVAL_MS: "1000",
        PODSYNC_ALLOW_EXEC: "true",
        PODSYNC_JWKS: JSON.stringify({ keys: [key.publicJwk, ...reader.jwks.keys] }),
      },
    }));
    expect(base.protocol).toBe("https:");
    // The node's API is under /nodes/{node} on the Worker: the kubeconfig keeps the path (kubectl does too), and
    // its user is podsync's exec credential plugin minting read tokens (with --exec, so exec's refusal is the Worker's).
    const made = await run(process.execPath, [
      join(process.cwd(), "bin/podsync.mjs"),
      "kubeconfig",
      "--server",
      new URL(`/nodes/${NODE}`, base).toString(),
      "--key",
      join(dir, "reader-key.json"),
      "--ca",
      join(dir, "tls", "serving.crt"),
      "--node",
      NODE,
      "--namespace",
      NS,
      "--exec",
    ]);
    expect(made.code, made.err).toBe(0);
    expect(made.out).toContain(`server: ${new URL(`/nodes/${NODE}`, base).toString()}\n`);
    writeFileSync(join(dir, "kubeconfig"), made.out);
    await syncPod("web", ["sh", "-c", "echo hello; i=0; while true; do i=$((i+1)); echo line $i; sleep 0.3; done"]);
  }, 180_000);

  afterAll(async () => {
    for (const c of children) c.kill();
    // wrangler's dev server answers 503 "Your worker restarted mid-request" now and then once the streams the tests
    // opened (logs -f, get -w) are cut (2 runs in 6 here): sent again, with a new token, so no pod is left on the
    // shared containerd.
    await Promise.all(
      uids.map((id) =>
        until(
          `the cleanup DELETE of pod ${id} (else it is left on the lab containerd)`,
          async () =>
            (
              await call("DELETE", `/nodes/${NODE}/v1/pods/${id}`, {
                authorization: `Bearer ${await signer.sign({ act: "delete", uid: id, gracePeriodSeconds: 0 }, { aud: NODE })}`,
              })
            ).status !== 503,
          3_000,
          500,
        ).catch((e: Error) => console.error(`worker-kubectl: ${e.message}`)),
      ),
    );
    await worker?.dispose();
    await proxy?.shutdown(100);
  }, 60_000);

  it("get pods: plain, -o wide, -o json, -l; no token, no data", async () => {
    const plain = await kubectl("get", "pods");
    expect(plain.code, plain.err).toBe(0);
    expect(plain.out).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+1\/1\s+Running\s+0\s+\S+\n$/);
    expect((await kubectl("get", "pods", "-o", "wide")).out).toMatch(
      new RegExp(`\\nweb\\s+1/1\\s+Running.*\\s${NODE}\\s+<none>\\s+<none>`),
    );
    const json = JSON.parse((await kubectl("get", "pods", "-o", "json")).out) as {
      items: { metadata: { name: string; namespace: string }; spec: { nodeName: string } }[];
    };
    expect(json.items).toMatchObject([{ metadata: { name: "web", namespace: NS }, spec: { nodeName: NODE } }]);
    expect((await kubectl("get", "pods", "-l", "app=nope", "-o", "name")).out).toBe("");
    const anonymous = await call("GET", `/nodes/${NODE}/api/v1/pods`, {});
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.text)).toMatchObject({ kind: "Status", code: 401 });
  }, 120_000);

  it("logs and logs -f", async () => {
    const l = await kubectl("logs", "web", "--tail", "-1");
    expect(l.code, l.err).toBe(0);
    expect(l.out).toMatch(/^hello\nline 1\n/);
    await streamUntil(
      ["logs", "-f", "web", "--tail", "1"],
      (o) => (o.match(/line \d+/g) ?? []).length >= 3,
      "kubectl logs -f through the Worker to follow three lines",
    );
  }, 90_000);

  it("describe pod shows the pod and kubelet's events from the Worker's sync", async () => {
    const d = await kubectl("describe", "pod", "web");
    expect(d.code, d.err).toBe(0);
    expect(d.out).toMatch(new RegExp(`Node:\\s+${NODE}`));
    expect(d.out).toMatch(/Status:\s+Running/);
    expect(d.out).toMatch(/Events:[\s\S]*Normal\s+Created\s+\S+\s+kubelet\s+Created container: main/);
    expect(d.out).toMatch(/Normal\s+Started\s+\S+\s+kubelet\s+Started container main/);
  }, 60_000);

  it("get pods -w sees a restart the node object's alarm made; get nodes", async () => {
    const watched = streamUntil(
      ["get", "pods", "-l", "app=crash", "-w"],
      (o) => /\ncrash\s+\S+\s+\S+\s+[1-9]/.test(o),
      "kubectl get pods -w through the Worker to show the restart",
    );
    await syncPod("crash", [
      "sh",
      "-c",
      "if [ -f /data/ran ]; then exec sleep 3600; fi; echo x > /data/ran; sleep 2; exit 3",
    ]);
    const out = await watched;
    // Seen running first: the restart came as a watch event.
    expect(out).toMatch(/\ncrash\s+\S+\s+\S+\s+0\s/);
    const n = await kubectl("get", "nodes");
    expect(n.code, n.err).toBe(0);
    expect(n.out).toMatch(new RegExp(`\\n${NODE}\\s+Ready\\s+<none>\\s+\\S+\\s+v1\\.33\\.0`));
  }, 90_000);

  it("exec is refused with a Status saying why; writes are refused naming the signed way", async () => {
    const ex = await kubectl("exec", "web", "--", "echo", "hi");
    expect(ex.code).not.toBe(0);
    expect(ex.err).toMatch(/kubectl exec is not served by the Worker/);
    const del = await kubectl("delete", "pod", "web");
    expect(del.code).not.toBe(0);
    expect(del.err).toMatch(/Forbidden.*podsync delete/);
  }, 60_000);
});
