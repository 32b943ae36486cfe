// The prober against the in-process CRI runtime (ExecSync answered by a test handler): kubelet's worker
// semantics (thresholds, initial results, hold after a liveness failure, startup gating, timeouts), the
// node agent's loop restarting a container through computePodActions, the schema's probe defaults and validation, and
// the Worker's refusal of probes it cannot run.
import { beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { createServer, type AddressInfo } from "node:net";
import type { CriClient } from "../../src/cri/client.js";
import { createProber } from "../../src/prober/prober.js";
import { startReconcileLoop } from "../../src/syncloop/sync-loop.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { validatePod, type InvalidPodError } from "../../src/pod/validate.js";
import { probeHandlerErrors } from "../../src/pod/probes.js";
import { decodeHealthStatus, nodeProbeNetwork } from "../../src/host/probe-network.js";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness } from "../support/http.js";
import { pod } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
let cri: CriClient;
/** Exit code per container id for the exec probe; "hang" makes ExecSync outlive its timeout. */
const verdict = new Map<string, number | "hang">();

const suite = useFakeCri();
beforeAll(async () => {
  ({ fake, cri } = suite);
  fake.runtime.runtime["ExecSync"] = (req: { containerId: string; timeout: bigint }) => {
    const v = verdict.get(req.containerId) ?? 0;
    // containerd: a command past its timeout fails the call ("timeout 1s exceeded: context deadline exceeded").
    if (v === "hang")
      throw Object.assign(new Error(`timeout ${req.timeout}s exceeded: context deadline exceeded`), {
        code: grpc.status.UNKNOWN,
      });
    return { exitCode: v, stdout: new TextEncoder().encode(v === 0 ? "ok" : "not ok"), stderr: new Uint8Array() };
  };
});

const running = (uid: string, name = "main") =>
  [...fake.runtime.containers.values()].filter(
    (c) => c.config.labels["io.kubernetes.pod.uid"] === uid && c.config.metadata?.name === name && c.state === 1,
  );

/** One busybox container with an exec readiness probe every second (answered by `verdict`). */
const execReadinessPod = () =>
  pod({
    containers: [
      {
        name: "main",
        image: "localhost/busybox:1",
        command: ["sleep", "3600"],
        readinessProbe: { exec: { command: ["check"] }, periodSeconds: 1 },
      },
    ],
  });

/** An exec readiness pod started on the fake runtime, and a prober that holds it. */
async function probedPod() {
  const p = execReadinessPod();
  const rt = createPodRuntime(cri);
  const prober = createProber({ cri });
  prober.upsert(p);
  prober.observe(p.metadata.uid, (await rt.sync(p)).after);
  return { p, uid: p.metadata.uid, main: p.spec.containers[0]!, rt, prober };
}

describe("prober workers (kubelet's worker.go)", () => {
  it("readiness starts Failure, turns Success after successThreshold, Failure after failureThreshold", async () => {
    const p = pod({
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          command: ["sleep", "3600"],
          readinessProbe: { exec: { command: ["check"] }, periodSeconds: 1, successThreshold: 2, failureThreshold: 2 },
        },
      ],
    });
    const rt = createPodRuntime(cri);
    const prober = createProber({ cri });
    prober.upsert(p);
    const s = await rt.sync(p, prober.results(p.metadata.uid));
    prober.observe(p.metadata.uid, s.after);
    const id = running(p.metadata.uid)[0]!.id;
    let t = Date.now();
    const step = async () => prober.tick((t += 1000));
    await step();
    expect(prober.results(p.metadata.uid).readiness?.get(id)).toBe("Failure"); // initial value, 1 success is below the threshold
    await step();
    expect(prober.results(p.metadata.uid).readiness?.get(id)).toBe("Success");
    verdict.set(id, 1);
    await step();
    expect(prober.results(p.metadata.uid).readiness?.get(id)).toBe("Success");
    const r = await step();
    expect(prober.results(p.metadata.uid).readiness?.get(id)).toBe("Failure");
    expect(r.changed).toEqual([p.metadata.uid]);
    expect(r.needsSync).toEqual([]); // readiness never restarts
    // The v1 status follows.
    const st = await rt.apiStatus(p.metadata.uid, p, prober.results(p.metadata.uid));
    expect(st!.apiStatus.containerStatuses[0]).toMatchObject({ ready: false, started: true });
    expect(st!.apiStatus.conditions.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "ContainersNotReady",
    });
    await rt.delete(p.metadata.uid, 0);
  });

  it("a probe that times out counts as a failure", async () => {
    const p = pod({
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          command: ["sleep", "3600"],
          livenessProbe: { exec: { command: ["check"] }, periodSeconds: 1, failureThreshold: 1, timeoutSeconds: 1 },
        },
      ],
    });
    const prober = createProber({ cri });
    prober.upsert(p);
    const s = await createPodRuntime(cri).sync(p);
    prober.observe(p.metadata.uid, s.after);
    const id = running(p.metadata.uid)[0]!.id;
    verdict.set(id, "hang");
    const events: string[] = [];
    const pr2 = createProber({ cri, onProbe: (e) => events.push(`${e.type}:${e.result}:${e.output}`) });
    pr2.upsert(p);
    pr2.observe(p.metadata.uid, s.after);
    const r = await pr2.tick(Date.now());
    expect(pr2.results(p.metadata.uid).liveness?.get(id)).toBe("Failure");
    expect(events).toEqual(["liveness:Failure:command timed out after 1s"]);
    expect(r.needsSync).toEqual([p.metadata.uid]);
    await createPodRuntime(cri).delete(p.metadata.uid, 0);
  });

  it("liveness failure: the loop syncs with the results, kubelet's kill message, a new instance, lastState terminated", async () => {
    const p = pod({
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          command: ["sleep", "3600"],
          livenessProbe: { exec: { command: ["check"] }, periodSeconds: 1, failureThreshold: 2 },
        },
      ],
    });
    const rt = createPodRuntime(cri);
    const prober = createProber({ cri });
    prober.upsert(p);
    prober.observe(p.metadata.uid, (await rt.sync(p)).after);
    const first = running(p.metadata.uid)[0]!.id;
    // Plan shows kubelet's decision once liveness has failed failureThreshold times.
    verdict.set(first, 1);
    let t = Date.now();
    await prober.tick((t += 1000));
    expect(prober.needsSync(p.metadata.uid)).toBe(false);
    await prober.tick((t += 1000));
    expect(prober.needsSync(p.metadata.uid)).toBe(true);
    const plan = await rt.plan(p, prober.results(p.metadata.uid));
    expect(Object.values(plan.actions.containersToKill)).toEqual([
      expect.objectContaining({
        name: "main",
        reason: "LivenessProbe",
        message: "Container main failed liveness probe, will be restarted",
      }),
    ]);
    // On hold until a new instance: no more probes of the old one.
    expect((await prober.tick((t += 1000))).ran).toBe(0);
    // The node agent's loop: its relist shows the prober the instance, the due probe tick asks for a sync,
    // and the loop syncs the desired pod with the results.
    const desired = new MemoryDesiredState();
    await desired.put({ pod: p, audit: { iss: "test", iat: 0 }, storedAt: 0 });
    const loop = startReconcileLoop({ runtime: rt, cri, desired, prober, manual: true });
    try {
      for (let i = 0; i < 20 && running(p.metadata.uid)[0]?.id === first; i++) await loop.tick();
    } finally {
      await loop.stop();
    }
    const second = running(p.metadata.uid)[0]!;
    expect(second.id).not.toBe(first);
    const st = await rt.apiStatus(p.metadata.uid, p, prober.results(p.metadata.uid));
    expect(st!.apiStatus.containerStatuses[0]).toMatchObject({
      restartCount: 1,
      state: { running: {} },
      lastState: { terminated: { containerID: `fake://${first}` } },
    });
    // The worker sees the new instance at its next run: probing resumes from liveness's initial Success.
    await prober.tick(Date.now() + 60_000);
    expect(prober.results(p.metadata.uid).liveness?.get(second.id)).toBe("Success");
    await rt.delete(p.metadata.uid, 0);
  });

  it("a slow probe holds only its own worker: the loop keeps probing the other pods at their period", async () => {
    // kubelet's workers are goroutines with a ticker each (worker.go): one ExecSync that takes 2.5 s delays that
    // worker alone. Before, the loop's probe tick waited for every probe it had started, so the other pods' probes
    // waited too and then came due together.
    const pods = [execReadinessPod(), execReadinessPod()];
    const rt = createPodRuntime(cri);
    const prober = createProber({ cri });
    const desired = new MemoryDesiredState();
    for (const p of pods) await desired.put({ pod: p, audit: { iss: "test", iat: 0 }, storedAt: 0 });
    const handler = fake.runtime.runtime["ExecSync"]!;
    const probed: string[] = [];
    fake.runtime.runtime["ExecSync"] = (req: { containerId: string; timeout: bigint }) => {
      probed.push(req.containerId);
      return handler(req);
    };
    const before = fake.runtime.calls.get("ExecSync") ?? 0;
    // The first ExecSync of all (one pod's first probe) is answered 2.5 s late, within the call's deadline (the
    // transport's default beyond the probe's 1 s).
    fake.runtime.fault("ExecSync", { kind: "hang", ms: 2500, times: 1 });
    const loop = startReconcileLoop({ runtime: rt, cri, desired, prober, relistIntervalMs: 300 });
    try {
      for (let i = 0; i < 200 && (fake.runtime.calls.get("ExecSync") ?? 0) === before; i++)
        await new Promise((r) => setTimeout(r, 25));
      await new Promise((r) => setTimeout(r, 2200));
      // Only the other pod's container has been answered (the held one's handler has not run yet), at its period.
      expect(new Set(probed).size).toBe(1);
      expect(probed.length).toBeGreaterThanOrEqual(2);
    } finally {
      fake.runtime.runtime["ExecSync"] = handler;
      await loop.stop();
      for (const p of pods) await rt.delete(p.metadata.uid, 0);
    }
  });

  it("a tick that finds the worker's probe still running is dropped; the next comes a period later", async () => {
    const p = execReadinessPod();
    const rt = createPodRuntime(cri);
    const prober = createProber({ cri });
    prober.upsert(p);
    prober.observe(p.metadata.uid, (await rt.sync(p)).after);
    fake.runtime.fault("ExecSync", { kind: "hang", ms: 1500, times: 1 });
    const t = Date.now();
    const held = prober.tick(t);
    await new Promise((r) => setTimeout(r, 50));
    // Due again while its probe runs: nothing runs, and its next time moves on a period (no tick every few ms).
    expect((await prober.tick(t + 1000)).ran).toBe(0);
    expect(prober.nextDue()).toBe(t + 2000);
    expect((await held).ran).toBe(1);
    await rt.delete(p.metadata.uid, 0);
  });

  it("a changed spec remakes the pod's workers, keeping the results of those that stay; the same spec object again changes nothing", async () => {
    const { p, uid, main, rt, prober } = await probedPod();
    const id = running(uid)[0]!.id;
    const t = Date.now();
    expect((await prober.tick(t)).ran).toBe(1);
    expect(prober.results(uid).readiness?.get(id)).toBe("Success");
    // The same object (a loop sync hands the stored pod over): the worker's ticker is not reset.
    prober.upsert(p);
    expect(prober.nextDue()).toBe(t + 1000);
    expect((await prober.tick(t + 500)).ran).toBe(0);
    // A new spec adds a liveness probe every 5 s: a new worker, due at once; readiness keeps its result and ticker.
    const changed = {
      ...p,
      spec: { ...p.spec, containers: [{ ...main, livenessProbe: { ...main.readinessProbe!, periodSeconds: 5 } }] },
    };
    prober.upsert(changed);
    expect(prober.spec(uid)).toBe(changed);
    expect(prober.nextDue()).toBe(0);
    expect(prober.results(uid).readiness?.get(id)).toBe("Success");
    expect((await prober.tick(t + 600)).ran).toBe(1); // the liveness worker alone
    expect(prober.nextDue()).toBe(t + 1000);
    expect((await prober.tick(t + 1000)).ran).toBe(1); // readiness, a period after its last run
    expect(prober.nextDue()).toBe(t + 2000);
    // Back to the readiness probe alone: the liveness worker is gone.
    prober.upsert(p);
    expect((await prober.tick(t + 5600)).ran).toBe(1);
    expect(prober.results(uid).liveness?.size).toBe(0);
    // No probe at all: the pod has no workers.
    prober.upsert({ ...p, spec: { ...p.spec, containers: [{ ...main, readinessProbe: undefined }] } });
    expect(prober.nextDue()).toBeUndefined();
    expect((await prober.tick(t + 60_000)).ran).toBe(0);
    await rt.delete(uid, 0);
  });

  it("a spec that changes while a probe runs: the probe's end keeps the new workers, and brings no removed state back", async () => {
    const { p, uid, main, rt, prober } = await probedPod();
    const t = Date.now();
    // A liveness probe added while the readiness probe runs: the new worker is due at once, after the old probe too.
    fake.runtime.fault("ExecSync", { kind: "hang", ms: 300, times: 1 });
    let held = prober.tick(t);
    await new Promise((r) => setTimeout(r, 50));
    const withLiveness = {
      ...p,
      spec: { ...p.spec, containers: [{ ...main, livenessProbe: { ...main.readinessProbe!, periodSeconds: 5 } }] },
    };
    prober.upsert(withLiveness);
    expect((await held).ran).toBe(1);
    expect(prober.nextDue()).toBe(0);
    expect((await prober.tick(t + 100)).ran).toBe(1);
    // Every probe removed while one runs: its end writes no state back, so nothing is due.
    fake.runtime.fault("ExecSync", { kind: "hang", ms: 300, times: 1 });
    held = prober.tick(t + 5100);
    await new Promise((r) => setTimeout(r, 50));
    prober.upsert({ ...p, spec: { ...p.spec, containers: [{ ...main, readinessProbe: undefined }] } });
    await held;
    expect(prober.nextDue()).toBeUndefined();
    expect((await prober.tick(t + 60_000)).ran).toBe(0);
    await rt.delete(uid, 0);
  });

  it("a startup probe holds liveness and readiness off until it succeeds", async () => {
    const p = pod({
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          command: ["sleep", "3600"],
          startupProbe: { exec: { command: ["started"] }, periodSeconds: 1, failureThreshold: 30 },
          livenessProbe: { exec: { command: ["alive"] }, periodSeconds: 1, failureThreshold: 1 },
        },
      ],
    });
    const events: string[] = [];
    const prober = createProber({ cri, onProbe: (e) => events.push(`${e.type}:${e.result}`) });
    prober.upsert(p);
    const rt = createPodRuntime(cri);
    prober.observe(p.metadata.uid, (await rt.sync(p)).after);
    const id = running(p.metadata.uid)[0]!.id;
    verdict.set(id, 1); // both commands fail until the "app" has started
    let t = Date.now();
    await prober.tick((t += 1000));
    await prober.tick((t += 1000));
    expect(events).toEqual(["startup:Failure", "startup:Failure"]);
    expect(prober.needsSync(p.metadata.uid)).toBe(false);
    expect(
      (await rt.apiStatus(p.metadata.uid, p, prober.results(p.metadata.uid)))!.apiStatus.containerStatuses[0],
    ).toMatchObject({ started: false, ready: false });
    verdict.set(id, 0);
    await prober.tick((t += 1000)); // startup succeeds; liveness may run from the next tick
    expect(events.at(-1)).toBe("startup:Success");
    verdict.set(id, 1);
    await prober.tick((t += 1000));
    expect(events.at(-1)).toBe("liveness:Failure");
    expect(prober.needsSync(p.metadata.uid)).toBe(true);
    await rt.delete(p.metadata.uid, 0);
  });

  it("a container seen created but not yet started is waited for, not failed: once it runs, no restart before its first probe (startupProbe failureThreshold 60)", async () => {
    const p = pod({
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          command: ["sleep", "3600"],
          startupProbe: { exec: { command: ["true"] }, periodSeconds: 1, failureThreshold: 60 },
        },
      ],
    });
    const events: string[] = [];
    const prober = createProber({ cri, onProbe: (e) => events.push(`${e.type}:${e.result}`) });
    prober.upsert(p);
    const rt = createPodRuntime(cri);
    const after = (await rt.sync(p)).after;
    const id = running(p.metadata.uid)[0]!.id;
    // What a relist between CreateContainer and StartContainer shows: the same container, created.
    const created = {
      ...after,
      containerStatuses: after.containerStatuses.map((c) => ({ ...c, state: "created" as const, startedAt: 0 })),
    };
    prober.observe(p.metadata.uid, created);
    let t = Date.now();
    await prober.tick((t += 1000));
    expect(prober.results(p.metadata.uid).startup?.get(id)).toBeUndefined(); // still Unknown: nothing published
    prober.observe(p.metadata.uid, after);
    expect(prober.needsSync(p.metadata.uid)).toBe(false); // today: a Failure stood for the running container
    await prober.tick((t += 1000));
    expect(events).toEqual(["startup:Success"]);
    expect(prober.results(p.metadata.uid).startup?.get(id)).toBe("Success");
    await rt.delete(p.metadata.uid, 0);
  });
});

describe("probes in the pod schema", () => {
  const base = (c: Record<string, unknown>) => ({
    metadata: { name: "p", uid: "u1" },
    spec: { containers: [{ name: "main", image: "busybox", ports: [{ name: "http", containerPort: 8080 }], ...c }] },
  });
  it("API-server defaults", () => {
    const p = validatePod(base({ readinessProbe: { httpGet: { port: "http" } } }));
    expect(p.spec.containers[0]!.readinessProbe).toEqual({
      httpGet: { path: "/", port: "http", scheme: "HTTP" },
      initialDelaySeconds: 0,
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
  });
  it.each([
    [{ livenessProbe: {} }, "spec.containers[0].livenessProbe", "must specify a handler type"],
    [
      { livenessProbe: { exec: { command: ["x"] }, tcpSocket: { port: 1 } } },
      "spec.containers[0].livenessProbe",
      "may not specify more than 1 handler type",
    ],
    [
      { livenessProbe: { exec: { command: ["x"] }, successThreshold: 2 } },
      "spec.containers[0].livenessProbe.successThreshold",
      "must be 1",
    ],
    [
      { startupProbe: { exec: { command: ["x"] }, successThreshold: 3 } },
      "spec.containers[0].startupProbe.successThreshold",
      "must be 1",
    ],
    [
      { readinessProbe: { exec: { command: ["x"] }, terminationGracePeriodSeconds: 5 } },
      "spec.containers[0].readinessProbe.terminationGracePeriodSeconds",
      "must not be set for readinessProbes",
    ],
    [
      { livenessProbe: { exec: { command: ["x"] }, terminationGracePeriodSeconds: 0 } },
      "spec.containers[0].livenessProbe.terminationGracePeriodSeconds",
      "must be greater than 0",
    ],
    [
      { livenessProbe: { exec: { command: ["x"] }, periodSeconds: -1 } },
      "spec.containers[0].livenessProbe.periodSeconds",
      "greater than or equal to 0",
    ],
    [
      { livenessProbe: { exec: { command: [] } } },
      "spec.containers[0].livenessProbe.exec.command",
      "exec.command is required",
    ],
    [
      { livenessProbe: { httpGet: { port: "nope" } } },
      "spec.containers[0].livenessProbe.httpGet.port",
      'port name "nope" is not one of the container\'s ports',
    ],
    [
      { livenessProbe: { httpGet: { port: 70000 } } },
      "spec.containers[0].livenessProbe.httpGet.port",
      "between 1 and 65535",
    ],
    [
      { livenessProbe: { httpGet: { port: 80, scheme: "FTP" } } },
      "spec.containers[0].livenessProbe.httpGet.scheme",
      "HTTP",
    ],
    [
      { livenessProbe: { httpGet: { port: 80, httpHeaders: [{ name: "bad header", value: "x" }] } } },
      "spec.containers[0].livenessProbe.httpGet.httpHeaders[0].name",
      "valid HTTP header name",
    ],
    [
      { livenessProbe: { exec: { command: ["x"] }, bogus: 1 } },
      "spec.containers[0].livenessProbe.bogus",
      "unknown field",
    ],
  ])("%j → %s", (c, path, msg) => {
    let err: InvalidPodError | undefined;
    try {
      validatePod(base(c));
    } catch (e) {
      err = e as InvalidPodError;
    }
    expect(err?.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ path, message: expect.stringContaining(msg) })]),
    );
  });
  it("init containers take no probes", () => {
    expect(() =>
      validatePod({
        metadata: { name: "p", uid: "u" },
        spec: {
          initContainers: [{ name: "i", image: "b", readinessProbe: { exec: { command: ["x"] } } }],
          containers: [{ name: "m", image: "b" }],
        },
      }),
    ).toThrow(/spec.initContainers\[0\].readinessProbe: may not be set for init containers/);
  });
  it("Workers: httpGet, tcpSocket and grpc refused naming the field; exec allowed", () => {
    const p = validatePod(
      base({
        readinessProbe: { httpGet: { port: 8080 } },
        livenessProbe: { tcpSocket: { port: 8080 } },
        startupProbe: { exec: { command: ["true"] } },
      }),
    );
    expect(probeHandlerErrors(p, ["exec"], "a Worker cannot connect to the pod")).toEqual([
      {
        path: "spec.containers[0].livenessProbe.tcpSocket",
        message:
          "tcpSocket probes cannot run on this deployment: a Worker cannot connect to the pod; use an exec probe",
      },
      {
        path: "spec.containers[0].readinessProbe.httpGet",
        message: "httpGet probes cannot run on this deployment: a Worker cannot connect to the pod; use an exec probe",
      },
    ]);
  });
  it("Workers' app: 400 invalid-pod naming the field, before any CRI call", async () => {
    const h = await Harness.start(cri, {
      probeHandlers: {
        allowed: ["exec"],
        why: "a Worker reaches the node only through cri-proxy and cannot connect to the pod",
      },
    });
    try {
      fake.runtime.resetCalls();
      const r = await h.post("/v1/pods/sync", base({ readinessProbe: { httpGet: { port: 8080 } } }));
      expect(r).toMatchObject({
        status: 400,
        body: {
          type: "urn:podsync:problem:invalid-pod",
          errors: [{ path: "spec.containers[0].readinessProbe.httpGet" }],
        },
      });
      expect(fake.runtime.totalCalls()).toBe(0);
    } finally {
      await h.close();
    }
  });
});

describe("probe network (Node)", () => {
  it("grpc health: SERVING succeeds, NOT_SERVING and UNIMPLEMENTED fail with kubelet's messages", async () => {
    const server = new grpc.Server();
    let status = 1;
    server.addService(
      {
        Check: {
          path: "/grpc.health.v1.Health/Check",
          requestStream: false,
          responseStream: false,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      } as grpc.ServiceDefinition,
      {
        Check: (_c: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) =>
          done(null, Buffer.from([0x08, status])),
      },
    );
    const port = await new Promise<number>((res, rej) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
    );
    try {
      expect(await nodeProbeNetwork.grpc("127.0.0.1", port, "", 2000)).toEqual({
        result: "Success",
        output: "service is healthy",
      });
      status = 2;
      expect(await nodeProbeNetwork.grpc("127.0.0.1", port, "svc", 2000)).toEqual({
        result: "Failure",
        output: 'service unhealthy (responded with "NOT_SERVING")',
      });
    } finally {
      server.forceShutdown();
    }
    const r = await nodeProbeNetwork.grpc("127.0.0.1", port, "", 500);
    expect(r.result).toBe("Failure");
    expect(decodeHealthStatus(Buffer.from([0x08, 0x03]))).toBe(3);
  });
  it("tcp: a refused connection fails", async () => {
    expect((await nodeProbeNetwork.tcp("127.0.0.1", 1, 1000)).result).toBe("Failure");
  });

  it('a pod with no IP: tcpSocket, httpGet and grpc probes fail with "no pod IP" and never reach the node\'s own loopback', async () => {
    // Something listens on the node's loopback: an empty host would connect to it (Node's net.connect({host: ""})).
    const accepted: string[] = [];
    const srv = createServer((sock) => {
      accepted.push("connection");
      sock.end("HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const port = (srv.address() as AddressInfo).port;
    try {
      const probe = (handler: Record<string, unknown>) => ({ ...handler, periodSeconds: 1, failureThreshold: 1 });
      const p = pod({
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            command: ["sleep", "3600"],
            readinessProbe: probe({ tcpSocket: { port } }),
            livenessProbe: probe({ httpGet: { port, path: "/" } }),
          },
          {
            name: "side",
            image: "localhost/busybox:1",
            command: ["sleep", "3600"],
            readinessProbe: probe({ grpc: { port } }),
          },
        ],
      });
      const events: { type: string; result: string; output: string }[] = [];
      const prober = createProber({ cri, network: nodeProbeNetwork, onProbe: (e) => events.push(e) });
      prober.upsert(p);
      const s = await createPodRuntime(cri).sync(p);
      // The sandbox has no IP (a CNI that gave none, or a netns being torn down): the status's ips are empty.
      for (const sb of fake.runtime.sandboxes.values()) if (sb.config.metadata?.uid === p.metadata.uid) sb.ip = "";
      const again = await createPodRuntime(cri).status(p.metadata.uid);
      expect(again!.status.ips).toEqual([]);
      prober.observe(p.metadata.uid, again!.status);
      await prober.tick(Date.now() + 1000);
      expect(events.map((e) => [e.type, e.result, e.output]).sort()).toEqual([
        ["liveness", "Failure", expect.stringMatching(/^no pod IP/)],
        ["readiness", "Failure", expect.stringMatching(/^no pod IP/)],
        ["readiness", "Failure", expect.stringMatching(/^no pod IP/)],
      ]);
      expect(accepted).toEqual([]);
      expect(s.ok).toBe(true);
      await createPodRuntime(cri).delete(p.metadata.uid, 0);
    } finally {
      srv.close();
    }
  });
});
