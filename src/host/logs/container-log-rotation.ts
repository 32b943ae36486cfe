// kubelet's containerLogManager (pkg/kubelet/logs/container_log_manager.go) on the node: every monitor interval,
// each running container podsync manages whose log (CRI ContainerStatus.logPath) has reached
// PODSYNC_CONTAINER_LOG_MAX_SIZE is rotated: unused and excess rotated files deleted and older ones gzipped
// (logs/rotation.ts decides), the live log renamed to <log>.<timestamp>, and the runtime told to reopen it (CRI
// ReopenContainerLog); if that fails the rename is undone, so the next pass tries again. A log missing at its path
// is reopened too, as kubelet does. The reader (logs/read-logs.ts) follows the path, so `logs -f` goes on across a
// rotation. Containers are handled one at a time (kubelet runs a worker pool of 1 by default).
//
// Differs from kubelet, on purpose: kubelet asks ContainerStatus for every running container on every pass
// (processContainer), only to read its log path. A container's log path is fixed when it is created, so a pass
// here asks it once per container and keeps it while the container is listed: at 110 pods that is one
// ListContainers every 10 s instead of 111 calls.
import { createReadStream, createWriteStream } from "node:fs";
import { readdir, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import type { CriClient } from "../../cri/client.js";
import { ContainerState } from "../../gen/runtime/v1/api_pb.js";
import { KUBERNETES_MANAGED_LABEL, MANAGED_BY } from "../../container/labels.js";
import { COMPRESS_SUFFIX, planRotation, rotationTimestamp, TMP_SUFFIX } from "../../logs/rotation.js";

export interface LogRotationOptions {
  cri: Pick<CriClient, "listContainers" | "containerStatus" | "reopenContainerLog">;
  maxSize: number;
  maxFiles: number;
  intervalMs: number;
  now?: () => number;
  onError?: (e: unknown, containerId: string) => void;
  /** Each listed container's log path, as ContainerStatus gave it ("" for none); kept across passes. */
  logPaths?: Map<string, string>;
}

const missing = (e: unknown) => (e as { code?: string }).code === "ENOENT";

async function compress(log: string): Promise<void> {
  const tmp = log + TMP_SUFFIX;
  try {
    const mode = (await stat(log)).mode & 0o777;
    await pipeline(createReadStream(log), createGzip(), createWriteStream(tmp, { mode }));
    await rename(tmp, log + COMPRESS_SUFFIX);
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  await unlink(log);
}

/** One container's rotation (rotateLog), when its log has reached the size. */
export async function rotateIfDue(o: LogRotationOptions, id: string): Promise<boolean> {
  let log = o.logPaths?.get(id);
  if (log === undefined) {
    const { status } = await o.cri.containerStatus({ containerId: id });
    log = status?.logPath ?? "";
    o.logPaths?.set(id, log);
  }
  if (!log) return false;
  let size: number;
  try {
    size = (await stat(log)).size;
  } catch (e) {
    if (!missing(e)) throw e;
    await o.cri.reopenContainerLog({ containerId: id });
    size = (await stat(log)).size;
  }
  if (size < o.maxSize) return false;
  const prefix = `${basename(log)}.`;
  const rotated = (await readdir(dirname(log))).filter((f) => f.startsWith(prefix)).map((f) => join(dirname(log), f));
  const plan = planRotation(rotated, o.maxFiles);
  for (const f of plan.remove) await unlink(f).catch((e: unknown) => (missing(e) ? undefined : Promise.reject(e)));
  for (const f of plan.compress) await compress(f);
  const to = `${log}.${rotationTimestamp((o.now ?? Date.now)())}`;
  await rename(log, to);
  try {
    await o.cri.reopenContainerLog({ containerId: id });
  } catch (e) {
    await rename(to, log).catch(() => undefined);
    throw e;
  }
  return true;
}

/** One pass over the running containers (rotateLogs). */
export async function rotateLogs(o: LogRotationOptions): Promise<void> {
  const { containers } = await o.cri.listContainers({
    filter: {
      state: { state: ContainerState.CONTAINER_RUNNING },
      labelSelector: { [KUBERNETES_MANAGED_LABEL]: MANAGED_BY },
    },
  });
  if (o.logPaths) {
    const listed = new Set(containers.map((c) => c.id));
    for (const id of o.logPaths.keys()) if (!listed.has(id)) o.logPaths.delete(id);
  }
  for (const c of containers) await rotateIfDue(o, c.id).catch((e: unknown) => o.onError?.(e, c.id));
}

/** Runs a pass every interval (passes never overlap); the returned function stops it. */
export function startLogRotation(options: LogRotationOptions): () => void {
  const o = { ...options, logPaths: options.logPaths ?? new Map<string, string>() };
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = () => {
    timer = setTimeout(async () => {
      await rotateLogs(o).catch(() => undefined);
      if (!stopped) tick();
    }, o.intervalMs);
    timer.unref?.();
  };
  tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
