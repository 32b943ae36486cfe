// DiskUsage on this node, as `du -s -B1 -x` counts it (kubelet measures volumes and logs with du): the blocks
// in use (st_blocks × 512) of the path and everything below it, on the path's filesystem only, symlinks not
// followed, each inode counted once. Walked in-process (readdir + lstat), so a stats pass over many pods spawns
// no process. A missing path uses nothing; an entry removed during the walk is skipped.
import { lstat, readdir } from "node:fs/promises";
import type { DiskUsage } from "../eviction/stats.js";

const gone = (e: unknown) => {
  if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
  throw e;
};

async function usage(path: string, dev: number | undefined, seen: Set<string>): Promise<number> {
  const st = await lstat(path).catch(gone);
  if (!st || (dev !== undefined && st.dev !== dev)) return 0;
  const key = `${st.dev}:${st.ino}`;
  if (seen.has(key)) return 0;
  seen.add(key);
  let total = st.blocks * 512;
  if (st.isDirectory()) {
    const names = (await readdir(path).catch(gone)) ?? [];
    for (const n of names) total += await usage(`${path}/${n}`, st.dev, seen);
  }
  return total;
}

export const nodeDiskUsage: DiskUsage = {
  usage: (path) => usage(path, undefined, new Set()),
};
