// ExecSync into a running container of a pod, with the output bounded: each stream is cut at `maxBytes`
// (with a `truncated` flag), and output that is not UTF-8 text comes back base64-encoded (with the flag
// `encoding: "base64"`) rather than mangled.
import type { CriClient } from "../cri/client.js";
import { CriError, GrpcCode, isCriError } from "../cri/errors.js";
import { ContainerChoiceError } from "../container/container-choice.js";
import type { PodStatus } from "../container/types.js";

export interface ExecOutput {
  data: string;
  encoding: "utf-8" | "base64";
  truncated: boolean;
  bytes: number;
}

export interface ExecResult {
  containerId: string;
  exitCode: number;
  stdout: ExecOutput;
  stderr: ExecOutput;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

export function boundedOutput(b: Uint8Array, maxBytes: number): ExecOutput {
  const truncated = b.length > maxBytes;
  const cut = truncated ? b.subarray(0, maxBytes) : b;
  try {
    // A cut may split a character: decode without its last incomplete bytes before calling it binary.
    return { data: utf8.decode(truncated ? trimPartialUtf8(cut) : cut), encoding: "utf-8", truncated, bytes: b.length };
  } catch {
    return { data: Buffer.from(cut).toString("base64"), encoding: "base64", truncated, bytes: b.length };
  }
}

function trimPartialUtf8(b: Uint8Array): Uint8Array {
  // Walk back over at most 3 continuation bytes to the start of the last character; drop it if incomplete.
  let i = b.length - 1;
  while (i >= 0 && b.length - i <= 4 && (b[i]! & 0xc0) === 0x80) i--;
  if (i < 0) return b;
  const lead = b[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return b.length - i < need ? b.subarray(0, i) : b;
}

/** The running instance of a container known to be the pod's. */
export function runningInstance(status: PodStatus, podName: string, container: string): string {
  const c = status.containerStatuses.find((s) => s.name === container && s.state === "running");
  if (!c)
    throw new ContainerChoiceError(
      "bad-request",
      `container ${JSON.stringify(container)} in pod ${JSON.stringify(podName)} is not running`,
    );
  return c.id;
}

/** The runtime's gRPC message limit (containerd's default, 16 MiB, and podsync's client's own). */
export const RUNTIME_MESSAGE_LIMIT_BYTES = 16 * 1024 * 1024;

/** A command's output is over the runtime's message limit: ExecSync returns the whole output in one message,
 * so the runtime refuses to send it (RESOURCE_EXHAUSTED) and there is nothing to cut. */
export class ExecOutputTooLargeError extends Error {
  constructor(
    readonly limitBytes: number,
    /** The message size the runtime reported, when it did. */
    readonly sizeBytes: number | undefined,
  ) {
    super(
      `the command's output (stdout and stderr together${sizeBytes ? `, ${sizeBytes} bytes in the runtime's reply` : ""}) is over the runtime's gRPC message limit of ${limitBytes} bytes, so CRI ExecSync cannot return any of it; podsync cuts output at its own limit only below that. Run a command with less output (e.g. through head -c)`,
    );
  }
}

/** The command is not in the container (the runtime could not start it): the request's fault, not the node's. */
export class ExecCommandNotFoundError extends Error {}

/** runc's words for a command it could not start (containerd's ExecSync error wraps them: "OCI runtime exec
 * failed: exec failed: unable to start container process: exec: "x": executable file not found in $PATH"). */
const NOT_STARTED =
  /exec: "([^"]*)": (executable file not found in \$PATH|stat [^:]*: no such file or directory|permission denied)/;

export async function execSync(
  cri: CriClient,
  containerId: string,
  command: string[],
  timeoutSeconds: number,
  maxBytes: number,
): Promise<ExecResult> {
  // The call lasts up to the command's timeout; its deadline is the runtime request timeout beyond it (kubelet's
  // `r.timeout + timeout`). ExecSync carries the whole output in one reply: at most the runtime's message limit is
  // held here, and output above it is refused.
  const r = await cri
    .execSync({ containerId, cmd: command, timeout: BigInt(timeoutSeconds) }, { workMs: timeoutSeconds * 1000 })
    .catch((e: unknown) => {
      if (isCriError(e, GrpcCode.RESOURCE_EXHAUSTED)) {
        // containerd: "grpc: trying to send message larger than max (17000042 vs. 16777216)"; grpc-js: "Received
        // message larger than max (17000042 vs 16777216)".
        const m = /larger than max \((\d+) vs\.? (\d+)\)/.exec(e.details);
        throw new ExecOutputTooLargeError(m ? Number(m[2]) : RUNTIME_MESSAGE_LIMIT_BYTES, m ? Number(m[1]) : undefined);
      }
      const m = e instanceof CriError ? NOT_STARTED.exec(e.details) : null;
      if (m) throw new ExecCommandNotFoundError(`the container cannot run ${JSON.stringify(m[1])}: ${m[2]}`);
      throw e;
    });
  return {
    containerId,
    exitCode: r.exitCode,
    stdout: boundedOutput(r.stdout, maxBytes),
    stderr: boundedOutput(r.stderr, maxBytes),
  };
}
