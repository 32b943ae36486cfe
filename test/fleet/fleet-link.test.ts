// The node's side of pull mode against a fleet that is NOT trusted (a fake Worker on loopback that sends whatever it
// likes): the node applies only sets the owner signed, verified against its own keys through its own
// PUT /v1/node/pods, above its own generation; a set signed long ago (its token expired) still applies, since
// its freshness is its generation. Also: a half-open connection is found by the heartbeat and the link reconnects.
import { createServer, type Server } from "node:http";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { FileDesiredState } from "../../src/state/desired-pods.js";
import { NodeFleetSettings, startFleetLink } from "../../src/http/fleet/node-link.js";
import { FleetIdentity } from "../../src/http/fleet/identity.js";
import type { FleetLink } from "../../src/http/fleet/link.js";
import { STREAM } from "../../src/http/fleet/protocol.js";
import type { FakeServer } from "../support/fake-cri.js";
import { ISSUER, makeKey, type TestKey } from "../support/http.js";
import { signedSet } from "../support/fleet.js";
import { until } from "../support/wait.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const NODE = "edge-t";
let fake: FakeServer;
let owner: TestKey;
let stranger: TestKey;
let server: Server;
let url: string;
const sockets: WebSocket[] = [];
/** Sockets the fake fleet no longer answers (a half-open connection, as the node sees it). */
const muted = new Set<WebSocket>();
const received: Record<string, unknown>[] = [];
const bySocket = new Map<WebSocket, Record<string, unknown>[]>();
const links: FleetLink[] = [];

const suite = useFakeCri();
beforeAll(async () => {
  ({ fake } = suite);
  owner = await makeKey("ES256", "owner");
  stranger = await makeKey("ES256", "owner"); // same kid, another key
  const wss = new WebSocketServer({ noServer: true });
  server = createServer((_req, res) => res.writeHead(404).end());
  server.on("upgrade", (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.push(ws);
      ws.on("message", (d) => {
        const t = d.toString();
        if (muted.has(ws)) return;
        if (t === "ping") ws.send("pong");
        else {
          const m = JSON.parse(t) as Record<string, unknown>;
          received.push(m);
          bySocket.set(ws, [...(bySocket.get(ws) ?? []), m]);
        }
      });
    }),
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const a = server.address();
  url = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`;
});

afterAll(async () => {
  for (const l of links) await l.close();
  server?.close();
});

async function node(
  o: {
    heartbeatMs?: string;
    serve?: (req: Request) => Promise<Response>;
    local?: () => string | undefined;
    env?: Record<string, string>;
  } = {},
) {
  const stateDir = mkdtempSync(join(tmpdir(), "podsync-fleet-link-"));
  const id = await FleetIdentity.load(stateDir);
  id.saveEnrollment({ url, node: NODE, fleet: "podsync-fleet", enrolledAt: new Date().toISOString() });
  const desired = new FileDesiredState(stateDir);
  await desired.open();
  const cri = connectGrpc({ endpoint: fake.endpoint, timeoutMs: 10_000 });
  const logs: Record<string, unknown>[] = [];
  const link = (await startFleetLink({
    env: {
      PODSYNC_FLEET_URL: url,
      PODSYNC_FLEET_HEARTBEAT_MS: o.heartbeatMs ?? "1000",
      PODSYNC_FLEET_BACKOFF_MAX_MS: "500",
      ...o.env,
    },
    nodeName: NODE,
    stateDir,
    version: "test",
    capacity: {},
    app: {
      runtime: createPodRuntime(cri, { pullBackOff: new MemoryPullBackOff() }),
      nodeName: NODE,
      desired,
      verifier: { verify: () => Promise.reject(new Error("replaced by the fleet's")) },
    },
    verifier: { keys: { jwks: { keys: [owner.publicJwk] } }, issuers: [ISSUER], audience: [NODE] },
    desired,
    pods: () => [],
    log: (r) => logs.push(r),
    ...(o.serve ? { serve: o.serve } : {}),
    ...(o.local ? { local: o.local } : {}),
  }))!;
  links.push(link);
  await link.ready();
  return { link, desired, logs, ws: sockets.at(-1)! };
}

const send = (ws: WebSocket, generation: number, s: { body: string; signature: string }) =>
  ws.send(
    JSON.stringify({
      type: "desired",
      generation,
      contentType: "application/json",
      body: s.body,
      signature: s.signature,
    }),
  );

describe("a node pulling from an untrusted fleet", () => {
  it("applies only owner-signed sets above its generation, even one signed long ago", async () => {
    const { desired, logs, ws } = await node();
    // Signed 10 minutes ago: its token expired long before delivery; it applies all the same.
    send(ws, 1, await signedSet(owner, NODE, 1, [], { iatOffsetS: -600 }));
    await until("generation 1 applied", async () => (await desired.generation()) === 1);

    // The Worker changes the body under the owner's signature: refused, nothing changes, the error is reported.
    const genuine = await signedSet(owner, NODE, 2, []);
    send(ws, 2, {
      ...genuine,
      body: JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "evil", uid: "evil-1" },
            spec: { containers: [{ name: "c", image: "evil" }] },
          },
        ],
      }),
    });
    await until("refused", async () =>
      logs.some((l) => l["event"] === "apply-refused" && String(l["error"]).includes("body_sha256")),
    );
    expect(await desired.generation()).toBe(1);
    expect(await desired.list()).toEqual([]);
    await until("the refusal reported", async () =>
      received.some((m) => m["type"] === "status" && String(m["error"] ?? "").includes("body_sha256")),
    );

    // Signed by a key the node does not trust: refused.
    send(ws, 3, await signedSet(stranger, NODE, 3, []));
    await until("refused again", async () => logs.filter((l) => l["event"] === "apply-refused").length === 2);
    expect(await desired.generation()).toBe(1);

    // A genuine set for another node: refused (its aud).
    send(ws, 4, await signedSet(owner, "edge-other", 4, []));
    await until("refused a third time", async () => logs.filter((l) => l["event"] === "apply-refused").length === 3);

    // One set signed for several nodes (aud lists them) applies here too.
    send(ws, 4, await signedSet(owner, ["edge-other", NODE], 4, []));
    await until("generation 4 applied", async () =>
      logs.some((l) => l["event"] === "applied" && l["generation"] === 4),
    );

    // An older generation, validly signed, is never applied (the link does not even try).
    send(ws, 1, await signedSet(owner, NODE, 1, []));
    send(ws, 5, await signedSet(owner, NODE, 5, []));
    await until("generation 5 applied", async () =>
      logs.some((l) => l["event"] === "applied" && l["generation"] === 5),
    );
    expect(await desired.generation()).toBe(5);
    // Clock skew (issue #38, ±5 min): a set signed by a clock 5 min ahead of the node's applies too (its checks are
    // made as of its own iat; 10 min behind is the first case above).
    send(ws, 6, await signedSet(owner, NODE, 6, [], { iatOffsetS: 300 }));
    await until("generation 6 applied", async () => (await desired.generation()) === 6);
    expect(logs.filter((l) => l["event"] === "applied").map((l) => l["generation"])).toEqual([1, 4, 5, 6]);
  });

  it("finds a half-open connection by its heartbeat and reconnects", async () => {
    // Issue #38: within 60 s with the defaults (three heartbeats of silence, checked every heartbeat).
    const defaults = NodeFleetSettings.parse({});
    expect(4 * defaults.PODSYNC_FLEET_HEARTBEAT_MS).toBeLessThanOrEqual(60_000);
    const { link, logs, ws } = await node({ heartbeatMs: "200" });
    // The far end stops answering without closing: a half-open connection as the node sees it.
    muted.add(ws);
    await until("the link saw it", async () => logs.some((l) => l["event"] === "heartbeat-lost"), 10_000);
    // Found at the first check after three silent heartbeats (scaled down here: 200 ms).
    const lost = logs.find((l) => l["event"] === "heartbeat-lost")!;
    expect(Number(lost["silentMs"])).toBeGreaterThan(3 * 200);
    await until(
      "connected again",
      async () => link.connected() && logs.filter((l) => l["event"] === "connected").length === 2,
      10_000,
    );
  });
});

describe("streams over the link", () => {
  it("serves each request with the node's own fetch, each stream within its own credit", async () => {
    const seen: { path: string; auth: string | null }[] = [];
    const big = new Uint8Array(3 * STREAM.windowBytes).fill(97);
    const serve = async (req: Request) => {
      const u = new URL(req.url);
      seen.push({ path: u.pathname + u.search, auth: req.headers.get("authorization") });
      return u.pathname === "/big" ? new Response(big) : new Response("small answer", { status: 200 });
    };
    const { ws } = await node({ serve });
    const frames: Record<string, unknown>[] = [];
    ws.on("message", (d) => {
      const t = d.toString();
      if (t !== "ping") frames.push(JSON.parse(t) as Record<string, unknown>);
    });
    const data = (id: number) =>
      frames
        .filter((f) => f["type"] === "data" && f["id"] === id)
        .reduce((n, f) => n + Buffer.from(String(f["data"]), "base64").byteLength, 0);
    const ended = (id: number) => frames.some((f) => f["type"] === "end" && f["id"] === id);
    const open = (id: number, path: string) =>
      ws.send(JSON.stringify({ type: "open", id, method: "GET", path, headers: [["authorization", "Bearer t"]] }));
    // Stream 1's reader is slow (no credit is granted): it stops at its window; stream 2 still completes.
    open(1, "/big?x=1");
    open(2, "/small");
    await until("stream 2 done", async () => ended(2));
    await until("stream 1 at its window", async () => data(1) === STREAM.windowBytes);
    expect(ended(1)).toBe(false);
    expect(
      Buffer.concat(
        frames
          .filter((f) => f["id"] === 2 && f["type"] === "data")
          .map((f) => Buffer.from(String(f["data"]), "base64")),
      ).toString(),
    ).toBe("small answer");
    expect(frames.find((f) => f["type"] === "head" && f["id"] === 1)).toMatchObject({ status: 200 });
    expect(seen).toEqual([
      { path: "/big?x=1", auth: "Bearer t" },
      { path: "/small", auth: "Bearer t" },
    ]);
    // Every data frame stays within the chunk limit.
    expect(
      frames
        .filter((f) => f["type"] === "data")
        .every((f) => Buffer.from(String(f["data"]), "base64").byteLength <= STREAM.chunkBytes),
    ).toBe(true);
    // Credit for what the reader took: the rest comes, then the end.
    ws.send(JSON.stringify({ type: "credit", id: 1, bytes: 2 * STREAM.windowBytes }));
    await until("stream 1 done", async () => ended(1));
    expect(data(1)).toBe(big.byteLength);
    // A cancelled stream stops at once; an unknown one is ignored.
    open(3, "/big");
    ws.send(JSON.stringify({ type: "cancel", id: 3 }));
    ws.send(JSON.stringify({ type: "credit", id: 99, bytes: 10 }));
    open(4, "/small");
    await until("stream 4 done", async () => ended(4));
    expect(data(3)).toBeLessThanOrEqual(STREAM.windowBytes);
  });

  it("after a clean close by the Worker, reconnects at once and sends its summary again, unchanged", async () => {
    // Back-off of up to 60 s: only the clean close's jitter-only reconnect can bring it back within the wait.
    const { link, logs, ws } = await node({
      env: { PODSYNC_FLEET_BACKOFF_MAX_MS: "60000", PODSYNC_FLEET_RECONNECT_JITTER_MS: "200" },
    });
    const types = (w: WebSocket) => (bySocket.get(w) ?? []).map((m) => m["type"]);
    await until("the first summary", async () => types(ws).includes("status"));
    const first = bySocket.get(ws)!.find((m) => m["type"] === "status");
    ws.close(1012, "service restart");
    await until(
      "connected again",
      async () => link.connected() && logs.filter((l) => l["event"] === "connected").length === 2,
      5_000,
    );
    // The new connection says hello, then the same summary at once, although nothing changed.
    const next = sockets.at(-1)!;
    await until("the summary again", async () => types(next).includes("status"));
    expect(types(next).slice(0, 2)).toEqual(["hello", "status"]);
    expect(bySocket.get(next)!.find((m) => m["type"] === "status")).toEqual(first);
  });
});

describe("sessions over the link (kubectl exec)", () => {
  it("dials the node's own listener; each session within its own credit, both ways, whole messages", async () => {
    // A stand-in for the node's listener (the real one is its exec upgrade, test/fleet/fleet.e2e.test.ts): /flood
    // sends four 40 KiB messages at once, /echo echoes, anything else is refused as the node refuses exec.
    const FLOOD = 40 * 1024;
    const heard: { path: string; auth: string | undefined; protocol: string }[] = [];
    const closed: string[] = [];
    const wss = new WebSocketServer({ noServer: true, handleProtocols: (p) => [...p][0] ?? false });
    const local = createServer();
    local.on("upgrade", (req, socket, head) => {
      if (!["/flood", "/echo"].includes(req.url ?? "")) {
        const body = JSON.stringify({ kind: "Status", code: 403, message: "exec is off on this node" });
        socket.end(
          `HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
        return;
      }
      wss.handleUpgrade(req, socket, head, (w) => {
        heard.push({ path: req.url!, auth: req.headers.authorization, protocol: w.protocol });
        w.on("close", () => closed.push(req.url!));
        if (req.url === "/flood") for (let i = 0; i < 4; i++) w.send(Buffer.alloc(FLOOD, 48 + i), { binary: true });
        else w.on("message", (d) => w.send(d as Buffer, { binary: true }));
      });
    });
    await new Promise<void>((r) => local.listen(0, "127.0.0.1", () => r()));
    const la = local.address();
    const origin = `ws://127.0.0.1:${typeof la === "object" && la ? la.port : 0}`;
    const { ws } = await node({ local: () => origin });
    const frames: Record<string, unknown>[] = [];
    ws.on("message", (d) => {
      const t = d.toString();
      if (t !== "ping") frames.push(JSON.parse(t) as Record<string, unknown>);
    });
    const of = (id: number, type: string) => frames.filter((f) => f["id"] === id && f["type"] === type);
    const bytes = (id: number) =>
      of(id, "data").reduce((n, f) => n + Buffer.from(String(f["data"]), "base64").byteLength, 0);
    /** The session's messages, put together from their frames (`more`: the message goes on). */
    const messages = (id: number) => {
      const out: Buffer[] = [];
      let parts: Buffer[] = [];
      for (const f of of(id, "data")) {
        parts.push(Buffer.from(String(f["data"]), "base64"));
        if (!f["more"]) out.push(Buffer.concat(parts)), (parts = []);
      }
      return out;
    };
    const open = (id: number, path: string) =>
      ws.send(
        JSON.stringify({
          type: "open",
          id,
          method: "GET",
          path,
          upgrade: "websocket",
          headers: [
            ["authorization", "Bearer t"],
            ["sec-websocket-protocol", "v5.channel.k8s.io, v4.channel.k8s.io"],
            ["cookie", "not carried"],
          ],
        }),
      );
    // Session 1's client is slow (no credit granted): it stops at its window, mid-message.
    open(1, "/flood");
    await until("session 1 at its window", async () => bytes(1) === STREAM.windowBytes);
    expect(of(1, "head")[0]).toMatchObject({ status: 101, headers: [["sec-websocket-protocol", "v5.channel.k8s.io"]] });
    // Session 2 goes on meanwhile: a 20 KiB message in two frames, echoed whole.
    open(2, "/echo");
    await until("session 2 open", async () => of(2, "head").length === 1);
    const msg = Buffer.alloc(20 * 1024, 7);
    ws.send(JSON.stringify({ type: "data", id: 2, data: msg.subarray(0, 16_384).toString("base64"), more: true }));
    ws.send(JSON.stringify({ type: "data", id: 2, data: msg.subarray(16_384).toString("base64") }));
    await until("the echo", async () => messages(2).length === 1);
    expect(messages(2)[0]!.equals(msg)).toBe(true);
    // The node granted back what its listener took of session 2's input.
    await until(
      "credit for session 2",
      async () => of(2, "credit").reduce((n, f) => n + Number(f["bytes"]), 0) === msg.byteLength,
    );
    expect(bytes(1)).toBe(STREAM.windowBytes);
    // Credit for session 1: the rest comes, as the four messages it was.
    ws.send(JSON.stringify({ type: "credit", id: 1, bytes: 4 * FLOOD }));
    await until("session 1's four messages", async () => messages(1).length === 4);
    expect(messages(1).map((m) => [m.byteLength, m[0]])).toEqual([0, 1, 2, 3].map((i) => [FLOOD, 48 + i]));
    expect(of(1, "data").every((f) => Buffer.from(String(f["data"]), "base64").byteLength <= STREAM.chunkBytes)).toBe(
      true,
    );
    // The client leaves: the listener's socket is closed; the listener ending a session ends it at the Worker.
    ws.send(JSON.stringify({ type: "cancel", id: 2 }));
    await until("session 2 closed at the listener", async () => closed.includes("/echo"));
    // A refused upgrade comes back as the listener's answer.
    open(3, "/exec-off");
    await until("session 3 answered", async () => of(3, "end").length === 1);
    expect(of(3, "head")[0]).toMatchObject({ status: 403 });
    expect(Buffer.concat(of(3, "data").map((f) => Buffer.from(String(f["data"]), "base64"))).toString()).toMatch(
      /exec is off/,
    );
    // Only the token and the subprotocols reached the listener.
    expect(heard).toEqual([
      { path: "/flood", auth: "Bearer t", protocol: "v5.channel.k8s.io" },
      { path: "/echo", auth: "Bearer t", protocol: "v5.channel.k8s.io" },
    ]);
    local.close();
  });
});

describe("the node's fleet settings", () => {
  it("refuses to start unenrolled without a join token, and names an unreadable token file", async () => {
    const base = {
      nodeName: NODE,
      version: "test",
      capacity: {},
      app: {
        runtime: createPodRuntime(connectGrpc({ endpoint: fake.endpoint })),
        nodeName: NODE,
        verifier: { verify: () => Promise.reject(new Error("unused")) },
      },
      verifier: { keys: { jwks: { keys: [owner.publicJwk] } }, issuers: [ISSUER], audience: [NODE] },
      desired: new FileDesiredState(mkdtempSync(join(tmpdir(), "podsync-fleet-unused-"))),
      pods: () => [],
      log: () => undefined,
    };
    const stateDir = mkdtempSync(join(tmpdir(), "podsync-fleet-settings-"));
    await expect(startFleetLink({ ...base, stateDir, env: { PODSYNC_FLEET_URL: url } })).rejects.toThrow(
      /not enrolled yet.*PODSYNC_FLEET_JOIN_TOKEN/,
    );
    await expect(
      startFleetLink({
        ...base,
        stateDir,
        env: { PODSYNC_FLEET_URL: url, PODSYNC_FLEET_JOIN_TOKEN_FILE: join(stateDir, "nope") },
      }),
    ).rejects.toThrow(/PODSYNC_FLEET_JOIN_TOKEN_FILE: cannot read/);
    await expect(startFleetLink({ ...base, stateDir, env: { PODSYNC_FLEET_URL: "ftp://x" } })).rejects.toThrow(
      /PODSYNC_FLEET_URL/,
    );
    expect(await startFleetLink({ ...base, stateDir, env: {} })).toBeUndefined();
  });
});
