// DELETE of a pod the runtime holds no sandbox of still removes the node data its volumes left (a tmpfs
// emptyDir mounted before a later volume failed), on the real filesystem with the fake CRI; a removal that
// fails (a secret's tmpfs still busy) is a failed step (207), never a silent ok.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CriClient } from "../../src/cri/client.js";
import { mountsUnder, nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { nodeVolumeFiles } from "../../src/host/volumes/volume-files.js";
import { nodeVolumeHost } from "../../src/host/volumes/volume-host.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness } from "../support/http.js";
import { uid } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const root = mkdtempSync(join(tmpdir(), "podsync-delnode-"));
let fake: FakeServer;
let cri: CriClient;
let h: Harness;
const suite = useFakeCri({ timeoutMs: 2000 });
beforeAll(async () => {
  ({ fake, cri } = suite);
  const node = { ...defaultNodeConfig(), rootDir: join(root, "root"), podLogsDir: join(root, "logs") };
  h = await Harness.start(
    cri,
    { policy: { level: "privileged", hostPathAllow: [] } },
    {},
    { node, podDirs: nodePodDirs, volumeHost: nodeVolumeHost, volumeFiles: nodeVolumeFiles },
  );
});
afterAll(async () => {
  await h.close();
  await nodePodDirs.removeTree(root);
  rmSync(root, { recursive: true, force: true });
});

const podInput = (id: string) => ({
  metadata: { name: "nosandbox", namespace: "prod", uid: id },
  spec: {
    containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }],
    volumes: [
      { name: "mem", emptyDir: { medium: "Memory" } },
      { name: "sock", hostPath: { path: join(root, "missing.sock"), type: "Socket" } },
    ],
  },
});
const del = async (id: string) =>
  h.fetch(`/v1/pods/${id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: id })}` },
  });
const podDir = (id: string) => join(root, "root", "pods", id);

/** Sync a pod whose second volume fails: the first (a tmpfs emptyDir) is mounted, no sandbox is made. */
async function failedStart(id: string): Promise<void> {
  const r = await h.post("/v1/pods/sync", podInput(id));
  expect(r.status, JSON.stringify(r.body)).toBe(207);
  expect([...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === id)).toHaveLength(0);
  expect(await mountsUnder(podDir(id))).toEqual([join(podDir(id), "volumes", "kubernetes.io~empty-dir", "mem")]);
}

describe("DELETE of a pod with no sandbox", () => {
  it("unmounts the tmpfs its volumes left and removes its pod dir", async () => {
    const id = uid();
    await failedStart(id);
    const r = await del(id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ ok: true, deleted: false, steps: [{ action: "RemovePodDirs", ok: true }] });
    expect(await mountsUnder(podDir(id))).toEqual([]);
    expect(existsSync(podDir(id))).toBe(false);
  });

  it("a secret tmpfs that cannot be unmounted (busy) is a failed step (207); once free, DELETE finishes", async () => {
    const id = uid();
    await failedStart(id);
    const secret = join(podDir(id), "volumes", "kubernetes.io~secret", "token");
    mkdirSync(secret, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "tmpfs", secret]);
    writeFileSync(join(secret, "token"), "s3cret");
    // A process whose working directory is inside the mount keeps it busy.
    const holder = spawn("sleep", ["30"], { cwd: secret, stdio: "ignore" });
    try {
      await new Promise((res) => holder.once("spawn", res));
      const r = await del(id);
      expect(r.status, JSON.stringify(r.body)).toBe(207);
      expect(r.body).toMatchObject({
        ok: false,
        deleted: false,
        steps: [
          {
            action: "RemovePodDirs",
            ok: false,
            error: "RemovePodDirsError",
            message: expect.stringContaining("could not be unmounted"),
          },
        ],
      });
      expect(await mountsUnder(secret)).toEqual([secret]);
    } finally {
      holder.kill();
      await new Promise((res) => holder.once("exit", res));
    }
    // The pod left the desired state with the first DELETE and the runtime holds nothing: 404 once the
    // removal succeeds (it ran all the same).
    const again = await del(id);
    expect(again.status, JSON.stringify(again.body)).toBe(404);
    expect(await mountsUnder(podDir(id))).toEqual([]);
    expect(existsSync(podDir(id))).toBe(false);
  });
});
