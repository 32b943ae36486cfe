// Issue 8 items 8, 9, 10 and 4 on a REAL containerd, through the real HTTP server: one uid is one pod;
// podsync touches only what it labelled; DELETE removes the pod's node data; subPath cannot leave its volume.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import type { CriClient } from "../src/cri/client.js";
import { defaultNodeConfig } from "../src/kuberuntime/node-config.js";
import { createPodRuntime } from "../src/kuberuntime/runtime.js";
import { Harness } from "./support/http.js";
import { uid } from "./support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

let cri: CriClient;
let h: Harness;
const made: string[] = [];
const scratch = mkdtempSync(join(tmpdir(), "podsync-own-e2e-"));
const node = { ...defaultNodeConfig(), podLogsDir: join(scratch, "logs"), rootDir: join(scratch, "root") };

const podInput = (name: string, spec: Record<string, unknown> = {}, id = uid(name)) => {
  made.push(id);
  return {
    metadata: { name, namespace: "default", uid: id },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] }], ...spec },
  };
};

const del = async (id: string) => h.fetch(`/v1/pods/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: id, gracePeriodSeconds: 0 })}` } });

describe.skipIf(skip)("what podsync owns, on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 20_000 });
    h = await Harness.start(cri, {}, {}, { node });
  });
  afterAll(async () => {
    const rt = createPodRuntime(cri, { node });
    for (const id of made) await rt.delete(id, 0).catch(() => undefined);
    await h?.close();
    cri?.close();
  });

  it("one uid is one pod: another name under a running pod's uid is 409 uid-conflict and the first pod's sandbox gets no container", async () => {
    const first = podInput("owner");
    const r = await h.post("/v1/pods/sync", first);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const id = first.metadata.uid;
    const filter = { labelSelector: { "io.kubernetes.pod.uid": id } };
    const before = (await cri.listContainers({ filter })).containers.map((c) => c.id);
    expect(before).toHaveLength(1);
    const intruder = podInput("intruder", { containers: [{ name: "sneak", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] }] }, id);
    const c = await h.post("/v1/pods/sync", intruder);
    expect(c.status, JSON.stringify(c.body)).toBe(409);
    expect(c.body).toMatchObject({ type: "urn:podsync:problem:uid-conflict", holder: { name: "owner", namespace: "default" } });
    expect((await cri.listContainers({ filter })).containers.map((x) => x.id)).toEqual(before);
    expect((await cri.listPodSandbox({ filter })).items).toHaveLength(1);
  });
});
