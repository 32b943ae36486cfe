// The node's volume writer (src/host/volumes/volume-files.ts) on this machine's filesystem: kubelet's AtomicWriter
// layout, modes, no-op on an unchanged payload, the ..data swap on a change, a tmpfs for secret volumes (root),
// and removal that unmounts first. Needs root (to mount), as the e2e suites do.
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, readdirSync, statSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createNodeVolumeFiles, nodeVolumeFiles } from "../../src/host/volumes/volume-files.js";
import type { VolumeFile, VolumePayload } from "../../src/volumemanager/object-volumes.js";

const root = mkdtempSync(join(tmpdir(), "podsync-volfiles-"));
const enc = new TextEncoder();
const files = (o: Record<string, [string, number]>) =>
  new Map<string, VolumeFile>(Object.entries(o).map(([k, [d, mode]]) => [k, { data: enc.encode(d), mode }]));
const mounted = (dir: string) =>
  readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .some((l) => l.split(" ")[1] === dir && l.split(" ")[2] === "tmpfs");

afterAll(async () => {
  await nodeVolumeFiles.removeAll(root);
});

describe("AtomicWriter on the node", () => {
  it("writes the layout with modes, does nothing when unchanged, swaps ..data and drops removed keys on a change", async () => {
    const dir = `${root}/pods/u1/volumes/kubernetes.io~configmap/cfg`;
    const p: VolumePayload = {
      dir,
      tmpfs: false,
      files: files({ "app.conf": ["port=1", 0o640], "sub/deep": ["x", 0o600], gone: ["y", 0o644] }),
    };
    expect(await nodeVolumeFiles.write(p)).toBe(true);
    const first = readlinkSync(`${dir}/..data`);
    expect(first).toMatch(/^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\./);
    expect(readlinkSync(`${dir}/app.conf`)).toBe("..data/app.conf");
    expect(readlinkSync(`${dir}/sub`)).toBe("..data/sub");
    expect(readFileSync(`${dir}/app.conf`, "utf8")).toBe("port=1");
    expect((statSync(`${dir}/app.conf`).mode & 0o777).toString(8)).toBe("640");
    expect((statSync(`${dir}/sub/deep`).mode & 0o777).toString(8)).toBe("600");

    expect(await nodeVolumeFiles.write(p)).toBe(false);
    // A restarted podsync (a fresh writer) compares the files themselves: still unchanged.
    expect(await createNodeVolumeFiles().write(p)).toBe(false);
    expect(readlinkSync(`${dir}/..data`)).toBe(first);

    expect(
      await nodeVolumeFiles.write({ ...p, files: files({ "app.conf": ["port=2", 0o640], "sub/deep": ["x", 0o600] }) }),
    ).toBe(true);
    const second = readlinkSync(`${dir}/..data`);
    expect(second).not.toBe(first);
    expect(readFileSync(`${dir}/app.conf`, "utf8")).toBe("port=2");
    expect(readdirSync(dir).sort()).toEqual(["..data", second, "app.conf", "sub"].sort());
    // A mode change alone is a change too.
    expect(
      await nodeVolumeFiles.write({ ...p, files: files({ "app.conf": ["port=2", 0o600], "sub/deep": ["x", 0o600] }) }),
    ).toBe(true);
    expect((statSync(`${dir}/app.conf`).mode & 0o777).toString(8)).toBe("600");
  });

  it("a write that fails removes what it made: no timestamped directory is left behind, the old payload stays", async () => {
    const dir = `${root}/pods/u4/volumes/kubernetes.io~configmap/cfg`;
    const good: VolumePayload = { dir, tmpfs: false, files: files({ "app.conf": ["port=1", 0o644] }) };
    expect(await nodeVolumeFiles.write(good)).toBe(true);
    const before = readdirSync(dir).sort();
    // The second file cannot be made (a name over 255 bytes: ENAMETOOLONG), after the first was written.
    const bad: VolumePayload = {
      dir,
      tmpfs: false,
      files: files({ "app.conf": ["port=2", 0o644], ["x".repeat(300)]: ["y", 0o644] }),
    };
    for (let i = 0; i < 3; i++) await expect(nodeVolumeFiles.write(bad)).rejects.toThrow(/ENAMETOOLONG/);
    expect(readdirSync(dir).sort()).toEqual(before);
    expect(readFileSync(`${dir}/app.conf`, "utf8")).toBe("port=1");
  });

  it("a name the payload did not write (a missing subPath's directory) is left alone, and rewrites go on", async () => {
    const dir = `${root}/pods/u3/volumes/kubernetes.io~configmap/cfg`;
    const p: VolumePayload = { dir, tmpfs: false, files: files({ "app.conf": ["port=1", 0o644] }) };
    expect(await nodeVolumeFiles.write(p)).toBe(true);
    // What bindSubPath makes for `subPath: typo` (doSafeMakeDir), with what a subPath `typo/deeper` adds.
    mkdirSync(`${dir}/typo/deeper`, { recursive: true });
    // Before: the rewrite unlinked every visible name not in the payload, EISDIR on the directory, every sync.
    expect(
      await nodeVolumeFiles.write({ ...p, files: files({ "app.conf": ["port=2", 0o644], extra: ["e", 0o644] }) }),
    ).toBe(true);
    expect(readFileSync(`${dir}/app.conf`, "utf8")).toBe("port=2");
    expect(readlinkSync(`${dir}/extra`)).toBe("..data/extra");
    // A key dropped from the payload goes; the directory it did not write stays (kubelet's pathsToRemove).
    expect(await nodeVolumeFiles.write({ ...p, files: files({ extra: ["e", 0o644] }) })).toBe(true);
    expect(
      readdirSync(dir)
        .filter((n) => !n.startsWith(".."))
        .sort(),
    ).toEqual(["extra", "typo"]);
    expect(statSync(`${dir}/typo/deeper`).isDirectory()).toBe(true);
    // And it does not make the payload look changed to a restarted podsync.
    expect(await createNodeVolumeFiles().write({ ...p, files: files({ extra: ["e", 0o644] }) })).toBe(false);
  });

  it("a secret volume is a tmpfs (never on disk) and removal unmounts it", async () => {
    const base = `${root}/pods/u2/volumes/kubernetes.io~secret`;
    const dir = `${base}/creds`;
    expect(
      await nodeVolumeFiles.write({ dir, tmpfs: true, files: files({ password: ["hunter2", 0o400] }), fsGroup: 1234 }),
    ).toBe(true);
    expect(mounted(dir)).toBe(true);
    expect(readFileSync(`${dir}/password`, "utf8")).toBe("hunter2");
    const st = statSync(`${dir}/password`);
    expect([(st.mode & 0o777).toString(8), st.gid]).toEqual(["440", 1234]); // fsGroup: group and group read
    // Re-sync with the tmpfs in place: no second mount, no rewrite.
    expect(
      await nodeVolumeFiles.write({ dir, tmpfs: true, files: files({ password: ["hunter2", 0o400] }), fsGroup: 1234 }),
    ).toBe(false);
    expect(
      readFileSync("/proc/self/mounts", "utf8")
        .split("\n")
        .filter((l) => l.split(" ")[1] === dir),
    ).toHaveLength(1);
    await nodeVolumeFiles.removeAll(base);
    expect(mounted(dir)).toBe(false);
    expect(existsSync(base)).toBe(false);
  });
});
