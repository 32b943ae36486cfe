// subPath binds on this node (PodDirs.bindSubPath), after kubelet's subpath_linux.go: resolve the subPath
// once and require it inside the volume (doBindSubPath), walk it from the volume's directory one component at
// a time with O_PATH|O_NOFOLLOW, refusing any symlink (doSafeOpen; missing directories are made on the way as
// doSafeMakeDir does, with the volume's mode), confirm from /proc/<pid>/fd/<fd> that the object opened is
// inside the volume, and bind-mount that fd onto the target. Each component is opened relative to the
// directory already opened (fd-paths.ts), so a component swapped for a symlink after the check is refused
// rather than followed.
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { at, NOFOLLOW } from "./fd-paths.js";
import { chmod, lstat, mkdir, open, readlink, realpath, stat, writeFile, type FileHandle } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { promisify } from "node:util";
import { SubPathError } from "../../volumemanager/subpath.js";
import type { SubPathBind } from "../../volumemanager/pod-dirs.js";
import { mountsUnder } from "./mounts.js";

const run = promisify(execFile);

const within = (p: string, base: string) => p === base || p.startsWith(base === "/" ? "/" : `${base}/`);
const isENOENT = (e: unknown) => (e as NodeJS.ErrnoException).code === "ENOENT";

/** The subPath with the symlinks that stay inside the volume resolved (kubelet allows those), relative to the
 * resolved volume; an error when it resolves outside. Missing: the subPath as written (made below). */
async function resolveInside(base: string, subPath: string): Promise<string[]> {
  const segs = subPath.split("/").filter((s) => s !== "" && s !== ".");
  if (segs.some((s) => s === ".."))
    throw new SubPathError("the subPath contains '..'", `subPath ${JSON.stringify(subPath)} must not contain '..'`);
  let real: string;
  try {
    real = await realpath(`${base}/${segs.join("/")}`);
  } catch (e) {
    if (isENOENT(e)) return segs;
    throw e;
  }
  if (!within(real, base))
    throw new SubPathError(
      "the subPath resolves outside its volume (a symlink)",
      `subpath ${JSON.stringify(`${base}/${segs.join("/")}`)} not within volume path ${JSON.stringify(base)}`,
    );
  return real === base ? [] : real.slice(base.length + 1).split("/");
}

/** doSafeOpen (+ doSafeMakeDir for missing directories): an O_PATH fd of base/segs, no symlink on the way. */
async function safeOpen(base: string, segs: string[], mode: number): Promise<FileHandle> {
  let fh = await open(base, NOFOLLOW | constants.O_DIRECTORY);
  try {
    let where = base;
    for (const seg of segs) {
      where = `${where}/${seg}`;
      const rel = at(fh.fd, seg);
      let child: FileHandle;
      try {
        child = await open(rel, NOFOLLOW);
      } catch (e) {
        if (!isENOENT(e))
          throw new SubPathError(
            `cannot open a component of the subPath (${(e as NodeJS.ErrnoException).code ?? "error"})`,
            `cannot open ${where}: ${(e as Error).message}`,
          );
        // mkdir does not follow a symlink in the last component (EEXIST), and the open below refuses one put there since.
        await mkdir(rel).catch((err) => {
          if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        });
        child = await open(rel, NOFOLLOW);
        if ((await child.stat()).isDirectory()) await chmod(`/proc/self/fd/${child.fd}`, mode);
      }
      const st = await child.stat();
      await fh.close();
      fh = child;
      if (st.isSymbolicLink())
        throw new SubPathError(
          "the subPath contains a symlink that does not resolve inside its volume",
          `unexpected symlink found ${where}`,
        );
    }
    // What the kernel says the fd is: it must lie inside the volume (base is already resolved).
    const real = await readlink(`/proc/${process.pid}/fd/${fh.fd}`);
    if (!within(real, base))
      throw new SubPathError(
        "the subPath resolves outside its volume",
        `subpath ${JSON.stringify(real)} not within volume path ${JSON.stringify(base)}`,
      );
    return fh;
  } catch (e) {
    await fh.close().catch(() => undefined);
    throw e;
  }
}

/** prepareSubpathTarget: reuse a bind of the same object, else unmount what is there and make the mount point. */
async function prepareTarget(target: string, fd: FileHandle): Promise<boolean> {
  await mkdir(dirname(target), { recursive: true, mode: 0o750 });
  const canonical = `${await realpath(dirname(target))}/${basename(target)}`;
  const src = await fd.stat();
  for (let n = (await mountsUnder(canonical)).filter((m) => m === canonical).length; n > 0; n--) {
    const t = await stat(canonical).catch(() => undefined);
    if (t && t.dev === src.dev && t.ino === src.ino) return true;
    await run("umount", ["--no-canonicalize", canonical]);
  }
  const existing = await lstat(canonical).catch(() => undefined);
  if (!existing) {
    if (src.isDirectory()) await mkdir(canonical, { mode: 0o750 });
    // A file is a mount point for any non-directory (file, device, socket, ...).
    else await writeFile(canonical, "", { mode: 0o640 });
  } else if (existing.isDirectory() !== src.isDirectory() || existing.isSymbolicLink()) {
    throw new SubPathError(
      "the bind target exists as another kind of file",
      `subPath target ${canonical} exists as another kind of file`,
    );
  }
  return false;
}

export async function bindSubPath(b: SubPathBind): Promise<void> {
  if (b.createVolume) await mkdir(b.volumePath, { recursive: true, mode: 0o755 });
  const base = await realpath(b.volumePath).catch((e) => {
    throw new SubPathError(
      `the volume's directory cannot be resolved (${(e as NodeJS.ErrnoException).code ?? "error"})`,
      `error resolving symlinks in ${JSON.stringify(b.volumePath)}: ${(e as Error).message}`,
    );
  });
  const mode = (await stat(base)).mode & 0o7777;
  const fh = await safeOpen(base, await resolveInside(base, b.subPath), mode);
  try {
    if (await prepareTarget(b.target, fh)) return;
    try {
      // The source is the fd itself: nothing in the volume can redirect it between the checks and the mount.
      await run("mount", ["--no-canonicalize", "--bind", `/proc/${process.pid}/fd/${fh.fd}`, b.target]);
    } catch (e) {
      throw new SubPathError(
        "the bind mount failed",
        `error mounting ${b.volumePath}/${b.subPath}: ${((e as { stderr?: string }).stderr || (e as Error).message).trim()}`,
      );
    }
  } finally {
    await fh.close();
  }
}
