// npm run bench:fleet: pull mode's registry at scale, in workerd (wrangler's local runtime) on this machine.
// BENCH_FLEET_NODES (1000) simulated agents (the real link, src/http/fleet/link.ts, over real WebSockets; a recording
// apply instead of a runtime) enroll with join tokens and stay connected. Then, idle for BENCH_FLEET_IDLE_S (360)
// with the default settings: the shards' requests, WebSocket messages, alarms and SQLite row writes (their own
// counts, GET /fleet/stats), per node per hour, and the heartbeat pings the runtime answered without waking the
// objects. Then a desired-state change to every node (one owner-signed set whose aud lists them all, one PUT
// through the Worker): the time from the PUT to each node's apply, p50/p99/max.
// Writes bench/results/fleet-<time>.json; docs/fleet.md turns the counts into a monthly price.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { HEARTBEAT } from "../src/http/fleet/protocol.js";
import { makeKey } from "../test/support/http.js";
import { joinToken, listNodes, ownerToken, putSetMany, type SimAgent, simAgent } from "../test/support/fleet.js";
import { startWorkerd } from "../test/support/workerd.js";

const N = Number(process.env["BENCH_FLEET_NODES"] ?? 1000);
const IDLE_S = Number(process.env["BENCH_FLEET_IDLE_S"] ?? 360);
const SHARDS = Number(process.env["BENCH_FLEET_SHARDS"] ?? 16);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++]!);
    }),
  );
}

interface ShardStats {
  requests: number;
  messages: number;
  alarms: number;
  rowsWritten: number;
  alarmWrites: number;
  sockets: number;
}

const key = await makeKey("ES256", "bench-owner");
const { worker, base } = await startWorkerd({
  nodes: {},
  jwk: key.publicJwk,
  proxyToken: "unused",
  env: { PODSYNC_FLEET_SHARDS: String(SHARDS), PODSYNC_FLEET_STATS: "on" },
});
const stats = async (): Promise<ShardStats> => {
  const r = await fetch(new URL("/fleet/stats", base), {
    headers: { authorization: `Bearer ${await ownerToken(key, { act: "read" })}` },
  });
  const all = (await r.json()) as ShardStats[];
  return all.reduce((a, s) => ({
    requests: a.requests + s.requests,
    messages: a.messages + s.messages,
    alarms: a.alarms + s.alarms,
    rowsWritten: a.rowsWritten + s.rowsWritten,
    alarmWrites: a.alarmWrites + s.alarmWrites,
    sockets: a.sockets + s.sockets,
  }));
};

const agents: SimAgent[] = [];
const t0 = Date.now();
const names = Array.from({ length: N }, (_, i) => `sim-${String(i).padStart(5, "0")}`);
await pool(names, 25, async (name) => {
  const a = await simAgent(base, name, await joinToken(key, { sim: "1", group: String(Number(name.slice(4)) % 10) }), {
    backoff: { baseMs: 1000, maxMs: 30_000 },
  });
  agents.push(a);
  await a.link.ready();
});
const enrollS = (Date.now() - t0) / 1000;
const ready = (await listNodes(base, key)).filter((n) => n.status.condition === "Ready").length;
console.error(`${N} enrolled and connected in ${enrollS.toFixed(1)} s; ${ready} Ready`);

// Idle: nothing sent but the heartbeat.
const before = await stats();
const idleFrom = Date.now();
await sleep(IDLE_S * 1000);
const after = await stats();
const idleH = (Date.now() - idleFrom) / 3_600_000;
const perNodeHour = (k: keyof ShardStats) => (after[k] - before[k]) / N / idleH;
const stillReady = (await listNodes(base, key)).filter((n) => n.status.condition === "Ready").length;
const disconnected = agents.filter((a) => !a.link.connected()).length;
console.error(`idle ${IDLE_S} s: ${stillReady} Ready, ${disconnected} links down`);

// A desired-state change to every node: one set the owner signs for all of them (its aud lists them), one PUT.
const gen = Math.max(...agents.map((a) => a.generation)) + 1;
const start = Date.now();
const put = await putSetMany(
  base,
  key,
  agents.map((a) => a.name),
  gen,
  [],
);
const putBody = (await put.json()) as { stored: number; delivered: number; refused: unknown[] };
const refused = putBody.refused.length;
const putsS = (Date.now() - start) / 1000;
const deadline = Date.now() + 60_000;
while (agents.some((a) => a.applied.length === 0) && Date.now() < deadline) await sleep(100);
const reach = agents.map((a) => (a.applied[0] ? a.applied[0].at - start : Infinity));
const reached = reach.filter(Number.isFinite);

const result = {
  when: new Date().toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model },
  nodes: N,
  shards: SHARDS,
  enroll: { seconds: enrollS, ready },
  idle: {
    seconds: IDLE_S,
    stillReady,
    linksDown: disconnected,
    perNodePerHour: {
      objectRequests: perNodeHour("requests"),
      objectMessages: perNodeHour("messages"),
      alarms: perNodeHour("alarms"),
      rowsWritten: perNodeHour("rowsWritten"),
      alarmWrites: perNodeHour("alarmWrites"),
      heartbeatPingsAnsweredByRuntime: 3_600_000 / HEARTBEAT.intervalMs,
    },
    shardTotals: { before, after },
  },
  fanout: {
    put: { status: put.status, stored: putBody.stored, delivered: putBody.delivered },
    putsSeconds: putsS,
    refused,
    reached: reached.length,
    p50Ms: pct(reached, 50),
    p99Ms: pct(reached, 99),
    maxMs: Math.max(...reached),
  },
};
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/fleet-${result.when.replace(/[:.]/g, "-")}.json`;
writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result, null, 2));
console.error(`wrote ${file}`);
await Promise.all(agents.map((a) => a.link.close()));
await worker.dispose();
process.exit(0);
