// configMap, secret, downwardAPI and projected volumes on this node's filesystem (the Node entry), written the
// way kubelet's AtomicWriter writes them (pkg/volume/util/atomic_writer.go):
//   <dir>/..2026_12_03_06_50_01.xxxxxx/   the data, in a fresh timestamped directory per change
//   <dir>/..data -> ..2026_12_03_...       swapped by rename(2) of a new symlink: readers see old or new, never a mix
//   <dir>/<key>  -> ..data/<key>           what the container sees (first path component only)
// A write whose files and modes are unchanged touches nothing. Secret and projected volumes sit on a tmpfs
// mounted at <dir> first (kubelet wraps them in a memory emptyDir), so their data never reaches the disk.
// podsync differs from kubelet in one detail: an unchanged payload is compared by content and mode, not content only.
// Names in <dir> that are not the payload's (a subPath made a missing one as a directory) are left alone, as kubelet
// leaves them: a rewrite never fails on them.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { basename, dirname } from "node:path";
import { promisify } from "node:util";
import type { VolumeFiles, VolumePayload } from "../../volumemanager/object-volumes.js";
import { unmountAllUnder } from "./pod-dirs.js";

const run = promisify(execFile);
const DATA = "..data";
const DATA_TMP = "..data_tmp";

const errno = (e: unknown) => (e as NodeJS.ErrnoException)?.code;

/** Go's time.Format("..2006_01_02_15_04_05.") in UTC, the prefix of kubelet's timestamped directories. */
function tsPrefix(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `..${d.getUTCFullYear()}_${p(d.getUTCMonth() + 1)}_${p(d.getUTCDate())}_${p(d.getUTCHours())}_${p(d.getUTCMinutes())}_${p(d.getUTCSeconds())}.`;
}

/** Whether `dir` is a mount point (its device differs from its parent's). */
async function isMountPoint(dir: string): Promise<boolean> {
  const [a, b] = await Promise.all([stat(dir), stat(dirname(dir))]);
  return a.dev !== b.dev;
}

/** The mode a file ends with: SetVolumeOwnership on a read-only volume adds group read (0440) under fsGroup. */
const finalMode = (mode: number, fsGroup: number | undefined) => (fsGroup === undefined ? mode : mode | 0o440);

/** The user-visible names of the payload in `dir`'s timestamped directory `ts` (its first path components):
 * what a rewrite may remove from `dir`. kubelet's pathsToRemove walks the old payload the same way, so a name
 * podsync did not write (a directory made for a missing subPath, kubelet's doSafeMakeDir) is never touched. */
async function payloadNames(dir: string, ts: string | undefined): Promise<string[]> {
  if (ts === undefined) return [];
  try {
    return await readdir(`${dir}/${ts}`);
  } catch (e) {
    if (errno(e) === "ENOENT") return [];
    throw e;
  }
}

async function unchanged(dir: string, old: string, p: VolumePayload): Promise<boolean> {
  try {
    const before = await readdir(`${dir}/${old}`);
    const visible = new Set(await readdir(dir));
    const wanted = new Set([...p.files.keys()].map((k) => k.split("/")[0]!));
    // The same names as the old payload, each still visible; other names in dir are not the payload's.
    if (before.length !== wanted.size || before.some((n) => !wanted.has(n)) || [...wanted].some((n) => !visible.has(n)))
      return false;
    for (const [path, f] of p.files) {
      const full = `${dir}/${old}/${path}`;
      const [st, data] = await Promise.all([stat(full), readFile(full)]);
      if ((st.mode & 0o7777) !== finalMode(f.mode, p.fsGroup) || !Buffer.from(f.data).equals(data)) return false;
      if (p.fsGroup !== undefined && st.gid !== p.fsGroup) return false;
    }
    return true;
  } catch (e) {
    if (errno(e) === "ENOENT") return false;
    throw e;
  }
}

async function atomicWrite(p: VolumePayload): Promise<boolean> {
  const dir = p.dir;
  let old: string | undefined;
  try {
    old = await readlink(`${dir}/${DATA}`);
  } catch (e) {
    if (errno(e) !== "ENOENT") throw e;
  }
  if (old !== undefined && (await unchanged(dir, old, p))) return false;
  const before = await payloadNames(dir, old);

  const ts = await mkdtemp(`${dir}/${tsPrefix()}`);
  try {
    await chmod(ts, 0o755);
    for (const [path, f] of p.files) {
      const full = `${ts}/${path}`;
      if (path.includes("/")) await mkdir(dirname(full), { recursive: true, mode: 0o755 });
      await writeFile(full, f.data, { mode: 0o600 });
      if (p.fsGroup !== undefined) await chown(full, -1, p.fsGroup);
      await chmod(full, finalMode(f.mode, p.fsGroup));
    }
    if (p.fsGroup !== undefined) await chown(ts, -1, p.fsGroup);
    await rm(`${dir}/${DATA_TMP}`, { force: true });
    await symlink(basename(ts), `${dir}/${DATA_TMP}`);
    await rename(`${dir}/${DATA_TMP}`, `${dir}/${DATA}`);
  } catch (e) {
    // Not swapped in: what this write made goes, so a payload that keeps failing does not leave a directory of
    // data behind on every attempt. (atomic_writer.go removes its tsDir when the swap fails; podsync also when a
    // file cannot be written.)
    await rm(`${dir}/${DATA_TMP}`, { force: true }).catch(() => undefined);
    await rm(ts, { recursive: true, force: true }).catch(() => undefined);
    throw e;
  }

  // The user-visible links (createUserVisibleFiles, removeUserVisiblePaths): new first components get one;
  // the old payload's that are no longer in it go. Only those: anything else in dir is not ours to remove.
  const wanted = new Set([...p.files.keys()].map((k) => k.split("/")[0]!));
  for (const name of wanted) {
    try {
      await lstat(`${dir}/${name}`);
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e;
      await symlink(`${DATA}/${name}`, `${dir}/${name}`);
    }
  }
  for (const name of before) if (!wanted.has(name)) await rm(`${dir}/${name}`, { force: true });
  if (old !== undefined && old !== basename(ts)) await rm(`${dir}/${old}`, { recursive: true, force: true });
  return true;
}

function digest(p: VolumePayload): string {
  const h = createHash("sha256");
  h.update(`${p.tmpfs}\u0000${p.fsGroup ?? ""}\u0000`);
  for (const [path, f] of [...p.files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    h.update(`${path}\u0000${f.mode}\u0000${f.data.byteLength}\u0000`).update(f.data);
  return h.digest("base64url");
}

type Written = Map<string, { ts: string; digest: string }>;

async function cachedUnchanged(lastWritten: Written, dir: string, d: string): Promise<boolean> {
  const last = lastWritten.get(dir);
  if (!last || last.digest !== d) return false;
  try {
    return (await readlink(`${dir}/${DATA}`)) === last.ts;
  } catch {
    return false;
  }
}

/** A writer. It remembers what it last wrote where (dir → its ..data target and the payload's digest), so an
 * unchanged re-sync costs one readlink instead of reading every file back; a restart forgets, which costs one
 * full compare. */
export function createNodeVolumeFiles(): VolumeFiles {
  const lastWritten: Written = new Map();
  return {
    async write(p) {
      const d = digest(p);
      if (await cachedUnchanged(lastWritten, p.dir, d)) return false;
      await mkdir(p.dir, { recursive: true, mode: 0o750 });
      if (p.tmpfs && !(await isMountPoint(p.dir))) {
        // A fresh tmpfs; nothing written before it (the dir is new, or left empty after a reboot) is kept.
        await run("mount", ["-t", "tmpfs", "-o", "mode=0755,nosuid,nodev", "tmpfs", p.dir]);
      } else await chmod(p.dir, 0o755);
      lastWritten.delete(p.dir);
      const wrote = await atomicWrite(p);
      lastWritten.set(p.dir, { ts: await readlink(`${p.dir}/${DATA}`), digest: d });
      return wrote;
    },
    async list(dir) {
      try {
        return await readdir(dir);
      } catch (e) {
        if (errno(e) === "ENOENT") return [];
        throw e;
      }
    },
    async removeAll(dir) {
      // The tmpfs first (pod-dirs' unmount: refuses to go on while anything is still mounted), then the tree.
      await unmountAllUnder(dir);
      await rm(dir, { recursive: true, force: true });
      for (const k of lastWritten.keys()) if (k === dir || k.startsWith(`${dir}/`)) lastWritten.delete(k);
    },
  };
}

export const nodeVolumeFiles: VolumeFiles = createNodeVolumeFiles();
