// Admission against the node over HTTP: a pod the node cannot take is refused with 403 `admission`, kubelet's
// reason and "Pod was rejected: ..." message and the failing fields, before any runtime call; the other pods
// are the node's desired set.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Harness, startStack, type Stack } from "../support/http.js";
import { pod as validPod, uid } from "../support/pods.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import type { NodeInfo } from "../../src/lifecycle/predicates.js";
import type { RefusedPod } from "../../src/usecases/admission/refusals.js";
import { createAdmission } from "../../src/usecases/admission/admission.js";
import type { Pod } from "../../src/pod/schema.js";
import { ProblemError } from "../../src/usecases/problems.js";

let stack: Stack;
let h: Harness;
const desired = new MemoryDesiredState();
const nodeInfo: NodeInfo = {
  name: "node-a",
  labels: {
    "kubernetes.io/hostname": "node-a",
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
    site: "berlin",
  },
  taints: [{ key: "dedicated", value: "edge", effect: "NoSchedule" }],
  allocatable: { milliCPU: 2000, memory: 2 ** 30, pods: 110 },
  conditions: () => (diskPressure ? ["DiskPressure"] : []),
};
/** The eviction manager's DiskPressure, as the node's loop would set it. */
let diskPressure = false;
const privileged = { level: "privileged" as const, hostPathAllow: [] };
/** A set through the admission pipeline's node stage, as PUT /v1/node/pods runs it (fields under `pods[i]`). */
const admitSetOnNode = (pods: Pod[], node: NodeInfo) =>
  createAdmission({ policy: privileged, node, runtime: { admit: () => undefined } })
    .admit(pods.map((pod) => ({ pod })))
    .inOrder(new Set(), "pods");
/** What the app hands on for kubelet's rejectPod events. */
const events: RefusedPod[] = [];
const tolerant = [{ key: "dedicated", operator: "Exists" as const }];

const podInput = (
  extra: Record<string, unknown> = {},
  containers: unknown[] = [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }],
) => ({
  metadata: { name: "web", namespace: "default", uid: uid("adm") },
  spec: { terminationGracePeriodSeconds: 2, tolerations: tolerant, containers, ...extra },
});

async function refused(p: Promise<{ status: number; type: string; body: any }>) {
  const before = stack.fake.runtime.totalCalls();
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBe(403);
  expect(r.type).toBe("application/problem+json");
  expect(r.body).toMatchObject({
    type: "urn:podsync:problem:admission",
    title: "Refused by the node's admission",
    status: 403,
  });
  expect(stack.fake.runtime.totalCalls()).toBe(before);
  return r.body;
}

beforeAll(async () => {
  stack = await startStack({ timeoutMs: 1500, maxBodyBytes: 64 * 1024 });
  // hostPort is outside the default baseline policy; the owner allows it here so admission is what decides.
  h = await Harness.start(stack.cri, {
    nodeInfo,
    desired,
    policy: privileged,
    onAdmissionRefused: (r) => void events.push(...r),
  });
  // Another pod the node already has: 1.5 cpu, 512Mi, host port 8080.
  await desired.put({
    pod: validPod(
      {
        tolerations: tolerant,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            ports: [{ containerPort: 80, hostPort: 8080 }],
            resources: { requests: { cpu: "1500m", memory: "512Mi" } },
          },
        ],
      },
      { name: "other", namespace: "apps", uid: "other-uid" },
    ),
    audit: { iss: "test", iat: 0 },
    storedAt: 0,
  });
});
afterAll(async () => {
  await h.close();
  await stack.close();
});

describe("403 admission", () => {
  it("nodeSelector that the node's labels do not satisfy: NodeAffinity, on sync and plan alike", async () => {
    const pod = podInput({ nodeSelector: { site: "paris" } });
    const body = await refused(h.post("/v1/pods/sync", pod));
    expect(body).toMatchObject({
      detail: "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
      reason: "NodeAffinity",
      errors: [
        {
          path: "spec.nodeSelector",
          message: "NodeAffinity: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
        },
      ],
    });
    await refused(h.post("/v1/pods/plan", pod));
  });

  it("a refused sync hands the pod as sent, with kubelet's reason and message, to the events; a refused plan does not", async () => {
    events.length = 0;
    const pod = podInput({ nodeSelector: { site: "paris" } });
    await refused(h.post("/v1/pods/plan", pod));
    expect(events).toEqual([]);
    await refused(h.post("/v1/pods/sync", pod));
    expect(events).toEqual([
      {
        pod: { uid: pod.metadata.uid, name: "web", namespace: "default" },
        reason: "NodeAffinity",
        message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
      },
    ]);
  });

  it("kubelet's default labels and the owner's are there to select on", async () => {
    const r = await h.post(
      "/v1/pods/plan",
      podInput({ nodeSelector: { "kubernetes.io/os": "linux", "kubernetes.io/hostname": "node-a", site: "berlin" } }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  });

  it("an untolerated NoSchedule taint of the owner's: TaintToleration naming it", async () => {
    const body = await refused(h.post("/v1/pods/plan", podInput({ tolerations: [] })));
    expect(body).toMatchObject({
      reason: "TaintToleration",
      errors: [{ path: "spec.tolerations", message: expect.stringContaining("{dedicated=edge:NoSchedule}") }],
    });
  });

  it("requests over what the other desired pods leave: OutOfcpu and OutOfmemory, kubelet's numbers", async () => {
    const body = await refused(
      h.post(
        "/v1/pods/sync",
        podInput({}, [
          { name: "main", image: "localhost/busybox:1", resources: { requests: { cpu: "600m", memory: "600Mi" } } },
        ]),
      ),
    );
    expect(body).toMatchObject({
      reason: "OutOfcpu",
      detail: "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000",
      errors: [
        {
          path: "spec.containers[0].resources.requests.cpu",
          message: "OutOfcpu: Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000",
        },
        {
          path: "spec.containers[0].resources.requests.memory",
          message: `OutOfmemory: Node didn't have enough resource: memory, requested: ${600 * 2 ** 20}, used: ${512 * 2 ** 20}, capacity: ${2 ** 30}`,
        },
      ],
    });
  });

  it("a host port another desired pod holds: NodePorts naming that pod; the holder itself may re-sync", async () => {
    const body = await refused(
      h.post(
        "/v1/pods/plan",
        podInput({}, [{ name: "main", image: "localhost/busybox:1", ports: [{ containerPort: 80, hostPort: 8080 }] }]),
      ),
    );
    expect(body).toMatchObject({
      reason: "NodePorts",
      errors: [
        {
          path: "spec.containers[0].ports[0].hostPort",
          message: expect.stringContaining("used by pod apps/other (other-uid)"),
        },
      ],
    });
    const self = (await desired.get("other-uid"))!.pod;
    const again = await h.post("/v1/pods/plan", self);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
  });

  it("spec.nodeName of another node: NodeName", async () => {
    expect(await refused(h.post("/v1/pods/plan", podInput({ nodeName: "node-b" })))).toMatchObject({
      reason: "NodeName",
      detail: "Pod was rejected: Predicate NodeName failed: node(s) didn't match the requested node name",
    });
  });

  it("under DiskPressure a new pod is refused as kubelet's eviction manager refuses it (reason Evicted); a pod already desired re-syncs", async () => {
    diskPressure = true;
    try {
      const body = await refused(h.post("/v1/pods/sync", podInput()));
      expect(body).toMatchObject({
        reason: "Evicted",
        detail: "Pod was rejected: The node had condition: [DiskPressure]. ",
        errors: [{ path: "metadata.name", message: "Evicted: The node had condition: [DiskPressure]. " }],
      });
      const self = (await desired.get("other-uid"))!.pod;
      const again = await h.post("/v1/pods/plan", self);
      expect(again.status, JSON.stringify(again.body)).toBe(200);
    } finally {
      diskPressure = false;
    }
    expect((await h.post("/v1/pods/plan", podInput())).status).toBe(200);
  });

  it("without a desired set (the default), no other pods count", async () => {
    const alone = await Harness.start(stack.cri, { nodeInfo, policy: privileged });
    try {
      const r = await alone.post(
        "/v1/pods/plan",
        podInput({}, [
          {
            name: "main",
            image: "localhost/busybox:1",
            ports: [{ containerPort: 80, hostPort: 8080 }],
            resources: { requests: { cpu: "2" } },
          },
        ]),
      );
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    } finally {
      await alone.close();
    }
  });

  it("/openapi.json lists admission and policy among sync's and plan's 403s", async () => {
    const doc = (await h.fetch("/openapi.json")).body;
    for (const route of ["/v1/pods/sync", "/v1/pods/plan"]) {
      expect(doc.paths[route].post.responses["403"].description).toContain("urn:podsync:problem:admission");
      expect(doc.paths[route].post.responses["403"].description).toContain("urn:podsync:problem:policy");
    }
  });
});

describe("a node-wide set (for PUT /v1/node/pods)", () => {
  it("is refused as a whole, each refused pod's fields named under pods[i]", () => {
    const p = (cpu: string) =>
      validPod({
        tolerations: tolerant,
        containers: [{ name: "main", image: "localhost/busybox:1", resources: { requests: { cpu } } }],
      });
    expect(() => admitSetOnNode([p("1"), p("1")], nodeInfo)).not.toThrow();
    let err: unknown;
    try {
      admitSetOnNode([p("1500m"), p("1"), validPod({ nodeName: "node-b", tolerations: tolerant })], nodeInfo);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ProblemError);
    expect((err as { refused: RefusedPod[] }).refused.map((r) => r.reason)).toEqual(["OutOfcpu", "NodeName"]);
    expect((err as ProblemError).toProblem()).toMatchObject({
      type: "urn:podsync:problem:admission",
      status: 403,
      reason: "OutOfcpu",
      errors: [
        {
          path: "pods[1].spec.containers[0].resources.requests.cpu",
          message: "OutOfcpu: Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000",
        },
        {
          path: "pods[2].spec.nodeName",
          message: "NodeName: Predicate NodeName failed: node(s) didn't match the requested node name",
        },
      ],
    });
  });
});
