// The CRI calls of a first sync (issue #21 item 4: at most 6 for a one-container pod), counted per method by the
// in-process runtime: the uid check's ListPodSandbox is the only list (the sync decides from it: absent-pods.ts),
// ImageStatus only as the pull policy needs it, and the read-back after the steps finds what they made without a
// list (statusOfMade). And the read-back says what a full status read says.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness } from "../support/http.js";
import { pod, uid } from "../support/pods.js";
import type { CriClient } from "../../src/cri/client.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { AbsentPods } from "../../src/kuberuntime/absent-pods.js";
import { startNode } from "../../src/node.js";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importJWK, SignJWT, type JWK } from "jose";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
let cri: CriClient;
let h: Harness;

const suite = useFakeCri();
beforeAll(async () => {
  ({ fake, cri } = suite);
  h = await Harness.start(cri, {
    desired: new MemoryDesiredState(),
    policy: { level: "privileged", hostPathAllow: [] },
  });
  // The runtime's name (one Version, kept for the process's life).
  expect((await h.post("/v1/pods/sync", podInput())).status).toBe(200);
});
afterAll(async () => {
  await h.close();
});
beforeEach(() => fake.runtime.resetCalls());

const podInput = (o: { hostNetwork?: boolean; imagePullPolicy?: string; image?: string } = {}) => {
  const id = uid("first");
  return {
    metadata: { name: id, namespace: "calls", uid: id },
    spec: {
      hostNetwork: o.hostNetwork ?? true,
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: "main",
          image: o.image ?? "localhost/busybox:1",
          imagePullPolicy: o.imagePullPolicy ?? "IfNotPresent",
          command: ["sleep", "1d"],
        },
      ],
    },
  };
};
const calls = () => Object.fromEntries([...fake.runtime.calls].filter(([, n]) => n > 0));

describe("a first sync's CRI calls", () => {
  it("a hostNetwork pod with one container: 6, and the read-back says what a full status read says", async () => {
    const p = podInput();
    const r = await h.post("/v1/pods/sync", p);
    expect(r.status).toBe(200);
    expect(calls()).toEqual({
      ListPodSandbox: 1,
      RunPodSandbox: 1,
      ImageStatus: 1,
      CreateContainer: 1,
      StartContainer: 1,
      ContainerStatus: 1,
    });
    expect(h.logs.at(-1)).toMatchObject({ route: "/v1/pods/sync", criCalls: 6 });
    // The same pod read in full (lists, PodSandboxStatus, ContainerStatus): the same containers, the same sandbox
    // (its creation time is the one the sync sent the call at: within the call's duration of the runtime's).
    const bearer = async () => ({ authorization: `Bearer ${await h.sign({ act: "status", uid: p.metadata.uid })}` });
    const full = await h.fetch(`/v1/pods/${p.metadata.uid}/runtime`, { headers: await bearer() });
    expect(full.status).toBe(200);
    const [mine, theirs] = [r.body.runtime, full.body.status];
    expect(mine.containers).toEqual(theirs.containers);
    expect(mine.sandboxes.map((s: object) => ({ ...s, createdAt: undefined }))).toEqual(
      theirs.sandboxes.map((s: object) => ({ ...s, createdAt: undefined })),
    );
    expect(Math.abs(Date.parse(mine.sandboxes[0].createdAt) - Date.parse(theirs.sandboxes[0].createdAt))).toBeLessThan(
      1000,
    );
    expect(mine.ips).toEqual(theirs.ips);
    const v1 = await h.fetch(`/v1/pods/${p.metadata.uid}`, { headers: await bearer() });
    expect(r.body.status.containerStatuses).toEqual(v1.body.status.containerStatuses);
    expect(r.body.status.conditions.map((c: { type: string; status: string }) => [c.type, c.status])).toEqual(
      v1.body.status.conditions.map((c: { type: string; status: string }) => [c.type, c.status]),
    );
    expect(r.body.status.phase).toBe("Running");
  });

  it("a pod on the pod network: 7, the PodSandboxStatus after RunPodSandbox (the pod IP, as kubelet reads it) serving the read-back too", async () => {
    const r = await h.post("/v1/pods/sync", podInput({ hostNetwork: false }));
    expect(r.status).toBe(200);
    expect(calls()).toEqual({
      ListPodSandbox: 1,
      RunPodSandbox: 1,
      PodSandboxStatus: 1,
      ImageStatus: 1,
      CreateContainer: 1,
      StartContainer: 1,
      ContainerStatus: 1,
    });
    expect(r.body.status.podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  });

  it("pull policy Always: PullImage and no ImageStatus", async () => {
    fake.runtime.pullable.add("localhost/busybox:1");
    try {
      const r = await h.post("/v1/pods/sync", podInput({ imagePullPolicy: "Always" }));
      expect(r.status).toBe(200);
      expect(calls()).toEqual({
        ListPodSandbox: 1,
        RunPodSandbox: 1,
        PullImage: 1,
        CreateContainer: 1,
        StartContainer: 1,
        ContainerStatus: 1,
      });
    } finally {
      fake.runtime.pullable.delete("localhost/busybox:1");
    }
  });

  it("a failed step: the read-back lists the pod again (what a failed call left is not known)", async () => {
    const r = await h.post("/v1/pods/sync", podInput({ image: "localhost/absent:1", imagePullPolicy: "Never" }));
    expect(r.status).toBe(207);
    expect(calls()).toMatchObject({
      ListPodSandbox: 2,
      ListContainers: 1,
      RunPodSandbox: 1,
      ImageStatus: 1,
      PodSandboxStatus: 1,
    });
    expect(r.body.runtime.sandboxes).toHaveLength(1);
  });

  it("PUT /v1/node/pods of 3 new pods on an empty node: one node-wide ListPodSandbox, then 5 calls per pod", async () => {
    const node = await Harness.start(cri, {
      desired: new MemoryDesiredState(),
      policy: { level: "privileged", hostPathAllow: [] },
    });
    try {
      const set = [podInput(), podInput(), podInput()];
      const r = await node.fetch("/v1/node/pods", {
        method: "PUT",
        headers: { "content-type": "application/jose" },
        body: await node.sign({ act: "apply", generation: 1, pods: set }),
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      // (Version: this runtime's first status.)
      expect(calls()).toEqual({
        ListPodSandbox: 1,
        RunPodSandbox: 3,
        ImageStatus: 3,
        CreateContainer: 3,
        StartContainer: 3,
        ContainerStatus: 3,
        Version: 1,
      });
    } finally {
      await node.close();
    }
  });
});

describe("the runtime's name", () => {
  it("read once: by the readiness check when it came first (the node entry's start), then no sync asks again", async () => {
    const rt = createPodRuntime(cri);
    fake.runtime.resetCalls();
    expect((await rt.ready()).runtime.name).toBeTruthy();
    expect(calls()).toEqual({ Version: 1, Status: 1 });
    fake.runtime.resetCalls();
    const r = await rt.sync(pod({ hostNetwork: true }));
    expect(r.ok).toBe(true);
    expect(calls()["Version"]).toBeUndefined();
    expect(r.apiStatus.containerStatuses?.[0]?.containerID).toMatch(/^[a-z-]+:\/\/[0-9a-f]+$/);
  });
});

describe("the runtime's name on the Node entry", () => {
  it("read at start with the event stream's Version: the node's very first sync makes no Version call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-first-"));
    fake.runtime.resetCalls();
    const r = await startNode(
      {
        PODSYNC_PORT: "0",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_STATE_DIR: join(dir, "state"),
        PODSYNC_ROOT_DIR: join(dir, "root"),
        PODSYNC_CRI_ENDPOINT: fake.endpoint,
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_NODE_NAME: "first-node",
        PODSYNC_POLICY: "privileged",
      },
      true,
    );
    try {
      await expect.poll(() => fake.runtime.calls.get("Version") ?? 0).toBeGreaterThanOrEqual(1);
      const key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { iss: string };
      const token = await new SignJWT({ act: "sync", pod: podInput() })
        .setProtectedHeader({ alg: "EdDSA", kid: key.kid! })
        .setIssuer(key.iss)
        .setAudience("first-node")
        .setIssuedAt()
        .setExpirationTime("1m")
        .setJti(uid("jti"))
        .sign(await importJWK(key, "EdDSA"));
      fake.runtime.resetCalls();
      const res = await fetch(`${r.url}/v1/pods/sync`, {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: token,
      });
      expect(res.status).toBe(200);
      // The request's own calls (the 6 above); the relist its release asks for (a pod new to the loop) may be under
      // way beside them. No Version among any.
      expect(calls()).toMatchObject({
        RunPodSandbox: 1,
        ImageStatus: 1,
        CreateContainer: 1,
        StartContainer: 1,
        ContainerStatus: 1,
      });
      expect(calls()["Version"]).toBeUndefined();
    } finally {
      await r.close();
    }
  });
});

describe("the check's list stands for the sync's only while nothing acted on the pod", () => {
  it("checkUids then sync: no list; checkUids, a delete, then sync: the sync lists", async () => {
    const rt = createPodRuntime(cri);
    const a = pod({ hostNetwork: true });
    await rt.checkUids([a]);
    fake.runtime.resetCalls();
    expect((await rt.sync(a)).ok).toBe(true);
    expect(calls()["ListPodSandbox"]).toBeUndefined();

    const b = pod({ hostNetwork: true });
    await rt.checkUids([b]);
    await rt.delete(b.metadata.uid);
    fake.runtime.resetCalls();
    expect((await rt.sync(b)).ok).toBe(true);
    expect(calls()).toMatchObject({ ListPodSandbox: 1, ListContainers: 1 });
  });

  it("AbsentPods: a run entering during the list, or active when it was sent, leaves the pod unknown; an absence is asked once", () => {
    const ab = new AbsentPods(10_000, 2);
    // Found absent, asked once.
    let w = ab.watch(["a"]);
    w.listed(new Set(), 0);
    w.end();
    expect(ab.take("a", 1)).toBe(true);
    expect(ab.take("a", 1)).toBe(false);
    // Listed with a sandbox: not absent.
    w = ab.watch(["a"]);
    w.listed(new Set(["a"]), 0);
    w.end();
    expect(ab.take("a", 1)).toBe(false);
    // A run entering while the list is out.
    w = ab.watch(["a"]);
    ab.enter("a");
    ab.leave("a");
    w.listed(new Set(), 0);
    w.end();
    expect(ab.take("a", 1)).toBe(false);
    // A run active when the list is sent.
    ab.enter("a");
    w = ab.watch(["a"]);
    w.listed(new Set(), 0);
    w.end();
    ab.leave("a");
    expect(ab.take("a", 1)).toBe(false);
    // A run after the list.
    w = ab.watch(["a"]);
    w.listed(new Set(), 0);
    w.end();
    ab.enter("a");
    ab.leave("a");
    expect(ab.take("a", 1)).toBe(false);
    // Too old.
    w = ab.watch(["a"]);
    w.listed(new Set(), 0);
    w.end();
    expect(ab.take("a", 10_001)).toBe(false);
    // Bounded: the oldest goes.
    w = ab.watch(["x", "y", "z"]);
    w.listed(new Set(), 0);
    w.end();
    expect(ab.size).toEqual({ active: 0, watched: 0, absent: 2 });
    expect(ab.take("x", 1)).toBe(false);
    expect(ab.take("z", 1)).toBe(true);
  });
});
