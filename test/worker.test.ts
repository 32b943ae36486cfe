// The Worker in the real Workers runtime (workerd, started by wrangler), calling cri-proxy over gRPC-Web:
// one node backed by the in-process runtime, one by the REAL containerd. Replay protection and per-pod
// serialisation run in Durable Objects.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { unstable_startWorker } from "wrangler";
import { startProxy, type RunningProxy } from "../src/proxy/cri-proxy.js";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { getPodStatus } from "../src/kuberuntime/pod-status.js";
import { createPodRuntime } from "../src/kuberuntime/runtime.js";
import * as api from "../src/gen/runtime/v1/api_pb.js";
import { startFakeCri, type FakeServer } from "./support/fake-cri.js";
import { Harness, ISSUER, makeKey, type TestKey } from "./support/http.js";
import { uid } from "./support/pods.js";

// No calls home from the local Workers runtime: no Request.cf download, no telemetry.
process.env["CLOUDFLARE_CF_FETCH_ENABLED"] = "false";
process.env["WRANGLER_SEND_METRICS"] = "false";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skipE2E = inject("skipE2E");
const TOKEN = "worker-to-proxy-token";

let fake: FakeServer;
let fakeProxy: RunningProxy;
let realProxy: RunningProxy | undefined;
let worker: Awaited<ReturnType<typeof unstable_startWorker>>;
let base: URL;
let key: TestKey;
let signer: Harness;

beforeAll(async () => {
  fake = await startFakeCri();
  fakeProxy = await startProxy({ upstream: fake.endpoint, grpcWebListen: "127.0.0.1:0", token: TOKEN, log: () => undefined });
  if (endpoint) realProxy = await startProxy({ upstream: endpoint, grpcWebListen: "127.0.0.1:0", token: TOKEN, log: () => undefined });
  key = await makeKey("EdDSA", "w-1");
  signer = new Harness([key], undefined as never);
  const nodes: Record<string, { url: string; aliases?: string[] }> = { "fake-node": { url: `http://127.0.0.1:${fakeProxy.grpcWebPort}`, aliases: ["fake-alias"] } };
  if (realProxy) nodes["real-node"] = { url: `http://127.0.0.1:${realProxy.grpcWebPort}` };
  worker = await unstable_startWorker({
    config: "wrangler.toml",
    bindings: {
      PODSYNC_NODES: { type: "plain_text", value: JSON.stringify(nodes) },
      PODSYNC_ISSUERS: { type: "plain_text", value: ISSUER },
      PODSYNC_JWKS: { type: "plain_text", value: JSON.stringify({ keys: [key.publicJwk] }) },
      PODSYNC_PROXY_TOKEN: { type: "plain_text", value: TOKEN },
      PODSYNC_CRI_TIMEOUT_MS: { type: "plain_text", value: "30000" },
      // The test pods use hostNetwork (traffic stays on loopback), which baseline refuses.
      PODSYNC_POLICY: { type: "plain_text", value: "privileged" },
    },
    dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, persist: false, logLevel: "warn" },
  });
  await worker.ready;
  base = await worker.url;
}, 120_000);

afterAll(async () => {
  await worker?.dispose();
  await fakeProxy?.shutdown(100);
  await realProxy?.shutdown(100);
  await fake?.close();
});

const podInput = (id: string, hostNetwork = false) => ({
  metadata: { name: "wp", uid: id },
  spec: { hostNetwork, terminationGracePeriodSeconds: 2, containers: [{ name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] }] },
});

async function post(node: string, act: "sync" | "plan", pod: unknown, aud = node, token?: string) {
  const body = token ?? (await signer.sign({ act, pod }, { aud }));
  const r = await fetch(new URL(`/nodes/${node}/v1/pods/${act}`, base), { method: "POST", headers: { "content-type": "application/jose" }, body });
  return { status: r.status, body: (await r.json()) as any, token: body };
}

describe("the Worker in workerd, through cri-proxy over gRPC-Web", () => {
  it("serves health per node and refuses unknown nodes", async () => {
    expect(await (await fetch(new URL("/healthz", base))).json()).toMatchObject({ ok: true });
    expect(await (await fetch(new URL("/nodes/fake-node/readyz", base))).json()).toMatchObject({ ok: true, node: "fake-node", runtime: { name: "fake" } });
    const other = await fetch(new URL("/nodes/other/healthz", base));
    expect(other.status).toBe(404);
    expect(other.headers.get("content-type")).toBe("application/problem+json");
    expect(await other.json()).toMatchObject({ type: "urn:podsync:problem:not-found" });
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
    expect(r.body.steps.map((s: any) => `${s.action}:${s.ok}`)).toEqual(["CreatePodSandbox:true", "StartContainer:true"]);
    const cri = connectGrpc({ endpoint });
    try {
      const status = await getPodStatus(cri, { uid: id, name: "wp", namespace: "default" }, "full");
      expect(status.sandboxStatuses[0]!.state).toBe(api.PodSandboxState.SANDBOX_READY);
      expect(status.containerStatuses).toMatchObject([{ name: "main", state: "running" }]);
      expect((await post("real-node", "sync", p)).body.steps).toEqual([]);
      await createPodRuntime(cri).delete(id, 2);
    } finally {
      cri.close();
    }
  });
});
