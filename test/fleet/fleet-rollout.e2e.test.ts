// Rollouts end to end (issue #39's done-when, lean): the Worker in workerd and three REAL node agents in pull mode on
// the lab containerd, shared by the four cases. A Deployment rolls out in batches of 1 and reaches all three
// (podsync fleet rollout, status -w); a revision whose container crashes stops at batch 1 and is rolled back
// automatically to the last good one, and the other two nodes never receive it; a node stopped during a rollout is
// Unreachable, the rollout moves on after its deadline, and the node catches up when it returns; the Worker
// (coordinator and registry) restarted mid-batch on the same storage finishes with every node dispatched once.
// Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK } from "jose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CriClient } from "../../src/cri/client.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { type Running, startNode } from "../../src/node.js";
import { listNodes, ownerToken } from "../support/fleet.js";
import { ISSUER, makeKey, type TestKey } from "../support/http.js";
import { until } from "../support/wait.js";
import { startWorkerd, type Workerd } from "../support/workerd.js";
import { freePort } from "../support/free-port.js";
import { deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const dir = mkdtempSync(join(tmpdir(), "podsync-rollout-e2e-"));
const suffix = Date.now().toString(36).slice(-6);
const NODES = [1, 2, 3].map((i) => `ro-e2e-${i}-${suffix}`);
const NS = `ro-${suffix}`;

let key: TestKey;
let keyFile: string;
let cri: CriClient;
let worker: Workerd | undefined;
let base: URL;
let port: number;
const agents = new Map<string, Running>();

const agentEnv = (name: string, token?: string): Record<string, string> => ({
  PODSYNC_CRI_ENDPOINT: endpoint,
  PODSYNC_SERVICE_DATAPLANE: "off",
  PODSYNC_PORT: "0",
  PODSYNC_HOST: "127.0.0.1",
  PODSYNC_NODE_NAME: name,
  PODSYNC_POLICY: "privileged",
  PODSYNC_STATE_DIR: join(dir, name, "state"),
  PODSYNC_ROOT_DIR: join(dir, name, "root"),
  PODSYNC_POD_LOGS_DIR: join(dir, name, "logs"),
  PODSYNC_JWKS: JSON.stringify({ keys: [key.publicJwk] }),
  PODSYNC_ISSUERS: ISSUER,
  PODSYNC_RELIST_INTERVAL_MS: "1000",
  PODSYNC_FLEET_URL: base.origin,
  PODSYNC_FLEET_HEARTBEAT_MS: "1000",
  PODSYNC_FLEET_BACKOFF_MAX_MS: "2000",
  // Enrolled once: a restarted agent connects with its key from its state dir.
  ...(token ? { PODSYNC_FLEET_JOIN_TOKEN: token } : {}),
});

/** The Worker on a fixed port and storage, so a restarted one keeps its address, its registry and its rollouts. */
const startWorker = async () => {
  ({ worker, base } = await startWorkerd({
    nodes: {},
    jwk: key.publicJwk,
    proxyToken: "unused",
    port,
    persist: join(dir, "worker-state"),
    env: { PODSYNC_FLEET_SHARDS: "4", PODSYNC_FLEET_ROLLOUT_TICK_MS: "500" },
  }));
};

const cli = (...args: string[]) =>
  new Promise<{ code: number; out: string; err: string }>((res) =>
    execFile(
      process.execPath,
      ["bin/podsync.mjs", ...args, "--url", base.origin, "--key", keyFile],
      { env: { ...process.env, PODSYNC_URL: "" } },
      (e, out, err) => res({ code: e ? Number(e.code ?? 1) : 0, out, err }),
    ),
  );

/** A Deployment file: `name` runs sleep, or exits at once when `crash`. */
function deploymentFile(name: string, crash: boolean): string {
  const f = join(dir, `${name}.json`);
  const d = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: NS },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          hostNetwork: true,
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: "main",
              image: "localhost/busybox:1",
              imagePullPolicy: "IfNotPresent",
              command: crash ? ["sh", "-c", "exit 3"] : ["sleep", "3600"],
            },
          ],
        },
      },
    },
  };
  writeFileSync(f, JSON.stringify({ apiVersion: "v1", kind: "List", items: [d] }));
  return f;
}

interface View {
  spec: { generation: number };
  status: { phase: string; batch: number; nodes: Record<string, { state: string; dispatches: number }> };
}
const rolloutOf = async (name: string): Promise<View> => {
  const r = await fetch(new URL(`/fleet/rollouts/${name}?nodes=1`, base), {
    headers: { authorization: `Bearer ${await ownerToken(key, { act: "read" })}` },
  });
  return (await r.json()) as View;
};

const nodeOf = async (name: string) =>
  (await listNodes(base, key, `grp=${suffix}`)).find((n) => n.metadata.name === name);

describe.skipIf(skip)("rollouts on real containerd, three agents", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    key = await makeKey("ES256", "owner-ro-e2e");
    keyFile = join(dir, "owner-key.json");
    const jwk = { ...(await exportJWK(key.privateKey)), kid: key.kid, alg: "ES256", iss: ISSUER };
    writeFileSync(keyFile, JSON.stringify(jwk), { mode: 0o600 });
    port = await freePort();
    await startWorker();
    for (const name of NODES) {
      const token = (await cli("fleet", "join-token", "--labels", `grp=${suffix}`, "-q")).out.trim();
      agents.set(name, await startNode(agentEnv(name, token), true));
    }
    await until(
      "three nodes Ready",
      async () =>
        (await listNodes(base, key, `grp=${suffix}`)).filter((n) => n.status.condition === "Ready").length === 3,
      60_000,
    );
  }, 180_000);

  afterAll(async () => {
    await Promise.all([...agents.values()].map((a) => a.close().catch(() => undefined)));
    await worker?.dispose();
    if (cri) {
      const rt = createPodRuntime(cri);
      const listed = (await cri.listPodSandbox({})).items.filter((s) => s.metadata?.namespace === NS);
      await deleteAll(
        rt,
        listed.map((sb) => sb.metadata!.uid),
      );
      cri.close();
    }
  }, 120_000);

  it("a Deployment in batches of 1 reaches all three", async () => {
    const made = await cli(
      "fleet",
      "rollout",
      "-f",
      deploymentFile("web", false),
      "-l",
      `grp=${suffix}`,
      "--batch",
      "1",
      "--name",
      "e2e-web",
    );
    expect(made.code, made.err).toBe(0);
    const watched = await cli("fleet", "status", "e2e-web", "-w");
    expect(watched.code, watched.err).toBe(0);
    const v = await rolloutOf("e2e-web");
    expect(Object.values(v.status.nodes).map((n) => [n.state, n.dispatches])).toEqual([
      ["Healthy", 1],
      ["Healthy", 1],
      ["Healthy", 1],
    ]);
    const nodes = await listNodes(base, key, `grp=${suffix}`);
    expect(nodes.map((n) => n.status.pods.filter((p) => p.name.startsWith("web-") && p.ready).length)).toEqual([
      1, 1, 1,
    ]);
  }, 240_000);

  it("a crashing revision stops at batch 1 and is rolled back; the other nodes never run it", async () => {
    const made = await cli(
      "fleet",
      "rollout",
      "-f",
      deploymentFile("crash", true),
      "-l",
      `grp=${suffix}`,
      "--batch",
      "1",
      "--auto-rollback",
      // A crashing container is Ready for an instant before it exits: the soak (as minReadySeconds) catches it.
      "--soak",
      "10s",
      "--name",
      "e2e-crash",
    );
    expect(made.code, made.err).toBe(0);
    const watched = await cli("fleet", "status", "e2e-crash", "-w");
    expect(watched.code).toBe(1);
    expect(watched.err).toMatch(/rollout e2e-crash RolledBack/);
    const v = await rolloutOf("e2e-crash");
    expect(v.status.nodes[NODES[0]!]!.state).toBe("RolledBack");
    expect(
      [NODES[1], NODES[2]].map((n) => v.status.nodes[n!]!),
      JSON.stringify(v.status.nodes),
    ).toEqual([
      expect.objectContaining({ state: "Pending", dispatches: 0 }),
      expect.objectContaining({ state: "Pending", dispatches: 0 }),
    ]);
    // Node 1 runs the last good revision again; nobody runs the crashing one.
    await until(
      "node 1 back on web",
      async () => {
        const n = (await listNodes(base, key, `grp=${suffix}`)).find((x) => x.metadata.name === NODES[0]);
        return (
          n?.status.pods.some((p) => p.name.startsWith("web-") && p.ready) &&
          !n.status.pods.some((p) => p.name.startsWith("crash-"))
        );
      },
      60_000,
    );
    const sandboxes = (await cri.listPodSandbox({})).items.filter(
      (s) => s.metadata?.namespace === NS && s.metadata.name.startsWith("crash-") && s.state === 0,
    );
    expect(sandboxes).toEqual([]);
  }, 300_000);
  it("a node stopped during a rollout is Unreachable, the rollout moves on, and it catches up when it returns", async () => {
    const gone = NODES[1]!;
    const made = await cli(
      "fleet",
      "rollout",
      "-f",
      deploymentFile("app", false),
      "-l",
      `grp=${suffix}`,
      "--batch",
      "1",
      "--soak",
      "2s",
      "--unreachable-deadline",
      "3s",
      "--max-unavailable",
      "1",
      "--name",
      "e2e-away",
    );
    expect(made.code, made.err).toBe(0);
    // Node 2 stops while batch 1 (node 1) is under way; its pods keep running.
    const early = await rolloutOf("e2e-away");
    expect(early.status.nodes[gone]).toMatchObject({ state: "Pending", dispatches: 0 });
    await agents.get(gone)!.close();
    agents.delete(gone);
    await until(
      "node 2 Unreachable in the rollout",
      async () => (await rolloutOf("e2e-away")).status.nodes[gone]?.state === "Unreachable",
      120_000,
      300,
    );
    // After its deadline it counts against maxUnavailable, not as a failure: the rollout goes on to node 3.
    const watched = await cli("fleet", "status", "e2e-away", "-w");
    expect(watched.code, watched.err).toBe(0);
    const v = await rolloutOf("e2e-away");
    expect(v.status.phase).toBe("Completed");
    expect(v.status.nodes[gone]).toMatchObject({ state: "Unreachable", dispatches: 1 });
    expect([NODES[0], NODES[2]].map((n) => v.status.nodes[n!]!.state)).toEqual(["Healthy", "Healthy"]);
    expect((await nodeOf(gone))!.status.generation).toBeLessThan(v.spec.generation);

    // It returns (same state dir, no token): the registry pushes the current revision at its hello, and it runs it.
    agents.set(gone, await startNode(agentEnv(gone), true));
    await until(
      "node 2 caught up on the current revision",
      async () => {
        const n = await nodeOf(gone);
        return (
          n?.status.condition === "Ready" &&
          n.status.generation === v.spec.generation &&
          n.status.pods.some((p) => p.name.startsWith("app-") && p.ready) &&
          !n.status.pods.some((p) => p.name.startsWith("web-"))
        );
      },
      90_000,
      300,
    );
  }, 300_000);

  it("the coordinator restarted mid-batch finishes without dispatching anything twice", async () => {
    const made = await cli(
      "fleet",
      "rollout",
      "-f",
      deploymentFile("api", false),
      "-l",
      `grp=${suffix}`,
      "--batch",
      "1",
      "--soak",
      "5s",
      "--name",
      "e2e-restart",
    );
    expect(made.code, made.err).toBe(0);
    // Mid-batch: batch 1 dispatched, its gate and soak not passed yet.
    const mid = await until(
      "batch 1 dispatched",
      async () => {
        const v = await rolloutOf("e2e-restart");
        return v.status.nodes[NODES[0]!]!.dispatches === 1 && v;
      },
      60_000,
      200,
    );
    expect(mid.status.batch).toBe(1);
    expect(mid.status.nodes[NODES[1]!]!.dispatches).toBe(0);
    await worker!.dispose();
    worker = undefined;
    await startWorker();
    const watched = await cli("fleet", "status", "e2e-restart", "-w");
    expect(watched.code, watched.err).toBe(0);
    const v = await rolloutOf("e2e-restart");
    const g = v.spec.generation;
    expect(Object.values(v.status.nodes).map((n) => [n.state, n.dispatches])).toEqual([
      ["Healthy", 1],
      ["Healthy", 1],
      ["Healthy", 1],
    ]);
    // The registry stored the revision once per node (its audit), and each node runs one api pod, never restarted.
    for (const n of NODES) {
      const r = await fetch(new URL(`/fleet/audit?node=${n}`, base), {
        headers: { authorization: `Bearer ${await ownerToken(key, { act: "read" })}` },
      });
      const rows = ((await r.json()) as { items: { action: string; detail: string }[] }).items;
      const stored = rows.filter((x) => x.action === "apply" && JSON.parse(x.detail).generation === g);
      expect(stored.length, n).toBe(1);
    }
    await until(
      "each node runs its api pod",
      async () => {
        const all = await listNodes(base, key, `grp=${suffix}`);
        return all.every(
          (x) =>
            x.status.generation === g &&
            x.status.pods.filter((p) => p.name.startsWith("api-") && p.ready && p.restarts === 0).length === 1,
        );
      },
      60_000,
      300,
    );
  }, 300_000);
});
