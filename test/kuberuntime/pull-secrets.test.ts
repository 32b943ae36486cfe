// Pull secrets: which credentials PullImage gets (kubelet's keyring lookup), and how a response shows them.
// The real pulls against a registry are in registry-pull.e2e.test.ts.
import { describe, expect, it } from "vitest";
import { toV1Pod } from "../../src/status/api-status.js";
import { pullCredentials, withoutCredentials } from "../../src/kuberuntime/images.js";
import type { PullSecret } from "../../src/pod/schema.js";
import { pod } from "../support/pods.js";

const secrets: PullSecret[] = [
  {
    auths: {
      "127.0.0.1:5111": { username: "u1", password: "p1-secret" },
      "other.example.com": { username: "x", password: "y" },
    },
  },
  {
    name: "inline-2",
    auths: {
      "https://127.0.0.1:5111/v2/": { auth: btoa("u2:p2:with:colons") },
      "registry.example.com": { identitytoken: "id-token-123" },
    },
  },
];

describe("pullCredentials", () => {
  it("every credential for the image's registry, in order, with no serverAddress (as kubelet's keyring)", () => {
    expect(pullCredentials("127.0.0.1:5111/podsync/busybox:1", secrets)).toEqual([
      { username: "u1", password: "p1-secret", identityToken: "", registryToken: "" },
      { username: "u2", password: "p2:with:colons", identityToken: "", registryToken: "" },
    ]);
    expect(pullCredentials("registry.example.com/app:1", secrets)).toEqual([
      { username: "", password: "", identityToken: "id-token-123", registryToken: "" },
    ]);
    expect(pullCredentials("busybox:1", secrets)).toEqual([]);
  });
});

describe("withoutCredentials", () => {
  it("keeps names, registries and usernames; every password, auth and token is [redacted]", () => {
    expect(withoutCredentials(secrets)).toEqual([
      {
        auths: {
          "127.0.0.1:5111": { username: "u1", password: "[redacted]" },
          "other.example.com": { username: "x", password: "[redacted]" },
        },
      },
      {
        name: "inline-2",
        auths: {
          "https://127.0.0.1:5111/v2/": { auth: "[redacted]" },
          "registry.example.com": { identitytoken: "[redacted]" },
        },
      },
    ]);
  });

  it("the v1.Pod a GET returns carries no credential", () => {
    const p = pod({ imagePullSecrets: secrets });
    const out = JSON.stringify(
      toV1Pod(p, p.metadata, {
        phase: "Pending",
        conditions: [],
        containerStatuses: [],
        qosClass: "BestEffort",
      } as never),
    );
    for (const s of ["p1-secret", btoa("u2:p2:with:colons"), "id-token-123", '"y"']) expect(out).not.toContain(s);
    expect(out).toContain('"username":"u1"');
    expect(p.spec.imagePullSecrets![0]!.auths!["127.0.0.1:5111"]!.password).toBe("p1-secret"); // the spec itself is untouched
  });
});
