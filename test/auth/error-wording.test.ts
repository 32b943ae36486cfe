// Errors that say what to do: unknown fields name the nearest known one, a missing field is kubectl's "Required
// value", a volume type podsync lacks is one error naming the ones it has; refused tokens name the nodes, the kid
// and the expiry.
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { type AuthError, createVerifier } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import { validatePod } from "../../src/pod/validate.js";
import { errorsOf } from "../support/pods.js";
import { makeKey } from "../support/http.js";

const pod = (spec: Record<string, unknown>) => ({
  metadata: { name: "a", uid: "u" },
  spec: { containers: [{ name: "c", image: "i" }], ...spec },
});

describe("pod field errors", () => {
  it("did you mean, Required value, and one error for an unsupported volume type", () => {
    expect(
      errorsOf(() => validatePod(pod({ containers: [{ name: "c", image: "i", imagePullPolcy: "Never" }] }))),
    ).toEqual([
      {
        path: "spec.containers[0].imagePullPolcy",
        message: 'unknown field "imagePullPolcy" (did you mean "imagePullPolicy"?)',
      },
    ]);
    expect(errorsOf(() => validatePod(pod({ restartpolicy: "Never" })))).toEqual([
      { path: "spec.restartpolicy", message: 'unknown field "restartpolicy" (did you mean "restartPolicy"?)' },
    ]);
    expect(errorsOf(() => validatePod(pod({ containers: [{ name: "c" }] })))).toEqual([
      { path: "spec.containers[0].image", message: "Required value" },
    ]);
    expect(errorsOf(() => validatePod(pod({ volumes: [{ name: "v", gcePersistentDisk: { pdName: "d" } }] })))).toEqual([
      {
        path: "spec.volumes[0].gcePersistentDisk",
        message: expect.stringMatching(
          /^unknown field "gcePersistentDisk": not supported by podsync \(supported here: hostPath, emptyDir, persistentVolumeClaim, configMap, secret/,
        ),
      },
    ]);
    expect(errorsOf(() => validatePod(pod({ volumes: [{ name: "v", cinder: { volumeID: "x" } }] })))).toHaveLength(1);
    expect(errorsOf(() => validatePod(pod({ volumes: [{ name: "v", hostpath: { path: "/x" } }] })))).toEqual([
      { path: "spec.volumes[0].hostpath", message: 'unknown field "hostpath" (did you mean "hostPath"?)' },
    ]);
  });
});

describe("refused tokens", () => {
  it("name the node signed for and this node's names, the unknown kid, and when the token expired", async () => {
    const k = await makeKey("EdDSA", "ed-1");
    const stranger = await makeKey("EdDSA", "other-kid");
    const now = Date.parse("2026-01-01T00:00:00Z");
    const v = createVerifier({
      keys: { jwks: { keys: [k.publicJwk] } },
      issuers: ["iss"],
      audience: ["node-a", "node-a-id"],
      replay: new MemoryReplayStore(),
      now: () => now,
    });
    const sign = (key: typeof k, aud: string, iat: number, exp: number) =>
      new SignJWT({ act: "plan" })
        .setProtectedHeader({ alg: key.alg, kid: key.kid })
        .setIssuer("iss")
        .setAudience(aud)
        .setIssuedAt(iat)
        .setExpirationTime(exp)
        .setJti(`j-${Math.random()}`)
        .sign(key.privateKey);
    const t = now / 1000;
    const refused = async (token: string) =>
      v.verify(token).then(
        () => undefined,
        (e: AuthError) => e,
      );
    expect((await refused(await sign(k, "node-b", t, t + 60)))?.message).toBe(
      'token is signed for another node: "node-b" (aud); this node is "node-a" or "node-a-id"',
    );
    expect((await refused(await sign(stranger, "node-a", t, t + 60)))?.message).toBe(
      'no trusted key matches the token\'s kid "other-kid" (alg EdDSA)',
    );
    expect((await refused(await sign(k, "node-a", t - 200, t - 100)))?.message).toBe(
      "token expired at 2025-12-31T23:58:20.000Z (100 s ago; the node's clock says 2026-01-01T00:00:00.000Z)",
    );
  });
});
