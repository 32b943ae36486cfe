// DiskUsage on this node: `du -s -B1 -x` (blocks in use, one filesystem, no symlinks followed), as kubelet's
// du-based volume and log measurements. A missing path uses nothing.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { DiskUsage } from "../eviction/stats.js";

const run = promisify(execFile);

export const nodeDiskUsage: DiskUsage = {
  async usage(path) {
    try {
      const { stdout } = await run("du", ["-s", "-B1", "-x", "--", path]);
      return Number.parseInt(stdout, 10) || 0;
    } catch (e) {
      if (/No such file or directory/.test((e as { stderr?: string }).stderr ?? "")) return 0;
      throw e;
    }
  },
};
