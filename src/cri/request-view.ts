// The per-request view of a CRI client, in one layer: it counts the request's round trips (for the request log,
// the results and the bench) and, for a lock holder whose lock can be lost (the Workers per-pod lease), fences
// the writes. Once the fence aborts, no write starts (it fails ABORTED, naming why) and calls in flight are
// cancelled; reads still pass, as they change nothing. So a holder that may have lost its lease cannot act on the
// pod beside the next holder.
import { CLIENT_METHODS, type CallOptions, type CriClient } from "./client.js";
import { CriError, GrpcCode } from "./errors.js";

const WRITES = new Set<string>([
  "runPodSandbox",
  "stopPodSandbox",
  "removePodSandbox",
  "createContainer",
  "startContainer",
  "stopContainer",
  "removeContainer",
  "pullImage",
  "execSync",
]);

export interface RequestView {
  client: CriClient;
  /** Calls made through `client` so far. */
  readonly calls: number;
}

/** `stop` (a sync cancelled because its pod is being deleted): no write starts once it fired, but calls in flight
 * finish (a cancelled StartContainer would leave the container mid-start, which no kill can remove); a call that
 * should end with it (a postStart hook's ExecSync) is given it as its own signal. */
export function requestView(cri: CriClient, fence?: AbortSignal, stop?: AbortSignal): RequestView {
  const view = { calls: 0 } as { calls: number; client: CriClient };
  const client: Record<string, unknown> = { close: () => cri.close() };
  for (const name of CLIENT_METHODS) {
    const fn = cri[name] as (req: unknown, o?: CallOptions) => Promise<unknown>;
    const write = WRITES.has(name);
    client[name] = (req: unknown, o?: CallOptions) => {
      view.calls++;
      if (write && stop?.aborted) {
        const why = (stop.reason as Error)?.message ?? "the sync was cancelled";
        return Promise.reject(
          new CriError(GrpcCode.ABORTED, `not sent: ${why}`, name[0]!.toUpperCase() + name.slice(1)),
        );
      }
      if (!fence) return fn(req, o);
      if (fence.aborted) {
        if (!write) return fn(req, o); // a read sent after the fence fired passes (an aborted signal would cancel it)
        const why = (fence.reason as Error)?.message ?? "the lock was lost";
        return Promise.reject(
          new CriError(GrpcCode.ABORTED, `not sent: ${why}`, name[0]!.toUpperCase() + name.slice(1)),
        );
      }
      return fn(req, { ...o, signal: o?.signal ? AbortSignal.any([o.signal, fence]) : fence });
    };
  }
  view.client = client as unknown as CriClient;
  return view;
}
