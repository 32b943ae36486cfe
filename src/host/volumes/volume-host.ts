// Package host/volumes/ — the pod's files on this node: volumes (hostPath, emptyDir, object volumes, claims),
// the pod's directories, subPath binds, mounts, termination files. Imports layers below; never agent, HTTP or entry.
//
// VolumeHost on this node's own filesystem (the Node entry): kubelet's hostPath type checks
// (pkg/volume/hostpath/host_path.go: checkType, makeDir 0755, makeFile 0644), tmpfs mounts with mount(8)
// as kubelet's mounter does (`mount -t tmpfs -o size=<bytes> tmpfs <dir>`; DELETE's pod-dir removal unmounts
// them, src/host/volumes/pod-dirs.ts), and the claim directories. Needs root, as kubelet does.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { chmod, mkdir, open, readdir, realpath, stat } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { promisify } from "node:util";
import { nodePodDirs } from "./pod-dirs.js";
import { mountTable } from "./mounts.js";
import { setVolumeOwnership } from "./volume-ownership.js";
import { HostPathTypeError, type HostPathType, type VolumeHost } from "../../volumemanager/volumes.js";

const run = promisify(execFile);

const statOrUndefined = (path: string) =>
  stat(path).catch((e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? undefined : Promise.reject(e)));

const CHECKS: Record<
  Exclude<HostPathType, "" | "DirectoryOrCreate" | "FileOrCreate">,
  [(s: Awaited<ReturnType<typeof stat>>) => boolean, string]
> = {
  Directory: [(s) => s.isDirectory(), "a directory"],
  File: [(s) => s.isFile(), "a file"],
  Socket: [(s) => s.isSocket(), "a socket file"],
  CharDevice: [(s) => s.isCharacterDevice(), "a character device"],
  BlockDevice: [(s) => s.isBlockDevice(), "a block device"],
};

const fail = (path: string, what: string) =>
  new HostPathTypeError(`hostPath type check failed: ${path} is not ${what}`);

export const nodeVolumeHost: VolumeHost = {
  async checkHostPath(path, type) {
    if (type === "") return;
    const st = await statOrUndefined(path);
    if (type === "DirectoryOrCreate") {
      // kubelet's makeDir/makeFile modes, whatever this process's umask.
      if (!st) await mkdir(path, { recursive: true, mode: 0o755 }).then(() => chmod(path, 0o755));
      else if (!st.isDirectory()) throw fail(path, "a directory");
      return;
    }
    if (type === "FileOrCreate") {
      if (!st) {
        await mkdir(dirname(path), { recursive: true, mode: 0o755 });
        await (await open(path, "a", 0o644)).close();
        await chmod(path, 0o644);
      } else if (!st.isFile()) throw fail(path, "a file");
      return;
    }
    const [ok, what] = CHECKS[type];
    if (!st || !ok(st)) throw fail(path, what);
  },

  async ensureDir(path, mode) {
    // Only a directory made now gets the mode: what a pod did to its volume since is left as it is.
    if ((await mkdir(path, { recursive: true, mode })) !== undefined) await chmod(path, mode);
  },

  async mountTmpfs(path, sizeBytes) {
    // mountinfo names canonical paths: compare with the directory's own (its parents' symlinks resolved, a
    // trailing slash or `//` gone), or a fresh tmpfs would be stacked over the volume on every container start.
    const canonical = `${await realpath(dirname(path))}/${basename(path)}`;
    if ((await mountTable()).some((m) => m.point === canonical && m.fstype === "tmpfs")) return;
    await run("mount", ["-t", "tmpfs", "-o", `size=${Math.floor(sizeBytes)}`, "tmpfs", path]).catch(
      (e: { stderr?: string; message: string }) => {
        throw new Error(`mount tmpfs at ${path}: ${(e.stderr || e.message).trim()}`);
      },
    );
  },

  // Relative to open directories, never following a symlink nor crossing a mount (volume-ownership.ts).
  setOwnership: setVolumeOwnership,

  async listDirs(dir) {
    const entries = await readdir(dir, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) =>
      e.code === "ENOENT" ? [] : Promise.reject(e),
    );
    return entries
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  },

  // A claim's data is its pods' to shape: removed like a pod dir, never through a symlink or a mount point.
  removeDir: (path) => nodePodDirs.removeTree(path),
};

/** pkg/security/apparmor IsEnabled: the kernel module reports "Y". */
export function hostAppArmorEnabled(path = "/sys/module/apparmor/parameters/enabled"): boolean {
  try {
    return readFileSync(path, "utf8").trim().startsWith("Y");
  } catch {
    return false;
  }
}
