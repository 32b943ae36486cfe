// The workload kinds on the Kubernetes API's read side, without a runtime: the feed from the workload store (a
// controller's status write is a watch event), discovery with the apps and batch groups and claims, lists and
// gets at each group's paths, kubectl's Table columns (printers.go), and writes refused naming the signed way.
import { describe, expect, it } from "vitest";
import { SignJWT } from "jose";
import { createKubeApi } from "../../src/kubeapi/routes.js";
import { RvClock, WatchHub } from "../../src/kubeapi/watch-hub.js";
import { EventRecorder } from "../../src/kubeapi/events.js";
import { createWorkloadFeed } from "../../src/kubeapi/kinds/workload-feed.js";
import { formatLabelSelector } from "../../src/kubeapi/kinds/workload-table.js";
import { MemoryWorkloadStore, workloadKey, type StoredWorkload } from "../../src/controllers/store.js";
import { createVerifier } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import type { V1Node } from "../../src/kubeapi/node-object.js";
import type { V1Pod } from "../../src/status/api-status.js";
import type { PodRuntime } from "../../src/kubelet/pod-runtime.js";
import type { Workload } from "../../src/pod/workloads/schema.js";
import { makeKey, ISSUER, NODE } from "../support/http.js";

const audit = { iss: ISSUER, kid: undefined, jti: "j", iat: 1 };
const at = Date.parse("2026-01-01T00:00:00Z");
const template = {
  metadata: { labels: { app: "web" } },
  spec: {
    containers: [
      { name: "main", image: "localhost/busybox:1" },
      { name: "side", image: "localhost/pause:1" },
    ],
  },
};
const stored = (workload: Record<string, unknown>, extra: Partial<StoredWorkload> = {}): StoredWorkload => ({
  workload: workload as unknown as Workload,
  audit,
  storedAt: at,
  generation: 1,
  ...extra,
});
const deployment = stored(
  {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default", uid: "d-1", labels: { app: "web" } },
    spec: { replicas: 3, selector: { matchLabels: { app: "web" } }, template, strategy: { type: "RollingUpdate" } },
  },
  { status: { replicas: 3, readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 } },
);
const replicaSet = stored(
  {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: { name: "web-5d8f7c", namespace: "default", uid: "rs-1" },
    spec: { replicas: 3, selector: { matchLabels: { app: "web", "pod-template-hash": "5d8f7c" } }, template },
  },
  {
    owner: {
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "web",
      uid: "d-1",
      controller: true,
      blockOwnerDeletion: true,
    },
    status: { replicas: 3, readyReplicas: 2 },
  },
);
const job = stored(
  {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "once", namespace: "batch", uid: "j-1" },
    spec: {
      completions: 2,
      parallelism: 1,
      selector: { matchLabels: { "batch.kubernetes.io/controller-uid": "j-1" } },
      template: { spec: { containers: [{ name: "job", image: "localhost/busybox:1" }] } },
    },
  },
  { status: { succeeded: 1, startTime: "2026-01-01T00:00:00Z" } },
);
const claim = stored({
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: { name: "data", namespace: "default", uid: "c-1" },
  spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
});

describe("the workload kinds on the read side", async () => {
  const key = await makeKey("EdDSA", "k1");
  const verifier = createVerifier({
    keys: { jwks: { keys: [key.publicJwk] } },
    issuers: [ISSUER],
    audience: [NODE],
    replay: new MemoryReplayStore(),
  });
  const read = await new SignJWT({ act: "read" })
    .setProtectedHeader({ alg: "EdDSA", kid: "k1" })
    .setIssuer(ISSUER)
    .setAudience(NODE)
    .setIssuedAt()
    .setExpirationTime("2m")
    .setJti(crypto.randomUUID())
    .sign(key.privateKey);
  const clock = new RvClock(100);
  const inner = new MemoryWorkloadStore();
  const feed = createWorkloadFeed(clock, inner);
  const hpa = stored(
    {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web", namespace: "default", uid: "h-1" },
      spec: {
        scaleTargetRef: { kind: "Deployment", name: "web" },
        minReplicas: 2,
        maxReplicas: 4,
        metrics: [
          { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 99 } } },
        ],
      },
    },
    { status: { currentReplicas: 3, desiredReplicas: 3, currentMetrics: [] } },
  );
  const rc = stored(
    {
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "redis-master", namespace: "default", uid: "rc-1" },
      spec: { replicas: 1, selector: { app: "redis" }, template },
    },
    { status: { replicas: 1, readyReplicas: 1 } },
  );
  const pdb = stored(
    {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "zk-pdb", namespace: "default", uid: "p-1" },
      spec: { maxUnavailable: 1, selector: { matchLabels: { app: "zk" } } },
    },
    { status: { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 } },
  );
  await feed.store.putAll([deployment, replicaSet, job, claim, hpa, rc, pdb]);
  const pods = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
  pods.replaceAll([]);
  const nodeHub = new WatchHub<V1Node>(clock, { key: (n) => n.metadata.name });
  const app = createKubeApi({
    verifier,
    pods,
    events: new EventRecorder(clock, NODE),
    node: { hub: nodeHub, refresh: async () => undefined },
    runtime: {} as PodRuntime,
    podsyncVersion: "x",
    arch: "amd64",
    allowExec: false,
    followMaxMs: 1000,
    workloads: feed,
  });
  const get = (path: string, headers: Record<string, string> = {}) =>
    app.request(path, { headers: { authorization: `Bearer ${read}`, ...headers } });
  const TABLE = { accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" };

  it("discovery lists the apps, batch, autoscaling/v2, policy and discovery groups, claims, RCs, services and endpoints, in both forms", async () => {
    const agg = await (
      await get("/apis", { accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" })
    ).json();
    expect(agg.items.map((g: { metadata: { name: string } }) => g.metadata.name)).toEqual([
      "apps",
      "batch",
      "autoscaling",
      "policy",
      "discovery.k8s.io",
      "authorization.k8s.io",
      "metrics.k8s.io",
    ]);
    expect(agg.items[2].versions[0]).toMatchObject({
      version: "v2",
      resources: [expect.objectContaining({ resource: "horizontalpodautoscalers", shortNames: ["hpa"] })],
    });
    expect(
      agg.items[0].versions[0].resources.map(
        (r: { resource: string; shortNames?: string[] }) => `${r.resource}:${r.shortNames?.join(",")}`,
      ),
    ).toEqual(["daemonsets:ds", "deployments:deploy", "replicasets:rs", "statefulsets:sts"]);
    const core = await (
      await get("/api", { accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" })
    ).json();
    expect(core.items[0].versions[0].resources.map((r: { resource: string }) => r.resource)).toEqual([
      "endpoints",
      "events",
      "nodes",
      "persistentvolumeclaims",
      "pods",
      "replicationcontrollers",
      "services",
      "namespaces",
    ]);
    expect(await (await get("/apis")).json()).toMatchObject({
      kind: "APIGroupList",
      groups: [
        { name: "apps", preferredVersion: { groupVersion: "apps/v1" } },
        { name: "batch" },
        { name: "autoscaling", preferredVersion: { groupVersion: "autoscaling/v2" } },
        { name: "policy" },
        { name: "discovery.k8s.io" },
        { name: "authorization.k8s.io" },
        { name: "metrics.k8s.io", preferredVersion: { groupVersion: "metrics.k8s.io/v1beta1" } },
      ],
    });
    expect(await (await get("/apis/batch/v1")).json()).toMatchObject({
      kind: "APIResourceList",
      groupVersion: "batch/v1",
      resources: [
        { name: "cronjobs", shortNames: ["cj"] },
        { name: "jobs", kind: "Job", verbs: ["get", "list", "watch"] },
      ],
    });
    expect(await (await get("/apis/apps")).json()).toMatchObject({ kind: "APIGroup", name: "apps" });
  });

  it("lists and gets each kind at its group's path, with creationTimestamp, generation and the owner", async () => {
    const list = await (await get("/apis/apps/v1/namespaces/default/replicasets")).json();
    expect(list).toMatchObject({ kind: "ReplicaSetList", apiVersion: "apps/v1" });
    expect(list.items[0].metadata).toMatchObject({
      name: "web-5d8f7c",
      generation: 1,
      creationTimestamp: "2026-01-01T00:00:00Z",
      ownerReferences: [{ kind: "Deployment", uid: "d-1", controller: true }],
    });
    expect(
      (await (await get("/apis/batch/v1/jobs")).json()).items.map(
        (j: { metadata: { namespace: string } }) => j.metadata.namespace,
      ),
    ).toEqual(["batch"]);
    expect((await (await get("/apis/batch/v1/namespaces/default/jobs")).json()).items).toEqual([]);
    expect((await (await get("/apis/apps/v1/deployments?labelSelector=app%3Dweb")).json()).items).toHaveLength(1);
    expect((await (await get("/apis/batch/v1/jobs?fieldSelector=status.successful%3D1")).json()).items).toHaveLength(1);
    expect(await (await get("/api/v1/namespaces/default/persistentvolumeclaims/data")).json()).toMatchObject({
      kind: "PersistentVolumeClaim",
      status: { phase: "Bound" },
    });
    const missing = await get("/apis/apps/v1/namespaces/default/deployments/nope");
    expect(await missing.json()).toMatchObject({
      code: 404,
      message: 'deployments.apps "nope" not found',
      details: { name: "nope", group: "apps", kind: "deployments" },
    });
  });

  it("the Table form with kubectl's columns for each kind, wide ones at priority 1", async () => {
    const d = await (await get("/apis/apps/v1/namespaces/default/deployments", TABLE)).json();
    expect(d.columnDefinitions.map((c: { name: string; priority: number }) => `${c.name}:${c.priority}`)).toEqual([
      "Name:0",
      "Ready:0",
      "Up-to-date:0",
      "Available:0",
      "Age:0",
      "Containers:1",
      "Images:1",
      "Selector:1",
    ]);
    expect(d.rows[0].cells).toEqual([
      "web",
      "2/3",
      3,
      2,
      expect.any(String),
      "main,side",
      "localhost/busybox:1,localhost/pause:1",
      "app=web",
    ]);
    const rs = await (await get("/apis/apps/v1/namespaces/default/replicasets", TABLE)).json();
    expect(rs.rows[0].cells).toEqual([
      "web-5d8f7c",
      3,
      3,
      2,
      expect.any(String),
      "main,side",
      "localhost/busybox:1,localhost/pause:1",
      "app=web,pod-template-hash=5d8f7c",
    ]);
    const j = await (await get("/apis/batch/v1/jobs", TABLE)).json();
    expect(j.rows[0].cells.slice(0, 3)).toEqual(["once", "Running", "1/2"]);
    const pvc = await (await get("/api/v1/persistentvolumeclaims", TABLE)).json();
    expect(pvc.columnDefinitions.map((c: { name: string }) => c.name)).toEqual([
      "Name",
      "Status",
      "Volume",
      "Capacity",
      "Access Modes",
      "StorageClass",
      "VolumeAttributesClass",
      "Age",
      "VolumeMode",
    ]);
    expect(pvc.rows[0].cells).toEqual(["data", "Bound", "", "", "", "", "<unset>", expect.any(String), "Filesystem"]);
  });

  it("a controller's status write is a watch event", async () => {
    const list = await (await get("/apis/apps/v1/deployments")).json();
    const r = await get(`/apis/apps/v1/deployments?watch=true&resourceVersion=${list.metadata.resourceVersion}`);
    const reader = r.body!.getReader();
    await feed.store.setStatus(workloadKey(deployment.workload), "d-1", {
      replicas: 3,
      readyReplicas: 3,
      updatedReplicas: 3,
      availableReplicas: 3,
    });
    const ev = JSON.parse(new TextDecoder().decode((await reader.read()).value).trim());
    await reader.cancel();
    expect(ev).toMatchObject({ type: "MODIFIED", object: { kind: "Deployment", status: { readyReplicas: 3 } } });
  });

  it("writes answer 403 naming the signed way, with the group in the resource", async () => {
    const scale = await app.request("/apis/apps/v1/namespaces/default/deployments/web/scale", {
      method: "PATCH",
      headers: { authorization: `Bearer ${read}` },
      body: "{}",
    });
    expect(scale.status).toBe(403);
    expect((await scale.json()).message).toMatch(/^deployments\.apps "web" is forbidden: .*podsync apply/);
  });

  it("a namespace by name, while something of the node's is in it (kubectl asks after a NotFound)", async () => {
    expect(await (await get("/api/v1/namespaces/batch")).json()).toMatchObject({
      kind: "Namespace",
      metadata: { name: "batch" },
      status: { phase: "Active" },
    });
    expect(await (await get("/api/v1/namespaces/nothing-here")).json()).toMatchObject({
      code: 404,
      message: 'namespaces "nothing-here" not found',
    });
  });

  it("metav1.FormatLabelSelector", () => {
    expect(formatLabelSelector(undefined)).toBe("<none>");
    expect(formatLabelSelector({})).toBe("<none>");
    expect(
      formatLabelSelector({
        matchLabels: { b: "2", a: "1" },
        matchExpressions: [
          { key: "c", operator: "In", values: ["y", "x"] },
          { key: "aa", operator: "DoesNotExist" },
        ],
      }),
    ).toBe("a=1,!aa,b=2,c in (x,y)");
  });
  it("rc, hpa and pdb at their groups' paths (autoscaling/v2, policy/v1, core), with upstream's Table columns", async () => {
    const list = await (await get("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers")).json();
    expect(list).toMatchObject({ kind: "HorizontalPodAutoscalerList", apiVersion: "autoscaling/v2" });
    const t = await (await get("/apis/autoscaling/v2/horizontalpodautoscalers", TABLE)).json();
    expect(t.columnDefinitions.map((c: { name: string }) => c.name)).toEqual([
      "Name",
      "Reference",
      "Targets",
      "MinPods",
      "MaxPods",
      "Replicas",
      "Age",
    ]);
    expect(t.rows[0].cells.slice(0, 6)).toEqual(["web", "Deployment/web", "cpu: <unknown>/99%", "2", 4, 3]);
    const rcs = await (await get("/api/v1/namespaces/default/replicationcontrollers", TABLE)).json();
    expect(rcs.rows[0].cells.slice(0, 4)).toEqual(["redis-master", 1, 1, 1]);
    const pdbs = await (await get("/apis/policy/v1/namespaces/default/poddisruptionbudgets/zk-pdb", TABLE)).json();
    expect(pdbs.rows[0].cells.slice(0, 4)).toEqual(["zk-pdb", "N/A", "1", 0]);
  });
});
