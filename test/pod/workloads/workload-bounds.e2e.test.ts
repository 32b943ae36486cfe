// Issue #34 on the REAL containerd, through the node entry (startNode) and its state dir, across a restart: a stored
// Indexed Job of 2147483647 completions is refused at load with a warning and start-up goes on; workloads stored
// under looser settings (PODSYNC_POLICY=privileged, PODSYNC_MAX_PODS=10) are refused after a restart at baseline with
// PODSYNC_MAX_PODS=2: a ReplicaFailure condition and a log line each, and no new pod (a deleted pod of the
// privileged Deployment is not made again). Fails, never skips, without a runtime.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importJWK, SignJWT, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { startNode, type Running } from "../../../src/node.js";
import { FileWorkloadStore } from "../../../src/state/workloads.js";
import { Job } from "../../../src/pod/workloads/schema.js";
import { jobSelectorDefaults } from "../../../src/pod/workloads/job-labels.js";
import { connectGrpc } from "../../../src/cri/grpc-transport.js";
import { createPodRuntime } from "../../../src/kubelet/pod-runtime.js";
import { defaultNodeConfig } from "../../../src/container/node-config.js";
import { until } from "../../support/wait.js";
import { uid } from "../../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const NODE_NAME = "bounds-node";
const dir = mkdtempSync(join(tmpdir(), "podsync-bounds-e2e-"));
const stateDir = join(dir, "state");
const node = {
  ...defaultNodeConfig(),
  podLogsDir: mkdtempSync(join(tmpdir(), "podsync-bounds-logs-")),
  rootDir: mkdtempSync(join(tmpdir(), "podsync-bounds-root-")),
};
const ns = `bounds-${Date.now().toString(36)}`;
const lines: string[] = [];

const podSpec = (extra: Record<string, unknown> = {}, security: Record<string, unknown> = {}) => ({
  terminationGracePeriodSeconds: 1,
  hostNetwork: true,
  containers: [
    {
      name: "main",
      image: "localhost/busybox:1",
      imagePullPolicy: "Never",
      command: ["sleep", "3600"],
      ...(Object.keys(security).length ? { securityContext: security } : {}),
    },
  ],
  ...extra,
});
const deployment = (name: string, replicas: number, security: Record<string, unknown> = {}) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, namespace: ns },
  spec: {
    replicas,
    strategy: { type: "Recreate" },
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: podSpec({}, security) },
  },
});

describe.skipIf(skip)("bounds and the policy in force across a restart, on the lab containerd", () => {
  let server: Running | undefined;
  let key: JWK & { iss: string };
  const env = (policy: string, maxPods: number) => ({
    PODSYNC_PORT: "0",
    PODSYNC_TLS: "false",
    PODSYNC_DEV_DIR: dir,
    PODSYNC_STATE_DIR: stateDir,
    PODSYNC_CRI_ENDPOINT: endpoint,
    PODSYNC_SERVICE_DATAPLANE: "off",
    PODSYNC_NODE_NAME: NODE_NAME,
    PODSYNC_POD_LOGS_DIR: node.podLogsDir,
    PODSYNC_ROOT_DIR: node.rootDir,
    PODSYNC_POLICY: policy,
    PODSYNC_MAX_PODS: String(maxPods),
    PODSYNC_RELIST_INTERVAL_MS: "300",
    PODSYNC_RUNTIME_EVENTS: "off",
  });
  const sign = async (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "EdDSA", kid: key.kid! })
      .setIssuer(key.iss)
      .setAudience(NODE_NAME)
      .setIssuedAt()
      .setExpirationTime("60s")
      .setJti(uid("jti"))
      .sign(await importJWK(key, "EdDSA"));
  const call = async (method: string, path: string, claims: Record<string, unknown>, body = false) => {
    const token = await sign(claims);
    const r = await fetch(`${server!.url}${path}`, {
      method,
      headers: body ? { "content-type": "application/jose" } : { authorization: `Bearer ${token}` },
      ...(body ? { body: token } : {}),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const podsOf = async (app: string) =>
    ((await call("GET", "/v1/pods", { act: "status" })).body.items as any[]).filter(
      (p) => p.metadata.namespace === ns && p.metadata.labels?.app === app,
    );
  const workload = async (kind: string, name: string) =>
    ((await call("GET", `/v1/workloads?kind=${kind}`, { act: "status" })).body.items as any[]).find(
      (w) => w.metadata.name === name && w.metadata.namespace === ns,
    );

  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    vi.spyOn(console, "error").mockImplementation((line: unknown) => void lines.push(String(line)));
    vi.spyOn(process.stdout, "write").mockImplementation(() => true);
  });
  afterAll(async () => {
    await server?.close();
    vi.restoreAllMocks();
    // Whatever the suite left on the lab runtime goes.
    const cri = connectGrpc({ endpoint: endpoint!, timeoutMs: 30_000 });
    const rt = createPodRuntime(cri, { node });
    const { items } = await cri.listPodSandbox({ filter: { labelSelector: { "io.kubernetes.pod.namespace": ns } } });
    for (const sb of items) {
      const id = sb.metadata?.uid;
      if (id) await rt.delete(id, 0).catch(() => undefined);
    }
    cri.close();
  });

  it("a stored huge Indexed Job is refused at load; workloads past the bounds and policy now in force make no pods", async () => {
    // A state dir from before the bound: an Indexed Job of 2147483647 completions, stored as it was then.
    const old = Job.parse({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "huge", namespace: ns, uid: uid("huge") },
      spec: {
        completions: 3,
        completionMode: "Indexed",
        template: { spec: { ...podSpec(), restartPolicy: "Never" } },
      },
    });
    jobSelectorDefaults(old);
    old.spec.completions = 2 ** 31 - 1;
    const files = new FileWorkloadStore(stateDir, () => Promise.reject(new Error("no Secrets here")));
    await files.put({ workload: old, audit: { iss: "t", iat: 1 }, storedAt: Date.now(), generation: 1 });

    server = await startNode(env("privileged", 10));
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { iss: string };
    expect(lines.join("\n")).toMatch(
      /warning: desired pod left out: workloads\.log: Job "huge" is not valid: spec\.completions: must be at most 100000 when completion mode is Indexed/,
    );
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect(await workload("Job", "huge")).toBeUndefined();

    // Allowed now: a privileged hostNetwork Deployment and one of 3 replicas.
    const r = await call(
      "POST",
      "/v1/pods/sync",
      { act: "sync", items: [deployment("priv", 1, { privileged: true }), deployment("wide", 3)] },
      true,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await until("the 4 pods running", async () => {
      const all = [...(await podsOf("priv")), ...(await podsOf("wide"))];
      return all.length === 4 && all.every((p) => p.status?.phase === "Running");
    });
    const [priv] = await podsOf("priv");
    await server.close();
    server = undefined;

    // The owner tightens: baseline, and at most 2 pods.
    lines.length = 0;
    server = await startNode(env("baseline", 2));
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const conditions = async (kind: string, name: string) =>
      ((await workload(kind, name))?.status?.conditions ?? []) as { type: string; reason: string; message: string }[];
    await until("both Deployments refused", async () => {
      const [p, w] = [await conditions("Deployment", "priv"), await conditions("Deployment", "wide")];
      return p.some((c) => c.type === "ReplicaFailure") && w.some((c) => c.type === "ReplicaFailure");
    });
    expect(await conditions("Deployment", "priv")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: "ReplicaFailure",
          reason: "FailedCreate",
          message: expect.stringMatching(/violates PodSecurity "baseline:latest": .*host namespaces.*privileged/),
        }),
      ]),
    );
    expect(await conditions("Deployment", "wide")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: "ReplicaFailure",
          reason: "ExceedsNodeLimits",
          message: expect.stringContaining("replicas 3 is more than this node holds: must be at most 2"),
        }),
      ]),
    );
    const refused = lines
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return {};
        }
      })
      .filter((l) => l["event"] === "refused");
    expect(refused.map((l) => `${l["workload"]} ${l["reason"]}`).sort()).toEqual(
      expect.arrayContaining([`Deployment/${ns}/priv FailedCreate`, `Deployment/${ns}/wide ExceedsNodeLimits`]),
    );

    // kubelet-style events on the workloads, in the Kubernetes API (a read token).
    const events = await fetch(`${server.url}/api/v1/namespaces/${ns}/events`, {
      headers: { authorization: `Bearer ${await sign({ act: "read" })}` },
    });
    expect(events.status).toBe(200);
    const ev = ((await events.json()) as { items: any[] }).items.map(
      (e) => `${e.type} ${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}`,
    );
    expect(ev).toEqual(
      expect.arrayContaining(["Warning Deployment/priv FailedCreate", "Warning Deployment/wide ExceedsNodeLimits"]),
    );

    // The privileged pod is deleted: its ReplicaSet does not make a fresh one under baseline.
    const del = await call("DELETE", `/v1/pods/${priv.metadata.uid}`, {
      act: "delete",
      uid: priv.metadata.uid,
      gracePeriodSeconds: 0,
    });
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    await until("the privileged pod gone", async () => (await podsOf("priv")).length === 0);
    // Several controller passes (the relist is 300 ms): still none.
    await new Promise((res) => setTimeout(res, 3000));
    expect(await podsOf("priv")).toEqual([]);
    expect(await podsOf("wide")).toHaveLength(3);

    for (const name of ["priv", "wide"]) {
      const w = await workload("Deployment", name);
      await call("DELETE", `/v1/workloads/${w.metadata.uid}`, { act: "delete", uid: w.metadata.uid });
    }
    await until("the pods gone with their Deployments", async () => (await podsOf("wide")).length === 0, 60_000);
  }, 180_000);
});
