// The node's budget of long-lived streams: open watches, exec sessions and followed or streamed logs hold a socket
// (exec two, a log one and a file) for minutes, so their number is capped per token and per node, below the
// process's file-descriptor limit. A stream over either cap is refused before it starts: 429 `too-many-streams`
// on podsync's paths, a 429 TooManyRequests Status on the Kubernetes paths (toKubeStatus maps it). The API server
// has no per-user count of watches (API Priority and Fairness counts a watch only while it is being set up, and
// --max-requests-inflight leaves long-running requests out); kubelet's streaming server caps nothing either.
import { ProblemError } from "../problems.js";

export type StreamKind = "watch" | "exec" | "log";

export interface StreamBudgetLimits {
  /** Open streams of all tokens together. */
  perNode: number;
  /** Open streams of one token (its issuer and jti). */
  perToken: number;
}

/** Sockets and files each kind holds while it is open: exec joins two sockets, a log reads a file. */
const FDS: Record<StreamKind, number> = { watch: 1, exec: 2, log: 2 };

export class StreamBudget {
  private open = 0;
  private readonly byToken = new Map<string, number>();
  constructor(readonly limits: StreamBudgetLimits) {}

  /** The effective node cap: the setting, and no more than half the descriptors the process may open (the other
   * half stays for the runtime's socket, state files, pods' log files and plain requests). */
  static limitsFor(perNode: number, perToken: number, fdLimit: number | undefined): StreamBudgetLimits {
    const byFds = fdLimit === undefined ? perNode : Math.max(1, Math.floor(fdLimit / 2 / FDS.exec));
    return { perNode: Math.min(perNode, byFds), perToken: Math.min(perToken, perNode, byFds) };
  }

  get size(): number {
    return this.open;
  }

  /** A slot for one stream of `token`, or a 429 naming the cap it passed. The release is idempotent. */
  take(token: string, kind: StreamKind): () => void {
    const mine = this.byToken.get(token) ?? 0;
    if (mine >= this.limits.perToken)
      throw tooMany(
        `this token already holds ${mine} open streams (watches, exec and log streams), the most one token may hold on this node (PODSYNC_MAX_STREAMS_PER_TOKEN=${this.limits.perToken}); close one and retry`,
        kind,
      );
    if (this.open >= this.limits.perNode)
      throw tooMany(
        `the node holds ${this.open} open streams (watches, exec and log streams), its limit (PODSYNC_MAX_STREAMS=${this.limits.perNode}); retry later`,
        kind,
      );
    this.open++;
    this.byToken.set(token, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open--;
      const n = (this.byToken.get(token) ?? 1) - 1;
      if (n <= 0) this.byToken.delete(token);
      else this.byToken.set(token, n);
    };
  }
}

function tooMany(message: string, kind: StreamKind): ProblemError {
  return new ProblemError("too-many-streams", `${kind}: ${message}`, { retryAfterSeconds: 1 });
}

/** The body, releasing its slot when it ends, fails or is cancelled by the client. */
export function releasing(body: ReadableStream<Uint8Array>, release: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            release();
            controller.close();
          } else controller.enqueue(value);
        } catch (e) {
          release();
          controller.error(e);
        }
      },
      cancel(reason) {
        release();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
