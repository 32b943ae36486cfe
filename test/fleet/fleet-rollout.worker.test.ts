// Rollouts in the real Workers runtime (workerd via wrangler, issue #39): the coordinator Durable Object driven by
// its alarm, dispatching through the registry to simulated agents (the real link over real WebSockets, a recording
// apply): batches of 1 reach every node; a crash-looping revision stops at batch 1 and is rolled back (the other
// nodes never receive it); overlap and replay are refused; a token's selector bounds its targets; the audit chain
// holds; and the Worker restarted mid-batch (same storage) resumes without dispatching anything twice.
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { exportJWK } from "jose";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DesiredMessage, PodSummary } from "../../src/http/fleet/protocol.js";
import { joinToken, ownerToken, signedSet, simAgent, type SimAgent } from "../support/fleet.js";
import { ISSUER, makeKey, type TestKey } from "../support/http.js";
import { until } from "../support/wait.js";
import { startWorkerd, type Workerd } from "../support/workerd.js";
import { freePort } from "../support/free-port.js";

let worker: Workerd;
let base: URL;
let key: TestKey;
let port: number;
const persist = mkdtempSync(join(tmpdir(), "podsync-rollout-worker-"));
const agents = new Map<string, SimAgent>();
/** Each node's last set (a set whose body says "crash" crash-loops; an empty one runs nothing), and nodes whose
 * pod is held not ready. */
const bodies = new Map<string, string>();
const held = new Set<string>();
/** For drift: nodes whose pod shows only status churn (Pending, not ready, restarting), runs an extra pod, or lost
 * its pod. */
const churned = new Set<string>();
const extra = new Map<string, string>();
const lost = new Set<string>();
const NODES = ["ro-a", "ro-b", "ro-c"];

const startWorker = async () => {
  ({ worker, base } = await startWorkerd({
    nodes: {},
    jwk: key.publicJwk,
    proxyToken: "unused",
    port,
    persist,
    env: { PODSYNC_FLEET_SHARDS: "4", PODSYNC_FLEET_ROLLOUT_TICK_MS: "200" },
  }));
};

/** The first pod the set names (a JSON v1.List or a YAML document), as a node would run it. */
const podName = (body: string) =>
  body.startsWith("{")
    ? String((JSON.parse(body) as { items: { metadata: { name: string } }[] }).items[0]?.metadata.name)
    : (/name: (\S+)/.exec(body)?.[1] ?? "");
const podsOf = (a: SimAgent): PodSummary[] => {
  const body = bodies.get(a.name) ?? "";
  const crash = body.includes("crash");
  const churn = churned.has(a.name);
  const pods: PodSummary[] =
    a.generation === 0 || body.includes('"items":[]') || lost.has(a.name)
      ? []
      : [
          {
            namespace: "default",
            name: podName(body),
            uid: `${a.name}-${a.generation}${churn ? "-remade" : ""}`,
            phase: churn ? "Pending" : "Running",
            ready: !crash && !held.has(a.name) && !churn,
            restarts: crash ? 2 : churn ? 5 : 0,
          },
        ];
  const x = extra.get(a.name);
  if (x) pods.push({ namespace: "default", name: x, uid: x, phase: "Running", ready: true, restarts: 0 });
  return pods;
};

beforeAll(async () => {
  key = await makeKey("ES256", "owner-1");
  port = await freePort();
  await startWorker();
  await Promise.all(
    NODES.map(async (name, i) => {
      await connectAgent(name, await joinToken(key, { grp: "ro", env: i === 2 ? "prod" : "staging" }));
    }),
  );
}, 120_000);

/** A simulated agent with its own state dir (kept, so it reconnects with its enrolled key and no token). */
const stateDirs = new Map<string, string>();
async function connectAgent(name: string, token: string | undefined): Promise<SimAgent> {
  const stateDir = stateDirs.get(name) ?? mkdtempSync(join(tmpdir(), `podsync-ro-${name}-`));
  stateDirs.set(name, stateDir);
  let a: SimAgent | undefined;
  a = await simAgent(base, name, token, {
    stateDir,
    pods: () => (a ? podsOf(a) : []),
    apply: async (m: DesiredMessage) => {
      a!.applied.push({ generation: m.generation, at: Date.now() });
      a!.generation = m.generation;
      bodies.set(name, m.body);
      return undefined;
    },
    backoff: { baseMs: 100, maxMs: 500 },
  });
  agents.set(name, a);
  await a.link.ready();
  return a;
}

afterAll(async () => {
  await Promise.all([...agents.values()].map((a) => a.link.close()));
  await worker?.dispose();
});

let generation = 100;
/** A rollout request: the revision (and its rollback set at the next generation) signed for `targets`. */
async function rollout(
  name: string,
  strategy: Record<string, unknown>,
  o: { targets?: string[]; selector?: string; pod?: string } = {},
) {
  const targets = o.targets ?? NODES;
  const g = (generation += 10);
  const revision = await signedSet(key, targets, g, [
    { apiVersion: "v1", kind: "Pod", metadata: { name: `${o.pod ?? "web"}-${g}` } },
  ]);
  const rollback = await signedSet(key, targets, g + 1, []);
  return {
    g,
    body: {
      name,
      selector: o.selector ?? "grp=ro",
      strategy,
      revision: { contentType: "application/json", ...revision },
      rollback: { contentType: "application/json", ...rollback },
    },
  };
}
const post = async (path: string, act: string, body?: unknown, claims: Record<string, unknown> = {}) =>
  fetch(new URL(path, base), {
    method: "POST",
    headers: {
      authorization: `Bearer ${await ownerToken(key, { act, ...claims })}`,
      "content-type": "application/json",
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
const get = async <T>(path: string): Promise<T> => {
  const r = await fetch(new URL(path, base), {
    headers: { authorization: `Bearer ${await ownerToken(key, { act: "read" })}` },
  });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
};
interface View {
  status: {
    phase: string;
    pauseReason?: string;
    batch: number;
    batches: { counts: Record<string, number> }[];
    nodes?: Record<string, { state: string; dispatches: number; rollbacks: number }>;
  };
}
const phaseIs = (name: string, ...phases: string[]) =>
  until(
    `rollout ${name} ${phases.join("|")}`,
    async () => {
      const v = await get<View>(`/fleet/rollouts/${name}?nodes=1`);
      return phases.includes(v.status.phase) && v;
    },
    60_000,
    200,
  );
const appliedOf = (g: number) => NODES.map((n) => agents.get(n)!.applied.filter((x) => x.generation === g).length);

describe("rollouts through the coordinator", () => {
  it("rolls out in batches of 1 to every node, each dispatched once, and audits it in a chain", async () => {
    const { g, body } = await rollout("ro-one", { batch: 1 });
    const r = await post("/fleet/rollouts", "rollout", body);
    expect(r.status, await r.clone().text()).toBe(201);
    const v = await phaseIs("ro-one", "Completed");
    expect(v.status.batches.map((b) => b.counts["Healthy"])).toEqual([1, 1, 1]);
    expect(Object.values(v.status.nodes!).map((n) => n.dispatches)).toEqual([1, 1, 1]);
    expect(appliedOf(g)).toEqual([1, 1, 1]);
    // Batch order: each node applied after the one before it.
    const at = NODES.map((n) => agents.get(n)!.applied.find((x) => x.generation === g)!.at);
    expect(at[0]! <= at[1]! && at[1]! <= at[2]!).toBe(true);
    const audit = await get<{ items: { action: string; nodes: string[] }[]; brokenAt: number }>(
      "/fleet/rollouts/ro-one/audit",
    );
    expect(audit.brokenAt).toBe(-1);
    expect(audit.items.map((e) => e.action)).toEqual(expect.arrayContaining(["create", "dispatch", "BatchPassed"]));
    const list = await get<{ items: { name: string; phase: string }[] }>("/fleet/rollouts");
    expect(list.items.find((x) => x.name === "ro-one")?.phase).toBe("Completed");

    // The same signed revision again, under a new name: refused as a replay.
    const again = await post("/fleet/rollouts", "rollout", { ...body, name: "ro-one-again" });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { type: string }).type).toBe("urn:podsync:problem:replayed");
  });

  it("stops a crash-looping revision at batch 1 and rolls it back; the other nodes never get it", async () => {
    const { g, body } = await rollout("ro-bad", { batch: 1, autoRollback: true }, { pod: "crash" });
    expect((await post("/fleet/rollouts", "rollout", body)).status).toBe(201);
    const v = await phaseIs("ro-bad", "RolledBack", "Failed", "Paused");
    expect(v.status.phase).toBe("RolledBack");
    expect(appliedOf(g)).toEqual([1, 0, 0]);
    expect(appliedOf(g + 1)).toEqual([1, 0, 0]);
    expect(v.status.nodes!["ro-a"]).toMatchObject({ state: "RolledBack", dispatches: 1, rollbacks: 1 });
    expect(v.status.nodes!["ro-b"]!.state).toBe("Pending");
  });

  it("refuses an overlapping rollout while one is active, and a token outside its selector", async () => {
    const first = await rollout("ro-hold", { batch: 1, canary: 1, approveAfterCanary: true });
    expect((await post("/fleet/rollouts", "rollout", first.body)).status).toBe(201);
    await phaseIs("ro-hold", "AwaitingApproval");
    const second = await rollout("ro-overlap", { batch: 1 });
    const r = await post("/fleet/rollouts", "rollout", second.body);
    expect(r.status).toBe(409);
    expect(((await r.json()) as { detail: string }).detail).toMatch(/rollout "ro-hold" is still active/);

    // approve is its own verb: a rollout token cannot approve.
    expect((await post("/fleet/rollouts/ro-hold/approve", "rollout")).status).toBe(403);
    // A token limited to env=staging cannot act on a rollout that includes an env=prod node.
    const scoped = await post("/fleet/rollouts/ro-hold/approve", "approve", undefined, { selector: "env=staging" });
    expect(scoped.status).toBe(403);
    expect(((await scoped.json()) as { detail: string }).detail).toMatch(/outside the token's selector/);
    expect((await post("/fleet/rollouts/ro-hold/abort", "rollout")).status).toBe(200);
    await phaseIs("ro-hold", "Aborted");

    // Nor create one targeting env=prod with it.
    const prod = await rollout("ro-prod", { batch: 1 });
    const p = await post("/fleet/rollouts", "rollout", prod.body, { selector: "env=staging" });
    expect(p.status).toBe(403);
  });

  it("refuses a revision not signed as a whole for every target", async () => {
    const { body } = await rollout("ro-partial", { batch: 1 }, { targets: ["ro-a", "ro-b"] });
    const r = await post("/fleet/rollouts", "rollout", body);
    expect(r.status).toBe(400);
    const p = (await r.json()) as { detail: string; errors: { path: string }[] };
    expect(p.detail).toMatch(/revision is not signed for 1 target node\(s\) \(its aud must list them\): ro-c/);
    expect(p.errors[0]!.path).toBe("revision.signature");
    // Bytes other than the ones signed: refused by the body's hash.
    const good = await rollout("ro-tampered", { batch: 1 });
    const tampered = {
      ...good.body,
      revision: { ...good.body.revision, body: good.body.revision.body.replace("web", "wab") },
    };
    expect((await post("/fleet/rollouts", "rollout", tampered)).status).toBeGreaterThanOrEqual(400);
    const list = await get<{ items: { name: string }[] }>("/fleet/rollouts");
    expect(list.items.map((x) => x.name)).not.toEqual(expect.arrayContaining(["ro-partial"]));
    expect(list.items.map((x) => x.name)).not.toEqual(expect.arrayContaining(["ro-tampered"]));
  });

  it("a node stopped during a rollout is Unreachable, the rollout moves on after its deadline, and it catches up", async () => {
    const gone = agents.get("ro-b")!;
    const had = gone.generation;
    await gone.link.close();
    await until("ro-b NotReady", async () => {
      const v = await get<{ items: { metadata: { name: string }; status: { condition: string } }[] }>("/fleet/nodes");
      return v.items.find((n) => n.metadata.name === "ro-b")?.status.condition !== "Ready";
    });
    const { g, body } = await rollout("ro-away", { batch: 1, unreachableDeadlineMs: 2000, maxUnavailable: 1 });
    expect((await post("/fleet/rollouts", "rollout", body)).status).toBe(201);
    const v = await phaseIs("ro-away", "Completed", "Paused");
    expect(v.status.phase).toBe("Completed");
    expect(v.status.nodes!["ro-b"]).toMatchObject({ state: "Unreachable", dispatches: 1 });
    expect(appliedOf(g)).toEqual([1, 0, 1]);
    // Back: it gets the current revision from its registry row at its hello, and nothing older.
    const back = await connectAgent("ro-b", undefined);
    await until("ro-b caught up", async () => back.generation === g, 30_000);
    expect(back.applied.map((x) => x.generation)).toEqual([g]);
    expect(g).toBeGreaterThan(had);
  }, 60_000);

  it("resumes after a Worker restart mid-batch without dispatching anything twice", async () => {
    held.add("ro-a");
    const { g, body } = await rollout("ro-restart", { batch: 1 });
    expect((await post("/fleet/rollouts", "rollout", body)).status).toBe(201);
    await until("batch 1 dispatched", async () => agents.get("ro-a")!.applied.some((x) => x.generation === g), 30_000);
    await worker.dispose();
    await startWorker();
    held.delete("ro-a");
    const v = await phaseIs("ro-restart", "Completed");
    expect(Object.values(v.status.nodes!).map((n) => n.dispatches)).toEqual([1, 1, 1]);
    expect(appliedOf(g)).toEqual([1, 1, 1]);
  }, 120_000);
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
  let dir: string;
  const file = (name: string, pod: string) => {
    const f = join(dir, name);
    writeFileSync(
      f,
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${pod}\nspec:\n  containers:\n  - name: c\n    image: localhost/busybox:1\n`,
    );
    return f;
  };
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "podsync-rollout-cli-"));
    keyFile = join(dir, "key.json");
    writeFileSync(
      keyFile,
      JSON.stringify({ ...(await exportJWK(key.privateKey)), kid: key.kid, alg: "ES256", iss: ISSUER }),
    );
  });

  it("fleet rollout, status -w (exit 0), rollouts and drift, with --help and -o json", async () => {
    expect((await cli("fleet", "--help")).out).toMatch(/fleet rollout -f FILE -l SELECTOR \[--batch 10%\|N\]/);
    const made = await cli(
      "fleet",
      "rollout",
      "-f",
      file("good.yaml", "good"),
      "-l",
      "grp=ro",
      "--batch",
      "1",
      "--name",
      "cli-good",
      "-o",
      "json",
    );
    expect(made.code, made.err).toBe(0);
    expect(JSON.parse(made.out).items[0]).toMatchObject({ kind: "FleetRollout", metadata: { name: "cli-good" } });
    const watched = await cli("fleet", "status", "cli-good", "-w");
    expect(watched.code, watched.err).toBe(0);
    expect(watched.out).toMatch(/rollout\/cli-good: Completed, batch 3 of 3/);
    expect(watched.out).toMatch(/^BATCH\s+SIZE\s+PENDING\s+DISPATCHED\s+HEALTHY/m);
    const listed = JSON.parse((await cli("fleet", "rollouts", "-o", "json")).out);
    expect(listed.items.find((x: { metadata: { name: string } }) => x.metadata.name === "cli-good").status.phase).toBe(
      "Completed",
    );
    const drift = await cli("fleet", "drift", "-l", "grp=ro", "-o", "json");
    expect(drift.code, drift.err).toBe(0);
    expect(JSON.parse(drift.out).items).toEqual([]);
  }, 120_000);

  it("drift: a node running an extra pod or missing one is drift; a status-only change is not", async () => {
    interface Drift {
      metadata: { name: string };
      status: { generation: number; desiredGeneration: number; reasons: string[] };
    }
    // Polled through the route (a CLI run costs seconds on a loaded machine); the CLI's own output checked below.
    const drift = async () =>
      (await get<{ items: Drift[] }>(`/fleet/drift?labelSelector=${encodeURIComponent("grp=ro")}`)).items;
    const podsNow = async (node: string) =>
      (
        await get<{ items: { metadata: { name: string }; status: { pods: PodSummary[] } }[] }>("/fleet/nodes")
      ).items.find((n) => n.metadata.name === node)?.status.pods ?? [];
    // Status only: Pending, not ready, 5 restarts, a new uid (the pod made again under its name).
    churned.add("ro-a");
    await until("ro-a's churn reported", async () => (await podsNow("ro-a"))[0]?.restarts === 5, 15_000, 200);
    expect(await drift()).toEqual([]);
    // A pod the set does not name.
    extra.set("ro-b", "stray");
    const withExtra = await until(
      "ro-b drifts",
      async () => {
        const d = await drift();
        return d.length > 0 && d;
      },
      15_000,
      200,
    );
    expect(withExtra.map((d) => [d.metadata.name, d.status.reasons])).toEqual([
      ["ro-b", ["pods not in the desired set: default/stray"]],
    ]);
    expect(withExtra[0]!.status.generation).toBe(withExtra[0]!.status.desiredGeneration);
    // A pod of the set missing.
    extra.delete("ro-b");
    lost.add("ro-c");
    const withMissing = await until(
      "ro-c drifts, ro-b no more",
      async () => {
        const d = await drift();
        return d.length === 1 && d[0]!.metadata.name === "ro-c" && d;
      },
      15_000,
      200,
    );
    expect(withMissing[0]!.status.reasons).toEqual(["pods missing: default/good"]);
    const viaCli = await cli("fleet", "drift", "-l", "grp=ro", "-o", "json");
    expect(viaCli.code, viaCli.err).toBe(0);
    expect((JSON.parse(viaCli.out) as { items: Drift[] }).items.map((d) => d.status.reasons)).toEqual([
      ["pods missing: default/good"],
    ]);
    const table = await cli("fleet", "drift", "-l", "grp=ro");
    expect(table.out).toMatch(/^NAME\s+STATUS\s+GENERATION\s+DESIRED\s+DRIFT/m);
    expect(table.out).toMatch(/ro-c\s+Ready\s+(\d+)\s+\1\s+pods missing: default\/good/);
    churned.delete("ro-a");
    lost.delete("ro-c");
    await until("no drift", async () => (await drift()).length === 0, 15_000, 200);
  }, 120_000);

  it("a crash-looping revision: status -w exits non-zero, rolled back to the last good revision", async () => {
    const made = await cli(
      "fleet",
      "rollout",
      "-f",
      file("bad.yaml", "crash"),
      "-l",
      "grp=ro",
      "--batch",
      "1",
      "--auto-rollback",
      "--name",
      "cli-bad",
    );
    expect(made.code, made.err).toBe(0);
    const watched = await cli("fleet", "status", "cli-bad", "-w");
    expect(watched.code).toBe(1);
    expect(watched.err).toMatch(/rollout cli-bad RolledBack/);
    // The rollback set is the last Completed rollout's revision (cli-good's pod), re-signed above the revision.
    expect(bodies.get("ro-a")).toMatch(/name: good/);
    expect(bodies.get("ro-b")).toMatch(/name: good/);
  }, 120_000);

  it("approve after the canary with its own verb; a verb on a final rollout is refused", async () => {
    const made = await cli(
      "fleet",
      "rollout",
      "-f",
      file("c.yaml", "canary"),
      "-l",
      "grp=ro",
      "--canary",
      "1",
      "--approve-after-canary",
      "--name",
      "cli-canary",
    );
    expect(made.code, made.err).toBe(0);
    await until(
      "awaiting approval",
      async () => (await cli("fleet", "status", "cli-canary")).out.includes("AwaitingApproval"),
      30_000,
      300,
    );
    const approved = await cli("fleet", "approve", "cli-canary", "-o", "json");
    expect(approved.code, approved.err).toBe(0);
    expect(JSON.parse(approved.out).items[0].status.phase).toBe("Progressing");
    expect((await cli("fleet", "status", "cli-canary", "-w")).code).toBe(0);
    expect((await cli("fleet", "pause", "cli-canary")).err).toMatch(/cannot pause a rollout that is Completed/);
  }, 120_000);

  it("pause, resume and rollback by hand, each with -o json; rollback is its own verb", async () => {
    const phaseOf = (r: { out: string }) =>
      (JSON.parse(r.out) as { items: { status: { phase: string } }[] }).items[0]!.status.phase;
    const made = await cli(
      "fleet",
      ...["rollout", "-f", file("held.yaml", "held"), "-l", "grp=ro"],
      ...["--canary", "1", "--approve-after-canary", "--name", "cli-held"],
    );
    expect(made.code, made.err).toBe(0);
    await until(
      "awaiting approval",
      async () => (await cli("fleet", "status", "cli-held")).out.includes("AwaitingApproval"),
      30_000,
      300,
    );
    const paused = await cli("fleet", "pause", "cli-held", "-o", "json");
    expect(paused.code, paused.err).toBe(0);
    expect(phaseOf(paused)).toBe("Paused");
    const st = await cli("fleet", "status", "cli-held", "-o", "json");
    expect(JSON.parse(st.out).items[0].status).toMatchObject({ phase: "Paused", pauseReason: "Manual" });
    expect(phaseOf(await cli("fleet", "resume", "cli-held", "-o", "json"))).toBe("Progressing");
    // A rollout token cannot roll back: rollback is its own act.
    expect((await post("/fleet/rollouts/cli-held/rollback", "rollout")).status).toBe(403);
    const rolled = await cli("fleet", "rollback", "cli-held", "-o", "json");
    expect(rolled.code, rolled.err).toBe(0);
    expect(["RollingBack", "RolledBack"]).toContain(phaseOf(rolled));
    expect((await cli("fleet", "status", "cli-held", "-w")).code).toBe(1);
    const v = await get<View>("/fleet/rollouts/cli-held?nodes=1");
    expect(v.status.phase).toBe("RolledBack");
    // Only the canary took the revision; it is back on the last good one (cli-canary's pod).
    expect(v.status.nodes!["ro-a"]).toMatchObject({ state: "RolledBack", dispatches: 1, rollbacks: 1 });
    expect([v.status.nodes!["ro-b"]!.dispatches, v.status.nodes!["ro-c"]!.dispatches]).toEqual([0, 0]);
    expect(bodies.get("ro-a")).toMatch(/name: canary/);
    const audit = await get<{ items: { action: string; actor: string }[]; brokenAt: number }>(
      "/fleet/rollouts/cli-held/audit",
    );
    expect(audit.brokenAt).toBe(-1);
    expect(audit.items.map((e) => e.action)).toEqual(expect.arrayContaining(["pause", "resume", "rollback"]));
  }, 120_000);

  it("a gate failure without auto-rollback: status -w exits non-zero on Paused; abort -o json ends it", async () => {
    const made = await cli(
      "fleet",
      ...["rollout", "-f", file("bad2.yaml", "crash2"), "-l", "grp=ro", "--batch", "1", "--name", "cli-gate"],
    );
    expect(made.code, made.err).toBe(0);
    const watched = await cli("fleet", "status", "cli-gate", "-w");
    expect(watched.code).toBe(1);
    expect(watched.err).toMatch(/rollout cli-gate Paused/);
    const v = await get<View>("/fleet/rollouts/cli-gate?nodes=1");
    expect(v.status).toMatchObject({ phase: "Paused", pauseReason: "GateFailed" });
    expect([v.status.nodes!["ro-b"]!.dispatches, v.status.nodes!["ro-c"]!.dispatches]).toEqual([0, 0]);
    const aborted = await cli("fleet", "abort", "cli-gate", "-o", "json");
    expect(aborted.code, aborted.err).toBe(0);
    expect(JSON.parse(aborted.out).items[0].status.phase).toBe("Aborted");
  }, 120_000);
});
