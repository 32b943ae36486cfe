// The in-process CRI server and a client to it, for one describe block or file: started before its tests (once, or
// before each with `each`), closed after. Tests read `fake` and `cri` from the object it answers.
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { startFakeCri, type FakeRuntime, type FakeServer } from "./fake-cri.js";

export interface FakeCriSuite {
  readonly fake: FakeServer;
  readonly cri: CriClient;
}

export function useFakeCri(o: { timeoutMs?: number; each?: boolean; runtime?: () => FakeRuntime } = {}): FakeCriSuite {
  const s = {} as { fake: FakeServer; cri: CriClient };
  (o.each ? beforeEach : beforeAll)(async () => {
    s.fake = await startFakeCri(o.runtime?.());
    s.cri = connectGrpc({ endpoint: s.fake.endpoint, timeoutMs: o.timeoutMs ?? 5000 });
  });
  (o.each ? afterEach : afterAll)(async () => {
    s.cri?.close();
    await s.fake?.close();
  });
  return s;
}
