// Per-request view of a CRI client that counts its round trips (for the request log and the benchmark).
import { IMAGE_METHODS, OPTIONAL_RUNTIME_METHODS, RUNTIME_METHODS, type CriClient } from "./client.js";

export interface CountingClient {
  client: CriClient;
  readonly calls: number;
}

export function countCalls(cri: CriClient): CountingClient {
  const counter = { calls: 0 } as { calls: number; client: CriClient };
  const client: Record<string, unknown> = { close: () => cri.close() };
  for (const name of [...RUNTIME_METHODS, ...OPTIONAL_RUNTIME_METHODS, ...IMAGE_METHODS]) {
    const fn = (cri[name] as (...a: unknown[]) => Promise<unknown>).bind(cri);
    client[name] = (...args: unknown[]) => {
      counter.calls++;
      return fn(...args);
    };
  }
  counter.client = client as unknown as CriClient;
  return counter;
}
