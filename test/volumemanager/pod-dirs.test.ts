// DELETE's removal of the pod's node data (issue 8.10): on the real filesystem, never following a symlink and
// never emptying a mounted directory; in the engine, the step and its place (after the containers, before the
// sandboxes, so a failed removal can be retried).
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mountsUnder, nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import type { PodDirs } from "../../src/volumemanager/pod-dirs.js";
import { Harness } from "../support/http.js";
import type { FakeServer } from "../support/fake-cri.js";
import type { CriClient } from "../../src/cri/client.js";
import { uid } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const root = mkdtempSync(join(tmpdir(), "podsync-poddirs-"));
afterAll(async () => {
  await nodePodDirs.removeTree(root);
  rmSync(root, { recursive: true, force: true });
});

/** A pod dir with an emptyDir holding a file, and an outside directory with a file that must survive. */
function layout(name: string) {
  const pod = join(root, name, "pods", "u1");
  const vol = join(pod, "volumes", "kubernetes.io~empty-dir", "scratch");
  mkdirSync(vol, { recursive: true });
  writeFileSync(join(vol, "data"), "pod data");
  const outside = join(root, name, "outside");
  mkdirSync(outside);
  writeFileSync(join(outside, "precious"), "keep me");
  return { pod, vol, outside };
}

describe("nodePodDirs.removeTree", () => {
  it("removes the tree; a symlink inside pointing outside is removed as a link and its target survives", async () => {
    const { pod, vol, outside } = layout("symlink");
    symlinkSync(outside, join(vol, "escape"));
    symlinkSync(join(outside, "precious"), join(vol, "file-escape"));
    symlinkSync("/", join(pod, "root-link"));
    await nodePodDirs.removeTree(pod);
    expect(existsSync(pod)).toBe(false);
    expect(readFileSync(join(outside, "precious"), "utf8")).toBe("keep me");
    // Missing is fine (a second DELETE, or a pod that never had a dir).
    await nodePodDirs.removeTree(pod);
  });

  it("a tree nested past PATH_MAX, and names that are not UTF-8, are removed all the same", async () => {
    const { pod, vol, outside } = layout("deep");
    // 30 levels of 200-character names: about 6 KB of path (PATH_MAX is 4096), made relative to open directories.
    const nest = [
      "import os, sys",
      "fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)",
      "name = 'a' * 200",
      "for _ in range(30):",
      "    os.mkdir(name, dir_fd=fd); child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd); os.close(fd); fd = child",
      "os.close(os.open('f', os.O_WRONLY | os.O_CREAT, dir_fd=fd)); os.symlink(sys.argv[2], 'out', dir_fd=fd)",
    ].join("\n");
    execFileSync("python3", ["-c", nest, vol, outside]);
    writeFileSync(Buffer.concat([Buffer.from(`${vol}/`), Buffer.from([0x66, 0xff, 0xfe])]), "odd name");
    await nodePodDirs.removeTree(pod);
    expect(existsSync(pod)).toBe(false);
    expect(readFileSync(join(outside, "precious"), "utf8")).toBe("keep me");
  });

  it("a pod dir that is itself a symlink is unlinked, its target untouched", async () => {
    const { outside } = layout("dirlink");
    const link = join(root, "dirlink", "pods", "u2");
    symlinkSync(outside, link);
    await nodePodDirs.removeTree(link);
    expect(existsSync(link)).toBe(false);
    expect(readFileSync(join(outside, "precious"), "utf8")).toBe("keep me");
  });

  it("a host dir bind-mounted under the pod dir is unmounted first, never emptied", async () => {
    const { pod, outside } = layout("bind");
    const target = join(pod, "volume-subpaths", "scratch", "main", "0");
    mkdirSync(target, { recursive: true });
    execFileSync("mount", ["--bind", outside, target]);
    expect(await mountsUnder(pod)).toEqual([target]);
    await nodePodDirs.removeTree(pod);
    expect(existsSync(pod)).toBe(false);
    expect(readFileSync(join(outside, "precious"), "utf8")).toBe("keep me");
    expect(await mountsUnder(pod)).toEqual([]);
  });

  it("a mount that cannot be unmounted (busy): an error naming it, and nothing under the pod dir is removed", async () => {
    const { pod, vol, outside } = layout("busy");
    const target = join(pod, "volume-subpaths", "scratch", "main", "0");
    mkdirSync(target, { recursive: true });
    execFileSync("mount", ["--bind", outside, target]);
    // A process whose working directory is inside the mount keeps it busy.
    const holder = spawn("sleep", ["30"], { cwd: target, stdio: "ignore" });
    try {
      await new Promise((r) => holder.once("spawn", r));
      await expect(nodePodDirs.removeTree(pod)).rejects.toThrow(
        /is mounted and could not be unmounted.*nothing under .* was removed/,
      );
      expect(readFileSync(join(vol, "data"), "utf8")).toBe("pod data");
      expect(readFileSync(join(outside, "precious"), "utf8")).toBe("keep me");
    } finally {
      holder.kill();
      await new Promise((r) => holder.once("exit", r));
      execFileSync("umount", [target]);
    }
  });
});

describe("DELETE removes the pod's node data through the engine's PodDirs", () => {
  let fake: FakeServer;
  let cri: CriClient;
  let h: Harness;
  const removed: string[] = [];
  let failNext = false;
  const dirs: PodDirs = {
    async removeTree(dir) {
      if (failNext) {
        failNext = false;
        throw new Error(`${dir}/x is mounted and could not be unmounted: nothing under ${dir} was removed`);
      }
      removed.push(dir);
    },
    bindSubPath: async () => undefined,
  };
  const node = { ...defaultNodeConfig(), rootDir: "/srv/ps-root", podLogsDir: "/srv/ps-logs" };
  const suite = useFakeCri({ timeoutMs: 2000 });
  beforeAll(async () => {
    ({ fake, cri } = suite);
    h = await Harness.start(cri, {}, {}, { node, podDirs: dirs });
  });
  afterAll(async () => {
    await h.close();
  });
  const podInput = (id: string) => ({
    metadata: { name: "web", namespace: "prod", uid: id },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }],
    },
  });
  const del = async (id: string) =>
    h.fetch(`/v1/pods/${id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: id })}` },
    });

  it("after the containers and before the sandboxes: the pod dir and <podLogsDir>/<ns>_<name>_<uid>", async () => {
    const id = uid();
    expect((await h.post("/v1/pods/sync", podInput(id))).status).toBe(200);
    const r = await del(id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.steps.map((s: any) => s.action)).toEqual([
      "KillContainer",
      "KillPodSandbox",
      "KillPod",
      "RemoveContainer",
      "RemovePodDirs",
      "RemovePodSandbox",
    ]);
    expect(removed).toEqual([`/srv/ps-root/pods/${id}`, `/srv/ps-logs/prod_web_${id}`]);
  });

  it("a removal that fails is a step error (207); the sandbox stays, so a second DELETE finds the pod and finishes", async () => {
    const id = uid();
    removed.length = 0;
    expect((await h.post("/v1/pods/sync", podInput(id))).status).toBe(200);
    failNext = true;
    const r = await del(id);
    expect(r.status, JSON.stringify(r.body)).toBe(207);
    expect(r.body.steps.at(-1)).toMatchObject({
      action: "RemovePodDirs",
      ok: false,
      error: "RemovePodDirsError",
      message: expect.stringContaining("could not be unmounted"),
    });
    expect([...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === id)).toHaveLength(1);
    const again = await del(id);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.steps.map((s: any) => s.action)).toEqual([
      "KillPodSandbox",
      "KillPod",
      "RemovePodDirs",
      "RemovePodSandbox",
    ]);
    expect(removed).toEqual([`/srv/ps-root/pods/${id}`, `/srv/ps-logs/prod_web_${id}`]);
  });
});
