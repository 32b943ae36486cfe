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
import { startFleetLink } from "../../src/http/fleet/node-link.js";
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
  o: { heartbeatMs?: string; serve?: (req: Request) => Promise<Response>; env?: Record<string, string> } = {},
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
    expect(logs.filter((l) => l["event"] === "applied").map((l) => l["generation"])).toEqual([1, 4, 5]);
  });

  it("finds a half-open connection by its heartbeat and reconnects", async () => {
    const { link, logs, ws } = await node({ heartbeatMs: "200" });
    // The far end stops answering without closing: a half-open connection as the node sees it.
    muted.add(ws);
    await until("the link saw it", async () => logs.some((l) => l["event"] === "heartbeat-lost"), 10_000);
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
