// cri-proxy in front of the in-process runtime: auth (token, mutual TLS), the method allow-list, limits,
// runtime down, graceful shutdown; the gRPC-Web transport through it runs the engine unchanged.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProxy, type RunningProxy } from "../../src/proxy/cri-proxy.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { connectGrpcWeb } from "../../src/cri/grpc-web-transport.js";
import type { CriError } from "../../src/cri/errors.js";
import { proxyLogFiles } from "../../src/host/logs/proxy-log-files.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import type { FakeServer } from "../support/fake-cri.js";
import { pod, syncOnce } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const TOKEN = "s3cret-proxy-token";
let fake: FakeServer;
let proxy: RunningProxy;
const logs: Record<string, unknown>[] = [];

const suite = useFakeCri();
beforeAll(async () => {
  ({ fake } = suite);
  proxy = await startProxy({
    upstream: fake.endpoint,
    grpcListen: "127.0.0.1:0",
    grpcWebListen: "127.0.0.1:0",
    token: TOKEN,
    maxMessageBytes: 64 * 1024,
    log: (r) => logs.push(r),
  });
});
afterAll(async () => {
  await proxy.shutdown(1000);
});

const grpcClient = (token?: string) => connectGrpc({ endpoint: `127.0.0.1:${proxy.grpcPort}`, token, timeoutMs: 2000 });
const webClient = (token?: string, port = proxy.grpcWebPort) =>
  connectGrpcWeb({ baseUrl: `http://127.0.0.1:${port}`, token, timeoutMs: 2000 });
const err = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as CriError,
  );

function rawCall(path: string, token: string): Promise<{ code: number }> {
  const c = new grpc.Client(`127.0.0.1:${proxy.grpcPort}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${token}`);
  return new Promise((res) =>
    c.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.alloc(0),
      md,
      { deadline: Date.now() + 2000 },
      (e) => {
        c.close();
        res({ code: e?.code ?? 0 });
      },
    ),
  );
}

describe("cri-proxy", () => {
  it("forwards CRI over gRPC and gRPC-Web with the right token, byte for byte", async () => {
    for (const c of [grpcClient(TOKEN), webClient(TOKEN)]) {
      expect((await c.version({})).runtimeName).toBe("fake");
      c.close();
    }
    expect(logs.at(-1)).toMatchObject({ front: "grpc-web", method: "/runtime.v1.RuntimeService/Version", code: "OK" });
  });

  it("the engine runs unchanged over the gRPC-Web transport: a full SyncPod, then converged", async () => {
    const c = webClient(TOKEN);
    const p = pod();
    const r = await syncOnce(c, p, { pullBackOff: new MemoryPullBackOff() });
    expect(r.ok).toBe(true);
    expect(r.steps.map((s) => s.action)).toEqual(["CreatePodSandbox", "StartContainer"]);
    expect((await syncOnce(c, p, { pullBackOff: new MemoryPullBackOff() })).steps).toEqual([]);
  });

  it("refuses a missing or wrong token with UNAUTHENTICATED", async () => {
    for (const c of [grpcClient(), grpcClient("nope"), webClient(), webClient("nope")]) {
      expect(await err(c.version({}))).toMatchObject({ code: 16 });
      c.close();
    }
  });

  it("refuses methods outside the allow-list (Exec, Attach, PortForward, UpdateRuntimeConfig by default)", async () => {
    for (const m of ["Exec", "Attach", "PortForward", "UpdateRuntimeConfig", "ListImages"]) {
      const svc = m === "ListImages" ? "ImageService" : "RuntimeService";
      expect((await rawCall(`/runtime.v1.${svc}/${m}`, TOKEN)).code, m).toBe(grpc.status.PERMISSION_DENIED);
    }
    expect((await rawCall("/runtime.v1.RuntimeService/NoSuchMethod", TOKEN)).code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it("an allowed extra method is forwarded (--allow Exec)", async () => {
    const p2 = await startProxy({
      upstream: fake.endpoint,
      grpcListen: "127.0.0.1:0",
      token: TOKEN,
      allow: ["Exec"],
      log: () => undefined,
    });
    const c = new grpc.Client(`127.0.0.1:${p2.grpcPort}`, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${TOKEN}`);
    const code = await new Promise<number>((res) =>
      c.makeUnaryRequest(
        "/runtime.v1.RuntimeService/Exec",
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        md,
        (e) => res(e?.code ?? 0),
      ),
    );
    // It reached the runtime, which (the fake) does not implement Exec.
    expect(code).toBe(grpc.status.UNIMPLEMENTED);
    expect(fake.runtime.calls.get("Exec")).toBe(1);
    c.close();
    await p2.shutdown(100);
  });

  it("runtime down: a clean UNAVAILABLE on both fronts", async () => {
    const p2 = await startProxy({
      upstream: "unix:///nonexistent/podsync-test.sock",
      grpcListen: "127.0.0.1:0",
      grpcWebListen: "127.0.0.1:0",
      token: TOKEN,
      log: () => undefined,
    });
    const a = connectGrpc({ endpoint: `127.0.0.1:${p2.grpcPort}`, token: TOKEN });
    const b = connectGrpcWeb({ baseUrl: `http://127.0.0.1:${p2.grpcWebPort}`, token: TOKEN });
    expect(await err(a.version({}))).toMatchObject({ code: 14 });
    expect(await err(b.version({}))).toMatchObject({ code: 14 });
    a.close();
    await p2.shutdown(100);
  });

  it("message size limits: an oversize request is RESOURCE_EXHAUSTED", async () => {
    const big = { filter: { labelSelector: { k: "x".repeat(70 * 1024) } } };
    expect(await err(webClient(TOKEN).listContainers(big))).toMatchObject({ code: 8 });
    const g = grpcClient(TOKEN);
    expect(await err(g.listContainers(big))).toMatchObject({ code: 8 });
    g.close();
  });

  it("bounds concurrent calls: over the limit is RESOURCE_EXHAUSTED, not a queue", async () => {
    const p2 = await startProxy({
      upstream: fake.endpoint,
      grpcWebListen: "127.0.0.1:0",
      token: TOKEN,
      maxConcurrent: 1,
      log: () => undefined,
    });
    fake.runtime.fault("Status", { kind: "hang", ms: 300, times: 1 });
    const c = connectGrpcWeb({ baseUrl: `http://127.0.0.1:${p2.grpcWebPort}`, token: TOKEN });
    const slow = c.status({});
    await new Promise((r) => setTimeout(r, 50));
    expect(await err(c.version({}))).toMatchObject({ code: 8 });
    await slow;
    await p2.shutdown(100);
  });

  it("a proxy started without --pod-logs-dir answers its log endpoint 501 (not a missing file's 404), and the Worker's reader says so", async () => {
    const p2 = await startProxy({
      upstream: fake.endpoint,
      grpcWebListen: "127.0.0.1:0",
      token: TOKEN,
      log: () => undefined,
    });
    const baseUrl = `http://127.0.0.1:${p2.grpcWebPort}`;
    const r = await fetch(`${baseUrl}/podsync/v1/logs/stat?path=x`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(501);
    await expect(proxyLogFiles({ baseUrl, token: TOKEN }).open("/var/log/pods/x/main/0.log")).rejects.toThrow(
      "the node's cri-proxy: this cri-proxy serves no logs (start it with --pod-logs-dir)",
    );
    await p2.shutdown(100);
  });

  it("graceful shutdown finishes the call in flight and refuses new ones", async () => {
    const p2 = await startProxy({
      upstream: fake.endpoint,
      grpcWebListen: "127.0.0.1:0",
      token: TOKEN,
      log: () => undefined,
    });
    const c = connectGrpcWeb({ baseUrl: `http://127.0.0.1:${p2.grpcWebPort}`, token: TOKEN });
    fake.runtime.fault("Status", { kind: "hang", ms: 300, times: 1 });
    const inFlight = c.status({});
    await new Promise((r) => setTimeout(r, 50));
    const done = p2.shutdown(5000);
    expect(await err(c.version({}))).toMatchObject({ code: 14 });
    expect((await inFlight).status).toBeDefined();
    await done;
  });

  it("mutual TLS: no client certificate, no call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-tls-"));
    const ssl = (...a: string[]) => execFileSync("openssl", a, { cwd: dir, stdio: "pipe" });
    ssl(
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-days",
      "2",
      "-subj",
      "/CN=podsync-test-ca",
    );
    writeFileSync(join(dir, "san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    for (const n of ["server", "client"]) {
      ssl(
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        `${n}.key`,
        "-out",
        `${n}.csr`,
        "-subj",
        `/CN=${n === "server" ? "localhost" : "podsync"}`,
      );
      ssl(
        "x509",
        "-req",
        "-in",
        `${n}.csr`,
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        `${n}.pem`,
        "-days",
        "2",
        "-extfile",
        "san.ext",
      );
    }
    const read = (f: string) => readFileSync(join(dir, f), "utf8");
    const p2 = await startProxy({
      upstream: fake.endpoint,
      grpcListen: "127.0.0.1:0",
      tls: { cert: read("server.pem"), key: read("server.key"), clientCa: read("ca.pem") },
      log: () => undefined,
    });
    const ok = connectGrpc({
      endpoint: `127.0.0.1:${p2.grpcPort}`,
      tls: { ca: join(dir, "ca.pem"), cert: join(dir, "client.pem"), key: join(dir, "client.key") },
    });
    expect((await ok.version({})).runtimeName).toBe("fake");
    const noCert = connectGrpc({
      endpoint: `127.0.0.1:${p2.grpcPort}`,
      tls: { ca: join(dir, "ca.pem") },
      timeoutMs: 2000,
    });
    expect(await err(noCert.version({}))).toMatchObject({ code: 14 });
    const plain = connectGrpc({ endpoint: `127.0.0.1:${p2.grpcPort}`, timeoutMs: 2000 });
    expect(await err(plain.version({}))).toMatchObject({ code: 14 });
    for (const c of [ok, noCert, plain]) c.close();
    await p2.shutdown(100);
  });
});
