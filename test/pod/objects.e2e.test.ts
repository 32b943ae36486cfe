// ConfigMaps, Secrets and the downward API on a REAL containerd, through the HTTP function: what the container
// sees (files and their modes, env from a secretKeyRef, status.podIP/hostIP, the downwardAPI labels file, a
// read-only mount), the secret volume on a tmpfs on the host, an in-place update on re-sync with no restart,
// and DELETE unmounting and removing it all. Read inside the container with CRI ExecSync.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntime } from "../../src/kubelet/pod-runtime.js";
import { nodeVolumeFiles } from "../../src/host/volumes/volume-files.js";
import { nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { getPodStatus } from "../../src/kuberuntime/pod-status.js";
import { Harness } from "../support/http.js";
import { uid } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const SECRET = `pw-${process.pid}-${Date.now().toString(36)}`;
const HOST_IP = "192.0.2.77";
const node = {
  ...defaultNodeConfig(),
  rootDir: mkdtempSync(join(tmpdir(), "podsync-objects-e2e-")),
  podLogsDir: mkdtempSync(join(tmpdir(), "podsync-objects-logs-")),
  nodeName: "edge-e2e",
};
const id = uid("objects");
const b64 = (s: string) => Buffer.from(s).toString("base64");

let cri: CriClient;
let h: Harness;
let rt: PodRuntime;

const configMap = (conf: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "app-config" },
  data: { "app.conf": conf, mode: "fast" },
});
const secret = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "app-secret" },
  type: "Opaque",
  data: { password: b64(SECRET) },
};
const pod = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "objects-e2e", namespace: "default", uid: id, labels: { app: "objects-e2e", tier: "edge" } },
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "main",
        image: "localhost/busybox:1",
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
        resources: { limits: { memory: "64Mi" } },
        env: [
          { name: "PW", valueFrom: { secretKeyRef: { name: "app-secret", key: "password" } } },
          { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
          { name: "HOST_IP", valueFrom: { fieldRef: { fieldPath: "status.hostIP" } } },
          { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
          { name: "MEM_MI", valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } } },
        ],
        envFrom: [{ configMapRef: { name: "app-config" }, prefix: "CFG_" }],
        volumeMounts: [
          { name: "cfg", mountPath: "/etc/cfg" },
          { name: "creds", mountPath: "/etc/creds" },
          { name: "info", mountPath: "/etc/info" },
          // A subPath into a configMap resolves through the writer's symlinks (inside the volume): a file bind.
          { name: "cfg", mountPath: "/etc/mode-file", subPath: "mode" },
        ],
      },
    ],
    volumes: [
      {
        name: "cfg",
        configMap: {
          name: "app-config",
          defaultMode: 0o600,
          items: [
            { key: "app.conf", path: "conf/app.conf", mode: 0o640 },
            { key: "mode", path: "mode" },
          ],
        },
      },
      { name: "creds", secret: { secretName: "app-secret", defaultMode: 0o400 } },
      {
        name: "info",
        downwardAPI: {
          items: [
            { path: "labels", fieldRef: { fieldPath: "metadata.labels" } },
            { path: "name", fieldRef: { fieldPath: "metadata.name" } },
          ],
        },
      },
    ],
  },
};

async function sync(conf: string, p: typeof pod = pod) {
  const token = await h.sign({ act: "sync", pod: p, configMaps: [configMap(conf)], secrets: [secret] });
  const r = await h.fetch("/v1/pods/sync", {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body: token,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(JSON.stringify(r.body)).not.toContain(SECRET);
  return r.body as { steps: { action: string }[] };
}

async function sh(script: string): Promise<{ code: number; out: string }> {
  const r = await rt.exec(id, { command: ["sh", "-c", script], timeoutSeconds: 10, maxOutputBytes: 65536 });
  return { code: r.exitCode, out: r.stdout.data + r.stderr.data };
}

const secretDir = `${node.rootDir}/pods/${id}/volumes/kubernetes.io~secret/creds`;
const tmpfsAt = (dir: string) =>
  readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .some((l) => l.split(" ")[1] === dir && l.split(" ")[2] === "tmpfs");

describe.skipIf(skip)("ConfigMaps, Secrets and the downward API on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    const options = { node, volumeFiles: nodeVolumeFiles, podDirs: nodePodDirs, hostIPs: [HOST_IP] };
    rt = createPodRuntime(cri, options);
    h = await Harness.start(cri, {}, {}, options);
  });
  afterAll(async () => {
    await rt?.delete(id).catch(() => undefined);
    await h?.close();
    cri?.close();
  });

  it("the container sees the files with their modes, the env, its pod IP and the labels; the secret is a tmpfs on the host; nothing is writable", async () => {
    const first = await sync("port=8080\n");
    expect(first.steps.map((s) => s.action)).toEqual(["MountVolumes", "CreatePodSandbox", "StartContainer"]);

    expect(await sh("cat /etc/cfg/conf/app.conf; cat /etc/cfg/mode; cat /etc/mode-file")).toEqual({
      code: 0,
      out: "port=8080\nfastfast",
    });
    const modes = await sh("ls -lnL /etc/cfg/conf/app.conf /etc/cfg/mode /etc/creds/password /etc/info/labels");
    const mode = (path: string) =>
      modes.out
        .split("\n")
        .find((l) => l.endsWith(path))
        ?.split(/\s+/)[0];
    expect([
      mode("/etc/cfg/conf/app.conf"),
      mode("/etc/cfg/mode"),
      mode("/etc/creds/password"),
      mode("/etc/info/labels"),
    ]).toEqual(["-rw-r-----", "-rw-------", "-r--------", "-rw-r--r--"]);
    expect(await sh("cat /etc/creds/password")).toEqual({ code: 0, out: SECRET });
    expect(await sh("cat /etc/info/labels")).toEqual({ code: 0, out: 'app="objects-e2e"\ntier="edge"' });

    const podIP = (await getPodStatus(cri, { uid: id, name: "objects-e2e", namespace: "default" })).ips[0];
    expect(podIP).toMatch(/^10\.244\.78\.\d+$/);
    const env = Object.fromEntries(
      (await sh("env")).out
        .split("\n")
        .filter(Boolean)
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    expect(env).toMatchObject({ PW: SECRET, POD_IP: podIP, HOST_IP, NODE: "edge-e2e", MEM_MI: "64", CFG_mode: "fast" });

    expect(tmpfsAt(secretDir)).toBe(true);
    expect((await sh("echo x > /etc/cfg/new")).code).not.toBe(0);
    expect((await sh("echo x > /etc/creds/new")).code).not.toBe(0);
  });

  it("a changed ConfigMap is swapped in place on re-sync (no restart), an unchanged one is not touched", async () => {
    expect((await sync("port=8080\n")).steps).toEqual([]);
    const again = await sync("port=9090\n");
    expect(again.steps.map((s) => s.action)).toEqual(["MountVolumes"]);
    expect(await sh("cat /etc/cfg/conf/app.conf")).toEqual({ code: 0, out: "port=9090\n" });
    const status = await getPodStatus(cri, { uid: id, name: "objects-e2e", namespace: "default" });
    expect(status.containerStatuses).toMatchObject([{ name: "main", state: "running", restartCount: 0 }]);
  });

  it("a volume dropped from the spec goes when the container restarts without it: its tmpfs is unmounted", async () => {
    const c = pod.spec.containers[0]!;
    const without = {
      ...pod,
      spec: {
        ...pod.spec,
        volumes: pod.spec.volumes.filter((v) => v.name !== "creds"),
        containers: [{ ...c, volumeMounts: c.volumeMounts.filter((m) => m.name !== "creds") }],
      },
    };
    const r = await sync("port=9090\n", without);
    expect(r.steps.map((s) => s.action)).toEqual(["KillContainer", "MountVolumes", "StartContainer"]);
    expect(tmpfsAt(secretDir)).toBe(false);
    expect(existsSync(secretDir)).toBe(false);
    expect(await sh("cat /etc/cfg/conf/app.conf")).toEqual({ code: 0, out: "port=9090\n" });
  });

  it("DELETE unmounts the secret's tmpfs and removes the volumes", async () => {
    // The secret volume back, so that DELETE has a tmpfs to unmount.
    expect((await sync("port=9090\n")).steps.map((s) => s.action)).toEqual([
      "KillContainer",
      "MountVolumes",
      "StartContainer",
    ]);
    expect(tmpfsAt(secretDir)).toBe(true);
    const token = await h.sign({ act: "delete", uid: id });
    const r = await h.fetch(`/v1/pods/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    expect(tmpfsAt(secretDir)).toBe(false);
    expect(existsSync(`${node.rootDir}/pods/${id}/volumes/kubernetes.io~secret`)).toBe(false);
    expect(existsSync(`${node.rootDir}/pods/${id}/volumes/kubernetes.io~configmap`)).toBe(false);
    expect(existsSync(`${node.rootDir}/pods/${id}`)).toBe(false);
    for (const line of h.logs) expect(JSON.stringify(line)).not.toContain(SECRET);
  });
});
