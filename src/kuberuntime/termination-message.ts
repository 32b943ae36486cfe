// The termination-message file, as kubelet handles it (kuberuntime_container.go):
// - at container creation, makeMounts creates an empty file <rootDir>/pods/<uid>/containers/<name>/<8 hex>
//   (mode 0666) and bind-mounts it at the container's terminationMessagePath;
// - when the container has exited, convertToKubeContainerStatus reads the last 4096 bytes of the file
//   behind that mount (getTerminationMessage) and, for FallbackToLogsOnError with a non-zero exit and no
//   message, the last 80 lines of the log cut to its last 2048 bytes (readLastStringFromContainerLogs),
//   and appends it to the runtime's message ("<runtime message>: <termination message>").
// Node filesystem I/O sits behind TerminationMessageFiles (src/host/ has the Node implementation). A
// deployment without it (Workers) mounts no file and reads no message.
import type { LogFiles } from "../logs/log-files.js";
import { readLogs } from "../logs/read-logs.js";
import type { ContainerStatus } from "../container/types.js";
import { podDir } from "../volumemanager/pod-dirs.js";

/** kubecontainer.MaxContainerTerminationMessageLength, ...LogLength, ...LogLines */
export const MAX_TERMINATION_MESSAGE_BYTES = 4096;
export const MAX_TERMINATION_MESSAGE_LOG_BYTES = 2048;
export const MAX_TERMINATION_MESSAGE_LOG_LINES = 80;

export interface TerminationMessageFiles {
  /** Create an empty, world-writable file in `dir` (made if missing) with a random name; its path. */
  create(dir: string): Promise<string>;
  /** The last `maxBytes` bytes of the file; undefined when it does not exist. */
  readTail(path: string, maxBytes: number): Promise<Uint8Array | undefined>;
}

/** kubelet's getPodContainerDir */
export const podContainerDir = (rootDir: string, uid: string, name: string) =>
  `${podDir(rootDir, uid)}/containers/${name}`;

const text = new TextDecoder();

/** getTerminationMessage: [message, check the logs]. */
async function fromFile(
  files: TerminationMessageFiles,
  c: ContainerStatus,
  fallbackToLogs: boolean,
): Promise<[string, boolean]> {
  const path = c.terminationMessagePath;
  if (!path) return ["", fallbackToLogs];
  const mount = c.mounts?.find((m) => m.containerPath === path);
  if (!mount) return ["", fallbackToLogs];
  try {
    const data = await files.readTail(mount.hostPath, MAX_TERMINATION_MESSAGE_BYTES);
    if (data === undefined) return ["", fallbackToLogs];
    return [text.decode(data), fallbackToLogs && data.length === 0];
  } catch (e) {
    return [`Error on reading termination log ${mount.hostPath}: ${(e as Error).message}`, false];
  }
}

/** readLastStringFromContainerLogs: the last 80 lines, of which the last 2048 bytes. */
async function fromLogs(logs: LogFiles, path: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  try {
    await readLogs(logs, path, { tailLines: MAX_TERMINATION_MESSAGE_LOG_LINES }, async (b) => void chunks.push(b));
  } catch (e) {
    return `Error on reading termination message from logs: ${(e as Error).message}`;
  }
  const all = Buffer.concat(chunks);
  return text.decode(all.subarray(Math.max(0, all.length - MAX_TERMINATION_MESSAGE_LOG_BYTES)));
}

/** convertToKubeContainerStatus's message enrichment for every exited instance: copies of the statuses it changes. */
export async function readTerminationMessages(
  statuses: readonly ContainerStatus[],
  files: TerminationMessageFiles | undefined,
  logs: LogFiles | undefined,
): Promise<ContainerStatus[]> {
  return Promise.all(
    statuses.map(async (c) => {
      if (c.state !== "exited") return c;
      // A container that could not even start has no logs.
      const fallbackToLogs =
        c.terminationMessagePolicy === "FallbackToLogsOnError" && c.exitCode !== 0 && c.reason !== "ContainerCannotRun";
      let [msg, checkLogs] = files ? await fromFile(files, c, fallbackToLogs) : ["", fallbackToLogs];
      if (checkLogs && logs && c.logPath) msg = await fromLogs(logs, c.logPath);
      // A copy: the status read may be shared (the status cache keeps the decision's read).
      return msg ? { ...c, message: c.message ? `${c.message}: ${msg}` : msg } : c;
    }),
  );
}
