// Pull mode's registry in the real Workers runtime (workerd via wrangler): enrollment with single-use join tokens,
// node connections over hibernatable WebSockets, desired sets delivered, status on change, labels, revocation, the
// audit, and the faults of issue #38 (replayed or expired join token, forged status, oversized message, clock
// skew). The agents are the real link (src/http/fleet/link.ts) with a recording apply instead of a runtime.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { createServer } from "node:http";
import { ISSUER, makeKey, type TestKey } from "../support/http.js";
import { startWorkerd, type Workerd } from "../support/workerd.js";
import { until } from "../support/wait.js";
import {
  audit,
  joinToken,
  listNodes,
  ownerToken,
  putSet,
  putSetMany,
  signedSet,
  simAgent,
  type SimAgent,
} from "../support/fleet.js";
import { FleetIdentity } from "../../src/http/fleet/identity.js";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { exportJWK } from "jose";
import { tmpdir } from "node:os";
import { join } from "node:path";

let worker: Workerd;
let base: URL;
let key: TestKey;
const agents: SimAgent[] = [];

beforeAll(async () => {
  key = await makeKey("ES256", "owner-1");
  ({ worker, base } = await startWorkerd({
    nodes: {},
    jwk: key.publicJwk,
    proxyToken: "unused",
    env: { PODSYNC_FLEET_SHARDS: "4" },
  }));
}, 120_000);

afterAll(async () => {
  await Promise.all(agents.map((a) => a.link.close()));
  await worker?.dispose();
});

const agent = async (name: string, labels: Record<string, string> = {}, o: Parameters<typeof simAgent>[3] = {}) => {
  const a = await simAgent(base, name, await joinToken(key, labels), o);
  agents.push(a);
  await a.link.ready();
  return a;
};
const enroll = async (name: string, token: string) => {
  const id = await FleetIdentity.load(mkdtempSync(join(tmpdir(), "podsync-fleet-raw-")));
  return fetch(new URL("/fleet/enroll", base), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token, node: name, jwk: id.publicJwk }),
  });
};
const bearer = async (act: string, claims: Record<string, unknown> = {}) => ({
  authorization: `Bearer ${await ownerToken(key, { act, ...claims })}`,
});

describe("enrollment and the registry", () => {
  it("enrolls a node with a join token; it is Ready with the token's labels, and the enrollment is audited", async () => {
    const a = await agent("edge-1", { site: "north" });
    expect(a.identity.enrollment()?.fleet).toBe("podsync-fleet");
    const nodes = await listNodes(base, key);
    const n = nodes.find((x) => x.metadata.name === "edge-1")!;
    expect(n.status.condition).toBe("Ready");
    expect(n.metadata.labels).toEqual({ site: "north" });
    expect(n.status.agentVersion).toBe("sim-1");
    expect((await audit(base, key, "edge-1")).map((r) => r.action)).toContain("enroll");
    expect((await listNodes(base, key, "site=south")).map((x) => x.metadata.name)).not.toContain("edge-1");
  });

  it("refuses a replayed join token (single use)", async () => {
    const t = await joinToken(key);
    expect((await enroll("edge-replay-1", t)).status).toBe(201);
    const again = await enroll("edge-replay-2", t);
    expect(again.status).toBe(409);
    expect(((await again.json()) as { detail: string }).detail).toMatch(/already used/);
    expect((await listNodes(base, key)).map((n) => n.metadata.name)).not.toContain("edge-replay-2");
  });

  it("refuses a join token after its TTL", async () => {
    const t = await joinToken(key, {}, { ttlS: 60, iatOffsetS: -600 });
    const r = await enroll("edge-late", t);
    expect(r.status).toBe(401);
    expect(((await r.json()) as { detail: string }).detail).toMatch(/expired/);
  });

  it("refuses enrollment without a valid owner signature, and a fleet token of the wrong verb", async () => {
    const other = await makeKey("ES256", "owner-1");
    expect((await enroll("edge-forged", await joinToken(other))).status).toBe(401);
    const r = await fetch(new URL("/fleet/nodes", base), { headers: await bearer("label") });
    expect(r.status).toBe(403);
  });

  it("connects with ±5 min of clock skew between node and Worker", async () => {
    for (const [name, skew] of [
      ["edge-ahead", 300_000],
      ["edge-behind", -300_000],
    ] as const) {
      const a = await agent(name, {}, { now: () => Date.now() + skew });
      expect(a.link.connected()).toBe(true);
    }
  });
});

describe("desired state and status", () => {
  it("delivers the signed set to its node, refuses an older generation and an unsigned set", async () => {
    const a = await agent("edge-2");
    expect((await putSet(base, key, "edge-2", 1, [])).status).toBe(202);
    await until("the set delivered", async () => a.applied.length === 1);
    expect(a.applied[0]!.generation).toBe(1);
    expect((await putSet(base, key, "edge-2", 1, [])).status).toBe(409);
    const unsigned = await fetch(new URL("/fleet/nodes/edge-2/v1/node/pods", base), {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ apiVersion: "v1", kind: "List", items: [] }),
    });
    expect(unsigned.status).toBe(401);
    // A set signed for another node is refused for this one.
    const other = await signedSet(key, "edge-1", 5, []);
    const wrong = await fetch(new URL("/fleet/nodes/edge-2/v1/node/pods", base), {
      method: "PUT",
      headers: { "content-type": "application/json", "podsync-signature": other.signature },
      body: other.body,
    });
    expect(wrong.status).toBe(403);
    expect(a.applied.map((x) => x.generation)).toEqual([1]);
  });

  it("one set for many nodes: its aud lists them, each gets it; an unknown node is refused by name", async () => {
    const [a, b] = [await agent("edge-m1"), await agent("edge-m2")];
    const r = await putSetMany(base, key, ["edge-m1", "edge-m2", "edge-nobody"], 7, []);
    expect(r.status).toBe(202);
    const body = (await r.json()) as { stored: number; delivered: number; refused: { node: string; reason: string }[] };
    expect(body).toMatchObject({ stored: 2, delivered: 2 });
    expect(body.refused).toEqual([{ node: "edge-nobody", reason: expect.stringMatching(/not enrolled/) }]);
    await until("both applied", async () => a.applied.length === 1 && b.applied.length === 1);
    expect([a.applied[0]!.generation, b.applied[0]!.generation]).toEqual([7, 7]);
  });

  it("a node that was away catches up to the latest generation only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-fleet-away-"));
    const a = await agent("edge-away", {}, { stateDir: dir });
    await a.link.close();
    for (const g of [1, 2, 3]) expect((await putSet(base, key, "edge-away", g, [])).status).toBe(202);
    const back = await simAgent(base, "edge-away", undefined, { stateDir: dir });
    agents.push(back);
    await until("caught up", async () => back.applied.length > 0);
    expect(back.applied.map((x) => x.generation)).toEqual([3]);
  });

  it("reports status on change, and the registry holds it", async () => {
    const a = await agent("edge-3");
    a.pods = [{ namespace: "default", name: "web", uid: "u1", phase: "Running", ready: true, restarts: 2 }];
    const n = await until("the status in the registry", async () =>
      (await listNodes(base, key)).find((x) => x.metadata.name === "edge-3" && x.status.pods.length === 1),
    );
    expect(n.status.pods[0]).toMatchObject({ name: "web", restarts: 2, ready: true });
  });
});

/** A raw connection as node `name` (its identity), for messages the link would never send. */
async function rawSocket(name: string): Promise<{ ws: WebSocket; closed: Promise<number>; messages: string[] }> {
  const a = await agent(name);
  await a.link.close();
  const t = await a.identity.connectionToken(name, "podsync-fleet");
  const u = new URL("/fleet/connect", base);
  u.protocol = "ws:";
  const ws = new WebSocket(u, { headers: { authorization: `Bearer ${t}` } });
  const messages: string[] = [];
  ws.on("message", (d) => void messages.push(d.toString()));
  const closed = new Promise<number>((r) => ws.on("close", (c) => r(c)));
  await new Promise<void>((r) => ws.on("open", () => r()));
  return { ws, closed, messages };
}

describe("faults", () => {
  it("refuses and audits a status claiming another node, and closes that connection", async () => {
    const { ws, closed, messages } = await rawSocket("edge-forger");
    ws.send(JSON.stringify({ type: "status", node: "edge-1", generation: 9, pods: [] }));
    expect(await closed).toBe(1008);
    expect(JSON.parse(messages[0]!).message).toMatch(/may not report for "edge-1"/);
    const rows = await audit(base, key, "edge-forger");
    expect(rows.find((r) => r.action === "forged-status")?.detail).toMatch(/edge-1/);
    expect((await listNodes(base, key)).find((n) => n.metadata.name === "edge-1")!.status.generation).toBe(0);
  });

  it("a connection token opens one connection: replayed, it is refused", async () => {
    const { ws } = await rawSocket("edge-replayer");
    ws.close();
    const a = agents.find((x) => x.name === "edge-replayer")!;
    const t = await a.identity.connectionToken("edge-replayer", "podsync-fleet");
    const open = (token: string) =>
      new Promise<number | undefined>((r) => {
        const u = new URL("/fleet/connect", base);
        u.protocol = "ws:";
        const w = new WebSocket(u, { headers: { authorization: `Bearer ${token}` } });
        w.on("unexpected-response", (_req, res) => (r(res.statusCode), w.terminate()));
        w.on("open", () => (r(101), w.close()));
        w.on("error", () => undefined);
      });
    expect(await open(t)).toBe(101);
    expect(await open(t)).toBe(409);
  });

  it("refuses an oversized message, naming the limit", async () => {
    const { ws, closed, messages } = await rawSocket("edge-big");
    ws.send(JSON.stringify({ type: "status", node: "edge-big", generation: 0, pods: [], error: "x".repeat(70_000) }));
    expect(await closed).toBe(1009);
    expect(messages.join()).toMatch(/over the limit of 65536 bytes \(PODSYNC_FLEET_MAX_MESSAGE_BYTES\)/);
  });

  it("labels a node (audited); a token whose selector leaves the node out is refused", async () => {
    await agent("edge-4", { site: "north" });
    const post = async (claims: Record<string, unknown>) =>
      fetch(new URL("/fleet/nodes/edge-4/labels", base), {
        method: "POST",
        headers: { ...(await bearer("label", claims)), "content-type": "application/json" },
        body: JSON.stringify({ labels: { tier: "gold" } }),
      });
    expect((await post({ selector: "site=south" })).status).toBe(403);
    expect((await post({ selector: "site=north" })).status).toBe(200);
    expect((await listNodes(base, key, "tier=gold")).map((n) => n.metadata.name)).toEqual(["edge-4"]);
    expect((await audit(base, key, "edge-4")).map((r) => r.action)).toContain("label");
  });

  it("revocation ends an open connection at once; the node cannot reconnect", async () => {
    const a = await agent("edge-5");
    const r = await fetch(new URL("/fleet/nodes/edge-5/revoke", base), {
      method: "POST",
      headers: await bearer("revoke"),
    });
    expect(r.status).toBe(200);
    await until("the connection closed", async () => !a.link.connected(), 5000);
    await until("the link gives up", async () => a.logs.some((l) => l["event"] === "revoked"), 5000);
    const n = (await listNodes(base, key)).find((x) => x.metadata.name === "edge-5")!;
    expect(n.status).toMatchObject({ condition: "NotReady", revoked: true, connected: false });
    expect((await audit(base, key, "edge-5")).map((x) => x.action)).toContain("revoke");
    const t = await a.identity.connectionToken("edge-5", "podsync-fleet");
    const u = new URL("/fleet/connect", base);
    u.protocol = "ws:";
    const again = new WebSocket(u, { headers: { authorization: `Bearer ${t}` } });
    const status = await new Promise<number | undefined>((r) => {
      again.on("unexpected-response", (_req, res) => r(res.statusCode));
      again.on("open", () => r(undefined));
      again.on("error", () => undefined);
    });
    again.terminate();
    expect(status).toBe(403);
  });

  it("a node whose connection closes is NotReady at once", async () => {
    const a = await agent("edge-6");
    await a.link.close();
    await until(
      "NotReady",
      async () =>
        (await listNodes(base, key)).find((x) => x.metadata.name === "edge-6")?.status.condition === "NotReady",
      5000,
    );
  });
});

describe("the CLI", () => {
  const cli = (...args: string[]) =>
    new Promise<{ code: number; out: string; err: string }>((res) =>
      execFile(
        process.execPath,
        ["bin/podsync.mjs", ...args, "--url", base.origin, "--key", keyFile],
        { env: { ...process.env, PODSYNC_URL: "" } },
        (e, out, err) => res({ code: e ? Number(e.code ?? 1) : 0, out, err }),
      ),
    );
  let keyFile: string;
  beforeAll(async () => {
    keyFile = join(mkdtempSync(join(tmpdir(), "podsync-fleet-cli-")), "key.json");
    writeFileSync(
      keyFile,
      JSON.stringify({ ...(await exportJWK(key.privateKey)), kid: key.kid, alg: "ES256", iss: ISSUER }),
    );
  });

  it("fleet --help; label and revoke with -o json; a selector-scoped --token FILE acts only inside its selector", async () => {
    expect((await cli("fleet", "--help")).out).toMatch(/fleet nodes \[-l SELECTOR\] \[-o wide\|json\]/);
    await agent("edge-cli", { site: "east" });
    const labeled = JSON.parse((await cli("fleet", "label", "edge-cli", "tier=silver", "-o", "json")).out);
    expect(labeled.items[0].metadata).toMatchObject({ name: "edge-cli", labels: { site: "east", tier: "silver" } });
    const tokenFile = join(mkdtempSync(join(tmpdir(), "podsync-fleet-tok-")), "t.jws");
    const minted = await cli("token", "--act", "revoke", "--selector", "site=west");
    expect(minted.code, minted.err).toBe(0);
    writeFileSync(tokenFile, minted.out);
    const outside = await cli("fleet", "revoke", "edge-cli", "--token", tokenFile);
    expect(outside.code).toBe(1);
    expect(outside.err).toMatch(/outside the token's selector/);
    const revoked = JSON.parse((await cli("fleet", "revoke", "edge-cli", "-o", "json")).out);
    expect(revoked.items[0]).toMatchObject({ metadata: { name: "edge-cli" }, status: { revoked: true } });
    const table = (await cli("fleet", "nodes", "-l", "site=east")).out;
    expect(table).toMatch(/^NAME\s+STATUS\s+LABELS\s+VERSION\s+LAST SEEN/);
    expect(table).toMatch(/edge-cli\s+NotReady,Revoked\s+site=east,tier=silver\s+sim-1/);
    // Seven CLI processes: each starts Node afresh, slow on a loaded machine.
  }, 120_000);
});

describe("kubectl through the fleet", () => {
  const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
  const big = new Uint8Array(256 * 1024).fill(120);
  const served: string[] = [];
  // A stand-in for the node's own API (the real one is its listener's fetch, test/fleet/fleet.e2e.test.ts).
  const serve = async (req: Request) => {
    const u = new URL(req.url);
    served.push(`${u.pathname}${u.search} ${req.headers.get("authorization") ? "with" : "without"} token`);
    if (u.pathname.endsWith("/log") && u.searchParams.get("follow") === "true")
      // A followed log: a line now, then nothing, and it stays open.
      return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode("line 1\n")) }), {
        headers: { "content-type": "text/plain" },
      });
    if (u.pathname.endsWith("/log")) return new Response(big, { headers: { "content-type": "text/plain" } });
    return Response.json({ kind: "PodList", apiVersion: "v1", metadata: {}, items: [] });
  };
  const nodeToken = async (node: string, act = "read") => `Bearer ${await ownerToken(key, { act }, { aud: node })}`;

  it("reaches a node's own API over its link; a slow stream does not stall another", async () => {
    await agent("edge-kube", { site: "k" }, { serve });
    const auth = await nodeToken("edge-kube");
    // A followed log's first line arrives while it stays open.
    const follow = await fetch(
      new URL("/fleet/nodes/edge-kube/api/v1/namespaces/default/pods/p/log?follow=true", base),
      { headers: { authorization: auth } },
    );
    const first = await follow.body!.getReader().read();
    expect(new TextDecoder().decode(first.value)).toBe("line 1\n");
    const log = await fetch(new URL("/fleet/nodes/edge-kube/api/v1/namespaces/default/pods/p/log", base), {
      headers: { authorization: auth },
    });
    expect(log.status).toBe(200);
    // The log's body is not read yet: its stream holds at most its window; another request still completes.
    const pods = await fetch(new URL("/fleet/nodes/edge-kube/api/v1/namespaces/default/pods", base), {
      headers: { authorization: auth, accept: "application/json" },
    });
    expect(pods.status).toBe(200);
    expect(((await pods.json()) as { kind: string }).kind).toBe("PodList");
    expect((await log.arrayBuffer()).byteLength).toBe(big.byteLength);
    expect(served).toEqual([
      "/api/v1/namespaces/default/pods/p/log?follow=true with token",
      "/api/v1/namespaces/default/pods/p/log with token",
      "/api/v1/namespaces/default/pods with token",
    ]);
  });

  it("carries exec as a session over the link: whole messages both ways; a client that stops reading stalls no other", async () => {
    // A stand-in for the node's loopback listener (the real exec handler: test/fleet/fleet.e2e.test.ts): command
    // "flood" sends 48 messages of 32 KiB at once, any other echoes.
    const wss = new WebSocketServer({ noServer: true, handleProtocols: (p) => [...p][0] ?? false });
    const local = createServer();
    const heard: (string | undefined)[] = [];
    local.on("upgrade", (req, socket, head) =>
      wss.handleUpgrade(req, socket, head, (w) => {
        heard.push(req.headers.authorization);
        if (new URL(req.url ?? "/", "http://n").searchParams.get("command") === "flood")
          for (let i = 0; i < 48; i++) w.send(Buffer.alloc(32 * 1024, i), { binary: true });
        else w.on("message", (d) => w.send(d as Buffer, { binary: true }));
      }),
    );
    await new Promise<void>((r) => local.listen(0, "127.0.0.1", () => r()));
    const la = local.address();
    await agent("edge-exec", {}, { local: () => `ws://127.0.0.1:${typeof la === "object" && la ? la.port : 0}` });
    const auth = await nodeToken("edge-exec");
    const dial = async (command: string) => {
      const target = new URL(`/fleet/nodes/edge-exec/api/v1/namespaces/default/pods/p/exec?command=${command}`, base);
      target.protocol = "ws:";
      const w = new WebSocket(target, ["v5.channel.k8s.io", "v4.channel.k8s.io"], { headers: { authorization: auth } });
      const got: Buffer[] = [];
      w.on("message", (d) => got.push(d as Buffer));
      await new Promise<void>((res, rej) => (w.once("open", () => res()), w.once("error", rej)));
      return { w, got };
    };
    const flood = await dial("flood");
    expect(flood.w.protocol).toBe("v5.channel.k8s.io");
    // The flood's client stops reading; another session on the same link still goes both ways.
    flood.w.pause();
    const echo = await dial("echo");
    const msg = Buffer.alloc(40 * 1024, 5);
    echo.w.send(msg);
    await until("the echo, whole", async () => echo.got.length === 1);
    expect(echo.got[0]!.equals(msg)).toBe(true);
    flood.w.resume();
    await until("the flood, message by message", async () => flood.got.length === 48, 60_000);
    expect(flood.got.every((m, i) => m.byteLength === 32 * 1024 && m[0] === i)).toBe(true);
    // The caller's read token reached the node's listener (it checks exec itself).
    expect(heard).toEqual([auth, auth]);
    echo.w.close();
    flood.w.close();
    local.close();
  });

  it("refuses without a read token for the node, attach, writes, and a node not connected: each a Status", async () => {
    const status = async (r: Response) => [r.status, ((await r.json()) as { kind: string; reason: string }).reason];
    const u = (p: string) => new URL(`/fleet/nodes/edge-kube${p}`, base);
    expect(await status(await fetch(u("/api/v1/pods")))).toEqual([401, "Unauthorized"]);
    const wrongAud = await nodeToken("edge-other");
    expect((await fetch(u("/api/v1/pods"), { headers: { authorization: wrongAud } })).status).toBe(403);
    const auth = await nodeToken("edge-kube");
    // An upgrade other than exec (attach) is refused with a Status; exec itself is a session (fleet.e2e.test.ts).
    const attach = await new Promise<number>((res, rej) => {
      const target = u("/api/v1/namespaces/default/pods/p/attach?stdout=true");
      target.protocol = "ws:";
      const w = new WebSocket(target, ["v5.channel.k8s.io"], { headers: { authorization: auth } });
      w.on("unexpected-response", (_q, r) => (res(r.statusCode ?? 0), w.terminate()));
      w.on("open", () => (rej(new Error("attach opened")), w.close()));
      w.on("error", () => undefined);
    });
    expect(attach).toBe(403);
    expect(
      await status(
        await fetch(u("/api/v1/namespaces/default/pods"), { method: "POST", headers: { authorization: auth } }),
      ),
    ).toEqual([405, "MethodNotAllowed"]);
    await agent("edge-gone");
    const gone = agents.find((a) => a.name === "edge-gone")!;
    await gone.link.close();
    const r = await fetch(new URL("/fleet/nodes/edge-gone/api/v1/pods", base), {
      headers: { authorization: await nodeToken("edge-gone") },
    });
    const s = (await r.json()) as { reason: string; message: string };
    expect([r.status, s.reason]).toEqual([503, "ServiceUnavailable"]);
    expect(s.message).toMatch(/not connected/);
  });

  it("lists the registry as v1 Nodes: the Node Table's columns, Ready from lastSeen, labels for --show-labels", async () => {
    const auth = (await bearer("read")).authorization;
    const api = await fetch(new URL("/fleet/api/v1", base), { headers: { authorization: auth } });
    expect(((await api.json()) as { resources: { name: string }[] }).resources.map((r) => r.name)).toEqual(["nodes"]);
    const r = await fetch(new URL("/fleet/api/v1/nodes?labelSelector=site%3Dk", base), {
      headers: { authorization: auth, accept: TABLE },
    });
    const t = (await r.json()) as {
      kind: string;
      columnDefinitions: { name: string; priority: number }[];
      rows: { cells: string[]; object: { metadata: { labels: Record<string, string> } } }[];
    };
    expect(t.kind).toBe("Table");
    expect(t.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name)).toEqual([
      "Name",
      "Status",
      "Roles",
      "Age",
      "Version",
    ]);
    expect(t.rows.map((x) => x.cells.slice(0, 3))).toEqual([["edge-kube", "Ready", "<none>"]]);
    expect(t.rows[0]!.cells[4]).toBe("sim-1");
    expect(t.rows[0]!.object.metadata.labels).toEqual({ site: "k" });
    const one = await fetch(new URL("/fleet/api/v1/nodes/edge-gone", base), { headers: { authorization: auth } });
    const n = (await one.json()) as { kind: string; status: { conditions: { type: string; status: string }[] } };
    expect(n.kind).toBe("Node");
    expect(n.status.conditions).toMatchObject([{ type: "Ready", status: "False" }]);
    expect((await fetch(new URL("/fleet/api/v1/nodes", base))).status).toBe(401);
  });
});
