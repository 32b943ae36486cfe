// The in-process CRI server and a client to it, for one describe block (started before its tests, closed after).
import { afterAll, beforeAll } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { startFakeCri, type FakeServer } from "./fake-cri.js";

export function useFakeCri(): { readonly fake: FakeServer; readonly cri: CriClient } {
  const s = {} as { fake: FakeServer; cri: CriClient };
  beforeAll(async () => {
    s.fake = await startFakeCri();
    s.cri = connectGrpc({ endpoint: s.fake.endpoint, timeoutMs: 5000 });
  });
  afterAll(async () => {
    s.cri?.close();
    await s.fake?.close();
  });
  return s;
}
