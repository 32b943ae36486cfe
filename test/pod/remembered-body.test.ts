// A body validated once is not validated again (a converged sync), and anything changed is (src/pod/bundle.ts
// rememberedBody, src/util/memo.ts): through readSignedBody with a real verifier, and the memo's own bounds.
import { describe, expect, it } from "vitest";
import { SignJWT } from "jose";
import { createVerifier } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import { readSignedBody } from "../../src/http/signed-request.js";
import { resultMemo } from "../../src/util/memo.js";
import { bodyFromItems, rememberedBody, type Body } from "../../src/pod/bundle.js";
import { InvalidPodError } from "../../src/pod/validate.js";
import type { IntakeOptions } from "../../src/pod/workloads/intake.js";
import { makeKey } from "../support/http.js";

const pod = (image = "localhost/busybox:1", extra: Record<string, unknown> = {}) => ({
  metadata: { name: "web", namespace: "default", uid: "memo-uid-1", labels: { app: "web" } },
  spec: { containers: [{ name: "main", image, command: ["sleep", "3600"], ...extra }] },
});

describe("validated bodies remembered by their input's canonical hash", () => {
  it("a converged sync is a hit; a changed pod is validated again, and a bad one refused naming its field", async () => {
    const key = await makeKey("EdDSA", "k1");
    const verifier = createVerifier({
      keys: { jwks: { keys: [key.publicJwk] } },
      issuers: ["memo"],
      audience: ["node-a"],
      replay: new MemoryReplayStore(),
    });
    const memo = resultMemo<Body>();
    const o: IntakeOptions = { nodeName: "node-a", serviceAccountTokens: "drop", bodies: memo };
    let jti = 0;
    const read = async (payload: Record<string, unknown>) => {
      const token = await new SignJWT(payload)
        .setProtectedHeader({ alg: "EdDSA", kid: "k1" })
        .setIssuer("memo")
        .setAudience("node-a")
        .setIssuedAt()
        .setExpirationTime("2m")
        .setJti(`m-${jti++}`)
        .sign(key.privateKey);
      const req = new Request("http://node/v1/pods/sync", {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: token,
      });
      return readSignedBody(req, verifier, "sync", 1 << 20, o);
    };
    const first = await read({ act: "sync", pod: pod() });
    expect(memo.stats).toEqual({ hits: 0, misses: 1 });
    // The same pod again: answered from the memo, equal to a full validation.
    const again = await read({ act: "sync", pod: pod() });
    expect(memo.stats).toEqual({ hits: 1, misses: 1 });
    expect(again.pods).toStrictEqual(first.pods);
    // With its keys in another order it is another input (the memo keys on the JSON as sent, and a client sends a
    // manifest the same way each time): validated in full, to the same result.
    const p = pod();
    const reordered = await read({ act: "sync", pod: { spec: p.spec, metadata: p.metadata } });
    expect(reordered.pods).toStrictEqual(first.pods);
    expect(memo.stats).toEqual({ hits: 1, misses: 2 });
    expect(again.pods).toStrictEqual(bodyFromItems([{ input: pod(), at: "pod", podByPlace: true }], {}, o).pods);
    // The caller owns its copy: changing it (checkSyncEntry keeps a stored owner) changes no later answer.
    again.pods[0]!.pod.metadata.labels!["app"] = "changed";
    expect((await read({ act: "sync", pod: pod() })).pods[0]!.pod.metadata.labels!["app"]).toBe("web");
    expect(memo.stats).toEqual({ hits: 2, misses: 2 });
    // A changed pod is validated in full: a valid change is a miss, remembered too.
    const changed = await read({ act: "sync", pod: pod("localhost/busybox:2") });
    expect(changed.pods[0]!.pod.spec.containers[0]!.image).toBe("localhost/busybox:2");
    expect(memo.stats).toEqual({ hits: 2, misses: 3 });
    expect(memo.size).toBe(3);
    // An invalid change is refused with its field named, and nothing is remembered of it.
    const bad = await read({ act: "sync", pod: pod("localhost/busybox:1", { command: "sleep 3600" }) }).catch((e) => e);
    expect(bad).toBeInstanceOf(InvalidPodError);
    expect((bad as InvalidPodError).errors.map((e) => e.path)).toContain("pod.spec.containers[0].command");
    expect(memo.size).toBe(3);
    const badAgain = await read({ act: "sync", pod: pod("localhost/busybox:1", { command: "sleep 3600" }) }).catch(
      (e) => e,
    );
    expect(badAgain).toBeInstanceOf(InvalidPodError);
    expect(memo.stats).toEqual({ hits: 2, misses: 5 });
  });

  it("the intake options are part of the key, and the memo keeps only the most recently used bodies", () => {
    const memo = resultMemo<Body>(2);
    const items = (image: string) => [{ input: pod(image), at: "pod", podByPlace: true }];
    const a: IntakeOptions = { nodeName: "node-a", serviceAccountTokens: "drop", bodies: memo };
    const b: IntakeOptions = { nodeName: "node-b", serviceAccountTokens: "drop", bodies: memo };
    rememberedBody(items("i:1"), {}, a);
    rememberedBody(items("i:1"), {}, b); // another node's options: validated again
    expect(memo.stats).toEqual({ hits: 0, misses: 2 });
    rememberedBody(items("i:1"), {}, a); // a hit, now the most recent
    rememberedBody(items("i:2"), {}, a); // evicts node-b's
    expect(memo.size).toBe(2);
    rememberedBody(items("i:1"), {}, a);
    rememberedBody(items("i:1"), {}, b);
    expect(memo.stats).toEqual({ hits: 2, misses: 4 });
    // The payload's objects are part of it too.
    const cm = { metadata: { name: "cfg", namespace: "default" }, data: { k: "v" } };
    rememberedBody(items("i:1"), { configMaps: [cm] }, a);
    expect(memo.stats).toEqual({ hits: 2, misses: 5 });
  });

  it("a body with workloads and objects comes back from the memo equal to a full validation, classes and all", () => {
    const memo = resultMemo<Body>();
    const o: IntakeOptions = { nodeName: "node-a", serviceAccountTokens: "drop", bodies: memo };
    const items = () => [
      {
        at: "items[0]",
        input: {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "web", namespace: "default" },
          spec: {
            replicas: 2,
            selector: { matchLabels: { app: "web" } },
            template: {
              metadata: { labels: { app: "web" } },
              spec: {
                containers: [
                  { name: "main", image: "localhost/busybox:1", envFrom: [{ configMapRef: { name: "cfg" } }] },
                ],
              },
            },
          },
        },
      },
      {
        at: "items[1]",
        input: {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "web", namespace: "default" },
          spec: { selector: { app: "web" }, ports: [{ port: 80 }] },
        },
      },
      {
        at: "items[2]",
        input: {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "cfg", namespace: "default" },
          data: { a: "1" },
        },
      },
      { at: "items[3]", input: { apiVersion: "v1", kind: "Pod", ...pod() } },
    ];
    const first = rememberedBody(items(), {}, o);
    expect(first.workloads.length).toBeGreaterThan(1);
    const hit = rememberedBody(items(), {}, o);
    expect(memo.stats).toEqual({ hits: 1, misses: 1 });
    expect(hit).toStrictEqual(bodyFromItems(items(), {}, o));
  });

  it("a result that cannot be copied is answered and not remembered", () => {
    const memo = resultMemo<{ f: () => number }>();
    expect(memo.get({ a: 1 }, () => ({ f: () => 1 })).f()).toBe(1);
    expect(memo.size).toBe(0);
  });
});
