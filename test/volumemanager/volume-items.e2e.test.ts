// A configMap volume on a REAL containerd, through the HTTP function: an item path written "./app.conf" is the
// file app.conf in the container, and a subPath that names no key (a directory podsync makes inside the volume,
// as kubelet does) does not stop the volume's later rewrites: a changed ConfigMap is swapped in on re-sync.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntime } from "../../src/kubelet/pod-runtime.js";
import { nodeVolumeFiles } from "../../src/host/volumes/volume-files.js";
import { nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { Harness } from "../support/http.js";
import { uid } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const node = {
  ...defaultNodeConfig(),
  rootDir: mkdtempSync(join(tmpdir(), "podsync-items-e2e-")),
  podLogsDir: mkdtempSync(join(tmpdir(), "podsync-items-logs-")),
};
const id = uid("items");
let cri: CriClient;
let h: Harness;
let rt: PodRuntime;

const configMap = (conf: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "items-config" },
  data: { "app.conf": conf, extra: "e" },
});
const pod = (items: { key: string; path: string }[]) => ({
  metadata: { name: "items-e2e", namespace: "default", uid: id },
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "main",
        image: "localhost/busybox:1",
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
        volumeMounts: [
          { name: "cfg", mountPath: "/etc/cfg" },
          { name: "cfg", mountPath: "/etc/typo", subPath: "typo" },
        ],
      },
    ],
    volumes: [{ name: "cfg", configMap: { name: "items-config", items } }],
  },
});

async function sync(conf: string, items: { key: string; path: string }[]) {
  const token = await h.sign({ act: "sync", pod: pod(items), configMaps: [configMap(conf)] });
  const r = await h.fetch("/v1/pods/sync", {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body: token,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { steps: { action: string; ok: boolean }[] };
}

async function sh(script: string) {
  const r = await rt.exec(id, { command: ["sh", "-c", script], timeoutSeconds: 10, maxOutputBytes: 65536 });
  return { code: r.exitCode, out: r.stdout.data + r.stderr.data };
}

describe.skipIf(skip)("configMap item paths and a missing subPath on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    const options = { node, volumeFiles: nodeVolumeFiles, podDirs: nodePodDirs, hostIPs: ["192.0.2.78"] };
    rt = createPodRuntime(cri, options);
    h = await Harness.start(cri, {}, {}, options);
  });
  afterAll(async () => {
    await rt?.delete(id).catch(() => undefined);
    await h?.close();
    cri?.close();
  });

  it("./app.conf is app.conf; the subPath directory stays; a changed ConfigMap with a dropped key is swapped in", async () => {
    const items = [
      { key: "app.conf", path: "./app.conf" },
      { key: "extra", path: "extra/" },
    ];
    const first = await sync("port=1\n", items);
    expect(first.steps.map((s) => [s.action, s.ok])).toEqual([
      ["MountVolumes", true],
      ["CreatePodSandbox", true],
      ["StartContainer", true],
    ]);
    expect(await sh("cat /etc/cfg/app.conf; cat /etc/cfg/extra; ls -A /etc/typo; ls /etc/cfg")).toEqual({
      code: 0,
      out: "port=1\neapp.conf\nextra\ntypo\n",
    });
    // Before: the rewrite unlinked the subPath's directory (EISDIR), a failed MountVolumes on every sync.
    const again = await sync("port=2\n", [items[0]!]);
    expect(again.steps.map((s) => [s.action, s.ok])).toEqual([["MountVolumes", true]]);
    expect(await sh("cat /etc/cfg/app.conf; ls /etc/cfg")).toEqual({ code: 0, out: "port=2\napp.conf\ntypo\n" });
  });
});
