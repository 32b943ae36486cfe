// DiskUsage on this node, as `du -s -B1 -x` counts it (kubelet measures volumes and logs with du): the blocks
// in use (st_blocks × 512) of the path and everything below it, on the path's filesystem only, symlinks not
// followed, each inode counted once. Walked in-process, so a stats pass over many pods spawns no process.
// The walk makes its lstat/readdir calls synchronously, yielding to the event loop after every WALK_BATCH
// entries: a stats pass is mostly small trees (a log directory, a hosts file), where fs/promises' thread-pool
// round trip per call cost three times the syscalls' CPU (bench/results/log-2026-12-issue21.md), and a large tree still holds
// the loop for one batch at a time only. A missing path uses nothing; an entry removed during the walk is
// skipped.
import { lstatSync, readdirSync } from "node:fs";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { DiskUsage } from "../../eviction/stats.js";

/** Entries walked between two yields to the event loop. */
const WALK_BATCH = 256;

const entries = (path: string): string[] => {
  try {
    return readdirSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
};

async function usage(root: string): Promise<number> {
  const seen = new Set<string>();
  const todo = [root];
  let dev: number | undefined;
  let total = 0;
  for (let walked = 1; todo.length > 0; walked++) {
    const path = todo.pop()!;
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st || (dev !== undefined && st.dev !== dev)) continue;
    dev ??= st.dev;
    // Only a file with more than one link can be met twice (directories cannot be hard-linked).
    if (st.nlink > 1 && !st.isDirectory()) {
      const key = `${st.dev}:${st.ino}`;
      if (seen.has(key)) continue;
      seen.add(key);
    }
    total += st.blocks * 512;
    if (st.isDirectory()) for (const n of entries(path)) todo.push(`${path}/${n}`);
    if (walked % WALK_BATCH === 0) await nextTurn();
  }
  return total;
}

export const nodeDiskUsage: DiskUsage = { usage };
