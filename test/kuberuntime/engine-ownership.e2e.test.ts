// Issue 8 items 8, 9, 10 and 4 on a REAL containerd, through the real HTTP server: one uid is one pod;
// podsync touches only what it labelled; DELETE removes the pod's node data; subPath cannot leave its volume.
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { Harness } from "../support/http.js";
import { mountsUnder, nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { getPodStatus } from "../../src/kuberuntime/pod-status.js";
import { uid, deleteAll } from "../support/pods.js";

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
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] },
      ],
      ...spec,
    },
  };
};

const del = async (id: string) =>
  h.fetch(`/v1/pods/${id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: id, gracePeriodSeconds: 0 })}` },
  });

describe.skipIf(skip)("what podsync owns, on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 20_000 });
    h = await Harness.start(cri, {}, {}, { node, podDirs: nodePodDirs });
  });
  afterAll(async () => {
    const rt = createPodRuntime(cri, { node });
    await deleteAll(rt, made);
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
    const intruder = podInput(
      "intruder",
      {
        containers: [
          { name: "sneak", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] },
        ],
      },
      id,
    );
    const c = await h.post("/v1/pods/sync", intruder);
    expect(c.status, JSON.stringify(c.body)).toBe(409);
    expect(c.body).toMatchObject({
      type: "urn:podsync:problem:uid-conflict",
      holder: { name: "owner", namespace: "default" },
    });
    expect((await cri.listContainers({ filter })).containers.map((x) => x.id)).toEqual(before);
    expect((await cri.listPodSandbox({ filter })).items).toHaveLength(1);
  });

  it("podsync touches only what it manages: another manager's sandbox and container under the same uid survive DELETE (404) and a sync", async () => {
    const id = uid("foreign");
    made.push(id);
    // Made with plain CRI calls, as a kubelet or another tool would: the uid label, no podsync label.
    const labels = {
      "io.kubernetes.pod.uid": id,
      "io.kubernetes.pod.name": "theirs",
      "io.kubernetes.pod.namespace": "default",
    };
    const sandboxConfig = {
      metadata: { name: "theirs", namespace: "default", uid: id, attempt: 0 },
      labels,
      logDirectory: join(scratch, "foreign-logs"),
      linux: { securityContext: { namespaceOptions: { network: api.NamespaceMode.NODE } } },
    };
    const sb = (await cri.runPodSandbox({ config: sandboxConfig })).podSandboxId;
    try {
      const ctr = (
        await cri.createContainer({
          podSandboxId: sb,
          sandboxConfig,
          config: {
            metadata: { name: "app", attempt: 0 },
            image: { image: "localhost/busybox:1" },
            command: ["sleep", "3600"],
            logPath: "app.log",
            labels: { ...labels, "io.kubernetes.container.name": "app" },
          },
        })
      ).containerId;
      await cri.startContainer({ containerId: ctr });
      const alive = async () => {
        expect((await cri.podSandboxStatus({ podSandboxId: sb })).status?.state).toBe(
          api.PodSandboxState.SANDBOX_READY,
        );
        expect((await cri.containerStatus({ containerId: ctr })).status?.state).toBe(
          api.ContainerState.CONTAINER_RUNNING,
        );
      };
      const d = await del(id);
      expect(d.status, JSON.stringify(d.body)).toBe(404);
      expect(d.body).toMatchObject({ type: "urn:podsync:problem:pod-not-found" });
      await alive();
      // podsync's own pod under that uid: its own sandbox, nothing of the other manager's killed or collected.
      const r = await h.post("/v1/pods/sync", podInput("mine", {}, id));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.steps.map((s: any) => s.action)).toEqual(["CreatePodSandbox", "StartContainer"]);
      await alive();
      const d2 = await del(id);
      expect(d2.status, JSON.stringify(d2.body)).toBe(200);
      await alive();
      const left = (
        await cri.listContainers({ filter: { labelSelector: { "io.kubernetes.pod.uid": id } } })
      ).containers.map((c) => c.id);
      expect(left).toEqual([ctr]);
    } finally {
      await cri.stopPodSandbox({ podSandboxId: sb }).catch(() => undefined);
      await cri.removePodSandbox({ podSandboxId: sb }).catch(() => undefined);
    }
  });

  it("DELETE removes the pod's emptyDir and log dir; synced again, the init container finds an empty dir", async () => {
    // The init container refuses to run on a non-empty emptyDir, then leaves a mark in it.
    const p = podInput("fresh", {
      volumes: [{ name: "scratch", emptyDir: {} }],
      initContainers: [
        {
          name: "init",
          image: "localhost/busybox:1",
          imagePullPolicy: "Never",
          command: ["sh", "-c", 'test -z "$(ls -A /scratch)" && echo made > /scratch/mark'],
          volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
        },
      ],
    });
    const id = p.metadata.uid;
    const podDir = join(node.rootDir, "pods", id);
    const mark = join(podDir, "volumes", "kubernetes.io~empty-dir", "scratch", "mark");
    const logDir = join(node.podLogsDir, `default_fresh_${id}`);
    const initExit = async () => {
      for (const end = Date.now() + 15_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
        const c = (await getPodStatus(cri, p.metadata, "full")).containerStatuses.find(
          (x) => x.name === "init" && x.state === "exited",
        );
        if (c) return c.exitCode;
      }
      throw new Error("timed out waiting for the init container to exit");
    };
    expect((await h.post("/v1/pods/sync", p)).status).toBe(200);
    expect(await initExit()).toBe(0);
    expect(existsSync(mark)).toBe(true);
    expect(readdirSync(logDir)).toContain("init");
    const d = await del(id);
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect(d.body.steps.find((s: any) => s.action === "RemovePodDirs")).toMatchObject({ ok: true });
    expect(existsSync(podDir)).toBe(false);
    expect(existsSync(logDir)).toBe(false);
    // "DELETE and sync again": initialization runs on a fresh, empty volume.
    expect((await h.post("/v1/pods/sync", p)).status).toBe(200);
    expect(await initExit()).toBe(0);
    expect(existsSync(mark)).toBe(true);
  });

  it("subPath cannot leave its volume: a symlink to / planted by an init container is CreateContainerConfigError; a normal subPath works", async () => {
    const mount = (subPath: string, mountPath: string) => ({ name: "scratch", mountPath, subPath });
    const p = podInput("subpath", {
      volumes: [{ name: "scratch", emptyDir: {} }],
      initContainers: [
        {
          name: "plant",
          image: "localhost/busybox:1",
          imagePullPolicy: "Never",
          command: ["sh", "-c", "echo hello from the volume > /scratch/greeting && ln -s / /scratch/escape"],
          volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
        },
      ],
      containers: [
        {
          name: "reader",
          image: "localhost/busybox:1",
          imagePullPolicy: "Never",
          command: ["sleep", "3600"],
          volumeMounts: [mount("greeting", "/greeting")],
        },
        {
          name: "escaper",
          image: "localhost/busybox:1",
          imagePullPolicy: "Never",
          command: ["sleep", "3600"],
          volumeMounts: [mount("escape", "/host")],
        },
      ],
    });
    const id = p.metadata.uid;
    expect((await h.post("/v1/pods/sync", p)).status).toBe(200);
    for (const end = Date.now() + 15_000; ; await new Promise((r) => setTimeout(r, 100))) {
      const init = (await getPodStatus(cri, p.metadata, "full")).containerStatuses.find((c) => c.name === "plant");
      if (init?.state === "exited") {
        expect(init.exitCode).toBe(0);
        break;
      }
      if (Date.now() > end) throw new Error("timed out waiting for the init container");
    }
    const r = await h.post("/v1/pods/sync", p);
    expect(r.status, JSON.stringify(r.body)).toBe(207);
    const step = (name: string) => r.body.steps.find((s: any) => s.action === "StartContainer" && s.target === name);
    expect(step("reader")).toMatchObject({ ok: true });
    expect(step("escaper")).toMatchObject({
      ok: false,
      error: "CreateContainerConfigError",
      message:
        'failed to prepare subPath for volumeMount "scratch" of container "escaper": the subPath resolves outside its volume (a symlink)',
    });
    // The reader sees the file through its bind; the escaper never got a container, and `/` is mounted nowhere.
    const reader = (await getPodStatus(cri, p.metadata, "full")).containerStatuses.find((c) => c.name === "reader")!;
    const out = await cri.execSync({ containerId: reader.id, cmd: ["cat", "/greeting"], timeout: 10n });
    expect(Buffer.from(out.stdout).toString()).toBe("hello from the volume\n");
    const podDir = join(node.rootDir, "pods", id);
    expect(await mountsUnder(podDir)).toEqual([join(podDir, "volume-subpaths", "scratch", "reader", "0")]);
    const d = await del(id);
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect(await mountsUnder(podDir)).toEqual([]);
    expect(existsSync(podDir)).toBe(false);
  });
});
