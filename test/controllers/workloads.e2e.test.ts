// Workloads on the REAL containerd, run by the node's controllers in the reconcile loop: a Deployment (replicas, scale
// up and down, a rolling update), Jobs (completions, back-off, deadline, an Indexed Job's backoffLimitPerIndex), a
// StatefulSet (order, claim data across a delete and re-add), DaemonSets (admitted, not admitted), a CronJob across a
// restart (the controllers' clock driven ahead), a uid-less Pod and a cluster export with its warnings. Fails, never skips, without a runtime.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntime } from "../../src/kubelet/pod-runtime.js";
import { nodeVolumeHost } from "../../src/host/volumes/volume-host.js";
import { nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { FileDesiredState } from "../../src/state/desired-pods.js";
import { FileWorkloadStore } from "../../src/state/workloads.js";
import { importSealKey, newSealKeyBytes } from "../../src/state/secret-seal.js";
import { createControllers } from "../../src/controllers/run.js";
import { startReconcileLoop, type ReconcileLoop } from "../../src/syncloop/sync-loop.js";
import { derivedUid } from "../../src/pod/workloads/uid.js";
import { Harness, NODE } from "../support/http.js";
import { until } from "../support/wait.js";
import { deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const root = mkdtempSync(join(tmpdir(), "podsync-workloads-e2e-"));
const ns = `wl-${Date.now().toString(36)}`;
let cri: CriClient;
let rt: PodRuntime;
let h: Harness;
let loop: ReconcileLoop | undefined;
let controllers: ReturnType<typeof createControllers>;
const desired = new FileDesiredState(root);
const key = importSealKey(newSealKeyBytes());
const workloads = new FileWorkloadStore(root, () => key);
/** The controllers' clock: the node's, plus what a test moves it ahead by. */
let ahead = 0;

const node = {
  name: NODE,
  labels: { "kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux", site: "lab" },
  taints: [],
  allocatable: {},
};
const container = (command: string[], extra: Record<string, unknown> = {}) => ({
  name: "main",
  image: "localhost/busybox:1",
  imagePullPolicy: "IfNotPresent",
  command,
  ...extra,
});
// hostNetwork (no CNI set-up and tear-down on the shared containerd while other suites run); the StatefulSet's pods
// keep the pod network (their hostname is their name).
const podSpec = (command: string[], extra: Record<string, unknown> = {}) => ({
  hostNetwork: true,
  terminationGracePeriodSeconds: 1,
  containers: [container(command)],
  ...extra,
});

function startLoop() {
  controllers = createControllers({
    workloads,
    desired,
    runtime: rt,
    nodeName: NODE,
    node,
    job: { podFailureBackOffMs: 1000 },
  });
  loop = startReconcileLoop({
    runtime: rt,
    cri,
    desired,
    controllers,
    relistIntervalMs: 300,
    now: () => Date.now() + ahead,
  });
}
async function stopLoop() {
  await loop?.stop();
  await controllers.settle();
  loop = undefined;
}

const sync = async (items: unknown[]) => {
  const r = await h.fetch("/v1/pods/sync", {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body: await h.sign({ act: "sync", items }),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const bearer = async (claims: Record<string, unknown>) => ({ authorization: `Bearer ${await h.sign(claims)}` });
const listWorkloads = async (kind: string) =>
  (await h.fetch(`/v1/workloads?kind=${kind}`, { headers: await bearer({ act: "status" }) })).body.items as any[];
const workload = async (kind: string, name: string) =>
  (await listWorkloads(kind)).find((w) => w.metadata.name === name && w.metadata.namespace === ns);
// The pods that are not being deleted (GET /v1/pods also lists those, Terminating, until they are gone).
const podsOf = async (prefix: string) =>
  ((await h.fetch("/v1/pods", { headers: await bearer({ act: "status" }) })).body.items as any[]).filter(
    (p) => p.metadata.namespace === ns && p.metadata.name.startsWith(prefix) && !p.metadata.deletionTimestamp,
  );
const remove = async (kind: string, name: string) => {
  const w = await workload(kind, name);
  const r = await h.fetch(`/v1/workloads/${w.metadata.uid}`, {
    method: "DELETE",
    headers: await bearer({ act: "delete", uid: w.metadata.uid }),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
};

const deployment = (replicas: number, command: string[]) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: ns },
  spec: {
    replicas,
    selector: { matchLabels: { app: "web" } },
    strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
    template: { metadata: { labels: { app: "web" } }, spec: podSpec(command) },
  },
});

describe.skipIf(skip)("workloads on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    rt = createPodRuntime(cri, {
      pullBackOff: new MemoryPullBackOff(),
      volumeHost: nodeVolumeHost,
      podDirs: nodePodDirs,
      node: { ...defaultNodeConfig(), rootDir: root, podLogsDir: join(root, "logs") },
    });
    h = await Harness.start(cri, {
      runtime: rt,
      desired,
      workloads,
      nodeInfo: node,
      policy: { level: "privileged", hostPathAllow: [] },
    });
    startLoop();
  });
  afterAll(async () => {
    await stopLoop().catch(() => undefined);
    await deleteAll(
      rt,
      (await desired.list()).map((e) => e.pod.metadata.uid),
    );
    await h?.close();
    cri?.close();
    if (!readFileSync("/proc/self/mountinfo", "utf8").includes(root)) rmSync(root, { recursive: true, force: true });
  });

  it("Deployment: replicas, scale up, a rolling update (maxSurge 1, maxUnavailable 0), scale down, delete", async () => {
    await sync([deployment(2, ["sleep", "3600"])]);
    // The status of this generation of the spec (observedGeneration), with n pods of the newest template available.
    const available = (n: number) =>
      until(`web: ${n} available`, async () => {
        const d = await workload("Deployment", "web");
        return (
          d?.status.observedGeneration === d.metadata.generation &&
          d.status.availableReplicas === n &&
          d.status.updatedReplicas === n &&
          d.status.replicas === n &&
          (await podsOf("web-")).length === n &&
          d
        );
      });
    await available(2);
    const pods = await podsOf("web-");
    const rs = (await listWorkloads("ReplicaSet")).find((w) => w.metadata.namespace === ns)!;
    expect(rs.metadata.name).toMatch(/^web-[a-z0-9]+$/);
    expect(rs.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "Deployment", name: "web", controller: true }),
    ]);
    for (const p of pods) {
      expect(p.metadata.name).toMatch(new RegExp(`^${rs.metadata.name}-[a-z0-9]{5}$`));
      expect(p.metadata.labels).toEqual({ app: "web", "pod-template-hash": rs.metadata.labels["pod-template-hash"] });
      expect(p.metadata.ownerReferences).toEqual([
        {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: rs.metadata.name,
          uid: rs.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(p.status.phase).toBe("Running");
    }

    await sync([deployment(3, ["sleep", "3600"])]);
    await available(3);

    // A new template: a second ReplicaSet takes over, never more than 4 pods, never fewer than 3 available.
    await sync([deployment(3, ["sleep", "3601"])]);
    const d = await available(3);
    expect(d.status.conditions).toContainEqual(
      expect.objectContaining({ type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" }),
    );
    const sets = (await listWorkloads("ReplicaSet")).filter((w) => w.metadata.namespace === ns);
    expect(sets.map((s) => s.spec.replicas).sort()).toEqual([0, 3]);
    const fresh = sets.find((s) => s.spec.replicas === 3)!;
    expect(fresh.metadata.annotations["deployment.kubernetes.io/revision"]).toBe("2");
    for (const p of await podsOf("web-"))
      expect(p.metadata.labels["pod-template-hash"]).toBe(fresh.metadata.labels["pod-template-hash"]);

    await sync([deployment(1, ["sleep", "3601"])]);
    await available(1);

    await remove("Deployment", "web");
    await until(
      "web's pods and ReplicaSets to go",
      async () =>
        (await podsOf("web-")).length === 0 &&
        (await listWorkloads("ReplicaSet")).every((w) => w.metadata.namespace !== ns),
    );
  });

  it("Job: completions; back-off to BackoffLimitExceeded; activeDeadlineSeconds; an Indexed Job's backoffLimitPerIndex to FailedIndexes", async () => {
    const job = (name: string, command: string[], spec: Record<string, unknown>) => ({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name, namespace: ns },
      spec: { ...spec, template: { spec: podSpec(command, { restartPolicy: "Never" }) } },
    });
    // perindex: index 1 fails every time; backoffLimitPerIndex 1 gives it one more try, then it is failed for good.
    const perIndex = job("perindex", ["sh", "-c", 'test "$JOB_COMPLETION_INDEX" != 1'], {
      completionMode: "Indexed",
      completions: 3,
      parallelism: 3,
      backoffLimitPerIndex: 1,
    });
    await sync([
      job("twice", ["true"], { completions: 2 }),
      job("fails", ["false"], { backoffLimit: 1 }),
      job("slow", ["sleep", "3600"], { activeDeadlineSeconds: 2 }),
      perIndex,
    ]);
    const finished = (name: string) =>
      until(`${name} to finish`, async () => {
        const j = await workload("Job", name);
        return (
          j?.status.conditions?.some(
            (c: any) => (c.type === "Complete" || c.type === "Failed") && c.status === "True",
          ) && j
        );
      });
    const twice = await finished("twice");
    expect(twice.status).toMatchObject({ succeeded: 2, failed: 0, active: 0 });
    expect(twice.status.conditions).toContainEqual(expect.objectContaining({ type: "Complete", status: "True" }));
    const pods = await podsOf("twice-");
    expect(pods).toHaveLength(2);
    expect(pods[0].metadata.labels).toMatchObject({
      "batch.kubernetes.io/job-name": "twice",
      "batch.kubernetes.io/controller-uid": twice.metadata.uid,
    });
    expect(pods.map((p) => p.status.phase)).toEqual(["Succeeded", "Succeeded"]);

    const fails = await finished("fails");
    expect(fails.status).toMatchObject({ failed: 2 });
    expect(fails.status.conditions).toContainEqual(
      expect.objectContaining({ type: "Failed", status: "True", reason: "BackoffLimitExceeded" }),
    );

    const slow = await finished("slow");
    expect(slow.status.conditions).toContainEqual(
      expect.objectContaining({ type: "Failed", status: "True", reason: "DeadlineExceeded" }),
    );
    await until("the deadline's pod to go", async () => (await podsOf("slow-")).length === 0);

    const pi = await finished("perindex");
    expect(pi.status).toMatchObject({ succeeded: 2, failed: 2, completedIndexes: "0,2", failedIndexes: "1" });
    expect(pi.status.conditions).toContainEqual(
      expect.objectContaining({ type: "Failed", status: "True", reason: "FailedIndexes" }),
    );
    const index1 = (await podsOf("perindex-1-"))
      .map((p) => p.metadata.annotations["batch.kubernetes.io/job-index-failure-count"])
      .sort();
    expect(index1).toEqual(["0", "1"]);
  });

  it("StatefulSet: ordinals in order; a claim's data survives the StatefulSet's delete and re-add", async () => {
    const sts = {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name: "db", namespace: ns },
      spec: {
        replicas: 2,
        serviceName: "db",
        selector: { matchLabels: { app: "db" } },
        template: {
          metadata: { labels: { app: "db" } },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              container(
                ["sh", "-c", "test -f /data/seen && echo again > /data/again; hostname >> /data/seen; sleep 3600"],
                { volumeMounts: [{ name: "data", mountPath: "/data" }] },
              ),
            ],
          },
        },
        volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"] } }],
      },
    };
    await sync([sts]);
    await until("db-0 and db-1 to run", async () => {
      const s = await workload("StatefulSet", "db");
      return s?.status.readyReplicas === 2 && s;
    });
    const pods = await podsOf("db-");
    expect(pods.map((p) => p.metadata.name).sort()).toEqual(["db-0", "db-1"]);
    const [p0, p1] = pods.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    expect(p0.metadata.labels).toMatchObject({
      "statefulset.kubernetes.io/pod-name": "db-0",
      "apps.kubernetes.io/pod-index": "0",
    });
    // OrderedReady: db-1 started only once db-0 was Running and Ready.
    expect(Date.parse(p1.status.startTime)).toBeGreaterThanOrEqual(
      Date.parse(p0.status.conditions.find((c: any) => c.type === "Ready").lastTransitionTime),
    );
    expect(p0.metadata.uid).toBe(derivedUid(NODE, ns, "db-0"));

    await remove("StatefulSet", "db");
    await until("db's pods to go", async () => (await podsOf("db-")).length === 0);
    const claims = (await rt.claims()).claims.map((c) => c.name);
    expect(claims).toEqual(expect.arrayContaining(["data-db-0", "data-db-1"]));

    await sync([sts]);
    await until("db-0 to run again", async () => (await workload("StatefulSet", "db"))?.status.readyReplicas === 2);
    const out = await rt.exec(p0.metadata.uid, {
      container: "main",
      command: ["cat", "/data/seen", "/data/again"],
      timeoutSeconds: 10,
      maxOutputBytes: 4096,
    });
    expect(out.stdout.data.trim().split("\n")).toEqual(["db-0", "db-0", "again"]);
    await remove("StatefulSet", "db");
  });

  it("DaemonSet: one pod where the node's labels admit it; none, with the reason, where they do not", async () => {
    const ds = (name: string, site: string) => ({
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name, namespace: ns },
      spec: {
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: podSpec(["sleep", "3600"], { nodeSelector: { site } }) },
      },
    });
    await sync([ds("agent", "lab"), ds("elsewhere", "moon")]);
    const agent = await until("agent's pod", async () => {
      const d = await workload("DaemonSet", "agent");
      return d?.status.numberReady === 1 && d;
    });
    expect(agent.status).toMatchObject({ desiredNumberScheduled: 1, currentNumberScheduled: 1, numberAvailable: 1 });
    expect((await podsOf("agent-")).map((p) => p.metadata.name)).toEqual([
      expect.stringMatching(/^agent-[a-z0-9]{5}$/),
    ]);
    const elsewhere = await until(
      "elsewhere's status",
      async () => await workload("DaemonSet", "elsewhere").then((d) => d?.status.conditions && d),
    );
    expect(elsewhere.status).toMatchObject({
      desiredNumberScheduled: 0,
      conditions: [expect.objectContaining({ type: "NodeEligible", status: "False", reason: "NodeAffinity" })],
    });
    expect(await podsOf("elsewhere-")).toEqual([]);
    await remove("DaemonSet", "agent");
    await remove("DaemonSet", "elsewhere");
  });

  it("CronJob every minute: a Job for the minute; after a restart three minutes later, only the most recent missed one", async () => {
    const minute = 60_000;
    // The controllers' clock one second past the next minute (their clock is the node's, moved ahead).
    ahead = minute - (Date.now() % minute) + 1000;
    await sync([
      {
        apiVersion: "batch/v1",
        kind: "CronJob",
        metadata: { name: "tick", namespace: ns },
        spec: {
          schedule: "* * * * *",
          jobTemplate: { spec: { template: { spec: podSpec(["true"], { restartPolicy: "Never" }) } } },
        },
      },
    ]);
    const jobsOf = async () =>
      (await listWorkloads("Job")).filter((j) => j.metadata.namespace === ns && j.metadata.name.startsWith("tick-"));
    const first = await until(
      "the first Job",
      async () => {
        const j = await jobsOf();
        return j.length === 1 && j[0];
      },
      60_000,
    );
    const scheduled = Math.floor((Date.now() + ahead) / minute) * minute;
    expect(first.metadata.name).toBe(`tick-${Math.floor(scheduled / minute)}`);
    expect(first.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "CronJob", name: "tick", controller: true }),
    ]);
    await until("the first Job to complete", async () => (await jobsOf())[0]?.status.succeeded === 1);

    // The node goes down; it comes back three minutes later: one Job for the last of the missed minutes.
    await stopLoop();
    ahead += 3 * minute;
    startLoop();
    const jobs = await until("the Job after the restart", async () => {
      const j = await jobsOf();
      return j.length === 2 && j;
    });
    expect(jobs.map((j) => j.metadata.name).sort()).toEqual(
      [first.metadata.name, `tick-${Math.floor(scheduled / minute) + 3}`].sort(),
    );
    // As upstream's controller does, the Job is stored before the CronJob's status: a reader can see one and not yet
    // the other, so the status is awaited.
    const last = new Date(scheduled + 3 * minute).toISOString().replace(/\.000Z$/, "Z");
    const cj = await until("the CronJob's status", async () => {
      const c = await workload("CronJob", "tick");
      return c.status.lastScheduleTime === last && c;
    });
    expect(cj.status.lastScheduleTime).toBe(last);
    await remove("CronJob", "tick");
    ahead = 0;
  });

  it("a uid-less Pod runs under the uid derived from node, namespace and name; a cluster export runs with its warnings", async () => {
    const exported = [
      "apiVersion: v1",
      "kind: Pod",
      "metadata:",
      `  name: exported`,
      `  namespace: ${ns}`,
      "  resourceVersion: '42'",
      "spec:",
      "  terminationGracePeriodSeconds: 1",
      "  serviceAccountName: default",
      `  nodeName: ${NODE}`,
      "  containers:",
      "  - name: main",
      "    image: localhost/busybox:1",
      "    imagePullPolicy: IfNotPresent",
      "    command: [sleep, '3600']",
      "    volumeMounts:",
      "    - name: kube-api-access-x7k2p",
      "      mountPath: /var/run/secrets/kubernetes.io/serviceaccount",
      "      readOnly: true",
      "  volumes:",
      "  - name: kube-api-access-x7k2p",
      "    projected:",
      "      sources:",
      "      - serviceAccountToken: {expirationSeconds: 3607, path: token}",
      "      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}",
      "status: {phase: Running}",
      "",
    ].join("\n");
    const { createHash } = await import("node:crypto");
    const digest = createHash("sha256").update(exported).digest("base64url");
    const res = await fetch(`${h.url}/v1/pods/sync`, {
      method: "POST",
      headers: {
        "content-type": "application/yaml",
        "podsync-signature": await h.sign({ act: "sync", body_sha256: digest }),
      },
      body: exported,
    });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.pod.uid).toBe(derivedUid(NODE, ns, "exported"));
    expect(body.status.phase).toBe("Running");
    expect(body.warnings).toHaveLength(3);
    expect(res.headers.get("warning")).toContain('299 - "spec.volumes: dropped kube-api-access-x7k2p');
    await rt.delete(body.pod.uid, 0);
    await desired.remove(body.pod.uid);
  });
});
