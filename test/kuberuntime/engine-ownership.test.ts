// What podsync's engine owns on a node, through the real HTTP app in front of the in-process runtime:
// one uid is one pod (issue 8.8), and podsync touches only what it labelled as its own (8.9).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import type { FakeServer } from "../support/fake-cri.js";
import { type Harness, startStack, type Stack } from "../support/http.js";
import { uid } from "../support/pods.js";

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
  spec: {
    terminationGracePeriodSeconds: 2,
    containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }],
  },
});

/** Every CRI method that changes the runtime. */
const WRITES = [
  "RunPodSandbox",
  "StopPodSandbox",
  "RemovePodSandbox",
  "CreateContainer",
  "StartContainer",
  "StopContainer",
  "RemoveContainer",
  "PullImage",
  "ExecSync",
  "UpdateContainerResources",
];
const writes = () => WRITES.reduce((n, m) => n + (fake.runtime.calls.get(m) ?? 0), 0);
const podContainers = (id: string) =>
  [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === id);

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
        expect(r.body).toMatchObject({
          type: "urn:podsync:problem:uid-conflict",
          status: 409,
          holder: { name: "web", namespace: "default" },
        });
        expect(r.body.detail).toContain(`already belongs to pod default/web`);
        expect(writes()).toBe(w);
      }
    }
    expect(podContainers(id).map((c) => `${c.id}:${c.state}`)).toEqual(before);
    // The owner itself still syncs (converged: no steps).
    const again = await h.post("/v1/pods/sync", podInput(id));
    expect(again.status).toBe(200);
    expect(again.body.steps).toEqual([]);
    expect((await h.fetch("/openapi.json")).body.paths["/v1/pods/sync"].post.responses["409"].description).toContain(
      "uid-conflict",
    );
  });
});

describe("podsync touches only what it manages", () => {
  /** A sandbox and a running container made by another manager (plain CRI calls): the uid label, no podsync label. */
  async function foreignPod(id: string) {
    const labels = {
      "io.kubernetes.pod.uid": id,
      "io.kubernetes.pod.name": "theirs",
      "io.kubernetes.pod.namespace": "default",
    };
    const sb = (
      await stack.cri.runPodSandbox({
        config: { metadata: { name: "theirs", namespace: "default", uid: id, attempt: 0 }, labels },
      })
    ).podSandboxId;
    const ctr = (
      await stack.cri.createContainer({
        podSandboxId: sb,
        config: {
          metadata: { name: "app", attempt: 0 },
          image: { image: "localhost/busybox:1" },
          command: ["sleep", "1d"],
          labels: { ...labels, "io.kubernetes.container.name": "app" },
        },
      })
    ).containerId;
    await stack.cri.startContainer({ containerId: ctr });
    return { sb, ctr };
  }
  const untouched = (f: { sb: string; ctr: string }) => {
    expect(fake.runtime.sandboxes.get(f.sb)?.state).toBe(api.PodSandboxState.SANDBOX_READY);
    expect(fake.runtime.containers.get(f.ctr)?.state).toBe(api.ContainerState.CONTAINER_RUNNING);
  };
  const bearer = async (act: string, id: string) => ({ authorization: `Bearer ${await h.sign({ act, uid: id })}` });

  it("DELETE, status, logs and exec of a uid only another manager uses: 404, and no write reaches the runtime", async () => {
    const id = uid();
    const f = await foreignPod(id);
    const w = writes();
    const d = await h.fetch(`/v1/pods/${id}`, { method: "DELETE", headers: await bearer("delete", id) });
    expect(d.status, JSON.stringify(d.body)).toBe(404);
    expect(d.body).toMatchObject({ type: "urn:podsync:problem:pod-not-found" });
    expect((await h.fetch(`/v1/pods/${id}/runtime`, { headers: await bearer("status", id) })).status).toBe(404);
    expect((await h.fetch(`/v1/pods/${id}`, { headers: await bearer("status", id) })).status).toBe(404);
    expect(writes()).toBe(w);
    untouched(f);
  });

  it("a podsync sync of that uid makes its own sandbox and never kills, reuses or collects the foreign objects", async () => {
    const id = uid();
    const f = await foreignPod(id);
    const r = await h.post("/v1/pods/sync", podInput(id));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.actions).toMatchObject({ createSandbox: true });
    expect(r.body.steps.map((s: any) => s.action)).toEqual(["CreatePodSandbox", "StartContainer"]);
    untouched(f);
    // Its own DELETE removes its own objects only.
    const d = await h.fetch(`/v1/pods/${id}`, { method: "DELETE", headers: await bearer("delete", id) });
    expect(d.status).toBe(200);
    expect(d.body.steps.filter((s: any) => s.target === f.sb || s.target === "app")).toEqual([]);
    untouched(f);
    expect(podContainers(id).map((c) => c.id)).toEqual([f.ctr]);
  });
});
