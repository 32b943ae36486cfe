// Fault tests: a CRI error at every step, the runtime dying mid-sync, deadlines, load on one pod and on many,
// and hostile bodies. The invariant throughout: a structured failure now, a converged pod on the next sync,
// and nothing half-made left behind.
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { getPodStatus } from "../../src/kuberuntime/pod-status.js";
import { computePodActions } from "../../src/kuberuntime/compute-actions.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import type { Pod } from "../../src/pod/schema.js";
import type { FakeServer } from "../support/fake-cri.js";
import { type Harness, startStack, type Stack } from "../support/http.js";
import { pod, uid, syncOnce } from "../support/pods.js";

let fake: FakeServer;
let cri: CriClient;
let h: Harness;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ timeoutMs: 1000, maxBodyBytes: 16 * 1024 });
  ({ fake, cri, h } = stack);
});
afterAll(() => stack.close());
beforeEach(() => fake.runtime.clearFaults());

const opts = () => ({ pullBackOff: new MemoryPullBackOff() });

/** Converged: computePodActions wants nothing, one ready sandbox, every app container running once. */
async function expectConverged(client: CriClient, p: Pod) {
  const status = await getPodStatus(client, p.metadata);
  expect(computePodActions(p, status)).toMatchObject({
    killPod: false,
    createSandbox: false,
    containersToStart: [],
    containersToKill: {},
  });
  expect(status.sandboxStatuses.filter((s) => s.state === api.PodSandboxState.SANDBOX_READY)).toHaveLength(1);
  for (const c of p.spec.containers)
    expect(status.containerStatuses.filter((s) => s.name === c.name && s.state === "running")).toHaveLength(1);
}

/** Sync until converged (bounded), as a fleet controller retrying would. */
async function syncUntilConverged(client: CriClient, p: Pod, o = opts()) {
  for (let i = 0; i < 5; i++) {
    const r = await syncOnce(client, p, o).catch((e) => e);
    if (!(r instanceof Error) && r.ok && r.steps.length === 0) break;
  }
  await expectConverged(client, p);
}

describe("a CRI error in each SyncPod step", () => {
  const twoContainers = () =>
    pod({
      initContainers: [{ name: "init", image: "localhost/busybox:1", command: ["true"] }],
      containers: [
        { name: "a", image: "localhost/busybox:1", command: ["sleep", "1d"] },
        { name: "b", image: "registry.example.com/img:1", imagePullPolicy: "Always", command: ["sleep", "1d"] },
      ],
    });
  const methods = [
    "ListPodSandbox",
    "ListContainers",
    "PodSandboxStatus",
    "ContainerStatus",
    "RunPodSandbox",
    "ImageStatus",
    "PullImage",
    "CreateContainer",
    "StartContainer",
    "RemoveContainer",
  ];
  for (const method of methods) {
    it(`${method} failing: a structured failure, then the next syncs converge`, async () => {
      fake.runtime.pullable.add("registry.example.com/img:1");
      const p = twoContainers();
      // Walk the pod part of the way so that every method is on the path of some sync.
      await syncOnce(cri, p, opts()); // sandbox + init (exits at once)
      fake.runtime.fault(method, { kind: "error", code: 13, message: `injected ${method}`, times: 1 });
      const r = await syncOnce(cri, p, opts()).catch((e) => e);
      if (r instanceof Error) {
        expect(r).toMatchObject({ name: "CriError", code: 13, method });
      } else if (!r.ok) {
        expect(r.steps.find((s: { ok: boolean }) => !s.ok)).toMatchObject({
          ok: false,
          grpcCode: "INTERNAL",
          message: expect.stringContaining(`injected ${method}`),
        });
      }
      fake.runtime.clearFaults();
      await syncUntilConverged(cri, p);
    });
  }

  for (const method of ["StopContainer", "StopPodSandbox"]) {
    it(`${method} failing while replacing a dead sandbox: no new sandbox on top of the old one`, async () => {
      const p = pod();
      await syncUntilConverged(cri, p);
      const sb = [...fake.runtime.sandboxes.values()].find((s) => s.config.metadata?.uid === p.metadata.uid)!;
      sb.state = api.PodSandboxState.SANDBOX_NOTREADY;
      fake.runtime.fault(method, { kind: "error", code: 2, message: "stuck", times: 1 });
      const r = await syncOnce(cri, p, opts());
      expect(r.ok).toBe(false);
      expect(r.steps.find((s) => !s.ok)).toMatchObject({
        error: method === "StopContainer" ? "KillContainerError" : "KillPodSandboxError",
      });
      expect(r.steps.some((s) => s.action === "CreatePodSandbox")).toBe(false);
      await syncUntilConverged(cri, p);
    });
  }
});

describe("the runtime dying, and deadlines", () => {
  it("runtime killed mid-sync, then restarted: the next sync converges", async () => {
    const p = pod();
    fake.runtime.fault("CreateContainer", { kind: "hang", ms: 5000, times: 1 });
    const inFlight = syncOnce(cri, p, opts());
    await new Promise((r) => setTimeout(r, 150));
    await fake.stop();
    const r = await inFlight;
    expect(r.ok).toBe(false);
    expect(["UNAVAILABLE", "CANCELLED", "UNKNOWN", "INTERNAL"]).toContain(r.steps.at(-1)!.grpcCode);
    fake.runtime.clearFaults();
    await fake.restart();
    const again = connectGrpc({ endpoint: fake.endpoint, timeoutMs: 1000 });
    await syncUntilConverged(again, p);
    again.close();
  });

  it("a StartContainer past its deadline is RunContainerError DEADLINE_EXCEEDED; the created instance is replaced later", async () => {
    const p = pod();
    fake.runtime.fault("StartContainer", { kind: "hang", ms: 3000, times: 1 });
    const r = await syncOnce(cri, p, opts());
    expect(r.steps.at(-1)).toMatchObject({
      action: "StartContainer",
      ok: false,
      error: "RunContainerError",
      grpcCode: "DEADLINE_EXCEEDED",
    });
    fake.runtime.clearFaults();
    await syncUntilConverged(cri, p);
    const all = [...fake.runtime.containers.values()].filter(
      (c) => c.config.labels["io.kubernetes.pod.uid"] === p.metadata.uid,
    );
    expect(all).toHaveLength(1); // the stuck created instance was garbage-collected
  });
});

const podBody = (id: string) => ({
  metadata: { name: "load", uid: id },
  spec: {
    terminationGracePeriodSeconds: 2,
    containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }],
  },
});

describe("load", () => {
  it("50 concurrent syncs of one pod: exactly one sandbox, one container", async () => {
    const id = uid("one");
    const rs = await Promise.all(Array.from({ length: 50 }, () => h.post("/v1/pods/sync", podBody(id))));
    expect(new Set(rs.map((r) => r.status))).toEqual(new Set([200]));
    expect([...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === id)).toHaveLength(1);
    expect(
      [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === id),
    ).toHaveLength(1);
  });

  it("200 concurrent syncs of different pods all succeed", async () => {
    const ids = Array.from({ length: 200 }, () => uid("many"));
    const rs = await Promise.all(ids.map((id) => h.post("/v1/pods/sync", podBody(id))));
    expect(rs.filter((r) => r.status !== 200)).toEqual([]);
    const made = new Set([...fake.runtime.sandboxes.values()].map((s) => s.config.metadata?.uid));
    for (const id of ids) expect(made.has(id)).toBe(true);
  });
});

describe("hostile bodies never reach the runtime and never give 500", () => {
  const types = ["application/jose", "application/json", "application/yaml", "text/plain", ""];
  async function hostile(body: Uint8Array | string, type: string, signature?: string) {
    const before = fake.runtime.totalCalls();
    const headers: Record<string, string> = {};
    if (type) headers["content-type"] = type;
    if (signature) headers["podsync-signature"] = signature;
    const r = await h.fetch("/v1/pods/sync", { method: "POST", headers, body: body as BodyInit });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(r.type).toBe("application/problem+json");
    expect(fake.runtime.totalCalls()).toBe(before);
  }

  it("random bytes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), fc.constantFrom(...types), (b, t) => hostile(b, t)),
      { numRuns: 60 },
    );
  });

  it("fuzzed JSON, bare and as a detached-signature body", async () => {
    const sig = await h.sign({ act: "sync", body_sha256: "x" });
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), fc.boolean(), (v, withSig) =>
        hostile(JSON.stringify(v), "application/json", withSig ? sig : undefined),
      ),
      { numRuns: 80 },
    );
  });

  it("validly signed but fuzzed pods: 400 with field errors (never 500, never the runtime)", async () => {
    const arb = fc.record({
      metadata: fc.record({ name: fc.string(), uid: fc.oneof(fc.string(), fc.integer()) }, { requiredKeys: [] }),
      spec: fc.record(
        {
          containers: fc.array(
            fc.record({
              name: fc.string(),
              image: fc.string(),
              ports: fc.array(fc.record({ containerPort: fc.integer() })),
            }),
            { maxLength: 3 },
          ),
          restartPolicy: fc.string(),
        },
        { requiredKeys: [] },
      ),
    });
    await fc.assert(
      fc.asyncProperty(arb, async (p) => {
        const before = fake.runtime.totalCalls();
        const r = await h.post("/v1/pods/plan", p);
        if (r.status === 200) return; // a fuzzed pod that happens to be valid is fine
        expect(r.status).toBe(400);
        expect(r.body.errors.length).toBeGreaterThan(0);
        expect(fake.runtime.totalCalls()).toBe(before);
      }),
      { numRuns: 80 },
    );
  });
});
