// PodDirs on this node's filesystem (the Node entry); subPath binds are in subpath.ts. Removal never crosses a mount point and never follows
// a symlink: a host directory bind-mounted under the pod dir (a subPath bind, or anything else mounted
// there) is unmounted first, and if it cannot be, nothing is removed and the caller reports the error, the
// way kubelet refuses to remove an orphaned pod dir while podVolumesExist (kubelet_pods.go).
import { execFile } from "node:child_process";
import { lstat, readdir, realpath, rmdir, unlink } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { promisify } from "node:util";
import type { PodDirs } from "../kuberuntime/pod-dirs.js";
import { mountsUnder } from "./mounts.js";
import { bindSubPath } from "./subpath.js";

export { mountsUnder };

const run = promisify(execFile);

/** `dir` with its parent's symlinks resolved (the parent is the operator's; the last component is not followed). */
async function canonical(dir: string): Promise<string | undefined> {
  try {
    return `${await realpath(dirname(dir))}/${basename(dir)}`;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

async function lstatOrUndefined(p: string) {
  try {
    return await lstat(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

/** Depth first, on one filesystem: a symlink or file is unlinked, a directory on another device refused. */
async function removeOneFilesystem(path: string, dev: number): Promise<void> {
  const st = await lstatOrUndefined(path);
  if (!st) return;
  if (!st.isDirectory()) return unlink(path);
  if (st.dev !== dev) throw new Error(`${path} is on another filesystem (a mount point): not removed`);
  for (const name of await readdir(path)) await removeOneFilesystem(`${path}/${name}`, dev);
  await rmdir(path);
}

export async function unmountAllUnder(dir: string): Promise<void> {
  for (const mp of await mountsUnder(dir)) {
    try {
      // --no-canonicalize: umount(8) does not resolve the path itself; the kernel takes it as mountinfo gave it.
      await run("umount", ["--no-canonicalize", mp]);
    } catch (e) {
      throw new Error(`${mp} is mounted and could not be unmounted (${((e as { stderr?: string }).stderr || (e as Error).message).trim()}): nothing under ${dir} was removed`);
    }
  }
  const left = await mountsUnder(dir);
  if (left.length) throw new Error(`${left[0]} is still mounted: nothing under ${dir} was removed`);
}

export const nodePodDirs: PodDirs = {
  async removeTree(dir) {
    const path = await canonical(dir);
    if (!path) return;
    const st = await lstatOrUndefined(path);
    if (!st) return;
    if (!st.isDirectory()) return unlink(path);
    await unmountAllUnder(path);
    await removeOneFilesystem(path, (await lstat(path)).dev);
  },
  bindSubPath,
};
