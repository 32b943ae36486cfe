// The process's soft limit on open files (RLIMIT_NOFILE), read from /proc/self/limits (Node has no getrlimit):
// the stream budget stays below it. undefined where the file is missing (not Linux) or says "unlimited".
import { readFileSync } from "node:fs";

export function openFileLimit(path = "/proc/self/limits"): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync(path, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
