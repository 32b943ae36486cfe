// v1.PodStatus and probes on a REAL containerd, through the HTTP server (GET /v1/pods/{uid}) with the prober
// and its loop running: phases, kubelet's waiting reasons, termination messages, and exec/httpGet/startup
// probes. Network probes reach only loopback: hostNetwork pods serving on 127.0.0.1 (busybox httpd).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";
import { createProber, type Prober } from "../../src/prober/prober.js";
import { startReconcileLoop, type ReconcileLoop } from "../../src/syncloop/sync-loop.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { MemoryPodLock } from "../../src/kuberuntime/pod-lock.js";
import type { V1Pod } from "../../src/status/api-status.js";
import { nodeLogFiles } from "../../src/host/logs/log-files.js";
import { nodeTerminationFiles } from "../../src/host/volumes/termination-files.js";
import { nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { nodeProbeNetwork } from "../../src/host/probe-network.js";
import { Harness } from "../support/http.js";
import { until } from "../support/wait.js";
import { uid, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

let cri: CriClient;
let h: Harness;
let prober: Prober;
let loop: ReconcileLoop;
const made: string[] = [];
const node = {
  ...defaultNodeConfig(),
  podLogsDir: mkdtempSync(join(tmpdir(), "podsync-status-logs-")),
  rootDir: mkdtempSync(join(tmpdir(), "podsync-status-root-")),
};
const runtimeOpts: PodRuntimeOptions = {
  node,
  logFiles: nodeLogFiles,
  terminationFiles: nodeTerminationFiles,
  podDirs: nodePodDirs,
  hostIPs: ["127.0.0.1"],
  lock: new MemoryPodLock(),
};
const IMAGE = "localhost/busybox:1";

const podInput = (name: string, spec: Record<string, unknown>) => {
  const id = uid(name);
  made.push(id);
  return { metadata: { name, namespace: "default", uid: id }, spec: { terminationGracePeriodSeconds: 1, ...spec } };
};
const main = (command: string[], extra: Record<string, unknown> = {}) => ({
  name: "main",
  image: IMAGE,
  imagePullPolicy: "Never",
  command,
  ...extra,
});

async function sync(p: unknown) {
  const r = await h.post("/v1/pods/sync", p);
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body;
}

async function get(id: string): Promise<V1Pod> {
  const token = await h.sign({ act: "status", uid: id });
  const r = await h.fetch(`/v1/pods/${id}`, { headers: { authorization: `Bearer ${token}` } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as V1Pod;
}
const shell = (_uid: string, containerId: string, cmd: string) =>
  cri.execSync({ containerId, cmd: ["sh", "-c", cmd], timeout: 5n });
const containerId = (p: V1Pod, name = "main") =>
  p.status.containerStatuses.find((c) => c.name === name)!.containerID!.replace("containerd://", "");

describe.skipIf(skip)("pod status and probes on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    prober = createProber({ cri, network: nodeProbeNetwork, hostIP: "127.0.0.1" });
    // The server and the node agent's loop share the desired state (every accepted sync stores its pod) and
    // the per-pod lock, as on a node; the loop drives the probes and restarts what they fail.
    const desired = new MemoryDesiredState();
    h = await Harness.start(
      cri,
      { prober, desired, policy: { level: "privileged", hostPathAllow: [] } },
      {},
      runtimeOpts,
    );
    loop = startReconcileLoop({
      runtime: createPodRuntime(cri, runtimeOpts),
      cri,
      desired,
      prober,
      relistIntervalMs: 200,
    });
  });
  afterAll(async () => {
    await loop?.stop();
    const rt = createPodRuntime(cri, runtimeOpts);
    await deleteAll(rt, made);
    await h?.close();
    cri?.close();
  });

  it("Running: ready, started, containerd:// ids, conditions True, podIP, qosClass; the sync's status is read after the steps", async () => {
    const p = podInput("st-run", { containers: [main(["sleep", "3600"])] });
    const body = await sync(p);
    expect(body.status.containerStatuses[0]).toMatchObject({
      name: "main",
      image: IMAGE,
      state: { running: { startedAt: expect.any(String) } },
      containerID: expect.stringMatching(/^containerd:\/\/[0-9a-f]{64}$/),
    });
    const v = await get(p.metadata.uid);
    expect(v).toMatchObject({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "st-run", uid: p.metadata.uid },
      spec: { restartPolicy: "Always" },
    });
    expect(v.status).toMatchObject({
      phase: "Running",
      qosClass: "BestEffort",
      podIP: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/),
      hostIP: "127.0.0.1",
      startTime: expect.any(String),
    });
    expect(v.status.containerStatuses[0]).toMatchObject({
      ready: true,
      started: true,
      restartCount: 0,
      imageID: expect.any(String),
    });
    expect(Object.fromEntries(v.status.conditions.map((c) => [c.type, c.status]))).toEqual({
      PodReadyToStartContainers: "True",
      Initialized: "True",
      Ready: "True",
      ContainersReady: "True",
      PodScheduled: "True",
    });
    for (const c of v.status.conditions) expect(c.lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // The CRI-level view stays at /runtime, and /status is its alias.
    const token = await h.sign({ act: "status", uid: p.metadata.uid });
    const rt = await h.fetch(`/v1/pods/${p.metadata.uid}/runtime`, { headers: { authorization: `Bearer ${token}` } });
    expect(rt.body.status.containers[0]).toMatchObject({ name: "main", state: "running" });
  });

  it("restartPolicy Never: Succeeded on exit 0; Failed on exit 3 (Error, 3) with the termination message file; FallbackToLogsOnError", async () => {
    const ok = podInput("st-ok", { restartPolicy: "Never", containers: [main(["sh", "-c", "exit 0"])] });
    const bad = podInput("st-bad", {
      restartPolicy: "Never",
      containers: [main(["sh", "-c", "echo 'bye from main' > /dev/termination-log; exit 3"])],
    });
    const logs = podInput("st-logs", {
      restartPolicy: "Never",
      containers: [
        main(["sh", "-c", "echo first; echo last words; exit 2"], {
          terminationMessagePolicy: "FallbackToLogsOnError",
        }),
      ],
    });
    await Promise.all([sync(ok), sync(bad), sync(logs)]);
    const okS = await until("st-ok to succeed", async () => {
      const v = await get(ok.metadata.uid);
      return v.status.phase === "Succeeded" && v;
    });
    expect(okS.status.containerStatuses[0]!.state.terminated).toMatchObject({ exitCode: 0, reason: "Completed" });
    expect(okS.status.conditions.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "PodCompleted",
    });
    const badS = await until("st-bad to fail", async () => {
      const v = await get(bad.metadata.uid);
      return v.status.phase === "Failed" && v;
    });
    expect(badS.status.containerStatuses[0]!.state.terminated).toMatchObject({
      exitCode: 3,
      reason: "Error",
      message: "bye from main\n",
      startedAt: expect.any(String),
      finishedAt: expect.any(String),
      containerID: expect.stringMatching(/^containerd:\/\//),
    });
    expect(badS.status.conditions.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "PodFailed",
    });
    const logsS = await until("st-logs to fail", async () => {
      const v = await get(logs.metadata.uid);
      return v.status.phase === "Failed" && v;
    });
    expect(logsS.status.containerStatuses[0]!.state.terminated).toMatchObject({
      exitCode: 2,
      message: "first\nlast words\n",
    });
  });

  it("Pending with PodInitializing while an init container runs", async () => {
    const p = podInput("st-init", {
      initContainers: [{ name: "init", image: IMAGE, imagePullPolicy: "Never", command: ["sleep", "3600"] }],
      containers: [main(["sleep", "3600"])],
    });
    await sync(p);
    const v = await until("the init container to run", async () => {
      const v = await get(p.metadata.uid);
      return v.status.initContainerStatuses?.[0]?.state.running && v;
    });
    expect(v.status.phase).toBe("Pending");
    expect(v.status.containerStatuses[0]!.state).toEqual({ waiting: { reason: "PodInitializing" } });
    expect(v.status.conditions.find((c) => c.type === "Initialized")).toMatchObject({
      status: "False",
      reason: "ContainersNotInitialized",
      message: "containers with incomplete status: [init]",
    });
  });

  const crashLoop = async (p: ReturnType<typeof podInput>, name: string, init: boolean) => {
    const list = (v: V1Pod) => (init ? v.status.initContainerStatuses! : v.status.containerStatuses);
    await sync(p);
    // The pod is desired, so the node agent's loop restarts the first crash at once (no back-off); the second
    // instance's exit starts a 10 s back-off, and the status already says CrashLoopBackOff (from the runtime).
    await until(`${name} in back-off after its first restart`, async () => {
      const s = list(await get(p.metadata.uid)).find((c) => c.name === name);
      return s?.restartCount === 1 && s.state.waiting?.reason === "CrashLoopBackOff";
    });
    const body = await sync(p); // a request in the back-off is told so
    expect(
      body.steps.map((s: { error?: string }) => s.error),
      JSON.stringify(body),
    ).toContain("CrashLoopBackOff");
    return get(p.metadata.uid);
  };

  it("a crash-looping app container: waiting CrashLoopBackOff with kubelet's message, lastState terminated, phase Running", async () => {
    const p = podInput("st-crash", { containers: [main(["sh", "-c", "exit 1"])] });
    const v = await crashLoop(p, "main", false);
    expect(v.status.phase).toBe("Running");
    expect(v.status.containerStatuses[0]).toMatchObject({
      restartCount: 1,
      ready: false,
      state: {
        waiting: {
          reason: "CrashLoopBackOff",
          message: `back-off 10s restarting failed container=main pod=st-crash_default(${p.metadata.uid})`,
        },
      },
      lastState: { terminated: { exitCode: 1, reason: "Error" } },
    });
  });

  it("a crash-looping init container: waiting CrashLoopBackOff, phase Pending", async () => {
    const p = podInput("st-initcrash", {
      initContainers: [{ name: "init", image: IMAGE, imagePullPolicy: "Never", command: ["sh", "-c", "exit 1"] }],
      containers: [main(["sleep", "3600"])],
    });
    const v = await crashLoop(p, "init", true);
    expect(v.status.phase).toBe("Pending");
    expect(v.status.initContainerStatuses![0]).toMatchObject({
      state: { waiting: { reason: "CrashLoopBackOff" } },
      lastState: { terminated: { exitCode: 1 } },
    });
    expect(v.status.containerStatuses[0]!.state).toEqual({ waiting: { reason: "PodInitializing" } });
  });

  it("exec liveness probe that starts failing: the loop restarts the container after failureThreshold periods; lastState terminated", async () => {
    const p = podInput("st-live", {
      containers: [
        main(["sh", "-c", "touch /tmp/healthy; exec sleep 3600"], {
          livenessProbe: {
            exec: { command: ["sh", "-c", "test -f /tmp/healthy"] },
            periodSeconds: 1,
            failureThreshold: 2,
            terminationGracePeriodSeconds: 1,
          },
        }),
      ],
    });
    await sync(p);
    const v0 = await until("running", async () => {
      const v = await get(p.metadata.uid);
      return v.status.containerStatuses[0]!.state.running && v;
    });
    const first = containerId(v0);
    await shell(p.metadata.uid, first, "rm /tmp/healthy");
    const v = await until("the restart", async () => {
      const v = await get(p.metadata.uid);
      const c = v.status.containerStatuses[0]!;
      return c.restartCount === 1 && c.state.running && v;
    });
    expect(v.status.containerStatuses[0]!.lastState.terminated).toMatchObject({
      containerID: `containerd://${first}`,
      finishedAt: expect.any(String),
    });
    expect(containerId(v)).not.toBe(first);
  });

  it("an exec probe that times out counts as a failure (liveness restarts the container)", async () => {
    const p = podInput("st-slow", {
      containers: [
        main(["sleep", "3600"], {
          livenessProbe: {
            exec: { command: ["sleep", "5"] },
            periodSeconds: 2,
            timeoutSeconds: 1,
            failureThreshold: 1,
          },
        }),
      ],
    });
    await sync(p);
    const v = await until(
      "the restart",
      async () => {
        const v = await get(p.metadata.uid);
        return v.status.containerStatuses[0]!.restartCount >= 1 && v;
      },
      45_000,
    );
    expect(v.status.containerStatuses[0]!.lastState.terminated).toBeDefined();
  });

  it("httpGet readiness on a hostNetwork pod: Ready flips false, then true, as httpd on 127.0.0.1 stops and starts answering", async () => {
    const port = 20_000 + ((process.pid * 7 + Date.now()) % 20_000);
    const serve = `httpd -p 127.0.0.1:${port} -h /www`;
    const p = podInput("st-http", {
      hostNetwork: true,
      containers: [
        main(["sh", "-c", `mkdir -p /www && echo ok > /www/index.html && ${serve} && exec sleep 3600`], {
          readinessProbe: {
            httpGet: { host: "127.0.0.1", port, path: "/index.html" },
            periodSeconds: 1,
            failureThreshold: 1,
          },
        }),
      ],
    });
    await sync(p);
    const ready = (want: boolean) =>
      until(`Ready=${want}`, async () => {
        const v = await get(p.metadata.uid);
        return (
          v.status.conditions.find((c) => c.type === "Ready")!.status === (want ? "True" : "False") &&
          v.status.containerStatuses[0]!.ready === want &&
          v
        );
      });
    const v = await ready(true);
    expect(v.status.podIP).toBe("127.0.0.1");
    const id = containerId(v);
    await shell(p.metadata.uid, id, "kill $(pidof httpd)");
    const down = await ready(false);
    expect(down.status.conditions.find((c) => c.type === "ContainersReady")).toMatchObject({
      status: "False",
      reason: "ContainersNotReady",
      message: "containers with unready status: [main]",
    });
    expect(down.status.phase).toBe("Running");
    await shell(p.metadata.uid, id, serve);
    await ready(true);
    expect((await get(p.metadata.uid)).status.containerStatuses[0]!.restartCount).toBe(0);
  });

  it("a startup probe holds liveness off until it succeeds", async () => {
    const p = podInput("st-startup", {
      containers: [
        main(["sleep", "3600"], {
          startupProbe: {
            exec: { command: ["sh", "-c", "test -f /tmp/started"] },
            periodSeconds: 1,
            failureThreshold: 60,
          },
          livenessProbe: {
            exec: { command: ["sh", "-c", "test -f /tmp/started"] },
            periodSeconds: 1,
            failureThreshold: 1,
          },
        }),
      ],
    });
    await sync(p);
    const v0 = await until("running", async () => {
      const v = await get(p.metadata.uid);
      return v.status.containerStatuses[0]!.state.running && v;
    });
    // Liveness would fail at once; while startup has not passed it does not run: no restart, not started.
    await new Promise((r) => setTimeout(r, 3000));
    const held = await get(p.metadata.uid);
    expect(held.status.containerStatuses[0]).toMatchObject({ restartCount: 0, started: false, ready: false });
    await shell(p.metadata.uid, containerId(v0), "touch /tmp/started");
    const up = await until("started", async () => {
      const v = await get(p.metadata.uid);
      return v.status.containerStatuses[0]!.started && v;
    });
    expect(up.status.containerStatuses[0]).toMatchObject({ restartCount: 0, ready: true });
  });
});
