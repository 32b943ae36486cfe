// The rollout's pure decision logic (issue #39): the batch plan and its rounding, the gate, the soak, the pause on
// a failed gate (no node beyond the failing batch gets the revision), the automatic rollback, the unreachable
// deadline, the approval after the canary and the owner's verbs.
import { describe, expect, it } from "vitest";
import type { Observation } from "../../src/workers/fleet/rollout/health.js";
import {
  initialState,
  planBatches,
  scaled,
  Strategy,
  type RolloutState,
} from "../../src/workers/fleet/rollout/model.js";
import { command, RolloutCommandError, step, type Action, type Step } from "../../src/workers/fleet/rollout/step.js";

const G = 10;
const names = (n: number) => Array.from({ length: n }, (_, i) => `n${String(i).padStart(2, "0")}`);
const ready = (generation = G, restarts = 0, uid = `u${generation}`): Observation => ({
  reachable: true,
  generation,
  pods: [{ namespace: "default", name: "web", uid, phase: "Running", ready: true, restarts }],
});
const notReady = (generation = G): Observation => ({
  reachable: true,
  generation,
  pods: [{ namespace: "default", name: "web", uid: `u${generation}`, phase: "Pending", ready: false, restarts: 0 }],
});
const crashing = (restarts: number): Observation => ({
  reachable: true,
  generation: G,
  pods: [{ namespace: "default", name: "web", uid: "bad", phase: "Running", ready: false, restarts }],
});
const gone: Observation = { reachable: false, generation: 0, pods: [] };

function start(n: number, strategy: Partial<Strategy> = {}, withRollback = false) {
  const s = Strategy.parse(strategy);
  const st = initialState(planBatches(names(n), s), s, G, 0);
  return { s, st: withRollback ? { ...st, rollbackGeneration: G + 1 } : st };
}
/** All nodes report `o(name)`; one step at `now`. */
const at = (s: Strategy, st: RolloutState, now: number, o: (n: string) => Observation) =>
  step(st, s, new Map(Object.keys(st.nodes).map((n) => [n, o(n)])), now);
const dispatched = (a: Action[]) => a.flatMap((x) => (x.type === "dispatch" && x.set === "revision" ? x.nodes : []));
const before = (g: number) => ready(g - 1, 0, "old");

/** Runs steps every `dt` ms until the phase is final or `max` steps, collecting every dispatch. */
function run(s: Strategy, st0: RolloutState, o: (n: string, st: RolloutState, t: number) => Observation, dt = 1000) {
  let st = st0;
  const log: Action[] = [];
  for (
    let t = 0, i = 0;
    i < 2000 && !["Completed", "RolledBack", "Failed", "Paused", "AwaitingApproval"].includes(st.phase);
    i++, t += dt
  ) {
    const r: Step = step(st, s, new Map(Object.keys(st.nodes).map((n) => [n, o(n, st, t)])), t);
    st = r.state;
    log.push(...r.actions);
  }
  return { st, log };
}

describe("the batch plan", () => {
  it("rounds a percentage up, at least one node a batch (10% of 15 → 2)", () => {
    expect(scaled("10%", 15, true)).toBe(2);
    expect(scaled("10%", 5, true)).toBe(1);
    expect(scaled("0%", 5, false)).toBe(0);
    expect(scaled(7, 5, true)).toBe(5);
    const s = Strategy.parse({ batch: "10%" });
    expect(planBatches(names(15), s).map((b) => b.length)).toEqual([2, 2, 2, 2, 2, 2, 2, 1]);
  });

  it("puts the canary first and sorts nodes by name, so batches are predictable", () => {
    const s = Strategy.parse({ batch: 2, canary: 1 });
    expect(planBatches(["c", "a", "e", "b", "d"], s)).toEqual([["a"], ["b", "c"], ["d", "e"]]);
  });

  it("takes explicit selector batches in order, the unmatched last", () => {
    const s = Strategy.parse({ batchSelectors: ["zone=a", "zone=b"] });
    const zone: Record<string, string> = { n1: "b", n2: "a", n3: "c", n4: "a" };
    const plan = planBatches(Object.keys(zone), s, (i, n) => zone[n] === ["a", "b"][i]);
    expect(plan).toEqual([["n2", "n4"], ["n1"], ["n3"]]);
  });

  it("keeps counts per batch per state from the start", () => {
    const { st } = start(5, { batch: 2 });
    expect(st.counts.map((c) => c.Pending)).toEqual([2, 2, 1]);
    expect(st.maxUnavailable).toBe(2); // 25% of 5, rounded up
  });
});

describe("batches and the gate", () => {
  it("dispatches batch by batch, each only after the previous one is healthy, and completes", () => {
    const { s, st } = start(3, { batch: 1 });
    const r = run(s, st, (n, cur) => (cur.nodes[n]!.dispatchedAt !== undefined ? ready() : before(G)));
    expect(r.st.phase).toBe("Completed");
    expect(r.log.filter((a) => a.type === "dispatch").map((a) => (a.type === "dispatch" ? a.nodes : []))).toEqual([
      ["n00"],
      ["n01"],
      ["n02"],
    ]);
    expect(r.log.at(-1)).toEqual({ type: "release" });
    expect(r.st.counts.map((c) => c.Healthy)).toEqual([1, 1, 1]);
  });

  it("waits for every pod Ready (or Succeeded) at the revision's generation", () => {
    const { s, st } = start(2, { batch: 2 });
    let r = at(s, st, 0, () => before(G));
    expect(dispatched(r.actions)).toEqual(["n00", "n01"]);
    r = at(s, r.state, 1000, (n) => (n === "n00" ? ready() : notReady()));
    expect(r.state.phase).toBe("Progressing");
    expect(r.state.nodes["n00"]!.state).toBe("Healthy");
    r = at(s, r.state, 2000, () => ({ ...ready(), pods: [{ ...ready().pods[0]!, ready: false, phase: "Succeeded" }] }));
    expect(r.state.phase).toBe("Completed");
  });

  it("is idempotent: a step with nothing new changes nothing and emits nothing", () => {
    const { s, st } = start(2, { batch: 1 });
    const r1 = at(s, st, 0, () => before(G));
    const r2 = at(s, r1.state, 500, (n) => (n === "n00" ? notReady() : before(G)));
    const r3 = at(s, r2.state, 600, (n) => (n === "n00" ? notReady() : before(G)));
    expect(r3.actions).toEqual([]);
    expect(r3.state.seq).toBe(r2.state.seq);
    expect(r3.state.nodes["n01"]).toBe(r2.state.nodes["n01"]);
  });

  it("soaks: the batch must stay healthy for soakMs, and a lapse starts the soak over", () => {
    const { s, st } = start(2, { batch: 1, soakMs: 5000 });
    let r = at(s, st, 0, () => before(G));
    r = at(s, r.state, 1000, (n) => (n === "n00" ? ready() : before(G)));
    expect(r.state.phase).toBe("Soaking");
    r = at(s, r.state, 4000, (n) => (n === "n00" ? notReady() : before(G)));
    expect(r.state.phase).toBe("Progressing");
    r = at(s, r.state, 5000, (n) => (n === "n00" ? ready() : before(G)));
    expect(r.state.phase).toBe("Soaking");
    r = at(s, r.state, 9000, (n) => (n === "n00" ? ready() : before(G)));
    expect(dispatched(r.actions)).toEqual([]);
    r = at(s, r.state, 10_000, (n) => (n === "n00" ? ready() : before(G)));
    expect(dispatched(r.actions)).toEqual(["n01"]);
  });
});

describe("a failed gate", () => {
  it("pauses at once on a crash loop in batch 1: no other node gets the revision", () => {
    const { s, st } = start(3, { batch: 1 });
    const r = run(s, st, (n, cur) => (cur.nodes[n]!.dispatchedAt !== undefined ? crashing(1) : before(G)));
    expect(r.st.phase).toBe("Paused");
    expect(r.st.pauseReason).toBe("GateFailed");
    expect(dispatched(r.log)).toEqual(["n00"]);
    expect(r.st.nodes["n00"]).toMatchObject({ state: "Failed", reason: "pod default/web restarted 1 time" });
    expect(r.st.nodes["n01"]!.state).toBe("Pending");
  });

  it("counts only restarts after the node took the revision", () => {
    const { s, st } = start(1, { batch: 1 });
    let r = at(s, st, 0, () => ready(G, 4, "same"));
    r = at(s, r.state, 1000, () => ready(G, 4, "same"));
    expect(r.state.phase).toBe("Completed");
  });

  it("fails nodes not healthy by progressDeadline", () => {
    const { s, st } = start(2, { batch: 1, progressDeadlineMs: 10_000 });
    let r = at(s, st, 0, () => before(G));
    r = at(s, r.state, 9999, () => notReady());
    expect(r.state.phase).toBe("Progressing");
    r = at(s, r.state, 10_000, () => notReady());
    expect(r.state).toMatchObject({ phase: "Paused", pauseReason: "GateFailed" });
    expect(r.state.nodes["n00"]!.reason).toBe("not healthy within progressDeadline");
  });

  it("tolerates maxFailures and goes on", () => {
    const { s, st } = start(4, { batch: 2, maxFailures: 1 });
    const r = run(s, st, (n, cur) =>
      cur.nodes[n]!.dispatchedAt === undefined ? before(G) : n === "n01" ? crashing(2) : ready(),
    );
    expect(r.st.phase).toBe("Completed");
    expect(r.st.counts.map((c) => c.Failed)).toEqual([1, 0]);
  });

  it("rolls back automatically every node that took the revision, and ends RolledBack", () => {
    const { s, st } = start(3, { batch: 1, autoRollback: true }, true);
    const r = run(s, st, (n, cur) => {
      const node = cur.nodes[n]!;
      if (node.state === "RolledBack") return ready(G + 1, 0, "good");
      return node.dispatchedAt !== undefined ? crashing(1) : before(G);
    });
    expect(r.st.phase).toBe("RolledBack");
    expect(dispatched(r.log)).toEqual(["n00"]);
    const rb = r.log.find((a) => a.type === "dispatch" && a.set === "rollback");
    expect(rb).toMatchObject({ nodes: ["n00"] });
    expect(r.st.counts.map((c) => c.RolledBack)).toEqual([1, 0, 0]);
  });

  it("fails when the rollback itself is not healthy by progressDeadline", () => {
    const { s, st } = start(1, { batch: 1, autoRollback: true, progressDeadlineMs: 5000 }, true);
    const r = run(s, st, (n, cur) => (cur.nodes[n]!.dispatchedAt !== undefined ? crashing(3) : before(G)));
    expect(r.st.phase).toBe("Failed");
  });
});

describe("unreachable nodes", () => {
  it("count neither way until their deadline, then against maxUnavailable; the rollout moves on", () => {
    const { s, st } = start(3, { batch: 1, unreachableDeadlineMs: 60_000, maxUnavailable: 1 });
    const r = run(s, st, (n, cur) =>
      n === "n01" ? gone : cur.nodes[n]!.dispatchedAt !== undefined ? ready() : before(G),
    );
    expect(r.st.phase).toBe("Completed");
    expect(r.st.nodes["n01"]).toMatchObject({ state: "Unreachable", expired: true, unreachableSince: 1000 });
    // n02's batch started only after n01's deadline (batch 2 started at t=1 s, deadline 60 s).
    expect(r.st.nodes["n02"]!.dispatchedAt).toBe(61_000);
    // It was dispatched too: the registry keeps the set until it connects.
    expect(dispatched(r.log)).toEqual(["n00", "n01", "n02"]);
  });

  it("one over maxUnavailable fails the gate", () => {
    const { s, st } = start(2, { batch: 2, unreachableDeadlineMs: 1000, maxUnavailable: 1 });
    const r = run(s, st, () => gone);
    expect(r.st).toMatchObject({ phase: "Paused", pauseReason: "GateFailed" });
    expect(r.st.message).toMatch(/2 node\(s\) unreachable, over maxUnavailable 1/);
  });

  it("an unreachable node that comes back with the revision is Healthy again", () => {
    const { s, st } = start(2, { batch: 1, unreachableDeadlineMs: 1000, maxUnavailable: 1 });
    let r = at(s, st, 0, () => gone);
    expect(r.state.nodes["n00"]!.state).toBe("Unreachable");
    r = at(s, r.state, 2000, () => gone); // expired: batch 1 passes, batch 2 starts
    expect(r.state.batch).toBe(1);
    r = at(s, r.state, 3000, () => ready());
    expect(r.state.nodes["n00"]!.state).toBe("Healthy");
    expect(r.state.phase).toBe("Completed");
  });
});

describe("approval and the owner's verbs", () => {
  const none = new Map<string, Observation>();
  it("waits for approval after the canary, then goes on", () => {
    const { s, st } = start(3, { batch: 2, canary: 1, approveAfterCanary: true });
    const r = run(s, st, (n, cur) => (cur.nodes[n]!.dispatchedAt !== undefined ? ready() : before(G)));
    expect(r.st.phase).toBe("AwaitingApproval");
    expect(dispatched(r.log)).toEqual(["n00"]);
    const a = command(r.st, s, "approve", none, 5000);
    expect(dispatched(a.actions)).toEqual(["n01", "n02"]);
    expect(a.state.phase).toBe("Progressing");
    expect(() => command(a.state, s, "approve", none, 6000)).toThrow(RolloutCommandError);
  });

  it("pause stops dispatching; resume starts the gate over; abort is final", () => {
    const { s, st } = start(2, { batch: 1, progressDeadlineMs: 1000 });
    let r = at(s, st, 0, () => before(G));
    r = command(r.state, s, "pause", none, 100);
    expect(r.state).toMatchObject({ phase: "Paused", pauseReason: "Manual" });
    r = at(s, r.state, 50_000, () => ready());
    expect(dispatched(r.actions)).toEqual([]);
    r = command(r.state, s, "resume", none, 60_000);
    expect(r.state.batchStartedAt).toBe(60_000);
    r = at(s, r.state, 60_500, () => ready());
    expect(dispatched(r.actions)).toEqual(["n01"]);
    r = command(r.state, s, "abort", none, 61_000);
    expect(r.state.phase).toBe("Aborted");
    expect(r.actions).toContainEqual({ type: "release" });
    expect(() => command(r.state, s, "resume", none, 62_000)).toThrow(/cannot resume a rollout that is Aborted/);
  });

  it("resume after a failed gate looks at the failed nodes again", () => {
    const { s, st } = start(1, { batch: 1 });
    let r = at(s, st, 0, () => before(G));
    r = at(s, r.state, 1000, () => crashing(1));
    expect(r.state.phase).toBe("Paused");
    r = command(r.state, s, "resume", none, 2000);
    expect(r.state.nodes["n00"]!.state).toBe("Dispatched");
    expect(r.state.counts[0]!.Failed).toBe(0);
  });

  it("rolls back by hand only with a rollback set", () => {
    const a = start(2, { batch: 1 });
    expect(() => command(a.st, a.s, "rollback", none, 0)).toThrow(/no rollback set/);
    const b = start(2, { batch: 1 }, true);
    let r = at(b.s, b.st, 0, () => before(G));
    r = command(r.state, b.s, "rollback", none, 10);
    expect(r.state.phase).toBe("RollingBack");
    expect(r.actions.find((x) => x.type === "dispatch")).toMatchObject({ set: "rollback", nodes: ["n00"] });
  });
});

describe("the audit chain and drift", () => {
  it("finds an edited or removed row", async () => {
    const { entryHash, verifyChain } = await import("../../src/workers/fleet/rollout/audit.js");
    const rows = [];
    let prev = "0".repeat(64);
    for (let i = 1; i <= 3; i++) {
      const e = { at: i, actor: "owner", action: "dispatch", rollout: "r", nodes: [`n${i}`] };
      const hash = await entryHash(prev, e);
      rows.push({ ...e, id: i, prev, hash });
      prev = hash;
    }
    expect(await verifyChain(rows)).toBe(-1);
    expect(await verifyChain(rows.map((r) => (r.id === 2 ? { ...r, nodes: ["other"] } : r)))).toBe(2);
    expect(await verifyChain(rows.filter((r) => r.id !== 2))).toBe(3);
  });

  it("counts the applied generation and the pod set, never status-only fields", async () => {
    const { driftOf } = await import("../../src/workers/fleet/rollout/drift.js");
    const { fleetNode } = await import("../../src/http/fleet/node-view.js");
    type Pod = { name: string; phase?: string; ready?: boolean; restarts?: number; uid?: string };
    const node = (generation: number, desiredGeneration: number, pods: (string | Pod)[]) =>
      fleetNode(
        {
          ...{ name: "n", labels: {}, taints: [], capacity: {}, version: "v", enrolledAt: 0, revokedAt: null },
          ...{ connected: true, lastSeen: 1, generation, desiredGeneration, error: null },
          pods: pods
            .map((p) => (typeof p === "string" ? { name: p } : p))
            .map((p) => ({
              namespace: "default",
              name: p.name,
              uid: p.uid ?? p.name,
              phase: p.phase ?? "Running",
              ready: p.ready ?? true,
              restarts: p.restarts ?? 0,
            })),
        },
        1,
        1,
      );
    const expected = {
      pods: ["default/db"],
      owners: [
        { prefix: "default/web-", count: 2, succeeded: false },
        { prefix: "default/job-", count: 3, succeeded: true },
      ],
    };
    const running = ["db", "web-abc12-x1", "web-abc12-x2"];
    expect(driftOf(node(3, 3, running), expected)).toEqual([]);
    // Status-only changes: phase, readiness, restarts (and a new uid: a pod re-made under its name) never count.
    const churned = [
      { name: "db", phase: "Pending", ready: false, restarts: 9, uid: "other" },
      { name: "web-abc12-x1", phase: "Failed", ready: false },
      { name: "web-abc12-x2", phase: "Succeeded", restarts: 1 },
      { name: "job-1", phase: "Running" },
    ];
    expect(driftOf(node(3, 3, churned), expected)).toEqual([]);
    expect(driftOf(node(2, 3, ["db"]), expected)).toEqual(["applied generation 2 is behind the desired 3"]);
    expect(driftOf(node(4, 3, running), expected)).toEqual(["applied generation 4 is ahead of the desired 3"]);
    // A pod missing (by name, or under its controller's count) and a pod the set does not name.
    expect(driftOf(node(3, 3, ["web-abc12-x1", "stray"]), expected)).toEqual([
      "pods missing: default/db, default/web-* (1 of 2)",
      "pods not in the desired set: default/stray",
    ]);
    expect(driftOf(node(3, 3, [...running, "extra"]), expected)).toEqual([
      "pods not in the desired set: default/extra",
    ]);
  });

  it("reads a stored set's pods as the node does: JSON v1.List, YAML stream, compact JWS", async () => {
    const { desiredItems } = await import("../../src/workers/fleet/rollout/drift.js");
    const { expectedOf } = await import("../../src/workers/fleet/rollout/health.js");
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "a", namespace: "x" } };
    const list = JSON.stringify({ apiVersion: "v1", kind: "List", items: [pod] });
    const sig = "h.p.s";
    expect(await desiredItems({ generation: 1, contentType: "application/json", body: list, signature: sig })).toEqual([
      pod,
    ]);
    const yaml = "kind: Pod\nmetadata: {name: a, namespace: x}\n---\nkind: Deployment\nmetadata: {name: w}\n";
    const items = await desiredItems({ generation: 1, contentType: "application/yaml", body: yaml, signature: sig });
    expect(expectedOf(items)).toEqual({
      pods: ["x/a"],
      owners: [{ prefix: "default/w-", count: 1, succeeded: false }],
    });
    const yamlList = `kind: List\nitems:\n- ${JSON.stringify(pod)}\n`;
    expect(await desiredItems({ generation: 1, contentType: "text/yaml", body: yamlList, signature: sig })).toEqual([
      pod,
    ]);
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const jws = `${b64({ alg: "ES256" })}.${b64({ pods: [pod] })}.sig`;
    expect(await desiredItems({ generation: 1, contentType: "application/jose", body: jws, signature: null })).toEqual([
      pod,
    ]);
  });
});

describe("the gate's expected pods", () => {
  it("waits for the revision's pods: an empty pod list does not pass", async () => {
    const { expectedOf, verdict } = await import("../../src/workers/fleet/rollout/health.js");
    const e = expectedOf([
      { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web", namespace: "a" }, spec: { replicas: 2 } },
      { kind: "Pod", metadata: { name: "db" } },
      { kind: "ConfigMap", metadata: { name: "cfg" } },
    ]);
    expect(e).toEqual({ pods: ["default/db"], owners: [{ prefix: "a/web-", count: 2, succeeded: false }] });
    const pod = (namespace: string, name: string, ready = true) => ({
      namespace,
      name,
      uid: name,
      phase: "Running",
      ready,
      restarts: 0,
    });
    const o = (pods: ReturnType<typeof pod>[]) => ({ reachable: true, generation: G, pods });
    expect(verdict(o([]), G, {}, 1, e).v).toBe("pending");
    expect(verdict(o([pod("default", "db"), pod("a", "web-x1")]), G, {}, 1, e).v).toBe("pending");
    expect(verdict(o([pod("default", "db"), pod("a", "web-x1"), pod("a", "web-x2")]), G, {}, 1, e).v).toBe("healthy");
  });
});

describe("the gate for a Job", () => {
  it("passes when the Job is Complete: its completions Succeeded, not merely Running", async () => {
    const { expectedOf, verdict } = await import("../../src/workers/fleet/rollout/health.js");
    const e = expectedOf([
      { apiVersion: "batch/v1", kind: "Job", metadata: { name: "mig" }, spec: { completions: 2 } },
    ]);
    expect(e.owners).toEqual([{ prefix: "default/mig-", count: 2, succeeded: true }]);
    const pod = (name: string, phase: string) => ({
      namespace: "default",
      name,
      uid: name,
      phase,
      ready: phase === "Running",
      restarts: 0,
    });
    const o = (pods: ReturnType<typeof pod>[]) => ({ reachable: true, generation: G, pods });
    expect(verdict(o([pod("mig-a", "Running")]), G, {}, 1, e).v).toBe("pending");
    expect(verdict(o([pod("mig-a", "Succeeded"), pod("mig-b", "Running")]), G, {}, 1, e).v).toBe("pending");
    expect(verdict(o([pod("mig-a", "Succeeded"), pod("mig-b", "Succeeded")]), G, {}, 1, e).v).toBe("healthy");
    expect(verdict(o([pod("mig-a", "Failed")]), G, {}, 1, e)).toMatchObject({ v: "failed" });
  });
});

describe("nodes of passed batches", () => {
  it("a node that fails after its batch passed stops the batches after it", () => {
    const { s, st } = start(3, { batch: 1 });
    let r = at(s, st, 0, () => before(G));
    r = at(s, r.state, 1000, (n) => (n === "n00" ? ready() : before(G)));
    expect(dispatched(r.actions)).toEqual(["n01"]);
    r = at(s, r.state, 2000, (n) => (n === "n00" ? crashing(1) : n === "n01" ? notReady() : before(G)));
    expect(r.state).toMatchObject({ phase: "Paused", pauseReason: "GateFailed" });
    expect(r.state.nodes["n00"]!.state).toBe("Failed");
    expect(r.state.nodes["n02"]!.state).toBe("Pending");
  });
});
