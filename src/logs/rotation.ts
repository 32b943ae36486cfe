// kubelet's container log rotation (pkg/kubelet/logs/container_log_manager.go), the decision: given a container's
// log path and the files beside it (<log>.*), which to delete and which to compress before the live log is renamed
// to <log>.<timestamp> and the runtime reopens it. As kubelet: temporary files (.tmp, a compression cut short) and
// logs already compressed beside their .gz are unused and go (cleanupUnusedLogs); of the rest, the oldest go until
// maxFiles-2 rotated files remain (removeExcessLogs: the live log and the one about to be rotated make maxFiles);
// every remaining uncompressed rotated log is gzipped (the newest rotated one was left uncompressed last time, so a
// reader could finish it).

export const COMPRESS_SUFFIX = ".gz";
export const TMP_SUFFIX = ".tmp";

export interface RotationPlan {
  /** Files to delete (unused ones, then the oldest excess). */
  remove: string[];
  /** Rotated logs to gzip into <file>.gz (then delete). */
  compress: string[];
}

/** `rotated`: the paths matching <log>.* (any order). */
export function planRotation(rotated: readonly string[], maxFiles: number): RotationPlan {
  const all = new Set(rotated);
  const unused = rotated.filter(
    (l) => l.endsWith(TMP_SUFFIX) || (!l.endsWith(COMPRESS_SUFFIX) && all.has(l + COMPRESS_SUFFIX)),
  );
  const inUse = rotated.filter((l) => !unused.includes(l)).sort();
  const keep = Math.max(0, maxFiles - 2);
  const excess = inUse.slice(0, Math.max(0, inUse.length - keep));
  const kept = inUse.slice(excess.length);
  return { remove: [...unused, ...excess], compress: kept.filter((l) => !l.endsWith(COMPRESS_SUFFIX)) };
}

/** kubelet's timestampFormat "20060102-150405", in UTC (kubelet formats the node's local time). */
export function rotationTimestamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
}
