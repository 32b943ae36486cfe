// A view of a CRI client that reports every call's method, gRPC code and duration (for /metrics), like
// counting.ts counts them for one request. The call itself is untouched: results and errors pass through.
import { CLIENT_METHODS, type CriClient } from "./client.js";
import { CriError, grpcCodeName } from "./errors.js";

/** method: the client's name for it (`listPodSandbox`); code: "OK" or the gRPC code's name. */
export type CallObserver = (method: string, code: string, seconds: number) => void;

export function observeCalls(cri: CriClient, observe: CallObserver): CriClient {
  const client: Record<string, unknown> = { close: () => cri.close() };
  for (const name of CLIENT_METHODS) {
    const fn = (cri[name] as (...a: unknown[]) => Promise<unknown>).bind(cri);
    client[name] = async (...args: unknown[]) => {
      const t0 = performance.now();
      try {
        const r = await fn(...args);
        observe(name, "OK", (performance.now() - t0) / 1000);
        return r;
      } catch (e) {
        // An error that never reached the runtime (a bug, a closed client) counts as UNKNOWN.
        observe(name, e instanceof CriError ? grpcCodeName(e.code) : "UNKNOWN", (performance.now() - t0) / 1000);
        throw e;
      }
    };
  }
  return client as unknown as CriClient;
}
