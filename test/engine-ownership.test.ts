// What podsync's engine owns on a node, through the real HTTP app in front of the in-process runtime:
// one uid is one pod (issue 8.8), and podsync touches only what it labelled as its own (8.9).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

const podInput = (id: string, name = "web", namespace = "default") => ({
  metadata: { name, namespace, uid: id },
  spec: { terminationGracePeriodSeconds: 2, containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }] },
});

/** Every CRI method that changes the runtime. */
const WRITES = ["RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "PullImage", "ExecSync", "UpdateContainerResources"];
const writes = () => WRITES.reduce((n, m) => n + (fake.runtime.calls.get(m) ?? 0), 0);
const podContainers = (id: string) => [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === id);

describe("one uid is one pod", () => {
  it("a pod signed with a running pod's uid but another name or namespace is 409 uid-conflict, with no runtime write; plan says the same", async () => {
    const id = uid();
    expect((await h.post("/v1/pods/sync", podInput(id))).status).toBe(200);
    const before = podContainers(id).map((c) => `${c.id}:${c.state}`);
    for (const other of [podInput(id, "intruder"), podInput(id, "web", "other-ns")]) {
      for (const path of ["/v1/pods/sync", "/v1/pods/plan"] as const) {
        const w = writes();
        const r = await h.post(path, other);
        expect(r.status, JSON.stringify(r.body)).toBe(409);
        expect(r.type).toBe("application/problem+json");
        expect(r.body).toMatchObject({ type: "urn:podsync:problem:uid-conflict", status: 409, holder: { name: "web", namespace: "default" } });
        expect(r.body.detail).toContain(`already belongs to pod default/web`);
        expect(writes()).toBe(w);
      }
    }
    expect(podContainers(id).map((c) => `${c.id}:${c.state}`)).toEqual(before);
    // The owner itself still syncs (converged: no steps).
    const again = await h.post("/v1/pods/sync", podInput(id));
    expect(again.status).toBe(200);
    expect(again.body.steps).toEqual([]);
    expect((await h.fetch("/openapi.json")).body.paths["/v1/pods/sync"].post.responses["409"].description).toContain("uid-conflict");
  });
});
