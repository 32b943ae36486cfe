// SPDY/3.1 framing (src/kubeapi/portforward/spdy/), checked three ways: frames and header blocks round trip
// through podsync's own encoder and parser; the real kubectl (1.30, plain SPDY) port-forwards through a small
// server built on that framing, so Go's zlib reads podsync's header blocks and podsync reads Go's; and the upgrade
// handler (spdy-upgrade.ts) refuses what the gates refuse and keeps a stalled session from stalling another.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SignJWT } from "jose";
import {
  encodeFrame,
  FLAG_FIN,
  type Frame,
  FrameParser,
  FrameType,
  RstStatus,
  SpdyProtocolError,
} from "../../src/kubeapi/portforward/spdy/frames.js";
import { HeaderCompressor, HeaderDecompressor } from "../../src/kubeapi/portforward/spdy/headers.js";
import { SpdyInspector } from "../../src/kubeapi/portforward/spdy/inspect.js";
import { spdyUpgrade } from "../../src/kubeapi/portforward/spdy-upgrade.js";
import { RvClock, WatchHub } from "../../src/kubeapi/watch-hub.js";
import { createVerifier } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import type { V1Pod } from "../../src/status/api-status.js";
import { pod } from "../support/pods.js";
import type { RequestLog } from "../../src/http/request-log.js";
import { makeKey, ISSUER, NODE } from "../support/http.js";
import { until } from "../support/wait.js";

const closers: (() => void)[] = [];
afterAll(() => {
  for (const c of closers) c();
});

const listen = async (s: Server | ReturnType<typeof createServer>) => {
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  closers.push(() => s.close());
  return (s.address() as AddressInfo).port;
};

describe("SPDY/3.1 frames", () => {
  const frames: Frame[] = [
    { kind: "data", streamId: 5, flags: FLAG_FIN, data: Buffer.from("hello") },
    { kind: "syn_stream", streamId: 1, associatedTo: 0, priority: 3, flags: 0, block: Buffer.from([1, 2, 3]) },
    { kind: "syn_reply", streamId: 1, flags: 0, block: Buffer.from([9]) },
    { kind: "headers", streamId: 3, flags: FLAG_FIN, block: Buffer.from([7, 7]) },
    { kind: "rst_stream", streamId: 3, status: RstStatus.CANCEL },
    { kind: "settings", flags: 0, entries: [{ flags: 0, id: 7, value: 65536 }] },
    { kind: "ping", id: 1 },
    { kind: "goaway", lastGoodStreamId: 9, status: 0 },
    { kind: "window_update", streamId: 1, delta: 32768 },
  ];

  it("each kind round trips, through a parser fed one byte at a time", () => {
    const bytes = Buffer.concat(frames.map(encodeFrame));
    const p = new FrameParser();
    const out: Frame[] = [];
    for (let i = 0; i < bytes.length; i++) out.push(...p.push(bytes.subarray(i, i + 1)));
    expect(out).toEqual(frames);
    // The wire form of a control frame: version 3, its type, the flags and a 24-bit length.
    const wu = encodeFrame({ kind: "window_update", streamId: 1, delta: 32768 });
    expect([...wu.subarray(0, 8)]).toEqual([0x80, 3, 0, FrameType.WINDOW_UPDATE, 0, 0, 0, 8]);
  });

  it("skipData passes a data frame's payload over without holding it; a too-large control frame is refused", () => {
    const p = new FrameParser({ skipData: true, maxControlBytes: 64 });
    const big = encodeFrame({ kind: "data", streamId: 1, flags: 0, data: Buffer.alloc(100_000, 1) });
    const ping = encodeFrame({ kind: "ping", id: 3 });
    const got = [...p.push(big.subarray(0, 4000)), ...p.push(Buffer.concat([big.subarray(4000), ping]))];
    expect(got).toEqual([
      { kind: "data", streamId: 1, flags: 0, data: Buffer.alloc(0) },
      { kind: "ping", id: 3 },
    ]);
    expect(() =>
      p.push(encodeFrame({ kind: "settings", flags: 0, entries: Array(10).fill({ flags: 0, id: 1, value: 1 }) })),
    ).toThrow(SpdyProtocolError);
    expect(() => new FrameParser().push(Buffer.from([0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1]))).toThrow(/version 2/);
  });

  it("header blocks share one zlib stream per direction, primed with the SPDY/3 dictionary", async () => {
    const c = new HeaderCompressor();
    const d = new HeaderDecompressor();
    const h = { streamtype: "data", port: "8080", requestid: "0" };
    const b1 = await c.compress(h);
    const b2 = await c.compress({ ...h, requestid: "1" });
    const b3 = await c.compress({ multi: ["a", "b"] });
    expect(await d.decompress(b1)).toEqual({ streamtype: ["data"], port: ["8080"], requestid: ["0"] });
    expect(await d.decompress(b2)).toEqual({ streamtype: ["data"], port: ["8080"], requestid: ["1"] });
    expect(await d.decompress(b3)).toEqual({ multi: ["a", "b"] });
    // The second block leans on the first's window: shorter, and unreadable without it.
    expect(b2.length).toBeLessThan(b1.length);
    await expect(new HeaderDecompressor().decompress(b2)).rejects.toThrow(SpdyProtocolError);
    c.close();
    d.close();
  });

  it("the inspector counts the client's open streams, reads their ports, and stops a session over its cap", async () => {
    const c = new HeaderCompressor();
    const ports: number[] = [];
    const ins = new SpdyInspector({ maxStreams: 2, onPort: (p) => ports.push(p) });
    const syn = async (id: number, port: string, flags = 0) =>
      encodeFrame({
        kind: "syn_stream",
        streamId: id,
        associatedTo: 0,
        priority: 0,
        flags,
        block: await c.compress({ streamtype: "data", port, requestid: String(id) }),
      });
    expect(ins.push(await syn(1, "8080"))).toBeUndefined();
    expect(ins.push(await syn(3, "9090"))).toBeUndefined();
    expect(ins.openStreams).toBe(2);
    expect(
      ins.push(encodeFrame({ kind: "data", streamId: 1, flags: FLAG_FIN, data: Buffer.alloc(0) })),
    ).toBeUndefined();
    expect(ins.push(encodeFrame({ kind: "rst_stream", streamId: 3, status: RstStatus.CANCEL }))).toBeUndefined();
    expect(ins.openStreams).toBe(0);
    expect(ins.push(await syn(5, "1", FLAG_FIN))).toBeUndefined(); // closed by the client at once: not held
    expect(ins.push(await syn(7, "8080"))).toBeUndefined();
    expect(ins.push(await syn(9, "8080"))).toBeUndefined();
    expect(ins.push(await syn(11, "8080"))?.message).toMatch(/more than 2 open streams/);
    // close() waits for the blocks already pushed: the session's log line never misses a port.
    await ins.close();
    expect(new Set(ports)).toEqual(new Set([8080, 9090, 1]));
    c.close();
  });
});

const BIN = dirname(realpathSync(process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl"));
const KUBECTL_130 = join(BIN, "kubectl.1.30");

/** A pod kubectl port-forward accepts (it reads the pod first and wants it Running). */
const POD_JSON = JSON.stringify({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "web", namespace: "default", uid: "u1" },
  spec: { containers: [{ name: "main", image: "x" }] },
  status: { phase: "Running" },
});

/** A server that answers kubectl as an API server would, up to the port-forward upgrade, then speaks SPDY with
 * podsync's framing: it replies to each stream, and answers the data stream's bytes with `reply` and a FIN. */
function fakeApiServer(reply: string, seen: { headers: Record<string, string[]>[] }) {
  const server = createHttpServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    const json = (o: unknown) => (res.setHeader("content-type", "application/json"), res.end(JSON.stringify(o)));
    if (path === "/api") return json({ kind: "APIVersions", versions: ["v1"] });
    if (path === "/apis") return json({ kind: "APIGroupList", apiVersion: "v1", groups: [] });
    if (path === "/api/v1")
      return json({
        kind: "APIResourceList",
        groupVersion: "v1",
        resources: [{ name: "pods", singularName: "pod", namespaced: true, kind: "Pod", verbs: ["get", "list"] }],
      });
    if (path === "/api/v1/namespaces/default/pods/web") {
      res.setHeader("content-type", "application/json");
      return res.end(POD_JSON);
    }
    res.statusCode = 404;
    return res.end();
  });
  server.on("upgrade", (_req, socket: Socket) => {
    socket.write(
      "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n",
    );
    const parser = new FrameParser();
    const inflate = new HeaderDecompressor();
    const deflate = new HeaderCompressor();
    let chain = Promise.resolve();
    const dataStreams = new Set<number>();
    const errorStreams = new Set<number>();
    socket.on("data", (chunk: Buffer) => {
      for (const f of parser.push(chunk))
        chain = chain.then(async () => {
          if (f.kind === "syn_stream") {
            const h = await inflate.decompress(f.block);
            seen.headers.push(h);
            (h["streamtype"]?.[0] === "data" ? dataStreams : errorStreams).add(f.streamId);
            socket.write(
              encodeFrame({ kind: "syn_reply", streamId: f.streamId, flags: 0, block: await deflate.compress({}) }),
            );
          } else if (f.kind === "data" && dataStreams.has(f.streamId) && f.data.length > 0) {
            socket.write(encodeFrame({ kind: "data", streamId: f.streamId, flags: 0, data: Buffer.from(reply) }));
            socket.write(encodeFrame({ kind: "data", streamId: f.streamId, flags: FLAG_FIN, data: Buffer.alloc(0) }));
            // kubectl ends the connection once the error stream ends empty (client-go portforward handleConnection).
            for (const e of errorStreams)
              socket.write(encodeFrame({ kind: "data", streamId: e, flags: FLAG_FIN, data: Buffer.alloc(0) }));
          } else if (f.kind === "ping") socket.write(encodeFrame(f));
        });
    });
    socket.on("error", () => undefined);
  });
  return server;
}

describe.skipIf(!existsSync(KUBECTL_130))("the real kubectl 1.30 against podsync's SPDY framing", () => {
  it("its SYN_STREAMs decode (streamType, port, requestID), and it reads podsync's SYN_REPLY and data", async () => {
    const seen = { headers: [] as Record<string, string[]>[] };
    const port = await listen(fakeApiServer("from-the-framing\n", seen));
    const dir = mkdtempSync(join(tmpdir(), "podsync-spdy-"));
    writeFileSync(
      join(dir, "kubeconfig"),
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server: `http://127.0.0.1:${port}` } }],
        users: [{ name: "u", user: {} }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u", namespace: "default" } }],
        "current-context": "c",
      }),
    );
    const child: ChildProcess = spawn(KUBECTL_130, ["port-forward", "pod/web", ":8080"], {
      env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") },
    });
    closers.push(() => child.kill());
    let out = "";
    child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr?.on("data", (b: Buffer) => (out += b.toString()));
    const local = await until(
      "kubectl listening",
      async () => Number(/127\.0\.0\.1:(\d+)/.exec(out)?.[1]) || undefined,
      30_000,
    );
    const answer = await new Promise<string>((res, rej) => {
      const s = connect(local, "127.0.0.1", () => s.write("ping\n"));
      let got = "";
      s.on("data", (b) => (got += b.toString()));
      s.on("end", () => res(got));
      s.on("error", rej);
    });
    expect(answer).toBe("from-the-framing\n");
    const types = seen.headers.map((h) => h["streamtype"]?.[0]);
    expect(types).toEqual(["error", "data"]);
    for (const h of seen.headers) {
      expect(h["port"]).toEqual(["8080"]);
      expect(h["requestid"]).toEqual(["0"]);
    }
    child.kill();
  }, 60_000);
});

describe("the SPDY upgrade handler", async () => {
  const key = await makeKey("EdDSA", "k1");
  const verifier = createVerifier({
    keys: { jwks: { keys: [key.publicJwk] } },
    issuers: [ISSUER],
    audience: [NODE],
    replay: new MemoryReplayStore(),
  });
  const token = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "EdDSA", kid: "k1" })
      .setIssuer(ISSUER)
      .setAudience(NODE)
      .setIssuedAt()
      .setExpirationTime("2m")
      .setJti(crypto.randomUUID())
      .sign(key.privateKey);
  const pods = new WatchHub<V1Pod>(new RvClock(1), { key: (p) => p.metadata.uid });
  pods.replaceAll([
    {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web", namespace: "default", uid: "u1", creationTimestamp: "2026-01-01T00:00:00Z" },
      spec: pod({}, { name: "web", namespace: "default" }).spec as V1Pod["spec"],
      status: { phase: "Running", conditions: [], containerStatuses: [], qosClass: "BestEffort" },
    },
  ]);

  // The runtime's streaming server stand-in: answers the upgrade, then either echoes (each session's first
  // request) or writes without end, as a port whose client stopped reading would.
  let sessions = 0;
  const pushed = { flood: 0 };
  const streaming = createServer((s) => {
    s.on("error", () => undefined);
    let head = "";
    const onHead = (b: Buffer) => {
      head += b.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      s.off("data", onHead);
      s.write(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n",
      );
      const flood = /\/flood/.test(head);
      if (!flood) return void s.on("data", (d) => s.write(d));
      const chunk = Buffer.alloc(64 * 1024, 1);
      const more = () => {
        while (!s.destroyed) {
          pushed.flood += chunk.length;
          if (!s.write(chunk)) return void s.once("drain", more);
        }
      };
      more();
    };
    s.on("data", onHead);
  });
  const streamingPort = await listen(streaming);
  const logs: RequestLog[] = [];
  const runtime = {
    execStream: async () => {
      throw new Error("not used");
    },
    portForwardStream: async () => ({
      criCalls: 2,
      pod: { uid: "u1", name: "web", namespace: "default" },
      sandboxId: "s1",
      url: `http://127.0.0.1:${streamingPort}/portforward/${sessions++ === 0 ? "flood" : "echo"}`,
    }),
  };
  const serve = async (allowPortForward: boolean) => {
    const srv = createHttpServer((_q, r) => r.end());
    srv.on(
      "upgrade",
      spdyUpgrade({
        verifier,
        pods,
        runtime,
        allowExec: false,
        allowPortForward,
        bufferBytes: 64 * 1024,
        log: (r) => logs.push(r),
      }),
    );
    return listen(srv);
  };
  const upgrade = async (port: number, auth: string): Promise<{ socket: Socket; head: string }> => {
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => undefined);
    socket.write(
      `POST /api/v1/namespaces/default/pods/web/portforward HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${auth}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\nContent-Length: 0\r\n\r\n`,
    );
    let head = "";
    await new Promise<void>((res) => {
      const onData = (b: Buffer) => {
        head += b.toString("latin1");
        if (head.includes("\r\n\r\n")) {
          socket.off("data", onData);
          socket.pause();
          res();
        }
      };
      socket.on("data", onData);
      socket.on("close", () => res());
    });
    return { socket, head };
  };

  it("off on the node, or a token minted without --port-forward: 403 Status naming what is missing", async () => {
    const off = await upgrade(await serve(false), await token({ act: "read", portForward: true }));
    expect(off.head).toMatch(/^HTTP\/1\.1 403 /);
    expect(off.head).toContain("PODSYNC_ALLOW_PORT_FORWARD=true");
    const on = await serve(true);
    const noClaim = await upgrade(on, await token({ act: "read", exec: true }));
    expect(noClaim.head).toMatch(/^HTTP\/1\.1 403 /);
    expect(noClaim.head).toContain("podsync kubeconfig --port-forward");
  });

  it("a session whose client stops reading stalls alone: another session's bytes still go both ways", async () => {
    const port = await serve(true);
    const auth = await token({ act: "read", portForward: true });
    const stalled = await upgrade(port, auth); // never read from here on: the runtime's side floods it
    expect(stalled.head).toMatch(/^HTTP\/1\.1 101 /);
    closers.push(() => stalled.socket.destroy());
    await until(
      "the flood held back",
      async () => {
        const before = pushed.flood;
        await new Promise((r) => setTimeout(r, 200));
        return pushed.flood === before ? true : undefined;
      },
      20_000,
    );
    const live = await upgrade(port, auth);
    expect(live.head).toMatch(/^HTTP\/1\.1 101 /);
    const ping = encodeFrame({ kind: "ping", id: 1 });
    live.socket.resume();
    const echoed = new Promise<Buffer>((res) => live.socket.once("data", (b: Buffer) => res(b)));
    live.socket.write(ping);
    expect(await echoed).toEqual(ping);
    // A stream's port is read on the way (for the request log), the frame passed on unchanged.
    const syn = encodeFrame({
      kind: "syn_stream",
      streamId: 1,
      associatedTo: 0,
      priority: 0,
      flags: 0,
      block: await new HeaderCompressor().compress({ streamtype: "data", port: "8080", requestid: "0" }),
    });
    const echoedSyn = new Promise<Buffer>((res) => live.socket.once("data", (b: Buffer) => res(b)));
    live.socket.write(syn);
    expect(await echoedSyn).toEqual(syn);
    // What the stalled session took from the runtime is bounded by socket buffers and the proxy's, not growing.
    expect(pushed.flood).toBeLessThan(32 * 1024 * 1024);
    live.socket.destroy();
    stalled.socket.destroy();
    await until(
      "both sessions logged",
      async () => (logs.filter((l) => l.status === 101).length >= 2 ? true : undefined),
      10_000,
    );
    expect(logs.find((l) => l.status === 101)?.route).toBe("/api/v1/namespaces/:ns/pods/:name/portforward");
    expect(logs.filter((l) => l.status === 101).map((l) => l.ports)).toContainEqual([8080]);
  });
});
