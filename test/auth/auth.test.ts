// Key sources beyond an inline set: a remote JWKS (cached, refetched for an unknown kid: key rotation),
// and the replay store's bounds.
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignJWT, type JWK } from "jose";
import { createVerifier } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import { makeKey, type TestKey } from "../support/http.js";

let served: { keys: JWK[] } = { keys: [] };
let fetches = 0;
const server = createServer((_req, res) => {
  fetches++;
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(served));
});
let url = "";
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const a = server.address();
  url = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/jwks.json`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

let n = 0;
const sign = (k: TestKey) =>
  new SignJWT({ act: "plan" })
    .setProtectedHeader({ alg: k.alg, kid: k.kid })
    .setIssuer("iss")
    .setAudience("node")
    .setIssuedAt()
    .setExpirationTime("1m")
    .setJti(`r-${n++}`)
    .sign(k.privateKey);

describe("remote JWKS", () => {
  it("caches the set, and picks up a rotated-in key by its kid", async () => {
    const a = await makeKey("EdDSA", "key-a");
    const b = await makeKey("ES256", "key-b");
    served = { keys: [a.publicJwk] };
    const v = createVerifier({
      keys: { url, cooldownMs: 0 },
      issuers: ["iss"],
      audience: ["node"],
      replay: new MemoryReplayStore(),
    });
    await v.verify(await sign(a));
    await v.verify(await sign(a));
    expect(fetches).toBe(1); // cached
    await expect(v.verify(await sign(b))).rejects.toMatchObject({ failure: "unknown-key", status: 401 });
    served = { keys: [a.publicJwk, b.publicJwk] }; // rotation: b published
    expect((await v.verify(await sign(b))).kid).toBe("key-b");
    expect(fetches).toBeGreaterThanOrEqual(2);
  });

  it("an unreachable JWKS URL is a 503 (retry), never a crash or a 500", async () => {
    const a = await makeKey("EdDSA", "key-a");
    const v = createVerifier({
      keys: { url: "http://127.0.0.1:1/jwks.json" },
      issuers: ["iss"],
      audience: ["node"],
      replay: new MemoryReplayStore(),
    });
    await expect(v.verify(await sign(a))).rejects.toMatchObject({ failure: "keys-unavailable", status: 503 });
  });
});

describe("replay store", () => {
  it("refuses a seen id until it expires, then forgets it", async () => {
    let now = 1000;
    const s = new MemoryReplayStore(() => now);
    expect(await s.claim("a", 2000)).toBe(true);
    expect(await s.claim("a", 2000)).toBe(false);
    now = 2001;
    expect(await s.claim("a", 3000)).toBe(true);
  });
  it("is bounded: when full of live ids it refuses new ones rather than forgetting live ones", async () => {
    const s = new MemoryReplayStore(() => 0, 3);
    for (const k of ["a", "b", "c"]) expect(await s.claim(k, 10)).toBe(true);
    expect(await s.claim("d", 10)).toBe(false);
    expect(s.size).toBe(3);
  });
  it('refuses to be built with algorithm "none"', () => {
    expect(() =>
      createVerifier({
        keys: { jwks: { keys: [] } },
        issuers: [],
        audience: [],
        replay: new MemoryReplayStore(),
        algorithms: ["none" as never],
      }),
    ).toThrow(/never allowed/);
  });
});
