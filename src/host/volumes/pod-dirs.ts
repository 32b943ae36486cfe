// PodDirs on this node's filesystem (the Node entry); subPath binds are in subpath.ts. Removal never crosses a
// mount point and never follows a symlink: a host directory bind-mounted under the pod dir (a subPath bind, or
// anything else mounted there) is unmounted first, and if it cannot be, nothing is removed and the caller
// reports the error, the way kubelet refuses to remove an orphaned pod dir while podVolumesExist
// (kubelet_pods.go); what is left is removed on one filesystem (kubelet's RemoveDirsOneFilesystem), walked
// relative to open directories, so however deep a pod nested its directories they can be removed.
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import {
  chmod,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  realpath,
  rmdir,
  unlink,
  writeFile,
  type FileHandle,
} from "node:fs/promises";
import { basename, dirname } from "node:path";
import { promisify } from "node:util";
import type { PodDirs } from "../../volumemanager/pod-dirs.js";
import { at, NOFOLLOW } from "./fd-paths.js";
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

/** Empty the directory open as `dir`, depth first and relative to open directories (fd-paths.ts): a symlink or
 * file is unlinked, a directory on another device is refused, names are taken as raw bytes. */
async function emptyDir(dir: FileHandle, dev: number, path: string): Promise<void> {
  const self = `/proc/self/fd/${dir.fd}`;
  for (const name of await readdir(self, { encoding: "buffer" })) {
    const entry = at(dir.fd, name);
    const st = await lstat(entry);
    if (!st.isDirectory()) {
      await unlink(entry);
      continue;
    }
    const where = `${path}/${name.toString()}`;
    if (st.dev !== dev) throw new Error(`${where} is on another filesystem (a mount point): not removed`);
    const child = await open(entry, NOFOLLOW | constants.O_DIRECTORY);
    try {
      const cst = await child.stat();
      if (cst.dev !== st.dev || cst.ino !== st.ino) throw new Error(`${where} changed while it was being removed`);
      await emptyDir(child, dev, where);
    } finally {
      await child.close();
    }
    await rmdir(entry);
  }
}

/** The tree at `path` (a directory, nothing mounted under it), on its own filesystem only. */
async function removeOneFilesystem(path: string): Promise<void> {
  const dir = await open(path, NOFOLLOW | constants.O_DIRECTORY);
  try {
    await emptyDir(dir, (await dir.stat()).dev, path);
  } finally {
    await dir.close();
  }
  await rmdir(path);
}

/** Unmount everything at or under `dir`; its parents' symlinks are resolved first (mountinfo names canonical
 * paths, so a caller's non-canonical path would find nothing and leave the mounts). */
export async function unmountAllUnder(given: string): Promise<void> {
  const dir = await canonical(given);
  if (!dir) return;
  for (const mp of await mountsUnder(dir)) {
    try {
      // --no-canonicalize: umount(8) does not resolve the path itself; the kernel takes it as mountinfo gave it.
      await run("umount", ["--no-canonicalize", mp]);
    } catch (e) {
      throw new Error(
        `${mp} is mounted and could not be unmounted (${((e as { stderr?: string }).stderr || (e as Error).message).trim()}): nothing under ${dir} was removed`,
      );
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
    await removeOneFilesystem(path);
  },
  bindSubPath,
  // ensureHostsFile: written in place (running containers keep seeing it), 0644 whatever the umask.
  async writeHostsFile(file, content) {
    await mkdir(dirname(file), { recursive: true, mode: 0o750 });
    await writeFile(file, content, { mode: 0o644 });
    await chmod(file, 0o644);
  },
  readNodeHosts: () => readFile("/etc/hosts", "utf8"),
};
