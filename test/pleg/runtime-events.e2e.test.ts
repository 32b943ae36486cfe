// Crash to restart through the runtime's events, on the REAL lab containerd (1.6: containerd's own event service,
// TaskExit in k8s.io, picked from CRI Version), with the relist interval at 60 s so only the event can restart it
// in time. The issue (#21) asks for this one timed assertion: SIGKILL → the replacement started within 1 s.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GrpcTransport } from "../../src/cri/grpc-transport.js";
import { createCriClient, type CriClient } from "../../src/cri/client.js";
import { watchContainerEvents, type EventStreamState } from "../../src/cri/container-events.js";
import { ContainerState } from "../../src/gen/runtime/v1/api_pb.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { startReconcileLoop, type ReconcileLoop } from "../../src/syncloop/sync-loop.js";
import { nsToMs } from "../../src/kuberuntime/pod-status.js";
import { Pod } from "../../src/pod/schema.js";
import { until } from "../support/wait.js";
import { uid, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const node = {
  ...defaultNodeConfig(),
  podLogsDir: mkdtempSync(join(tmpdir(), "podsync-ev-logs-")),
  rootDir: mkdtempSync(join(tmpdir(), "podsync-ev-root-")),
};
const runtimeOpts: PodRuntimeOptions = { node };
const ctr = (...args: string[]) =>
  execFileSync("ctr", ["-a", endpoint.replace(/^unix:\/\//, ""), "--connect-timeout", "3s", "-n", "k8s.io", ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });

describe.skipIf(skip)("restarts through runtime events on real containerd", () => {
  let transport: GrpcTransport;
  let cri: CriClient;
  let loop: ReconcileLoop | undefined;
  const desired = new MemoryDesiredState();
  const states: EventStreamState[] = [];
  const made: string[] = [];
  let engine: ReturnType<typeof createPodRuntime>;

  beforeAll(() => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    transport = new GrpcTransport({ endpoint, timeoutMs: 30_000 });
    cri = createCriClient(transport);
    engine = createPodRuntime(cri, runtimeOpts);
  });
  afterAll(async () => {
    await loop?.stop();
    const rt = createPodRuntime(cri, runtimeOpts);
    await deleteAll(rt, made);
    transport?.close();
  });

  it("a SIGKILLed container is started again within 1 s, with the relist interval at 60 s", async () => {
    const p = Pod.parse({
      metadata: { name: "ev-kill", namespace: "default", uid: uid("ev-kill") },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] },
        ],
      },
    });
    made.push(p.metadata.uid);
    await desired.put({ pod: p, audit: { iss: "test", iat: 0 }, storedAt: Date.now() });
    loop = startReconcileLoop({
      runtime: engine,
      cri,
      desired,
      relistIntervalMs: 60_000,
      events: (on) =>
        watchContainerEvents({
          transport,
          version: () => cri.version({}),
          onEvent: on.event,
          onState: (s) => (states.push(s), on.state(s)),
        }),
    });
    const list = async () =>
      (
        await cri.listContainers({ filter: { labelSelector: { "io.kubernetes.pod.uid": p.metadata.uid } } })
      ).containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING);
    // The start-up relist makes it.
    const [before] = await until("the start-up sync", async () => (await list()).length === 1 && list());
    await until("the event stream", async () => states.at(-1)?.up === true);
    expect(states.at(-1)!.source).toBe("containerd");

    const t0 = Date.now();
    ctr("tasks", "kill", "-s", "SIGKILL", before!.id);
    const [after] = await until(
      "the restart",
      async () => {
        const r = await list();
        return r.length === 1 && r[0]!.id !== before!.id && r;
      },
      10_000,
      20,
    );
    const st = (await cri.containerStatus({ containerId: after!.id })).status!;
    const restartMs = nsToMs(st.startedAt) - t0;
    console.log(`crash → restart through the event: ${restartMs} ms (the kill sent at t0 by ctr)`);
    expect(restartMs).toBeLessThanOrEqual(1000);
    expect(after!.annotations["io.kubernetes.container.restartCount"]).toBe("1");
  });

  it("a pod a request has just synced, which no relist has seen, is started again through its event too", async () => {
    // As the HTTP route does it: the pod held from the loop, stored, synced by the request, its read-back handed to
    // the loop, released. The loop's last relist was before it; the next one is minutes away (events are up).
    const q = Pod.parse({
      metadata: { name: "ev-req", namespace: "default", uid: uid("ev-req") },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] },
        ],
      },
    });
    made.push(q.metadata.uid);
    // The relist the last test's restart asked for is over (the next one is the evented period away).
    await new Promise((r) => setTimeout(r, 1500));
    const entry = { pod: q, audit: { iss: "test", iat: 0 }, storedAt: Date.now() };
    await desired.put(entry);
    const o = await loop!.pods.sync({ runtime: engine, entry, pod: q });
    if (o.kind !== "done") throw new Error(`the request's sync was ${o.kind}`);
    const r = o.value;
    expect(r.ok).toBe(true);
    const [before] = r.after.containerStatuses;
    const t0 = Date.now();
    ctr("tasks", "kill", "-s", "SIGKILL", before!.id);
    const list = async () =>
      (
        await cri.listContainers({ filter: { labelSelector: { "io.kubernetes.pod.uid": q.metadata.uid } } })
      ).containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING);
    const [after] = await until(
      "the restart",
      async () => {
        const l = await list();
        return l.length === 1 && l[0]!.id !== before!.id && l;
      },
      10_000,
      20,
    );
    const restartMs = nsToMs((await cri.containerStatus({ containerId: after!.id })).status!.startedAt) - t0;
    console.log(`crash → restart of a request's pod through the event: ${restartMs} ms`);
    expect(restartMs).toBeLessThanOrEqual(1000);
  });
});
