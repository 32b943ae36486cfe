// The HTTP function through a real server on loopback, in front of the in-process CRI runtime.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SignJWT, base64url } from "jose";
import { stringify as toYaml } from "yaml";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness, ISSUER, NODE, makeKey, startStack, type Stack } from "../support/http.js";
import { uid } from "../support/pods.js";
import { toProblemError } from "../../src/usecases/problems.js";

let fake: FakeServer;
let h: Harness;
let stack: Stack;

const podInput = (id = uid(), extra: Record<string, unknown> = {}) => ({
  metadata: { name: "web", namespace: "default", uid: id },
  spec: {
    terminationGracePeriodSeconds: 2,
    containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }],
    ...extra,
  },
});

beforeAll(async () => {
  stack = await startStack({ timeoutMs: 1500, maxBodyBytes: 64 * 1024 });
  ({ fake, h } = stack);
});
afterAll(() => stack.close());
beforeEach(() => fake.runtime.clearFaults());

/** The request is refused with this status and problem type, and the runtime saw no call at all. */
async function refused(p: Promise<{ status: number; type: string; body: any }>, status: number, slug: string) {
  const before = fake.runtime.totalCalls();
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.type).toBe("application/problem+json");
  expect(r.body).toMatchObject({ type: `urn:podsync:problem:${slug}`, status });
  expect(JSON.stringify(r.body)).not.toMatch(/\bat .*\.ts:\d+/); // no stack traces
  expect(fake.runtime.totalCalls()).toBe(before);
  return r.body;
}

describe("routes", () => {
  it("GET /healthz, /readyz (CRI Version), /openapi.json", async () => {
    expect((await h.fetch("/healthz")).body).toEqual({ ok: true, node: NODE });
    const ready = await h.fetch("/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.runtime).toMatchObject({
      name: "fake",
      apiVersion: "v1",
      conditions: { RuntimeReady: true, NetworkReady: true },
    });
    const doc = (await h.fetch("/openapi.json")).body;
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/v1/pods/sync", "/v1/pods/plan", "/v1/pods/{uid}/status", "/v1/pods/{uid}"]),
    );
    expect(doc.components.schemas.Pod.properties.spec.properties.containers).toBeDefined();
    // Error responses come from the problem catalogue: each names the problem types it can carry.
    const syncErrors = doc.paths["/v1/pods/sync"].post.responses;
    expect(syncErrors["409"].description).toContain("urn:podsync:problem:pod-busy");
    expect(syncErrors["409"].description).toContain("urn:podsync:problem:replayed");
    expect(syncErrors["400"].description).toContain("urn:podsync:problem:invalid-pod");
    expect(doc.paths["/v1/pods/{uid}/status"].get.responses["404"].description).toContain("pod-not-found");
  });

  it("POST /v1/pods/sync: 200 with actions, steps and status; the second sync does nothing", async () => {
    const pod = podInput();
    const r = await h.post("/v1/pods/sync", pod);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      ok: true,
      pod: { namespace: "default", name: "web", uid: pod.metadata.uid },
      actions: { createSandbox: true, containersToStart: ["main"] },
    });
    expect(r.body.steps.map((s: any) => s.action)).toEqual(["CreatePodSandbox", "StartContainer"]);
    for (const s of r.body.steps)
      expect(s).toMatchObject({ ok: true, durationMs: expect.any(Number), target: expect.any(String) });
    const again = await h.post("/v1/pods/sync", pod);
    expect(again.body.steps).toEqual([]);
    expect(again.body.runtime.containers).toMatchObject([{ name: "main", state: "running", restartCount: 0 }]);
    expect(again.body.status).toMatchObject({
      phase: "Running",
      containerStatuses: [{ name: "main", ready: true, started: true, restartCount: 0, state: { running: {} } }],
    });
    const line = h.logs.at(-1)!;
    expect(line).toMatchObject({
      method: "POST",
      route: "/v1/pods/sync",
      status: 200,
      podUid: pod.metadata.uid,
      criCalls: 3,
    }); // 3 to decide; the read-back reuses them (the start time was kept from the first sync's read)
  });

  it("the pod can come as a JSON wrapper, or as a JSON/YAML body signed by digest in Podsync-Signature", async () => {
    const a = podInput();
    const t = await h.sign({ act: "sync", pod: a });
    expect(
      (
        await h.fetch("/v1/pods/sync", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jws: t }),
        })
      ).status,
    ).toBe(200);

    for (const [type, encode] of [
      ["application/json", JSON.stringify],
      ["application/yaml", toYaml],
    ] as const) {
      const body = encode(podInput());
      const digest = base64url.encode(
        new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body))),
      );
      const sig = await h.sign({ act: "sync", body_sha256: digest });
      const r = await h.fetch("/v1/pods/sync", {
        method: "POST",
        headers: { "content-type": type, "podsync-signature": sig },
        body,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      // One changed byte after signing is refused.
      const sig2 = await h.sign({ act: "sync", body_sha256: digest });
      await refused(
        h.fetch("/v1/pods/sync", {
          method: "POST",
          headers: { "content-type": type, "podsync-signature": sig2 },
          body: body.replace("sleep", "sleeq"),
        }),
        401,
        "unauthorized",
      );
    }
  });

  it("POST /v1/pods/plan is a dry run: actions, no write to the runtime", async () => {
    const pod = podInput();
    fake.runtime.resetCalls();
    const r = await h.post("/v1/pods/plan", pod);
    expect(r.status).toBe(200);
    expect(r.body.actions).toMatchObject({
      killPod: true,
      createSandbox: true,
      containersToStart: ["main"],
      containersToKill: [],
    });
    expect([...fake.runtime.calls.keys()].sort()).toEqual(["ListContainers", "ListPodSandbox"]);
  });

  it("GET /v1/pods/{uid}/status and DELETE /v1/pods/{uid} with a signed bearer token", async () => {
    const pod = podInput();
    await h.post("/v1/pods/sync", pod);
    const id = pod.metadata.uid;
    const st = await h.fetch(`/v1/pods/${id}/status`, {
      headers: { authorization: `Bearer ${await h.sign({ act: "status", uid: id })}` },
    });
    expect(st.status).toBe(200);
    expect(st.body).toMatchObject({
      pod: { uid: id, name: "web", namespace: "default" },
      status: { containers: [{ name: "main", state: "running" }], sandboxes: [{ state: "SANDBOX_READY" }] },
    });
    // A node-wide read token (no uid) may be reused; a token for another pod may not read this one.
    const nodeWide = await h.sign({ act: "status" });
    expect((await h.fetch(`/v1/pods/${id}/status`, { headers: { authorization: `Bearer ${nodeWide}` } })).status).toBe(
      200,
    );
    expect((await h.fetch(`/v1/pods/${id}/status`, { headers: { authorization: `Bearer ${nodeWide}` } })).status).toBe(
      200,
    );
    await refused(
      h.fetch(`/v1/pods/${id}/status`, {
        headers: { authorization: `Bearer ${await h.sign({ act: "status", uid: "other" })}` },
      }),
      401,
      "unauthorized",
    );
    await refused(
      h.fetch(`/v1/pods/${id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${await h.sign({ act: "status", uid: id })}` },
      }),
      401,
      "unauthorized",
    );

    const del = await h.fetch(`/v1/pods/${id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: id })}` },
    });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ ok: true, deleted: true });
    expect(del.body.steps.map((s: any) => s.action)).toEqual([
      "KillContainer",
      "KillPodSandbox",
      "KillPod",
      "RemoveContainer",
      "RemovePodSandbox",
    ]);
    const gone = await h.fetch(`/v1/pods/${id}/status`, { headers: { authorization: `Bearer ${nodeWide}` } });
    expect(gone.status).toBe(404);
  });

  it("a failed step gives 207 with ok:false and the kubelet reason", async () => {
    const r = await h.post(
      "/v1/pods/sync",
      podInput(uid(), { containers: [{ name: "main", image: "registry.example.com/nope:1" }] }),
    );
    expect(r.status).toBe(207);
    expect(r.body.ok).toBe(false);
    expect(r.body.steps.at(-1)).toMatchObject({
      action: "StartContainer",
      ok: false,
      error: "ErrImagePull",
      grpcCode: "UNKNOWN",
    });
  });

  it("unknown routes are problem+json 404", async () => {
    expect(await h.fetch("/v2/nope")).toMatchObject({
      status: 404,
      type: "application/problem+json",
      body: { type: "urn:podsync:problem:not-found" },
    });
  });

  it("a known path with another method is problem+json 405 with Allow", async () => {
    const r = await fetch(`${h.url}/v1/pods/sync`, { method: "GET" });
    expect(r.status).toBe(405);
    expect(r.headers.get("content-type")).toBe("application/problem+json");
    expect(r.headers.get("allow")).toBe("POST");
    expect(await r.json()).toMatchObject({ type: "urn:podsync:problem:method-not-allowed", status: 405 });
    expect((await h.fetch("/v1/pods/abc", { method: "PUT" })).body).toMatchObject({
      status: 405,
      detail: expect.stringContaining("DELETE"),
    });
  });
});

describe("refused before the runtime is touched", () => {
  const jose = (body: string) => ({ method: "POST", headers: { "content-type": "application/jose" }, body });

  it("400 malformed JSON / not the wrapper shape", async () => {
    await refused(
      h.fetch("/v1/pods/sync", { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" }),
      400,
      "bad-json",
    );
    await refused(
      h.fetch("/v1/pods/sync", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jws: "x", token: "x" }),
      }),
      400,
      "bad-request",
    );
  });

  it("400 invalid pod spec, naming every failing field; unknown fields are rejected", async () => {
    const bad = {
      metadata: { name: "Bad_Name", uid: "u1" },
      spec: {
        containers: [
          { name: "a", image: "busybox:1", ports: [{ containerPort: 70000 }], livenessProbe: {} },
          { name: "a", image: "" },
        ],
        initContainers: [{ name: "a", image: "busybox:1" }],
        ephemeralContainers: [{ name: "debug", image: "busybox:1" }],
      },
    };
    const body = await refused(h.post("/v1/pods/sync", bad), 400, "invalid-pod");
    const paths = body.errors.map((e: any) => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        "pod.metadata.name",
        "pod.spec.containers[0].ports[0].containerPort",
        "pod.spec.containers[0].livenessProbe",
        "pod.spec.containers[1].image",
        "pod.spec.ephemeralContainers",
      ]),
    );
    expect(body.errors.find((e: any) => e.path === "pod.spec.ephemeralContainers").message).toMatch(
      /unknown field "ephemeralContainers"/,
    );
  });

  it("400 duplicate container names across init and app containers (whole-pod rules)", async () => {
    const body = await refused(
      h.post("/v1/pods/sync", podInput(uid(), { initContainers: [{ name: "main", image: "localhost/busybox:1" }] })),
      400,
      "invalid-pod",
    );
    expect(body.errors).toEqual([
      { path: "pod.spec.containers[0].name", message: expect.stringMatching(/duplicate container name "main"/) },
    ]);
  });

  it("401 missing, malformed, tampered, expired, not yet valid, wrong issuer, unknown kid, too long-lived, wrong act", async () => {
    const pod = podInput();
    await refused(h.fetch("/v1/pods/sync", jose("")), 401, "unauthorized");
    await refused(h.fetch("/v1/pods/sync", jose("not.a-token")), 401, "unauthorized");
    const good = await h.sign({ act: "sync", pod });
    const [hd, , sg] = good.split(".");
    const forged = base64url.encode(
      JSON.stringify({
        act: "sync",
        pod: { ...pod, spec: { ...pod.spec, hostPID: true } },
        iss: ISSUER,
        aud: NODE,
        iat: 1,
        exp: 2e9,
        jti: "x",
      }),
    );
    expect((await refused(h.fetch("/v1/pods/sync", jose(`${hd}.${forged}.${sg}`)), 401, "unauthorized")).reason).toBe(
      "bad-signature",
    );
    expect((await refused(h.post("/v1/pods/sync", pod, { iat: -600, exp: -300 }), 401, "unauthorized")).reason).toBe(
      "expired",
    );
    expect((await refused(h.post("/v1/pods/sync", pod, { nbf: 120 }), 401, "unauthorized")).reason).toBe(
      "not-yet-valid",
    );
    expect((await refused(h.post("/v1/pods/sync", pod, { iat: 120, exp: 180 }), 401, "unauthorized")).reason).toBe(
      "not-yet-valid",
    );
    expect((await refused(h.post("/v1/pods/sync", pod, { iss: "someone-else" }), 401, "unauthorized")).reason).toBe(
      "wrong-issuer",
    );
    expect((await refused(h.post("/v1/pods/sync", pod, { kid: "nobody" }), 401, "unauthorized")).reason).toBe(
      "unknown-key",
    );
    const stranger = await makeKey("EdDSA", "ed-1"); // same kid, different key
    expect((await refused(h.post("/v1/pods/sync", pod, { key: stranger }), 401, "unauthorized")).reason).toBe(
      "bad-signature",
    );
    expect((await refused(h.post("/v1/pods/sync", pod, { exp: 3600 }), 401, "unauthorized")).reason).toBe(
      "too-long-lived",
    );
    expect((await refused(h.post("/v1/pods/sync", pod, { jti: null }), 401, "unauthorized")).reason).toBe("bad-claims");
    expect((await refused(h.post("/v1/pods/sync", pod, { act: "plan" }), 401, "unauthorized")).reason).toBe(
      "bad-claims",
    );
  });

  it("401 algorithm confusion: alg none, and HS256 keyed with the public key", async () => {
    const pod = podInput();
    const now = Math.floor(Date.now() / 1000);
    const claims = { act: "sync", pod, iss: ISSUER, aud: NODE, iat: now, exp: now + 60, jti: "alg-none" };
    const none = `${base64url.encode(JSON.stringify({ alg: "none", kid: "ed-1" }))}.${base64url.encode(JSON.stringify(claims))}.`;
    await refused(h.fetch("/v1/pods/sync", jose(none)), 401, "unauthorized");
    const secret = new TextEncoder().encode(JSON.stringify(h.keys[0]!.publicJwk));
    const hs = await new SignJWT({ ...claims, jti: "alg-hs" })
      .setProtectedHeader({ alg: "HS256", kid: "ed-1" })
      .sign(secret);
    await refused(h.fetch("/v1/pods/sync", jose(hs)), 401, "unauthorized");
  });

  it("ES256 keys verify too (kid selects the key)", async () => {
    const r = await h.post("/v1/pods/plan", podInput(), { key: h.keys[1] });
    expect(r.status).toBe(200);
  });

  it("403 signed for another node; a node alias is accepted", async () => {
    const body = await refused(h.post("/v1/pods/sync", podInput(), { aud: "node-b" }), 403, "wrong-node");
    expect(body.detail).toMatch(/another node/);
    expect((await h.post("/v1/pods/plan", podInput(), { aud: "node-a-id" })).status).toBe(200);
  });

  it("403 policy: the node's default (baseline) refuses what would escalate, naming each field and rule", async () => {
    const pod = podInput(uid(), {
      hostNetwork: true,
      volumes: [{ name: "root", hostPath: { path: "/" } }],
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          securityContext: { privileged: true, capabilities: { add: ["SYS_ADMIN"] } },
          volumeMounts: [{ name: "root", mountPath: "/host" }],
        },
      ],
    });
    const body = await refused(h.post("/v1/pods/sync", pod), 403, "policy");
    expect(body.level).toBe("baseline");
    expect(body.detail).toMatch(/^violates PodSecurity "baseline:latest": /);
    expect(body.errors).toEqual(
      expect.arrayContaining([
        { path: "spec.hostNetwork", message: expect.stringMatching(/^hostNamespaces: host namespaces/) },
        { path: "spec.containers[0].securityContext.privileged", message: expect.stringMatching(/^privileged: /) },
        {
          path: "spec.containers[0].securityContext.capabilities.add",
          message: expect.stringMatching(/^capabilities_baseline: .*SYS_ADMIN/),
        },
        { path: "spec.volumes[0].hostPath", message: expect.stringMatching(/^hostPathVolumes: /) },
      ]),
    );
    // plan is held to the same policy: a dry run that would be refused says so.
    await refused(h.post("/v1/pods/plan", pod), 403, "policy");
    // The node owner, not the signer, can allow it.
    const open = await Harness.start(stack.cri, { policy: { level: "privileged", hostPathAllow: [] } });
    try {
      const ok = await open.post("/v1/pods/plan", pod);
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    } finally {
      await open.close();
    }
  });

  it("409 a replayed jti", async () => {
    const token = await h.sign({ act: "plan", pod: podInput() });
    expect((await h.fetch("/v1/pods/plan", jose(token))).status).toBe(200);
    await refused(h.fetch("/v1/pods/plan", jose(token)), 409, "replayed");
  });

  it("413 oversize body (declared, and streamed without a length)", async () => {
    const big = "x".repeat(65 * 1024);
    await refused(h.fetch("/v1/pods/sync", jose(big)), 413, "body-too-large");
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < 70; i++) c.enqueue(new TextEncoder().encode("y".repeat(1024)));
        c.close();
      },
    });
    await refused(
      h.fetch("/v1/pods/sync", {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: stream,
        duplex: "half",
      } as RequestInit),
      413,
      "body-too-large",
    );
  });

  it("415 wrong content type", async () => {
    await refused(
      h.fetch("/v1/pods/sync", { method: "POST", headers: { "content-type": "text/plain" }, body: "hi" }),
      415,
      "unsupported-media-type",
    );
    await refused(h.fetch("/v1/pods/sync", { method: "POST", body: "hi" }), 415, "unsupported-media-type");
  });

  it("400 a bad uid in the path", async () => {
    await refused(
      h.fetch(`/v1/pods/${encodeURIComponent("../etc")}/status`, { headers: { authorization: "Bearer x" } }),
      400,
      "bad-request",
    );
  });
});

describe("runtime errors reach the caller as problems with their gRPC code", () => {
  it("503 when the runtime is unreachable, 504 on a deadline, 502 otherwise", async () => {
    fake.runtime.fault("ListPodSandbox", { kind: "error", code: 14, message: "connection refused", times: 1 });
    const a = await h.post("/v1/pods/sync", podInput());
    expect(a).toMatchObject({
      status: 503,
      type: "application/problem+json",
      body: { type: "urn:podsync:problem:runtime-unavailable", grpcCode: "UNAVAILABLE" },
    });
    // (A new pod's only list is its uid check's ListPodSandbox: its sync decides from that.)
    fake.runtime.fault("ListPodSandbox", { kind: "hang", ms: 3000, times: 1 });
    const b = await h.post("/v1/pods/sync", podInput());
    expect(b).toMatchObject({
      status: 504,
      body: { type: "urn:podsync:problem:runtime-timeout", grpcCode: "DEADLINE_EXCEEDED" },
    });
    fake.runtime.fault("ListPodSandbox", { kind: "error", code: 13, message: "boom", times: 1 });
    expect(await h.post("/v1/pods/sync", podInput())).toMatchObject({
      status: 502,
      body: { grpcCode: "INTERNAL", detail: "ListPodSandbox: boom" },
    });
    fake.runtime.fault("Version", { kind: "error", code: 14, times: 1 });
    expect((await h.fetch("/readyz")).status).toBe(503);
  });
});

describe("per-pod serialisation", () => {
  it("concurrent syncs of one pod make exactly one sandbox; all succeed", async () => {
    const pod = podInput();
    const rs = await Promise.all(Array.from({ length: 10 }, () => h.post("/v1/pods/sync", pod)));
    expect(rs.map((r) => r.status)).toEqual(Array(10).fill(200));
    const sandboxes = [...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === pod.metadata.uid);
    expect(sandboxes).toHaveLength(1);
    expect(rs.filter((r) => r.body.steps.some((s: any) => s.action === "CreatePodSandbox"))).toHaveLength(1);
  });

  it("different pods proceed in parallel", async () => {
    // Each RunPodSandbox is held for a while: if the pods were serialised, no two would be in flight at once.
    fake.runtime.fault("RunPodSandbox", { kind: "hang", ms: 300, times: 4 });
    fake.runtime.maxInFlight.delete("RunPodSandbox");
    const rs = await Promise.all(Array.from({ length: 4 }, () => h.post("/v1/pods/sync", podInput())));
    expect(rs.every((r) => r.status === 200)).toBe(true);
    expect(fake.runtime.maxInFlight.get("RunPodSandbox")).toBe(4);
  });
});

describe("logs", () => {
  it("one JSON line per request, with no secrets (pull-secret credentials never appear)", async () => {
    const n = h.logs.length;
    const pod = podInput(uid(), {
      imagePullSecrets: [{ auths: { "registry.example.com": { username: "bob", password: "hunter2-secret" } } }],
      containers: [{ name: "main", image: "registry.example.com/app:1" }],
    });
    await h.post("/v1/pods/sync", pod);
    expect(h.logs.length).toBe(n + 1);
    expect(JSON.stringify(h.logs.slice(n))).not.toContain("hunter2-secret");
  });
});

describe("MemoryPodLock", () => {
  it("a waiter past maxWaitMs gets 409 pod-busy; the next one still runs after the holder; unbounded waits work", async () => {
    const { MemoryPodLock } = await import("../../src/kuberuntime/pod-lock.js");
    const lock = new MemoryPodLock(50);
    let release!: () => void;
    const holder = lock.run("p", () => new Promise<void>((r) => (release = r)));
    const late = lock.run("p", async () => "ran").catch((e) => e);
    expect(await late).toMatchObject({ name: "Error", uid: "p", waitedMs: 50 });
    expect(toProblemError(await late)).toMatchObject({ status: 409, slug: "pod-busy" });
    const next = lock.run("p", async () => "next");
    release();
    await holder;
    expect(await next).toBe("next");
    expect(lock.size).toBe(0);
    const open = new MemoryPodLock(Infinity);
    const order: number[] = [];
    await Promise.all([1, 2, 3].map((i) => open.run("q", async () => void order.push(i))));
    expect(order).toEqual([1, 2, 3]);
  });

  it("gives no fence: it cannot be lost, and a pod's runtime calls in flight take no listener from it", async () => {
    const { MemoryPodLock } = await import("../../src/kuberuntime/pod-lock.js");
    expect(await new MemoryPodLock().run("p", async (fence) => fence)).toBeUndefined();
  });
});
