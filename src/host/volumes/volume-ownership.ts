// kubelet's SetVolumeOwnership on this node (pkg/volume/volume_linux.go changeFilePermission): every entry gets
// group `gid`, group rw (r when read-only), directories also x and setgid; symlinks get the group only. The
// volume is a pod's to change while this runs (a claim is shared by pods), so the walk is relative to open
// directories (fd-paths.ts): each entry is opened O_PATH|O_NOFOLLOW inside a directory already open and is
// changed through that fd, so an entry swapped for a symlink is never followed (a link is only lchown'd, in
// place) and a swapped directory is never walked into. An entry on another device (anything mounted in the
// volume) is left alone, mount point and all: podsync differs from kubelet's filepath.Walk here, which does
// not look at devices.
import { constants } from "node:fs";
import { chmod, chown, lchown, lstat, open, readdir, readFile, type FileHandle } from "node:fs/promises";
import { at, NOFOLLOW } from "./fd-paths.js";

const self = (fd: number) => `/proc/self/fd/${fd}`;

/** The mount an open fd lies on (/proc/self/fdinfo): a bind mount of the same filesystem has the same st_dev. */
async function mountId(fd: number): Promise<string | undefined> {
  return /^mnt_id:\s*(\d+)$/m.exec(await readFile(`/proc/self/fdinfo/${fd}`, "utf8"))?.[1];
}

/** Change the object open as `fd` (not a symlink): group and mode bits. */
async function change(fd: number, mode: number, isDir: boolean, gid: number, mask: number): Promise<void> {
  await chown(self(fd), -1, gid);
  await chmod(self(fd), isDir ? (mode & 0o7777) | mask | 0o110 | 0o2000 : (mode & 0o7777) | mask);
}

async function walk(dir: FileHandle, dev: number, mnt: string | undefined, gid: number, mask: number): Promise<void> {
  for (const name of await readdir(self(dir.fd), { encoding: "buffer" })) {
    const entry = at(dir.fd, name);
    const st = await lstat(entry).catch((e: NodeJS.ErrnoException) =>
      e.code === "ENOENT" ? undefined : Promise.reject(e),
    );
    if (!st || st.dev !== dev) continue;
    if (st.isSymbolicLink()) {
      // lchown never follows the last component, and the directory part is the open directory.
      await lchown(entry, -1, gid).catch((e: NodeJS.ErrnoException) =>
        e.code === "ENOENT" ? undefined : Promise.reject(e),
      );
      continue;
    }
    let child: FileHandle;
    try {
      child = await open(entry, NOFOLLOW);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw e;
    }
    try {
      // What was opened, not what lstat saw: a symlink or a mount put there since is not changed.
      const cst = await child.stat();
      if (cst.isSymbolicLink() || cst.dev !== dev || (await mountId(child.fd)) !== mnt) continue;
      await change(child.fd, cst.mode, cst.isDirectory(), gid, mask);
      if (cst.isDirectory()) await walk(child, dev, mnt, gid, mask);
    } finally {
      await child.close();
    }
  }
}

/** requiresPermissionChange (volume_linux.go): the root is not of group `gid`, or lacks the group bits
 * (rw, or r when read-only, and x) or setgid. */
function requiresPermissionChange(
  st: { gid: number; mode: number; isDirectory(): boolean },
  gid: number,
  mask: number,
): boolean {
  if (st.gid !== gid || !st.isDirectory()) return true;
  const want = mask | 0o110;
  return (st.mode & want) !== want || (st.mode & 0o2000) === 0;
}

/** SetVolumeOwnership of the volume directory `dir` (itself a directory, not a symlink); with `onRootMismatch`
 * skipped when its root already has the ownership (skipPermissionChange). */
export async function setVolumeOwnership(
  dir: string,
  gid: number,
  readOnly: boolean,
  onRootMismatch = false,
): Promise<void> {
  const mask = readOnly ? 0o440 : 0o660;
  const top = await open(dir, NOFOLLOW | constants.O_DIRECTORY);
  try {
    const st = await top.stat();
    if (onRootMismatch && !requiresPermissionChange(st, gid, mask)) return;
    await change(top.fd, st.mode, true, gid, mask);
    await walk(top, st.dev, await mountId(top.fd), gid, mask);
  } finally {
    await top.close();
  }
}
