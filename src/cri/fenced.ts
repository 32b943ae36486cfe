// A CRI client for a lock holder whose lock can be lost (the Workers per-pod lease). Once the fence aborts,
// no write starts (it fails ABORTED, naming why) and calls in flight are cancelled; reads still pass, as
// they change nothing. So a holder that may have lost its lease cannot act on the pod beside the next holder.
import { CLIENT_METHODS, type CallOptions, type CriClient } from "./client.js";
import { CriError, GrpcCode } from "./errors.js";

const WRITES = new Set<string>(["runPodSandbox", "stopPodSandbox", "removePodSandbox", "createContainer", "startContainer", "stopContainer", "removeContainer", "pullImage", "execSync"]);

export function fenced(cri: CriClient, fence: AbortSignal): CriClient {
  const client: Record<string, unknown> = { close: () => cri.close() };
  for (const name of CLIENT_METHODS) {
    const fn = (cri[name] as (req: unknown, o?: CallOptions) => Promise<unknown>).bind(cri);
    client[name] = (req: unknown, o?: CallOptions) => {
      if (WRITES.has(name) && fence.aborted) {
        const why = (fence.reason as Error)?.message ?? "the lock was lost";
        return Promise.reject(new CriError(GrpcCode.ABORTED, `not sent: ${why}`, name[0]!.toUpperCase() + name.slice(1)));
      }
      // A read sent after the fence fired passes (an aborted signal would cancel it at once).
      if (fence.aborted) return fn(req, o);
      return fn(req, { ...o, signal: o?.signal ? AbortSignal.any([o.signal, fence]) : fence });
    };
  }
  return client as unknown as CriClient;
}
