// npm run bench:fleet-rollout: rollouts (issue #39) in workerd on this machine. BENCH_ROLLOUT_NODES (1000) simulated
// agents (the real link over real WebSockets, a recording apply; each reports its pod Ready once it has applied a
// set, or crash-looping when the set's body says "crash") enroll and stay connected. Then:
//   1. a rollout in 10 % batches with a BENCH_ROLLOUT_SOAK_S (5) s soak: the time from POST to Completed;
//   2. a crash-looping revision, 10 % batches, auto-rollback: the time to RolledBack, the nodes beyond batch 1 that
//      received it (must be 0), and when the last batch-1 node applied the rollback;
//   1b. per batch, from its last node's apply to the rollup counting it Healthy (a node's change in the rollup);
//   3. the rollup: GET /fleet/rollouts/NAME p50/p99 over 200 reads of the finished 1,000-node rollout (one row,
//      whatever the node count), and the pure view over BENCH_ROLLUP_NODES (10000) nodes' state in-process.
//   4. the rollup over the wire at BENCH_ROLLUP_WIRE_NODES (10000) enrolled, unconnected nodes (0: skipped).
// Writes bench/results/fleet-rollout-<time>.json.
import { mkdirSync, writeFileSync } from "node:fs";
import { exportJWK, generateKeyPair } from "jose";
import { cpus } from "node:os";
import type { DesiredMessage, PodSummary } from "../src/http/fleet/protocol.js";
import { initialState, planBatches, Strategy } from "../src/workers/fleet/rollout/model.js";
import { rolloutView } from "../src/workers/fleet/rollout/view.js";
import { joinToken, ownerToken, signedSet, type SimAgent, simAgent } from "../test/support/fleet.js";
import { makeKey } from "../test/support/http.js";
import { startWorkerd } from "../test/support/workerd.js";

const N = Number(process.env["BENCH_ROLLOUT_NODES"] ?? 1000);
const SOAK_S = Number(process.env["BENCH_ROLLOUT_SOAK_S"] ?? 5);
const ROLLUP_N = Number(process.env["BENCH_ROLLUP_NODES"] ?? 10_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++]!);
    }),
  );
}

const key = await makeKey("ES256", "bench-owner");
const { worker, base } = await startWorkerd({
  nodes: {},
  jwk: key.publicJwk,
  proxyToken: "unused",
  env: { PODSYNC_FLEET_SHARDS: "16", PODSYNC_FLEET_ROLLOUT_TICK_MS: "500" },
});

const bodies = new Map<string, string>();
const agents: SimAgent[] = [];
const names = Array.from({ length: N }, (_, i) => `ro-${String(i).padStart(5, "0")}`);
const t0 = Date.now();
await pool(names, 25, async (name) => {
  let a: SimAgent | undefined;
  const pods = (): PodSummary[] => {
    const b = a && bodies.get(a.name);
    if (!a || !b || b.includes('"items":[]')) return [];
    const crash = b.includes("crash");
    const uid = `${a.name}-${a.generation}`;
    const name = (JSON.parse(b) as { items: { metadata: { name: string } }[] }).items[0]!.metadata.name;
    return [{ namespace: "default", name, uid, phase: "Running", ready: !crash, restarts: crash ? 2 : 0 }];
  };
  a = await simAgent(base, name, await joinToken(key, { bench: "rollout" }), {
    pods,
    apply: async (m: DesiredMessage) => {
      a!.applied.push({ generation: m.generation, at: Date.now() });
      a!.generation = m.generation;
      bodies.set(name, m.body);
      return undefined;
    },
  });
  await a.link.ready();
  agents.push(a);
});
const enrollS = (Date.now() - t0) / 1000;
console.log(`${N} agents connected in ${enrollS.toFixed(1)} s`);

const read = async <T>(path: string): Promise<T> => {
  const r = await fetch(new URL(path, base), {
    headers: { authorization: `Bearer ${await ownerToken(key, { act: "read" })}` },
  });
  return (await r.json()) as T;
};
let generation = 10;
async function rollout(name: string, pod: string, strategy: Record<string, unknown>): Promise<number> {
  const g = (generation += 10);
  const revision = await signedSet(key, names, g, [{ apiVersion: "v1", kind: "Pod", metadata: { name: pod } }]);
  const rollback = await signedSet(key, names, g + 1, []);
  const r = await fetch(new URL("/fleet/rollouts", base), {
    method: "POST",
    headers: {
      authorization: `Bearer ${await ownerToken(key, { act: "rollout" })}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({
      name,
      selector: "bench=rollout",
      strategy,
      revision: { contentType: "application/json", ...revision },
      rollback: { contentType: "application/json", ...rollback },
    }),
  });
  if (r.status !== 201) throw new Error(`POST /fleet/rollouts: ${r.status} ${await r.text()}`);
  return g;
}
async function until(name: string, phases: string[], maxS: number): Promise<string> {
  const end = Date.now() + maxS * 1000;
  for (;;) {
    const v = await read<{ status: { phase: string } }>(`/fleet/rollouts/${name}`);
    if (phases.includes(v.status.phase) || Date.now() > end) return v.status.phase;
    await sleep(200);
  }
}

// 1. 10 % batches, soak. Polled every 100 ms: when each batch's last node applied the revision, and when the rollup
// first counted the whole batch Healthy (the node's change visible: its link's once-a-second summary, the message,
// the coordinator's tick, the read).
interface Rollup {
  status: { phase: string; batches: { batch: number; size: number; counts: Record<string, number> }[] };
}
const s1 = Date.now();
const good = await rollout("bench-good", "good", { batch: "10%", soakMs: SOAK_S * 1000 });
const seenHealthy = new Map<number, number>();
let goodPhase = "";
for (const end = Date.now() + 600_000; Date.now() < end; await sleep(100)) {
  const v = await read<Rollup>("/fleet/rollouts/bench-good");
  const at = Date.now();
  for (const b of v.status.batches)
    if (!seenHealthy.has(b.batch) && b.size > 0 && (b.counts["Healthy"] ?? 0) >= b.size) seenHealthy.set(b.batch, at);
  goodPhase = v.status.phase;
  if (["Completed", "Paused", "Failed"].includes(goodPhase)) break;
}
const goodS = (Date.now() - s1) / 1000;
const goodPlan = planBatches(names, Strategy.parse({ batch: "10%" }));
const visibleMs = goodPlan.flatMap((nodes, i) => {
  const seen = seenHealthy.get(i + 1);
  const applied = agents
    .filter((a) => nodes.includes(a.name))
    .map((a) => a.applied.find((x) => x.generation === good)?.at);
  if (seen === undefined || applied.some((x) => x === undefined)) return [];
  return [seen - Math.max(...(applied as number[]))];
});
console.log(
  `1. ${goodPhase} in ${goodS.toFixed(1)} s; batch visible Healthy after its last apply: ${visibleMs.join(", ")} ms`,
);

// 3a. The rollup over the wire (one row whatever the node count).
// One read token for all 200 (a read does not spend it), so the figure is the route's, not the signing's.
const readToken = await ownerToken(key, { act: "read" });
const lat: number[] = [];
for (let i = 0; i < 200; i++) {
  const t = performance.now();
  await (
    await fetch(new URL("/fleet/rollouts/bench-good", base), { headers: { authorization: `Bearer ${readToken}` } })
  ).json();
  lat.push(performance.now() - t);
}

// 2. A crash loop.
const s2 = Date.now();
const bad = await rollout("bench-bad", "crash", { batch: "10%", autoRollback: true });
const badPhase = await until("bench-bad", ["RolledBack", "Failed", "Paused", "Completed"], 300);
const badS = (Date.now() - s2) / 1000;
const firstBatch = new Set(planBatches(names, Strategy.parse({ batch: "10%" }))[0]);
const beyond = agents.filter((a) => !firstBatch.has(a.name) && a.applied.some((x) => x.generation === bad)).length;
const rolledAt = agents
  .filter((a) => firstBatch.has(a.name))
  .map((a) => a.applied.find((x) => x.generation === bad + 1)?.at ?? Number.POSITIVE_INFINITY);
const rollbackAllS = (Math.max(...rolledAt) - s2) / 1000;
console.log(
  `2. ${badPhase} in ${badS.toFixed(1)} s; beyond batch 1: ${beyond}; rollback applied by ${rollbackAllS.toFixed(1)} s`,
);

// 3b. The view (the rollup's work) over ROLLUP_N nodes' state, in-process.
const big = Array.from({ length: ROLLUP_N }, (_, i) => `n-${i}`);
const strat = Strategy.parse({ batch: "10%" });
const st = initialState(planBatches(big, strat), strat, 1, Date.now());
const { nodes: _n, ...head } = st;
const spec = {
  name: "x",
  selector: "a=b",
  strategy: strat,
  targets: big,
  revision: { generation: 1, contentType: "application/json", body: "{}", signature: "x", jti: "x" },
  actor: "bench",
  createdAt: Date.now(),
};
const viewMs: number[] = [];
for (let i = 0; i < 200; i++) {
  const t = performance.now();
  JSON.stringify(rolloutView(spec, JSON.parse(JSON.stringify(head)), undefined, undefined));
  viewMs.push(performance.now() - t);
}

// 4. The rollup over the wire at WIRE_N (10,000) nodes: enrolled (POST /fleet/enroll, one shared public key), not
// connected, since the rollup reads the rollout's one row whatever its nodes do. A rollout over all of them with a
// one-node canary awaiting approval, aborted at once (so its coordinator stops ticking), then 200 reads.
const WIRE_N = Number(process.env["BENCH_ROLLUP_WIRE_NODES"] ?? 10_000);
let rollupWireBig:
  | { nodes: number; enrollS: number; enrollRetries: number; p50ms: number; p99ms: number }
  | { nodes: number; error: string }
  | undefined;
if (WIRE_N > 0)
  try {
    rollupWireBig = await wireRollup();
  } catch (e) {
    rollupWireBig = { nodes: WIRE_N, error: (e as Error).message };
    console.log(`4. failed: ${(e as Error).message}`);
  }

async function wireRollup() {
  const jwk = await exportJWK((await generateKeyPair("ES256", { extractable: true })).publicKey);
  const wire = Array.from({ length: WIRE_N }, (_, i) => `w-${String(i).padStart(5, "0")}`);
  const te = Date.now();
  let retries = 0;
  await pool(wire, 25, async (node) => {
    // workerd on this loaded machine has restarted its objects mid-request ("Your worker restarted mid-request",
    // 503): a POST is not retried for us, so enroll again with a fresh token.
    for (let attempt = 0; ; attempt++) {
      const r = await fetch(new URL("/fleet/enroll", base), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ token: await joinToken(key, { bench: "wire" }), node, jwk }),
      });
      if (r.ok) return;
      const why = await r.text();
      if (r.status !== 503 || attempt >= 5) throw new Error(`enroll ${node}: ${r.status} ${why.slice(0, 200)}`);
      retries++;
      await sleep(1000);
    }
  });
  const wireEnrollS = (Date.now() - te) / 1000;
  console.log(`4. ${WIRE_N} nodes enrolled in ${wireEnrollS.toFixed(1)} s (${retries} retried)`);
  const g = (generation += 10);
  const revision = await signedSet(key, wire, g, [{ apiVersion: "v1", kind: "Pod", metadata: { name: "wire" } }]);
  const made = await fetch(new URL("/fleet/rollouts", base), {
    method: "POST",
    headers: {
      authorization: `Bearer ${await ownerToken(key, { act: "rollout" })}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({
      name: "bench-wire",
      selector: "bench=wire",
      strategy: { canary: 1, approveAfterCanary: true, batch: "10%" },
      revision: { contentType: "application/json", ...revision },
    }),
  });
  if (made.status !== 201) throw new Error(`POST /fleet/rollouts (wire): ${made.status} ${await made.text()}`);
  const aborted = await fetch(new URL("/fleet/rollouts/bench-wire/abort", base), {
    method: "POST",
    headers: { authorization: `Bearer ${await ownerToken(key, { act: "rollout" })}` },
  });
  if (!aborted.ok) throw new Error(`abort (wire): ${aborted.status} ${await aborted.text()}`);
  const wl: number[] = [];
  for (let i = 0; i < 200; i++) {
    // A read token of its own, signed outside the timing (the one above expired during the enrollment).
    const wireRead = await ownerToken(key, { act: "read" });
    const t = performance.now();
    const r = await fetch(new URL("/fleet/rollouts/bench-wire", base), {
      headers: { authorization: `Bearer ${wireRead}` },
    });
    const text = await r.text();
    wl.push(performance.now() - t);
    if (!r.ok) throw new Error(`GET /fleet/rollouts/bench-wire: ${r.status} ${text.slice(0, 300)}`);
    const v = JSON.parse(text) as { spec: { targets: number } };
    if (v.spec.targets !== WIRE_N) throw new Error(`the wire rollout has ${v.spec.targets} targets`);
  }
  const out = { nodes: WIRE_N, enrollS: wireEnrollS, enrollRetries: retries, p50ms: pct(wl, 50), p99ms: pct(wl, 99) };
  console.log(
    `4. rollup of ${WIRE_N} nodes over the wire: p50 ${out.p50ms.toFixed(1)} ms, p99 ${out.p99ms.toFixed(1)} ms`,
  );
  return out;
}

const result = {
  when: new Date().toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model, load: (await import("node:os")).loadavg() },
  nodes: N,
  enrollS,
  tenPercentSoak: { soakS: SOAK_S, phase: goodPhase, seconds: goodS },
  // Per batch: from its last node's apply to the rollup counting the batch Healthy (includes the node link's
  // once-a-second summary and the 100 ms poll).
  batchVisibleMs: { samples: visibleMs, p50: pct(visibleMs, 50), max: Math.max(...visibleMs) },
  crashLoop: { phase: badPhase, seconds: badS, nodesBeyondBatch1: beyond, rollbackAppliedS: rollbackAllS },
  rollupWire: { nodes: N, p50ms: pct(lat, 50), p99ms: pct(lat, 99) },
  rollupView: { nodes: ROLLUP_N, p50ms: pct(viewMs, 50), p99ms: pct(viewMs, 99) },
  ...(rollupWireBig ? { rollupWireBig } : {}),
};
console.log(JSON.stringify(result, null, 2));
mkdirSync("bench/results", { recursive: true });
writeFileSync(
  `bench/results/fleet-rollout-${result.when.replace(/[:.]/g, "-")}.json`,
  `${JSON.stringify(result, null, 2)}\n`,
);
await Promise.all(agents.map((a) => a.link.close()));
await worker.dispose();
process.exit(0);
