// The node agent's desired set end to end on the REAL containerd: PUT /v1/node/pods through the HTTP app with
// the store on disk, real sandboxes and runc processes. Fails, never skips, without a runtime (unless
// PODSYNC_SKIP_E2E=1).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { getPodStatus } from "../../src/kuberuntime/pod-status.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { FileDesiredState } from "../../src/state/desired-pods.js";
import { Harness } from "../support/http.js";
import { uid, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

let cri: CriClient;
const harnesses: Harness[] = [];
const made: string[] = [];
const dir = mkdtempSync(join(tmpdir(), "podsync-agent-e2e-"));
const suffix = uid("")
  .slice(1)
  .replace(/[^a-z0-9]/g, "")
  .slice(-10);

const podInput = (name: string) => {
  const id = uid(`agent-${name}`);
  made.push(id);
  return {
    metadata: { name: `agent-${name}-${suffix}`, namespace: "podsync-agent", uid: id },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] },
      ],
    },
  };
};

async function node() {
  const h = await Harness.start(cri, { desired: new FileDesiredState(dir) });
  harnesses.push(h);
  return h;
}
const put = async (h: Harness, pods: unknown[], generation: number, o: { iat?: number } = {}) =>
  h.fetch("/v1/node/pods", {
    method: "PUT",
    headers: { "content-type": "application/jose" },
    body: await h.sign({ act: "apply", generation, pods }, o),
  });
const list = async (h: Harness) =>
  (await h.fetch("/v1/pods", { headers: { authorization: `Bearer ${await h.sign({ act: "status" })}` } })).body;
const running = async (p: { metadata: { uid: string; name: string; namespace: string } }) =>
  (await getPodStatus(cri, p.metadata, "full")).containerStatuses.filter((c) => c.state === "running").map((c) => c.id);

describe.skipIf(skip)("the node's desired set on real containerd", () => {
  beforeAll(() => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
  });
  afterAll(async () => {
    for (const h of harnesses) await h.close();
    await deleteAll(createPodRuntime(cri), made);
    cri?.close();
  });

  it("PUT 3 pods, then 2: one removed, the other two untouched; stale sets and older tokens change nothing; a restarted node keeps the set; an empty set drains", async () => {
    const h = await node();
    const [a, b, c] = [podInput("a"), podInput("b"), podInput("c")];
    const r1 = await put(h, [a, b, c], 1);
    expect(r1.status, JSON.stringify(r1.body)).toBe(200);
    expect(r1.body.pods.map((p: any) => p.status.phase)).toEqual(["Running", "Running", "Running"]);
    const ids = await Promise.all([a, b].map(running));
    for (const x of ids) expect(x).toHaveLength(1);

    const r2 = await put(h, [a, b], 2);
    expect(r2.status, JSON.stringify(r2.body)).toBe(200);
    expect(r2.body.pods.map((p: any) => p.steps)).toEqual([[], []]);
    expect(r2.body.removed).toMatchObject([{ ok: true, deleted: true, pod: { uid: c.metadata.uid } }]);
    expect(await Promise.all([a, b].map(running))).toEqual(ids);
    expect((await getPodStatus(cri, c.metadata)).sandboxStatuses).toEqual([]);

    // A captured older set, or an older token for one pod: refused, nothing touched.
    expect((await put(h, [a, b, c], 1)).body).toMatchObject({
      status: 409,
      type: "urn:podsync:problem:stale-generation",
    });
    const changed = {
      ...a,
      spec: { ...a.spec, containers: [{ ...a.spec.containers[0]!, command: ["sleep", "7200"] }] },
    };
    const older = await h.fetch("/v1/pods/sync", {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await h.sign({ act: "sync", pod: changed }, { iat: -30 }),
    });
    expect(older.body).toMatchObject({ status: 409, type: "urn:podsync:problem:stale-generation" });
    expect(await Promise.all([a, b].map(running))).toEqual(ids);
    expect((await getPodStatus(cri, c.metadata)).sandboxStatuses).toEqual([]);

    const l = await list(h);
    expect(l.metadata.resourceVersion).toBe("2");
    expect(
      l.items.map((p: any) => [p.metadata.uid, p.status.phase, p.status.containerStatuses[0].containerID]),
    ).toEqual([
      [a.metadata.uid, "Running", `containerd://${ids[0]![0]}`],
      [b.metadata.uid, "Running", `containerd://${ids[1]![0]}`],
    ]);
    expect(l.orphans.map((p: any) => p.metadata.uid)).not.toContain(a.metadata.uid);

    // podsync restarted on the same state dir: the same set and generation, and nothing to do.
    const h2 = await node();
    expect((await list(h2)).items.map((p: any) => p.metadata.uid)).toEqual([a.metadata.uid, b.metadata.uid]);
    const r3 = await put(h2, [a, b], 3);
    expect(r3.body.pods.map((p: any) => p.steps)).toEqual([[], []]);

    const r4 = await put(h2, [], 4);
    expect(r4.body.removed.map((p: any) => p.pod.uid).sort()).toEqual([a.metadata.uid, b.metadata.uid].sort());
    for (const p of [a, b]) expect((await getPodStatus(cri, p.metadata)).sandboxStatuses).toEqual([]);
  }, 120_000);
});
