// One broken sandbox (its PodSandboxStatus fails, as containerd's did with "failed to get sandbox ip ... device
// or resource busy" after a netns could not be removed) is that pod's status, never the node's: GET /v1/pods and
// GET /v1/pods/{uid} answer with the pod's reason, the loop goes on with the other pods and reads the broken one
// again with back-off, and DELETE removes what it can and says what was left. The in-process CRI runtime with
// the failure injected for one sandbox id.
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness } from "../support/http.js";
import { uid } from "../support/pods.js";
import type { CriClient } from "../../src/cri/client.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { startReconcileLoop } from "../../src/syncloop/sync-loop.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
let cri: CriClient;
let h: Harness;
const desired = new MemoryDesiredState();
const broken = new Set<string>();
const BUSY =
  "failed to get sandbox ip: check network namespace closed: remove netns: unlinkat /var/run/netns/cni-x: device or resource busy";

const suite = useFakeCri();
beforeAll(async () => {
  ({ fake, cri } = suite);
  for (const m of ["PodSandboxStatus", "RemovePodSandbox"]) {
    const orig = fake.runtime.runtime[m]!;
    fake.runtime.runtime[m] = (req: { podSandboxId: string }) => {
      if (broken.has(req.podSandboxId)) throw Object.assign(new Error(BUSY), { code: grpc.status.UNKNOWN });
      return orig(req);
    };
  }
  h = await Harness.start(cri, { desired });
});
afterAll(async () => {
  await h.close();
});

const podInput = (name: string) => ({
  metadata: { name, namespace: "broken", uid: uid(name) },
  spec: {
    terminationGracePeriodSeconds: 0,
    containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }],
  },
});
const sandboxesOf = (id: string) => [...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === id);
const containersOf = (id: string) =>
  [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === id);

describe("one broken sandbox", () => {
  it("GET /v1/pods and GET /v1/pods/{uid} answer 200 with that pod's reason; the loop goes on with the others; DELETE is best effort and says what was left", async () => {
    const [a, b] = [podInput("broken-a"), podInput("healthy-b")];
    for (const p of [a, b]) expect((await h.post("/v1/pods/sync", p)).status).toBe(200);
    const [sbA] = sandboxesOf(a.metadata.uid);
    broken.add(sbA!.id);

    const list = await h.fetch("/v1/pods", { headers: { authorization: `Bearer ${await h.sign({ act: "status" })}` } });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    const byName = Object.fromEntries(list.body.items.map((p: any) => [p.metadata.name, p.status]));
    expect(byName["broken-a"]).toMatchObject({
      reason: "RuntimeError",
      message: expect.stringContaining("PodSandboxStatus: failed to get sandbox ip"),
    });
    expect(byName["broken-a"].message).toContain("device or resource busy");
    expect(byName["healthy-b"]).toMatchObject({ phase: "Running" });
    expect(byName["healthy-b"].reason).toBeUndefined();
    const one = await h.fetch(`/v1/pods/${a.metadata.uid}`, {
      headers: { authorization: `Bearer ${await h.sign({ act: "status", uid: a.metadata.uid })}` },
    });
    expect(one.status).toBe(200);
    expect(one.body.status).toMatchObject({ reason: "RuntimeError" });

    // The loop: B's container dies behind podsync's back and comes back; A is neither synced (no second sandbox
    // from half a status) nor failing the pass; its error is logged once.
    const logs: Record<string, unknown>[] = [];
    const loop = startReconcileLoop({
      runtime: createPodRuntime(cri),
      cri,
      desired,
      manual: true,
      log: (r) => logs.push(r),
    });
    try {
      await loop.tick();
      const [ctrB] = containersOf(b.metadata.uid);
      fake.runtime.exit(ctrB!.id, 137);
      for (let i = 0; i < 3; i++) await loop.tick();
      expect(containersOf(b.metadata.uid).filter((c) => c.state === 1)).toHaveLength(1);
      expect(sandboxesOf(a.metadata.uid)).toHaveLength(1);
      const errs = logs.filter((l) => l["event"] === "error");
      expect(errs).toEqual([
        expect.objectContaining({
          podUid: a.metadata.uid,
          what: "sync",
          error: expect.stringContaining("device or resource busy"),
        }),
      ]);
      expect(logs.some((l) => l["what"] === "relist" && l["event"] === "error")).toBe(false);
    } finally {
      await loop.stop();
    }

    // DELETE: its containers are removed; the sandbox that cannot be removed is what is left (207).
    const del = await h.fetch(`/v1/pods/${a.metadata.uid}`, {
      method: "DELETE",
      headers: {
        authorization: `Bearer ${await h.sign({ act: "delete", uid: a.metadata.uid, gracePeriodSeconds: 0 })}`,
      },
    });
    expect(del.status, JSON.stringify(del.body)).toBe(207);
    expect(del.body).toMatchObject({
      ok: false,
      deleted: true,
      desired: true,
      statusError: expect.stringContaining("PodSandboxStatus"),
    });
    expect(del.body.steps.filter((s: any) => !s.ok)).toEqual([
      expect.objectContaining({
        action: "RemovePodSandbox",
        target: sbA!.id,
        message: expect.stringContaining("device or resource busy"),
      }),
    ]);
    expect(containersOf(a.metadata.uid)).toEqual([]);
    // Once the runtime recovers, a second DELETE removes the rest.
    broken.delete(sbA!.id);
    const again = await h.fetch(`/v1/pods/${a.metadata.uid}`, {
      method: "DELETE",
      headers: {
        authorization: `Bearer ${await h.sign({ act: "delete", uid: a.metadata.uid, gracePeriodSeconds: 0 })}`,
      },
    });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(sandboxesOf(a.metadata.uid)).toEqual([]);
    await createPodRuntime(cri).delete(b.metadata.uid, 0);
  });
});
