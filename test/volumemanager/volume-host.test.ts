// nodeVolumeHost on this machine's filesystem: what a pod sharing a volume can put in it never redirects
// podsync's own writes outside it (fsGroup ownership, tmpfs mounts, claim removal).
import { execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { canonicalRootDir } from "../../src/host/volumes/mounts.js";
import { mountsUnder, nodePodDirs, unmountAllUnder } from "../../src/host/volumes/pod-dirs.js";
import { nodeVolumeHost } from "../../src/host/volumes/volume-host.js";

const root = mkdtempSync(join(tmpdir(), "podsync-volhost-"));
afterAll(async () => {
  await nodePodDirs.removeTree(root);
  rmSync(root, { recursive: true, force: true });
});

describe("setOwnership (fsGroup)", () => {
  it("fsGroupChangePolicy OnRootMismatch: nothing changes when the root has the group, its bits and setgid; otherwise the whole volume (requiresPermissionChange)", async () => {
    const vol = join(root, "own-root", "vol");
    mkdirSync(vol, { recursive: true });
    writeFileSync(join(vol, "old"), "kept as it is");
    chmodSync(join(vol, "old"), 0o600);
    await nodeVolumeHost.setOwnership(vol, 4331, false, true);
    // The root mismatched: everything changed.
    expect([statSync(vol).gid, statSync(join(vol, "old")).gid, statSync(join(vol, "old")).mode & 0o060]).toEqual([
      4331, 4331, 0o060,
    ]);
    writeFileSync(join(vol, "new"), "made since");
    chmodSync(join(vol, "new"), 0o600);
    await nodeVolumeHost.setOwnership(vol, 4331, false, true);
    // The root matches now: the new file is left alone (its group is the setgid directory's, its mode its own).
    expect(statSync(join(vol, "new")).mode & 0o777).toBe(0o600);
    await nodeVolumeHost.setOwnership(vol, 4331, false);
    expect(statSync(join(vol, "new")).mode & 0o060).toBe(0o060);
  });

  it("a symlink in the volume to a file or directory outside gets the group itself; its target is untouched", async () => {
    const vol = join(root, "own-links", "vol");
    const outside = join(root, "own-links", "outside");
    mkdirSync(join(vol, "sub"), { recursive: true });
    mkdirSync(join(outside, "dir"), { recursive: true });
    writeFileSync(join(outside, "secret"), "host file");
    writeFileSync(join(outside, "dir", "inner"), "host file");
    chmodSync(join(outside, "secret"), 0o600);
    chmodSync(join(outside, "dir"), 0o700);
    chmodSync(join(outside, "dir", "inner"), 0o600);
    writeFileSync(join(vol, "sub", "mine"), "pod file");
    symlinkSync(join(outside, "secret"), join(vol, "f"));
    symlinkSync(join(outside, "dir"), join(vol, "sub", "d"));
    const before = [
      statSync(join(outside, "secret")),
      statSync(join(outside, "dir")),
      statSync(join(outside, "dir", "inner")),
    ].map((s) => [s.uid, s.gid, s.mode]);

    await nodeVolumeHost.setOwnership(vol, 4321, false);

    const after = [
      statSync(join(outside, "secret")),
      statSync(join(outside, "dir")),
      statSync(join(outside, "dir", "inner")),
    ].map((s) => [s.uid, s.gid, s.mode]);
    expect(after).toEqual(before);
    expect([lstatSync(join(vol, "f")).gid, lstatSync(join(vol, "sub", "d")).gid]).toEqual([4321, 4321]);
    expect([statSync(join(vol, "sub")).gid, statSync(join(vol, "sub")).mode & 0o2070]).toEqual([4321, 0o2070]);
    expect([statSync(join(vol, "sub", "mine")).gid, statSync(join(vol, "sub", "mine")).mode & 0o060]).toEqual([
      4321, 0o060,
    ]);
  });

  it("a mount inside the volume is not crossed (neither the mount point nor what it holds changes)", async () => {
    const vol = join(root, "own-mount", "vol");
    const other = join(root, "own-mount", "other");
    mkdirSync(join(vol, "m"), { recursive: true });
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, "hostfile"), "host file");
    chmodSync(join(other, "hostfile"), 0o600);
    chmodSync(other, 0o700);
    writeFileSync(join(vol, "mine"), "pod file");
    execFileSync("mount", ["--bind", other, join(vol, "m")]);
    try {
      const before = [statSync(other), statSync(join(other, "hostfile"))].map((s) => [s.gid, s.mode]);
      await nodeVolumeHost.setOwnership(vol, 4322, true);
      expect([statSync(other), statSync(join(other, "hostfile"))].map((s) => [s.gid, s.mode])).toEqual(before);
      expect([statSync(join(vol, "mine")).gid, statSync(join(vol, "mine")).mode & 0o040]).toEqual([4322, 0o040]);
    } finally {
      execFileSync("umount", [join(vol, "m")]);
    }
  });

  it("an entry another pod keeps swapping for a symlink to a host directory is never followed", async () => {
    const base = join(root, "own-race");
    const vol = join(base, "vol");
    const outside = join(base, "outside");
    mkdirSync(vol, { recursive: true });
    mkdirSync(outside, { recursive: true });
    chmodSync(outside, 0o700);
    for (let i = 0; i < 20; i++) {
      writeFileSync(join(outside, `f${i}`), "host file");
      chmodSync(join(outside, `f${i}`), 0o600);
    }
    const snapshot = () =>
      ["", ...Array.from({ length: 20 }, (_, i) => `f${i}`)].map((n) => {
        const s = statSync(join(outside, n));
        return [n, s.gid, s.mode];
      });
    const before = snapshot();
    // The other pod: a directory and a file in the volume, each flipped with a symlink to the outside (rename(2)
    // is atomic, so the walk sees one or the other at any moment).
    const swapper = [
      "import os, sys, time",
      "vol, out = sys.argv[1], sys.argv[2]",
      "os.mkdir(vol + '/d'); open(vol + '/f', 'w').close()",
      "os.symlink(out, vol + '/dl'); os.symlink(out + '/f0', vol + '/fl')",
      "end = time.time() + 2",
      "while time.time() < end:",
      "    os.rename(vol + '/d', vol + '/dx'); os.rename(vol + '/dl', vol + '/d'); os.rename(vol + '/d', vol + '/dl'); os.rename(vol + '/dx', vol + '/d')",
      "    os.rename(vol + '/f', vol + '/fx'); os.rename(vol + '/fl', vol + '/f'); os.rename(vol + '/f', vol + '/fl'); os.rename(vol + '/fx', vol + '/f')",
    ].join("\n");
    const child = spawn("python3", ["-c", swapper, vol, outside], { stdio: "ignore" });
    const exited = new Promise((res) => child.once("exit", res));
    try {
      while (child.exitCode === null) await nodeVolumeHost.setOwnership(vol, 4324, false).catch(() => undefined);
    } finally {
      child.kill();
      await exited;
    }
    expect(snapshot()).toEqual(before);
  });

  it("the volume directory itself being a symlink is refused, not followed", async () => {
    const base = join(root, "own-top");
    mkdirSync(join(base, "outside"), { recursive: true });
    chmodSync(join(base, "outside"), 0o700);
    symlinkSync(join(base, "outside"), join(base, "vol"));
    const before = statSync(join(base, "outside"));
    await expect(nodeVolumeHost.setOwnership(join(base, "vol"), 4323, false)).rejects.toThrow();
    expect([statSync(join(base, "outside")).gid, statSync(join(base, "outside")).mode]).toEqual([
      before.gid,
      before.mode,
    ]);
  });
});

describe("a root dir given in a non-canonical form", () => {
  it("PODSYNC_ROOT_DIR is normalised (no trailing slash, no `//` or `.`)", async () => {
    const { loadSettings } = await import("../../src/settings/node.js");
    expect(loadSettings({ PODSYNC_ROOT_DIR: "/var/lib/podsync/" }).PODSYNC_ROOT_DIR).toBe("/var/lib/podsync");
    expect(loadSettings({ PODSYNC_ROOT_DIR: "/var//lib/./podsync//" }).PODSYNC_ROOT_DIR).toBe("/var/lib/podsync");
    expect(loadSettings({ PODSYNC_ROOT_DIR: "/" }).PODSYNC_ROOT_DIR).toBe("/");
  });

  it("the Node entry and the CRI proxy resolve an existing root dir's symlinks (a missing one is kept as given)", async () => {
    const real = join(root, "root-real");
    mkdirSync(real);
    symlinkSync(real, join(root, "root-link"));
    expect(canonicalRootDir(join(root, "root-link"))).toBe(realpathSync(real));
    expect(canonicalRootDir(join(root, "root-missing"))).toBe(join(root, "root-missing"));
  });

  it("a tmpfs emptyDir under a symlinked parent or a trailing slash is mounted once, and unmounted through either path", async () => {
    const real = join(root, "tmpfs-real");
    const link = join(root, "tmpfs-link");
    mkdirSync(join(real, "vol"), { recursive: true });
    symlinkSync(real, link);
    const canonicalVol = join(real, "vol");
    const layers = async () => (await mountsUnder(canonicalVol)).filter((m) => m === canonicalVol).length;
    try {
      for (let i = 0; i < 3; i++) {
        await nodeVolumeHost.mountTmpfs(join(link, "vol"), 1 << 20);
        await nodeVolumeHost.mountTmpfs(`${link}//vol/`, 1 << 20);
      }
      expect(await layers()).toBe(1);
      writeFileSync(join(link, "vol", "data"), "in memory");
      // volume-files' removeAll and the pod-dir removal unmount by the path they are given.
      await unmountAllUnder(join(link, "vol"));
      expect(await layers()).toBe(0);
      expect(existsSync(join(real, "vol", "data"))).toBe(false);
    } finally {
      for (let n = await layers(); n > 0; n--) execFileSync("umount", [canonicalVol]);
    }
  });
});

describe("removeDir (a claim's removal)", () => {
  it("removes the claim without following a symlink or removing through a mount inside it", async () => {
    const claim = join(root, "claim-rm", "pvc", "data");
    const outside = join(root, "claim-rm", "outside");
    mkdirSync(join(claim, "sub", "m"), { recursive: true });
    mkdirSync(join(outside, "dir"), { recursive: true });
    writeFileSync(join(outside, "precious"), "keep me");
    writeFileSync(join(outside, "dir", "inner"), "keep me too");
    writeFileSync(join(claim, "sub", "mine"), "pod data");
    symlinkSync(outside, join(claim, "link"));
    symlinkSync(join(outside, "precious"), join(claim, "sub", "file-link"));
    execFileSync("mount", ["--bind", join(outside, "dir"), join(claim, "sub", "m")]);
    try {
      await nodeVolumeHost.removeDir(claim);
    } finally {
      if ((await mountsUnder(join(claim, "sub", "m"))).length) execFileSync("umount", [join(claim, "sub", "m")]);
    }
    expect(existsSync(claim)).toBe(false);
    expect(existsSync(join(outside, "precious"))).toBe(true);
    expect(existsSync(join(outside, "dir", "inner"))).toBe(true);
  });
});
