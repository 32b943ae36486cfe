// The Workers node agent: the node's Durable Object reconciles on an alarm through the node's cri-proxy over
// gRPC-Web, on the REAL containerd, with nobody calling. A container SIGKILLed behind podsync's back (ctr) is
// restarted by the alarm; a node whose set was emptied gets no more alarms (the proxy sees no further relist).
// Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startProxy, type RunningProxy } from "../../src/proxy/cri-proxy.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { Harness, makeKey } from "../support/http.js";
import { startWorkerd, type Workerd } from "../support/workerd.js";
import { until } from "../support/wait.js";
import { uid, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const TOKEN = "alarm-proxy-token";
const NODE = "alarm-node";
const INTERVAL_MS = 700;

/** Every call the proxy served, in order (method, gRPC code, ms). */
const calls: { method: string; code: string; ms: number; at: number }[] = [];
let proxy: RunningProxy;
let worker: Workerd;
let base: URL;
let signer: Harness;
const made: string[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const relists = () => calls.filter((c) => c.method.endsWith("/ListPodSandbox")).length;

describe.skipIf(skip)("the Worker's reconcile alarm in workerd, through cri-proxy on the real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the Worker alarm e2e: ${setupError}`);
    proxy = await startProxy({
      upstream: endpoint,
      grpcWebListen: "127.0.0.1:0",
      token: TOKEN,
      policy: { level: "privileged", hostPathAllow: [] },
      // Exec probes run through ExecSync, which a proxy serves only when its owner allows it.
      allow: ["ExecSync"],
      log: (r) =>
        r["front"] === "grpc-web" &&
        calls.push({
          method: String(r["method"]),
          code: String(r["code"]),
          ms: Number(r["durationMs"]),
          at: Date.now(),
        }),
    });
    const key = await makeKey("EdDSA", "wa-1");
    signer = new Harness([key], undefined as never);
    ({ worker, base } = await startWorkerd({
      nodes: { [NODE]: { url: `http://127.0.0.1:${proxy.grpcWebPort}` } },
      jwk: key.publicJwk,
      proxyToken: TOKEN,
      // hostNetwork keeps the pod on loopback; baseline refuses it.
      env: { PODSYNC_POLICY: "privileged", PODSYNC_RELIST_INTERVAL_MS: String(INTERVAL_MS) },
    }));
  }, 120_000);

  afterAll(async () => {
    await worker?.dispose();
    if (endpoint) {
      const cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
      await deleteAll(createPodRuntime(cri), made);
      cri.close();
    }
    await proxy?.shutdown(100);
  });

  const put = async (pods: unknown[], generation: number) => {
    const r = await fetch(new URL(`/nodes/${NODE}/v1/node/pods`, base), {
      method: "PUT",
      headers: { "content-type": "application/jose" },
      body: await signer.sign({ act: "apply", generation, pods }, { aud: NODE }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const getPod = async (id: string) => {
    const t = await signer.sign({ act: "status", uid: id }, { aud: NODE });
    const r = await fetch(new URL(`/nodes/${NODE}/v1/pods/${id}`, base), { headers: { authorization: `Bearer ${t}` } });
    return (await r.json()) as any;
  };

  it("SIGKILL behind podsync's back: the alarm restarts the container with no request (restartCount up); an emptied set stops the alarm", async () => {
    const id = uid("walarm");
    made.push(id);
    const pod = {
      metadata: { name: `walarm-${id.slice(-8)}`, namespace: "podsync-alarm", uid: id },
      spec: {
        hostNetwork: true,
        restartPolicy: "Always",
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] },
        ],
      },
    };
    const r1 = await put([pod], 1);
    expect(r1.status, JSON.stringify(r1.body)).toBe(200);
    expect(r1.body.pods[0].status.phase).toBe("Running");
    const first = (await getPod(id)).status.containerStatuses[0];
    expect(first).toMatchObject({ name: "main", restartCount: 0, state: { running: {} } });
    const containerId = String(first.containerID).replace("containerd://", "");

    // The alarm is relisting through the proxy (no request is being made).
    const before = relists();
    await until("the alarm's relists", async () => relists() >= before + 2);

    execFileSync(
      "ctr",
      [
        "-a",
        endpoint.replace(/^unix:\/\//, ""),
        "--connect-timeout",
        "3s",
        "-n",
        "k8s.io",
        "tasks",
        "kill",
        "-s",
        "SIGKILL",
        containerId,
      ],
      { stdio: "ignore" },
    );
    const killedAt = Date.now();
    // Only GETs from here on: they read, never sync; the restart is the alarm's.
    const after = await until("the alarm to restart the killed container", async () => {
      const c = (await getPod(id)).status.containerStatuses[0];
      return c?.restartCount === 1 && c.state.running && c.containerID !== first.containerID && c;
    });
    expect(after).toMatchObject({ name: "main", restartCount: 1, lastState: { terminated: { exitCode: 137 } } });
    const startCalls = calls.filter((c) => c.at >= killedAt && c.method.endsWith("/StartContainer"));
    expect(startCalls.map((c) => c.code)).toEqual(["OK"]);

    // An empty set drains the node; then no more alarms: the proxy sees no further relist.
    const r2 = await put([], 2);
    expect(r2.body.removed).toMatchObject([{ ok: true, deleted: true, pod: { uid: id } }]);
    await sleep(INTERVAL_MS * 2); // a pass that began before the PUT ends
    const quiet = relists();
    await sleep(INTERVAL_MS * 4);
    expect(relists()).toBe(quiet);
    expect(await getPod(id)).toMatchObject({ status: 404, type: "urn:podsync:problem:pod-not-found" });
  }, 90_000);

  it("an exec liveness probe that starts failing: the alarm's prober restarts the container (through ExecSync on the proxy)", async () => {
    const id = uid("wprobe");
    made.push(id);
    const probe = {
      exec: { command: ["sh", "-c", "[ ! -e /tmp/fail ]"] },
      periodSeconds: 1,
      failureThreshold: 1,
      timeoutSeconds: 2,
    };
    const pod = {
      metadata: { name: `wprobe-${id.slice(-8)}`, namespace: "podsync-alarm", uid: id },
      spec: {
        hostNetwork: true,
        restartPolicy: "Always",
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "Never",
            command: ["sleep", "3600"],
            livenessProbe: probe,
          },
        ],
      },
    };
    const r1 = await put([pod], 3);
    expect(r1.status, JSON.stringify(r1.body)).toBe(200);
    const first = (await getPod(id)).status.containerStatuses[0];
    const containerId = String(first.containerID).replace("containerd://", "");
    // Passing probes run in the alarm's passes and change nothing.
    await until("a passing probe through the proxy", async () =>
      calls.some((c) => c.method.endsWith("/ExecSync") && c.code === "OK"),
    );
    expect((await getPod(id)).status.containerStatuses[0].restartCount).toBe(0);

    // The probe starts failing (a file appears, behind podsync's back): the alarm kills and restarts the container
    // (a new container: a fresh root filesystem without the file).
    const cri = connectGrpc({ endpoint, timeoutMs: 10_000 });
    try {
      await cri.execSync({ containerId, cmd: ["mkdir", "/tmp/fail"], timeout: 5n });
    } finally {
      cri.close();
    }
    const after = await until(
      "the alarm to restart the container whose liveness probe failed",
      async () => {
        const c = (await getPod(id)).status.containerStatuses[0];
        return c?.restartCount >= 1 && c.containerID !== first.containerID && c;
      },
      30_000,
    );
    expect(after).toMatchObject({ name: "main", lastState: { terminated: {} } });
    const r2 = await put([], 4);
    expect(r2.body.removed).toMatchObject([{ ok: true, pod: { uid: id } }]);
  }, 90_000);

  it("an exec readiness probe run by the alarm drives Ready in the Worker's GET /v1/pods/{uid} and GET /v1/pods", async () => {
    const id = uid("wready");
    made.push(id);
    const pod = {
      metadata: { name: `wready-${id.slice(-8)}`, namespace: "podsync-alarm", uid: id },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "Never",
            command: ["sleep", "3600"],
            readinessProbe: {
              exec: { command: ["sh", "-c", "[ -e /tmp/ready ]"] },
              periodSeconds: 1,
              failureThreshold: 1,
            },
          },
        ],
      },
    };
    const r1 = await put([pod], 5);
    expect(r1.status, JSON.stringify(r1.body)).toBe(200);
    const ready = (p: any) => p.status.conditions.find((c: { type: string }) => c.type === "Ready")?.status;
    const first = await getPod(id);
    expect(ready(first)).toBe("False");
    const containerId = String(first.status.containerStatuses[0].containerID).replace("containerd://", "");
    const cri = connectGrpc({ endpoint, timeoutMs: 10_000 });
    try {
      await cri.execSync({ containerId, cmd: ["mkdir", "/tmp/ready"], timeout: 5n });
    } finally {
      cri.close();
    }
    const up = await until("Ready=True from the alarm's readiness probe", async () => {
      const p = await getPod(id);
      return ready(p) === "True" && p;
    });
    expect(up.status.containerStatuses[0]).toMatchObject({ ready: true, restartCount: 0 });
    const t = await signer.sign({ act: "status" }, { aud: NODE });
    const list = (await (
      await fetch(new URL(`/nodes/${NODE}/v1/pods`, base), { headers: { authorization: `Bearer ${t}` } })
    ).json()) as any;
    expect(list.items.find((p: any) => p.metadata.uid === id).status.containerStatuses[0].ready).toBe(true);
    const r2 = await put([], 6);
    expect(r2.body.removed).toMatchObject([{ ok: true, pod: { uid: id } }]);
  }, 90_000);
});
