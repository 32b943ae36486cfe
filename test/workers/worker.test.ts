// The Worker in the real Workers runtime (workerd, started by wrangler), calling cri-proxy over gRPC-Web:
// one node backed by the in-process runtime, one by the REAL containerd. Replay protection and per-pod
// serialisation run in Durable Objects.
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startProxy, type RunningProxy } from "../../src/proxy/cri-proxy.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { getPodStatus } from "../../src/kuberuntime/pod-status.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness, makeKey, type TestKey } from "../support/http.js";
import { startWorkerd, type Workerd } from "../support/workerd.js";
import { uid } from "../support/pods.js";
import { DurablePodLock } from "../../src/worker.js";
import { requestView } from "../../src/cri/request-view.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

// No calls home from the local Workers runtime: no Request.cf download, no telemetry.

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skipE2E = inject("skipE2E");
const TOKEN = "worker-to-proxy-token";
/** When the fake node's proxy served a log-endpoint call (stat or read). */
const proxyLogCalls: number[] = [];
const LOGS_DIR = mkdtempSync(join(tmpdir(), "podsync-worker-logs-"));

let fake: FakeServer;
let fakeProxy: RunningProxy;
let realProxy: RunningProxy | undefined;
let worker: Workerd;
let base: URL;
let key: TestKey;
let signer: Harness;

const suite = useFakeCri();
beforeAll(async () => {
  ({ fake } = suite);
  // The fake node's proxy serves pod logs too (the log-follow test writes a log file under LOGS_DIR); its log
  // endpoint calls are counted.
  fakeProxy = await startProxy({
    upstream: fake.endpoint,
    grpcWebListen: "127.0.0.1:0",
    token: TOKEN,
    log: (r) => void (r["front"] === "logs" && proxyLogCalls.push(Date.now())),
    podLogsDir: LOGS_DIR,
  });
  // The real node's proxy also serves its pod logs and allows ExecSync (logs and exec through the Worker).
  // Its node policy matches the Worker's (privileged: the real pods use hostNetwork to stay on loopback).
  if (endpoint)
    realProxy = await startProxy({
      upstream: endpoint,
      grpcWebListen: "127.0.0.1:0",
      token: TOKEN,
      log: () => undefined,
      podLogsDir: LOGS_DIR,
      allow: ["ExecSync"],
      policy: { level: "privileged", hostPathAllow: [] },
    });
  key = await makeKey("EdDSA", "w-1");
  signer = new Harness([key], undefined as never);
  const nodes: Record<string, { url: string; aliases?: string[]; labels?: string }> = {
    "fake-node": { url: `http://127.0.0.1:${fakeProxy.grpcWebPort}`, aliases: ["fake-alias"], labels: "site=edge" },
  };
  if (realProxy) nodes["real-node"] = { url: `http://127.0.0.1:${realProxy.grpcWebPort}` };
  ({ worker, base } = await startWorkerd({
    nodes,
    jwk: key.publicJwk,
    proxyToken: TOKEN,
    env: {
      // The test pods use hostNetwork (traffic stays on loopback), which baseline refuses.
      PODSYNC_POLICY: "privileged",
      PODSYNC_POD_LOGS_DIR: LOGS_DIR,
      PODSYNC_ALLOW_EXEC: "true",
      // Shared node labels; fake-node's own replace them.
      PODSYNC_NODE_LABELS: "fleet=a",
      PODSYNC_SECRETS_KEY: Buffer.alloc(32, 7).toString("base64"),
    },
  }));
}, 120_000);

afterAll(async () => {
  await worker?.dispose();
  await fakeProxy?.shutdown(100);
  await realProxy?.shutdown(100);
});

const podInput = (id: string, hostNetwork = false) => ({
  metadata: { name: "wp", uid: id },
  spec: {
    hostNetwork,
    terminationGracePeriodSeconds: 2,
    containers: [
      { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] },
    ],
  },
});

async function post(node: string, act: "sync" | "plan", pod: unknown, aud = node, token?: string) {
  const body = token ?? (await signer.sign({ act, pod }, { aud }));
  const r = await fetch(new URL(`/nodes/${node}/v1/pods/${act}`, base), {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body,
  });
  return { status: r.status, body: (await r.json()) as any, token: body };
}

describe("the Worker in workerd, through cri-proxy over gRPC-Web", () => {
  it("serves health per node and refuses unknown nodes", async () => {
    expect(await (await fetch(new URL("/healthz", base))).json()).toMatchObject({ ok: true });
    expect(await (await fetch(new URL("/nodes/fake-node/readyz", base))).json()).toMatchObject({
      ok: true,
      node: "fake-node",
      runtime: { name: "fake" },
    });
    const other = await fetch(new URL("/nodes/other/healthz", base));
    expect(other.status).toBe(404);
    expect(other.headers.get("content-type")).toBe("application/problem+json");
    expect(await other.json()).toMatchObject({ type: "urn:podsync:problem:not-found" });
    // A body over the limit is a 413 problem here too (its Connection: close is the runtime's to honour).
    const big = await fetch(new URL("/nodes/fake-node/v1/pods/sync", base), {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: "x".repeat(1024 * 1024 + 1),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ type: "urn:podsync:problem:body-too-large" });
    const wrongMethod = await fetch(new URL("/nodes/fake-node/v1/pods/sync", base));
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("content-type")).toBe("application/problem+json");
  });

  it("a signed sync creates the pod; the second converges; a replayed token is refused by the Durable Object", async () => {
    const id = uid("w");
    const r = await post("fake-node", "sync", podInput(id));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.steps.map((s: any) => s.action)).toEqual(["CreatePodSandbox", "StartContainer"]);
    expect((await post("fake-node", "sync", podInput(id))).body.steps).toEqual([]);
    const again = await post("fake-node", "sync", podInput(id), "fake-node", r.token);
    expect(again.status).toBe(409);
    expect(again.body.type).toBe("urn:podsync:problem:replayed");
  });

  it("Secrets: env from a Secret signed with the pod reaches the container; a secret volume is refused naming it (no node filesystem)", async () => {
    const id = uid("w");
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "creds" },
      stringData: { password: "w0rker-s3cret" },
    };
    const p = podInput(id);
    const withEnv = {
      ...p,
      spec: {
        ...p.spec,
        containers: [
          {
            ...p.spec.containers[0],
            env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } }],
          },
        ],
      },
    };
    const r = await fetch(new URL("/nodes/fake-node/v1/pods/sync", base), {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await signer.sign({ act: "sync", pod: withEnv, secrets: [secret] }, { aud: "fake-node" }),
    });
    const body = (await r.json()) as any;
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(JSON.stringify(body)).not.toContain("w0rker-s3cret");
    const ctr = [...fake.runtime.containers.values()].find((c) => c.config.labels["io.kubernetes.pod.uid"] === id)!;
    expect(new TextDecoder().decode(ctr.config.envs.find((e) => e.key === "PW")!.value)).toBe("w0rker-s3cret");
    const withVolume = {
      ...p,
      metadata: { ...p.metadata, uid: uid("w") },
      spec: { ...p.spec, volumes: [{ name: "s", secret: { secretName: "creds" } }] },
    };
    const v = await fetch(new URL("/nodes/fake-node/v1/pods/plan", base), {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await signer.sign({ act: "plan", pod: withVolume, secrets: [secret] }, { aud: "fake-node" }),
    });
    expect(v.status).toBe(400);
    expect(((await v.json()) as any).errors).toEqual([expect.objectContaining({ path: "spec.volumes[0].secret" })]);
  });

  it("admission against each node: its own labels (PODSYNC_NODES) over the shared ones; no arch label unless configured", async () => {
    const selecting = (nodeSelector: Record<string, string>) => ({
      ...podInput(uid("w")),
      spec: { ...podInput("x").spec, nodeSelector },
    });
    const ok = await post(
      "fake-node",
      "plan",
      selecting({ site: "edge", "kubernetes.io/hostname": "fake-node", "kubernetes.io/os": "linux" }),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    for (const sel of [{ fleet: "a" }, { "kubernetes.io/arch": "amd64" }] as Record<string, string>[]) {
      const r = await post("fake-node", "plan", selecting(sel));
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(r.body).toMatchObject({
        type: "urn:podsync:problem:admission",
        reason: "NodeAffinity",
        errors: [{ path: "spec.nodeSelector" }],
      });
    }
    if (realProxy) expect((await post("real-node", "plan", selecting({ fleet: "a" }))).status).toBe(200);
  });

  it("audience: a token for another node is 403, a node alias works", async () => {
    expect((await post("fake-node", "plan", podInput(uid("w")), "real-node")).status).toBe(403);
    expect((await post("fake-node", "plan", podInput(uid("w")), "fake-alias")).status).toBe(200);
  });

  it("concurrent syncs of one pod are serialised by the per-pod Durable Object: one sandbox", async () => {
    const id = uid("wc");
    const rs = await Promise.all(Array.from({ length: 8 }, () => post("fake-node", "sync", podInput(id))));
    expect(rs.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect([...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === id)).toHaveLength(1);
  });

  it.skipIf(skipE2E)("a signed sync through the Worker creates a REAL pod on containerd", async () => {
    if (!realProxy) throw new Error(`no containerd for the Worker e2e: ${setupError}`);
    const id = uid("wreal");
    const p = podInput(id, true);
    const r = await post("real-node", "sync", p);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.steps.map((s: any) => `${s.action}:${s.ok}`)).toEqual([
      "CreatePodSandbox:true",
      "StartContainer:true",
    ]);
    const cri = connectGrpc({ endpoint });
    try {
      const status = await getPodStatus(cri, { uid: id, name: "wp", namespace: "default" }, "full");
      expect(status.sandboxStatuses[0]!.state).toBe(api.PodSandboxState.SANDBOX_READY);
      expect(status.containerStatuses).toMatchObject([{ name: "main", state: "running" }]);
      expect((await post("real-node", "sync", p)).body.steps).toEqual([]);
      // Exec goes through the proxy's ExecSync; logs through its log endpoint.
      const execToken = await signer.sign(
        { act: "exec", uid: id, command: ["sh", "-c", "echo hi; echo to-the-log > /proc/1/fd/1"] },
        { aud: "real-node" },
      );
      const ex = await fetch(new URL(`/nodes/real-node/v1/pods/${id}/exec`, base), {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: execToken,
      });
      expect(ex.status).toBe(200);
      expect(await ex.json()).toMatchObject({ exitCode: 0, stdout: { data: "hi\n" } });
      const logsOf = async (query: string) => {
        const t = await signer.sign({ act: "logs", uid: id }, { aud: "real-node" });
        const res = await fetch(new URL(`/nodes/real-node/v1/pods/${id}/logs${query}`, base), {
          headers: { authorization: `Bearer ${t}` },
        });
        return { status: res.status, text: await res.text() };
      };
      let log = await logsOf("?tailLines=1");
      for (
        const end = Date.now() + 10_000;
        !log.text.includes("to-the-log") && Date.now() < end;
        await new Promise((r) => setTimeout(r, 100))
      )
        log = await logsOf("?tailLines=1");
      expect(log).toEqual({ status: 200, text: "to-the-log\n" });
      expect((await logsOf("?container=nope")).status).toBe(404);
    } finally {
      // Through the Worker: the sync stored the pod in the node's desired state, and the node object's alarm
      // would bring back a pod deleted behind its back. The direct delete only cleans up after a failure.
      const del = await signer.sign({ act: "delete", uid: id, gracePeriodSeconds: 0 }, { aud: "real-node" });
      await fetch(new URL(`/nodes/real-node/v1/pods/${id}`, base), {
        method: "DELETE",
        headers: { authorization: `Bearer ${del}` },
      }).catch(() => undefined);
      await createPodRuntime(cri)
        .delete(id, 0)
        .catch(() => undefined);
      cri.close();
    }
  });
});

describe("the node's desired state in its Durable Object", () => {
  const pod = (name: string) => ({ metadata: { name, namespace: "wds", uid: uid(name) }, spec: podInput("x").spec });
  const call = async (method: string, path: string, init: { token: string; type?: string; bearer?: boolean }) => {
    const headers: Record<string, string> = init.bearer
      ? { authorization: `Bearer ${init.token}` }
      : { "content-type": init.type ?? "application/jose" };
    const r = await fetch(new URL(`/nodes/fake-node${path}`, base), {
      method,
      headers,
      ...(init.bearer ? {} : { body: init.token }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const put = async (pods: unknown[], generation: number) =>
    call("PUT", "/v1/node/pods", {
      token: await signer.sign({ act: "apply", generation, pods }, { aud: "fake-node" }),
    });
  const list = async () =>
    (await call("GET", "/v1/pods", { bearer: true, token: await signer.sign({ act: "status" }, { aud: "fake-node" }) }))
      .body;

  it("PUT a set, then a smaller one; stale generations and older iats refused; GET lists; DELETE forgets", async () => {
    const [a, b] = [pod("wda"), pod("wdb")];
    const r1 = await put([a, b], 1);
    expect(r1.status, JSON.stringify(r1.body)).toBe(200);
    expect(r1.body.pods.map((p: any) => p.steps.map((s: any) => s.action))).toEqual([
      ["CreatePodSandbox", "StartContainer"],
      ["CreatePodSandbox", "StartContainer"],
    ]);
    const l1 = await list();
    expect(l1).toMatchObject({ kind: "PodList", metadata: { resourceVersion: "1" } });
    expect(l1.items.map((p: any) => [p.metadata.name, p.status.phase])).toEqual([
      ["wda", "Running"],
      ["wdb", "Running"],
    ]);

    expect((await put([], 1)).body).toMatchObject({
      status: 409,
      type: "urn:podsync:problem:stale-generation",
      current: 1,
    });
    const r2 = await put([a], 2);
    expect(r2.body.pods[0].steps).toEqual([]);
    expect(r2.body.removed).toMatchObject([{ ok: true, deleted: true, pod: { name: "wdb" } }]);

    const older = await call("POST", "/v1/pods/sync", {
      token: await signer.sign({ act: "sync", pod: a }, { aud: "fake-node", iat: -10 }),
    });
    expect(older.body).toMatchObject({ status: 409, type: "urn:podsync:problem:stale-generation" });
    const del = await call("DELETE", `/v1/pods/${a.metadata.uid}`, {
      bearer: true,
      token: await signer.sign({ act: "delete", uid: a.metadata.uid }, { aud: "fake-node" }),
    });
    expect(del.body).toMatchObject({ ok: true, deleted: true, desired: true });
    expect(await list()).toMatchObject({ metadata: { resourceVersion: "2" }, items: [] });
  });

  it("tombstones in the node object: a sync signed before a DELETE, or before the PUT that dropped the pod, is 409 and runs nothing; a uid stored for another pod is 409 uid-conflict", async () => {
    const [a, b] = [pod("wta"), pod("wtb")];
    const sync = async (p: unknown, iat: number) =>
      call("POST", "/v1/pods/sync", { token: await signer.sign({ act: "sync", pod: p }, { aud: "fake-node", iat }) });
    expect((await sync(a, -30)).status).toBe(200);
    const del = await call("DELETE", `/v1/pods/${a.metadata.uid}`, {
      bearer: true,
      token: await signer.sign({ act: "delete", uid: a.metadata.uid, gracePeriodSeconds: 0 }, { aud: "fake-node" }),
    });
    expect(del.status).toBe(200);
    const late = await sync(a, -20);
    expect(late.body).toMatchObject({
      status: 409,
      type: "urn:podsync:problem:stale-generation",
      detail: expect.stringMatching(/removed \(DELETE\)/),
    });
    expect([...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === a.metadata.uid)).toEqual([]);

    const gen = (await list()).metadata.resourceVersion as string;
    expect(
      (
        await call("PUT", "/v1/node/pods", {
          token: await signer.sign(
            { act: "apply", generation: Number(gen) + 1, pods: [b] },
            { aud: "fake-node", iat: -40 },
          ),
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await call("PUT", "/v1/node/pods", {
          token: await signer.sign(
            { act: "apply", generation: Number(gen) + 2, pods: [] },
            { aud: "fake-node", iat: -5 },
          ),
        })
      ).status,
    ).toBe(200);
    expect((await sync(b, -10)).body).toMatchObject({ status: 409, detail: expect.stringMatching(/dropped by PUT/) });

    const c = pod("wtc");
    expect((await sync(c, 0)).status).toBe(200);
    const intruder = { ...c, metadata: { ...c.metadata, name: "intruder", namespace: "other" } };
    expect((await sync(intruder, 1)).body).toMatchObject({ status: 409, type: "urn:podsync:problem:uid-conflict" });
    expect((await list()).items.map((p: any) => p.metadata.name)).toEqual(["wtc"]);
    await call("DELETE", `/v1/pods/${c.metadata.uid}`, {
      bearer: true,
      token: await signer.sign(
        { act: "delete", uid: c.metadata.uid, gracePeriodSeconds: 0 },
        { aud: "fake-node", iat: 2 },
      ),
    });
  });
});

describe("logs -f through the Worker", () => {
  /** A fake-node pod whose container has a log file (first-line) the proxy serves; `undo` puts things back. */
  async function podWithLog(): Promise<{ id: string; logPath: string; undo: () => Promise<void> }> {
    const id = uid("wlogs");
    expect((await post("fake-node", "sync", podInput(id))).status).toBe(200);
    const ctr = [...fake.runtime.containers.values()].find((c) => c.config.labels["io.kubernetes.pod.uid"] === id)!;
    const sandbox = fake.runtime.sandboxes.get(ctr.sandboxId)!;
    // Where containerd writes it: the sandbox's log directory joined with the container's log path.
    const logPath = join(sandbox.config.logDirectory, ctr.config.logPath);
    mkdirSync(dirname(logPath), { recursive: true });
    writeFileSync(logPath, `${new Date().toISOString()} stdout F first-line\n`);
    const orig = fake.runtime.runtime["ContainerStatus"]!;
    fake.runtime.runtime["ContainerStatus"] = (req: { containerId: string }) => {
      const r = orig(req);
      return req.containerId === ctr.id ? { ...r, status: { ...r.status, logPath } } : r;
    };
    return {
      id,
      logPath,
      undo: async () => {
        fake.runtime.runtime["ContainerStatus"] = orig;
        const del = await signer.sign({ act: "delete", uid: id, gracePeriodSeconds: 0 }, { aud: "fake-node" });
        await fetch(new URL(`/nodes/fake-node/v1/pods/${id}`, base), {
          method: "DELETE",
          headers: { authorization: `Bearer ${del}` },
        });
      },
    };
  }

  it("streams uncompressed to a client that accepts gzip (first line while the follow is open) and polls the node at most once a second", async () => {
    const { id, undo } = await podWithLog();
    const ac = new AbortController();
    try {
      const t = await signer.sign({ act: "logs", uid: id }, { aud: "fake-node" });
      const res = await fetch(new URL(`/nodes/fake-node/v1/pods/${id}/logs?follow=true`, base), {
        headers: { authorization: `Bearer ${t}`, "accept-encoding": "gzip" },
        signal: ac.signal,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-encoding")).toBe("identity");
      expect(res.headers.get("cache-control")).toBe("no-transform");
      const reader = res.body!.getReader();
      // Compressed (and so buffered) it would arrive only when the follow ends, 30 minutes from now.
      const first = await reader.read();
      expect(new TextDecoder().decode(first.value)).toBe("first-line\n");
      // The poll rate while nothing new comes: each look is a read and a stat, at most one look a second.
      const from = Date.now();
      const before = proxyLogCalls.length;
      await new Promise((r) => setTimeout(r, 4000));
      const perSecond = (proxyLogCalls.length - before) / ((Date.now() - from) / 1000);
      expect(perSecond).toBeGreaterThan(0);
      expect(perSecond).toBeLessThanOrEqual(2.5);
    } finally {
      ac.abort();
      await undo();
    }
  });

  it("a client gone ends the follow at its next write: the node sees no more log reads", async () => {
    // An idle follow (nothing new to write) does not learn that its client went in local workerd: neither through
    // wrangler's proxy nor on a workerd socket of its own (Miniflare unsafeDirectSockets, tried) does request.signal
    // abort or the body get cancelled. So here the container keeps logging after the client goes; on the edge
    // request.signal (enable_request_signal) covers the idle case, and PODSYNC_LOG_FOLLOW_MAX_S bounds it.
    const { id, logPath, undo } = await podWithLog();
    const ac = new AbortController();
    let writing: ReturnType<typeof setInterval> | undefined;
    try {
      const t = await signer.sign({ act: "logs", uid: id }, { aud: "fake-node" });
      const res = await fetch(new URL(`/nodes/fake-node/v1/pods/${id}/logs?follow=true`, base), {
        headers: { authorization: `Bearer ${t}` },
        signal: ac.signal,
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toBe("first-line\n");
      await eventually("the follow to poll the node", () =>
        proxyLogCalls.some((at) => at > Date.now() - 1500) ? true : undefined,
      );
      ac.abort();
      // The container keeps logging: the follow's next write finds the client gone, and the follow ends.
      writing = setInterval(() => appendFileSync(logPath, `${new Date().toISOString()} stdout F more\n`), 200);
      // Polling stops: 3 s with no log read through the proxy (the follow looks once a second while it runs).
      await eventually(
        "the follow to stop polling the node after the client went",
        () => (Date.now() - (proxyLogCalls[proxyLogCalls.length - 1] ?? 0) > 3000 ? true : undefined),
        20_000,
      );
    } finally {
      clearInterval(writing);
      ac.abort();
      await undo();
    }
  });
});

/** Bounded polling (no timed assertion). */
async function eventually<T>(what: string, fn: () => T | undefined, ms = 20_000): Promise<T> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 25))) {
    const v = fn();
    if (v !== undefined) return v;
  }
  throw new Error(`never happened: ${what}`);
}

describe("the per-pod lease outlived by a running sync", () => {
  // A Worker of its own with a short lock wait: leases of 2 x 1500 ms, far shorter than the slow step.
  let slow: Workerd;
  let slowBase: URL;
  beforeAll(async () => {
    ({ worker: slow, base: slowBase } = await startWorkerd({
      nodes: { "lease-node": { url: `http://127.0.0.1:${fakeProxy.grpcWebPort}` } },
      jwk: key.publicJwk,
      proxyToken: TOKEN,
      env: { PODSYNC_LOCK_WAIT_MS: "1500", PODSYNC_POD_LOGS_DIR: LOGS_DIR },
    }));
  }, 120_000);
  afterAll(async () => {
    await slow?.dispose();
  });

  const syncOn = async (pod: unknown) => {
    const r = await fetch(new URL("/nodes/lease-node/v1/pods/sync", slowBase), {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await signer.sign({ act: "sync", pod }, { aud: "lease-node" }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };

  it("a sync held past its lease keeps it (renewed): a second sync of the pod never runs beside it", async () => {
    const id = uid("wlease");
    fake.runtime.fault("StartContainer", { kind: "hang", ms: 7000, times: 1 });
    const first = syncOn(podInput(id));
    await eventually("the first sync's StartContainer to be in flight", () =>
      fake.runtime.inFlight.get("StartContainer") ? true : undefined,
    );
    // Past the whole lease (3 s) while the first still holds the pod.
    await new Promise((r) => setTimeout(r, 3500));
    const second = await syncOn(podInput(id));
    if (second.status !== 200)
      expect(second).toMatchObject({ status: 409, body: { type: "urn:podsync:problem:pod-busy" } });
    expect((await first).status).toBe(200);
    const third = await syncOn(podInput(id));
    expect(third.body.steps).toEqual([]);
    expect([...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === id)).toHaveLength(1);
    expect(
      [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === id),
    ).toHaveLength(1);
  }, 60_000);
});

describe("DurablePodLock fencing (the holder's side, over a stand-in Durable Object)", () => {
  it("a refused renewal fences the holder: no runtime write starts after it", async () => {
    let renewals = 0;
    const stub = {
      async fetch(input: string) {
        const path = new URL(input).pathname;
        if (path === "/acquire") return Response.json({ lease: "l-1" });
        if (path === "/renew") return (renewals++, Response.json({ lost: true }, { status: 409 }));
        return Response.json({ ok: true });
      },
    };
    const lock = new DurablePodLock({ idFromName: (n) => n, get: () => stub }, "n", 500); // lease 1000 ms, beat 250 ms
    const before = fake.runtime.totalCalls();
    const cri = connectGrpc({ endpoint: fake.endpoint });
    try {
      const err = await lock.run("p", async (fence) => {
        await eventually("the fence to fire", () => (fence.aborted ? true : undefined));
        const c = requestView(cri, fence).client;
        await c.listContainers({}); // reads still pass
        return c.runPodSandbox({ config: {} }).catch((e) => e);
      });
      expect(renewals).toBeGreaterThan(0);
      expect(err).toMatchObject({
        name: "CriError",
        codeName: "ABORTED",
        method: "RunPodSandbox",
        details: expect.stringMatching(/lease expired/),
      });
      expect(fake.runtime.totalCalls()).toBe(before + 1);
    } finally {
      cri.close();
    }
  });

  it("a renewal that never answers fences the holder by its own deadline", async () => {
    const stub = {
      fetch: (input: string) =>
        new URL(input).pathname === "/renew"
          ? new Promise<Response>(() => undefined)
          : Promise.resolve(Response.json({ lease: "l-2" })),
    };
    const lock = new DurablePodLock({ idFromName: (n) => n, get: () => stub }, "n", 500);
    const reason = await lock.run("p", async (fence) => {
      await eventually("the fence to fire", () => (fence.aborted ? true : undefined));
      return (fence.reason as Error).message;
    });
    expect(reason).toMatch(/could not be renewed in time/);
  });
});
