// The trusted keys are imported once, not per request (issue #42 item 3): jose's local key set keeps each JWK's
// imported CryptoKey per algorithm (webapi/jwks/local.js importWithAlgCache), which createVerifier relies on. A
// second kid is a miss, imported once too; a refused token's unknown kid imports nothing.
import { afterEach, describe, expect, it, vi } from "vitest";
import { SignJWT } from "jose";
import { AuthError, createVerifier } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import { makeKey, type TestKey } from "../support/http.js";

afterEach(() => vi.restoreAllMocks());

describe("the verifier's key cache", () => {
  it("imports each trusted key once across requests: a hit after the first token, a miss for a new kid", async () => {
    const k1 = await makeKey("EdDSA", "k1");
    const k2 = await makeKey("ES256", "k2");
    const verifier = createVerifier({
      keys: { jwks: { keys: [k1.publicJwk, k2.publicJwk] } },
      issuers: ["cache"],
      audience: ["node-a"],
      replay: new MemoryReplayStore(),
    });
    let jti = 0;
    const token = (key: TestKey, kid = key.kid) =>
      new SignJWT({ act: "sync" })
        .setProtectedHeader({ alg: key.alg, kid })
        .setIssuer("cache")
        .setAudience("node-a")
        .setIssuedAt()
        .setExpirationTime("2m")
        .setJti(`c-${jti++}`)
        .sign(key.privateKey);
    // Observed, not replaced: the real import runs.
    const imports = vi.spyOn(crypto.subtle, "importKey");
    for (let i = 0; i < 5; i++) expect((await verifier.verify(await token(k1))).kid).toBe("k1");
    expect(imports).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 3; i++) expect((await verifier.verify(await token(k2))).kid).toBe("k2");
    expect(imports).toHaveBeenCalledTimes(2);
    const unknown = await verifier.verify(await token(k1, "k9")).catch((e) => e);
    expect(unknown).toBeInstanceOf(AuthError);
    expect((unknown as AuthError).failure).toBe("unknown-key");
    await verifier.verify(await token(k1));
    expect(imports).toHaveBeenCalledTimes(2);
  });
});
