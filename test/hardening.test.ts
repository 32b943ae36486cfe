// Hardening regressions through a real server (the Harness) in front of the in-process runtime: numbers that
// become deadlines or sizes, $(VAR) expansion, parser errors that could echo secrets, HTTP hygiene.
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { expand } from "../src/kuberuntime/expansion.js";
import { expandedLength } from "../src/pod/env-size.js";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { POD_TERMINATION_GRACE_PERIOD_ANNOTATION } from "../src/kuberuntime/labels.js";
import type { FakeServer } from "./support/fake-cri.js";
import { Harness, startStack, type Stack } from "./support/http.js";
import { uid } from "./support/pods.js";

let fake: FakeServer;
let h: Harness;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ timeoutMs: 1500, maxBodyBytes: 64 * 1024 });
  ({ fake, h } = stack);
});
afterAll(() => stack.close());
beforeEach(() => fake.runtime.clearFaults());

const podInput = (id = uid(), spec: Record<string, unknown> = {}, container: Record<string, unknown> = {}) => ({
  metadata: { name: "web", namespace: "default", uid: id },
  spec: { terminationGracePeriodSeconds: 2, containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"], ...container }], ...spec },
});

/** Refused with this status and problem type, and the runtime saw no call at all. */
async function refused(p: Promise<{ status: number; type: string; body: any }>, status: number, slug: string) {
  const before = fake.runtime.totalCalls();
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.type).toBe("application/problem+json");
  expect(r.body).toMatchObject({ type: `urn:podsync:problem:${slug}`, status });
  expect(fake.runtime.totalCalls()).toBe(before);
  return r.body;
}

/** The server still answers, and still syncs a pod. */
async function stillServes() {
  expect((await h.fetch("/healthz")).status).toBe(200);
  expect((await h.post("/v1/pods/sync", podInput())).status).toBe(200);
}

const del = async (id: string, claims: Record<string, unknown> = {}) =>
  h.fetch(`/v1/pods/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: id, ...claims })}` } });
const podContainers = (id: string) => [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === id);

describe("bounds on numbers that become deadlines or sizes", () => {
  it("a spec grace period past podsync's limit, or not an integer, is 400 invalid-pod naming the field", async () => {
    for (const g of [400000000000, 86401, 2.5, -1]) {
      const body = await refused(h.post("/v1/pods/sync", podInput(uid(), { terminationGracePeriodSeconds: g })), 400, "invalid-pod");
      expect(body.errors.map((e: any) => e.path)).toEqual(["pod.spec.terminationGracePeriodSeconds"]);
    }
    expect((await h.post("/v1/pods/plan", podInput(uid(), { terminationGracePeriodSeconds: 86400 }))).status).toBe(200);
    await stillServes();
  });

  it("resource quantities that do not fit the runtime's int64 fields are 400 invalid-pod", async () => {
    const body = await refused(h.post("/v1/pods/sync", podInput(uid(), {}, { resources: { limits: { memory: "1e300", cpu: "1e300" } } })), 400, "invalid-pod");
    expect(body.errors.map((e: any) => e.path).sort()).toEqual(["pod.spec.containers[0].resources.limits.cpu", "pod.spec.containers[0].resources.limits.memory"]);
  });

  it("DELETE with a huge or fractional gracePeriodSeconds is 400 before any runtime call; the pod stays; the server still serves", async () => {
    const pod = podInput();
    expect((await h.post("/v1/pods/sync", pod)).status).toBe(200);
    const id = pod.metadata.uid;
    for (const g of [1e300, 400000000000, 2.5, -1, "30"]) {
      const body = await refused(del(id, { gracePeriodSeconds: g }), 400, "bad-request");
      expect(body.errors).toEqual([{ path: "gracePeriodSeconds", message: expect.stringContaining("whole number of seconds") }]);
    }
    expect(podContainers(id)).toHaveLength(1);
    await stillServes();
    expect((await del(id, { gracePeriodSeconds: 0 })).status).toBe(200);
  });

  it("a container whose grace annotation is huge (made outside podsync) is killed with a bounded deadline, and the server still serves", async () => {
    const pod = podInput();
    expect((await h.post("/v1/pods/sync", pod)).status).toBe(200);
    for (const c of podContainers(pod.metadata.uid)) c.config.annotations[POD_TERMINATION_GRACE_PERIOD_ANNOTATION] = "400000000000000000000";
    const r = await del(pod.metadata.uid);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(podContainers(pod.metadata.uid)).toHaveLength(0);
    await stillServes();
  });

  it("the CRI client keeps any deadline finite and in range (absurd, infinite or NaN timeouts never crash)", async () => {
    const cri = connectGrpc({ endpoint: fake.endpoint, timeoutMs: 1000 });
    try {
      for (const timeoutMs of [1e300, 4e14, Infinity, Number.NaN]) expect((await cri.version({}, { timeoutMs })).runtimeName).toBe("fake");
    } finally {
      cri.close();
    }
  });
});

describe("$(VAR) expansion is bounded before any runtime call", () => {
  /** V0 = 8 bytes, Vi = "$(Vi-1)$(Vi-1)": under 1 KB of spec that expands to gigabytes. */
  const doubling = (n: number) => [{ name: "V0", value: "xxxxxxxx" }, ...Array.from({ length: n }, (_, i) => ({ name: `V${i + 1}`, value: `$(V${i})$(V${i})` }))];

  it("the doubling pod is 400 invalid-pod naming the env value, with zero runtime calls", async () => {
    const pod = podInput(uid(), {}, { env: doubling(21) });
    expect(JSON.stringify(pod).length).toBeLessThan(1024);
    const body = await refused(h.post("/v1/pods/sync", pod), 400, "invalid-pod");
    // V14 is the first over 128 KiB (8 * 2^14 = 131072 is not over; 8 * 2^15 is).
    expect(body.errors).toEqual([
      { path: "pod.spec.containers[0].env[15].value", message: expect.stringMatching(/expands .* to 262144 bytes; at most 128 KiB per value/) },
      { path: "pod.spec.containers[0].env", message: expect.stringMatching(/at most 1024 KiB per container/) },
    ]);
    // A chain long enough to be astronomically large is refused the same way (nothing is expanded).
    await refused(h.post("/v1/pods/plan", podInput(uid(), {}, { env: doubling(1030) })), 400, "invalid-pod");
  });

  it("command and args count: one argument expanding past 128 KiB is refused; the limits themselves pass", async () => {
    const env = doubling(14); // V14 = 128 KiB exactly
    await refused(h.post("/v1/pods/plan", podInput(uid(), {}, { env, args: ["$(V14)x"] })), 400, "invalid-pod");
    expect((await h.post("/v1/pods/plan", podInput(uid(), {}, { env, args: ["$(V14)"] }))).status).toBe(200);
  });

  it("the size scan agrees with the expansion itself, byte for byte", () => {
    const text = fc.array(fc.constantFrom("$", "(", ")", "A", "B", "x", "é", "😀", "\ud800"), { maxLength: 24 }).map((a) => a.join(""));
    fc.assert(
      fc.property(text, fc.dictionary(fc.constantFrom("A", "B", "x", "é"), text), (input, defs) => {
        const vars = new Map(Object.entries(defs));
        const lengths = new Map([...vars].map(([k, v]) => [k, new TextEncoder().encode(v).length]));
        expect(expandedLength(input, lengths)).toBe(new TextEncoder().encode(expand(input, vars)).length);
      }),
      { numRuns: 2000 },
    );
  });
});
