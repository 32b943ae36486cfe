// Partial application and the kinds of round 4 (issue #35 items 4 and 5): custom resources skipped with a warning
// (PODSYNC_UNKNOWN_KINDS=refuse makes them a 400), the nulls a Go client writes read as absent, missing objects a
// warning instead of a refusal, generateName completed, ReplicationController through the ReplicaSet step
// (pkg/controller/replication), and the PodDisruptionBudget status with the rows of
// pkg/controller/disruption/disruption_test.go (TestNoSelector, TestReplicationController, TestStatefulSetController,
// TestTwoControllers' counts, TestIntegerMaxUnavailable, a DaemonSet's pods: found no controllers).
import { describe, expect, it } from "vitest";
import { bodyFromDocuments } from "../../../src/pod/bundle.js";
import { InvalidPodError } from "../../../src/pod/validate.js";
import { withoutNulls } from "../../../src/pod/nulls.js";
import { syncReplicationController } from "../../../src/controllers/replication/sync.js";
import { pdbStatus, type ScaledController } from "../../../src/controllers/disruption/sync.js";
import { controllerRef, type ObservedPod } from "../../../src/controllers/pods.js";
import { makePod } from "../../../src/pod/workloads/template.js";
import { PodDisruptionBudget, ReplicationController } from "../../../src/pod/workloads/schema.js";
import type { V1PodStatus } from "../../../src/status/api-status.js";
import { errorsOf } from "../../support/pods.js";

const node = { nodeName: "node-a", serviceAccountTokens: "drop" as const };
const NOW = Date.parse("2026-01-01T00:00:00Z");
const container = { name: "c", image: "localhost/busybox:1" };
const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web" },
  spec: {
    selector: { matchLabels: { app: "web" } },
    template: { metadata: { labels: { app: "web" } }, spec: { containers: [container] } },
  },
};
const rule = {
  apiVersion: "monitoring.coreos.com/v1",
  kind: "PrometheusRule",
  metadata: { name: "alerts" },
  spec: { groups: [] },
};

describe("custom resources", () => {
  it("a file with a PrometheusRule and a Deployment: the Deployment is taken, the rule skipped with a warning", () => {
    const b = bodyFromDocuments([rule, deployment, { ...rule, kind: "ServiceMonitor", metadata: {} }], node);
    expect(b.workloads.map((w) => w.workload.kind)).toEqual(["Deployment"]);
    expect(b.warnings).toEqual([
      'documents[0]: skipped: custom resource monitoring.coreos.com/v1 PrometheusRule "alerts" (a node runs no operator for it; PODSYNC_UNKNOWN_KINDS=refuse refuses such a file)',
      "documents[2]: skipped: custom resource monitoring.coreos.com/v1 ServiceMonitor (a node runs no operator for it; PODSYNC_UNKNOWN_KINDS=refuse refuses such a file)",
    ]);
  });
  it("PODSYNC_UNKNOWN_KINDS=refuse: the file is a 400 naming the document", () => {
    expect(errorsOf(() => bodyFromDocuments([rule, deployment], { ...node, unknownKinds: "refuse" }))).toEqual([
      {
        path: "documents[0].kind",
        message: expect.stringContaining(
          'monitoring.coreos.com/v1 PrometheusRule "alerts" is not a Kubernetes kind podsync knows',
        ),
      },
    ]);
  });
  it("a document of no API at all is still refused", () => {
    expect(() => bodyFromDocuments([{ apiVersion: "v1beta", kind: "Thing" }, deployment], node)).toThrow(
      InvalidPodError,
    );
  });
});

describe("nulls (Go's encoding/json: a null field is an absent one)", () => {
  it("withoutNulls drops null fields at every depth, keeps list elements, copies", () => {
    const v = { a: null, b: { c: null, d: 1 }, e: [null, { f: null }] };
    expect(withoutNulls(v)).toEqual({ b: { d: 1 }, e: [null, {}] });
    expect(v.a).toBeNull();
  });
  it("a Helm-rendered ConfigMap (data: null) and a Deployment full of the nulls a Go client writes are taken", () => {
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg", labels: null }, data: null };
    const d = {
      ...deployment,
      metadata: { name: "web", labels: null, annotations: null, creationTimestamp: null },
      spec: {
        ...deployment.spec,
        strategy: {},
        template: {
          metadata: { labels: { app: "web" }, annotations: null, creationTimestamp: null },
          spec: {
            volumes: null,
            initContainers: null,
            containers: [{ ...container, env: null, ports: null, envFrom: null, resources: {}, volumeMounts: null }],
            nodeSelector: null,
            tolerations: null,
          },
        },
      },
      status: {},
    };
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", labels: null },
      spec: { containers: [{ ...container, args: null, command: null }], volumes: null, imagePullSecrets: null },
    };
    const b = bodyFromDocuments([cm, d, pod], node);
    expect(b.workloads).toHaveLength(1);
    expect(b.pods[0]!.objects.configMaps[0]!.metadata.name).toBe("cfg");
    expect(b.warnings).toEqual([]);
  });
  it("a required field that is null is still required", () => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p" },
      spec: { containers: [{ name: "c", image: null }] },
    };
    expect(errorsOf(() => bodyFromDocuments([pod], node))).toEqual([
      { path: "spec.containers[0].image", message: "Required value" },
    ]);
  });
});

describe("generateName", () => {
  const job = (args: string[]) => ({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { generateName: "migrate-" },
    spec: {
      template: { spec: { restartPolicy: "Never", containers: [{ ...container, args }] } },
    },
  });
  it("an object without a name gets generateName + 5 characters of the API server's alphabet", () => {
    const name = bodyFromDocuments([job(["a"])], node).workloads[0]!.workload.metadata.name;
    expect(name).toMatch(/^migrate-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    // The same document names the same object again (a re-apply converges); a changed one names a new object.
    expect(bodyFromDocuments([job(["a"])], node).workloads[0]!.workload.metadata.name).toBe(name);
    expect(bodyFromDocuments([job(["b"])], node).workloads[0]!.workload.metadata.name).not.toBe(name);
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { generateName: "p-" }, spec: { containers: [container] } };
    expect(bodyFromDocuments([pod], node).pods[0]!.pod.metadata.name).toMatch(/^p-[a-z0-9]{5}$/);
  });
  it("the base is cut to 58 characters; a name given wins", () => {
    const long = "x".repeat(70);
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { generateName: long }, spec: { containers: [container] } };
    expect(bodyFromDocuments([pod], node).pods[0]!.pod.metadata.name).toHaveLength(63);
    const named = { ...pod, metadata: { name: "given", generateName: "g-" } };
    expect(bodyFromDocuments([named], node).pods[0]!.pod.metadata.name).toBe("given");
  });
});

let seq = 0;
const ready = (r: boolean): V1PodStatus =>
  ({
    phase: "Running",
    conditions: [{ type: "Ready", status: r ? "True" : "False", lastProbeTime: null, lastTransitionTime: null }],
    containerStatuses: [],
    initContainerStatuses: [],
    qosClass: "BestEffort",
  }) as unknown as V1PodStatus;
function pod(
  labels: Record<string, string>,
  owner: { apiVersion: string; kind: string; metadata: { name: string; uid: string } } | undefined,
  isReady = true,
): ObservedPod {
  const p = makePod(
    { metadata: { labels }, spec: { containers: [container] } },
    {
      name: `p-${++seq}`,
      namespace: "default",
      uid: `uid-${seq}`,
      ...(owner ? { ownerReferences: [controllerRef(owner)] } : {}),
    },
  );
  return { pod: p, status: ready(isReady), createdAt: NOW - seq };
}

describe("ReplicationController (pkg/controller/replication: the ReplicaSet controller over a conversion)", () => {
  const rc = (replicas: number, selector?: Record<string, string>) =>
    ReplicationController.parse({
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "redis-master", uid: "rc-uid" },
      spec: {
        replicas,
        ...(selector ? { selector } : {}),
        template: { metadata: { labels: { app: "redis", role: "master" } }, spec: { containers: [container] } },
      },
    });
  it("SetDefaults_ReplicationController: the selector and the labels default to the template's labels", () => {
    const r = rc(1);
    expect(r.spec.selector).toEqual({ app: "redis", role: "master" });
    expect(r.metadata.labels).toEqual({ app: "redis", role: "master" });
    expect(rc(1, { app: "redis" }).spec.selector).toEqual({ app: "redis" });
  });
  it("makes replicas pods owned by the RC; scales down in ActivePodsWithRanks order", () => {
    let n = 0;
    const ctx = { now: NOW, nodeName: "node-a", suffix: () => `x${String(++n).padStart(4, "b")}`.slice(0, 5) };
    const up = syncReplicationController(rc(3), [], ctx);
    expect(up.create).toHaveLength(3);
    for (const p of up.create) {
      expect(p.metadata.name).toMatch(/^redis-master-[a-z0-9]{5}$/);
      expect(p.metadata.ownerReferences).toEqual([
        {
          apiVersion: "v1",
          kind: "ReplicationController",
          name: "redis-master",
          uid: "rc-uid",
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(p.metadata.labels).toEqual({ app: "redis", role: "master" });
    }
    const owner = {
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "redis-master", uid: "rc-uid" },
    };
    const pods = [pod({ app: "redis", role: "master" }, owner), pod({ app: "redis", role: "master" }, owner, false)];
    const down = syncReplicationController(rc(1), pods, ctx);
    expect(down.create).toEqual([]);
    expect(down.delete).toEqual([
      {
        uid: pods[1]!.pod.metadata.uid,
        name: pods[1]!.pod.metadata.name,
        reason: "ReplicationController redis-master scaled down to 1",
      },
    ]);
    expect(down.status).toEqual({ replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 1, availableReplicas: 1 });
  });
});

describe("PodDisruptionBudget status (pkg/controller/disruption)", () => {
  const labels = { foo: "bar" };
  const pdb = (spec: Record<string, unknown>) =>
    PodDisruptionBudget.parse({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "pdb" },
      spec,
    });
  const counts = (s: ReturnType<typeof pdbStatus>) => [
    s.disruptionsAllowed,
    s.currentHealthy,
    s.desiredHealthy,
    s.expectedPods,
  ];
  const ctrl = (kind: string, replicas: number, uid = `${kind}-uid`, owner?: ScaledController["owner"]) => ({
    meta: { apiVersion: kind === "ReplicationController" ? "v1" : "apps/v1", kind, metadata: { name: kind, uid } },
    scaled: { uid, kind, replicas, owner } as ScaledController,
  });
  const map = (...c: ScaledController[]) => new Map(c.map((x) => [x.uid, x]));

  it("TestNoSelector: an empty selector selects every pod of the namespace; no selector selects none", () => {
    const p = pdb({ minAvailable: 3, selector: {} });
    expect(counts(pdbStatus(p, [], map(), undefined, { now: NOW }))).toEqual([0, 0, 3, 0]);
    expect(counts(pdbStatus(p, [pod({ a: "b" }, undefined)], map(), undefined, { now: NOW }))).toEqual([0, 1, 3, 1]);
    expect(counts(pdbStatus(pdb({ minAvailable: 1 }), [pod({}, undefined)], map(), undefined, { now: NOW }))).toEqual([
      0, 0, 1, 0,
    ]);
  });
  it("TestReplicationController: 34% of 3 rounds up to 2; the RC's scale is the denominator", () => {
    const p = pdb({ minAvailable: "34%", selector: { matchLabels: labels } });
    const rc = ctrl("ReplicationController", 3);
    const pods: ObservedPod[] = [];
    expect(counts(pdbStatus(p, pods, map(rc.scaled), undefined, { now: NOW }))).toEqual([0, 0, 0, 0]);
    for (let i = 0; i < 3; i++) {
      pods.push(pod(labels, rc.meta));
      const s = pdbStatus(p, pods, map(rc.scaled), undefined, { now: NOW });
      expect(counts(s)).toEqual(i < 2 ? [0, i + 1, 2, 3] : [1, 3, 2, 3]);
      expect(s.conditions).toEqual([
        expect.objectContaining({
          type: "DisruptionAllowed",
          status: i < 2 ? "False" : "True",
          reason: i < 2 ? "InsufficientPods" : "SufficientPods",
        }),
      ]);
    }
  });
  it("TestStatefulSetController: 34% of a 3-replica StatefulSet", () => {
    const p = pdb({ minAvailable: "34%", selector: { matchLabels: labels } });
    const sts = ctrl("StatefulSet", 3);
    const pods = [pod(labels, sts.meta), pod(labels, sts.meta), pod(labels, sts.meta)];
    expect(counts(pdbStatus(p, pods, map(sts.scaled), undefined, { now: NOW }))).toEqual([1, 3, 2, 3]);
  });
  it("TestTwoControllers' counts: a Deployment's scale through its ReplicaSet; maxUnavailable rounds up", () => {
    const d = ctrl("Deployment", 4);
    const rs = ctrl("ReplicaSet", 4, "rs-uid", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "Deployment",
      uid: d.scaled.uid,
      controller: true,
    });
    const pods = [pod(labels, rs.meta), pod(labels, rs.meta), pod(labels, rs.meta), pod(labels, rs.meta, false)];
    // maxUnavailable 25% of 4 = 1: desiredHealthy 3, currentHealthy 3: nothing may go.
    expect(
      counts(
        pdbStatus(
          pdb({ maxUnavailable: "25%", selector: { matchLabels: labels } }),
          pods,
          map(d.scaled, rs.scaled),
          undefined,
          { now: NOW },
        ),
      ),
    ).toEqual([0, 3, 3, 4]);
    // TestIntegerMaxUnavailable: maxUnavailable 1 over 4 → desiredHealthy 3.
    expect(
      counts(
        pdbStatus(
          pdb({ maxUnavailable: 1, selector: { matchLabels: labels } }),
          pods.slice(0, 3).concat(pod(labels, rs.meta)),
          map(d.scaled, rs.scaled),
          undefined,
          { now: NOW },
        ),
      ),
    ).toEqual([1, 4, 3, 4]);
  });
  it("a pod whose controller has no scale (a DaemonSet's): the sync fails safe, disruptionsAllowed 0, SyncFailed", () => {
    const ds = { apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "ds", uid: "ds-uid" } };
    const s = pdbStatus(
      pdb({ maxUnavailable: 1, selector: { matchLabels: labels } }),
      [pod(labels, ds), pod(labels, ds)],
      map(),
      undefined,
      { now: NOW },
    );
    expect(s.disruptionsAllowed).toBe(0);
    expect(s.conditions).toEqual([
      expect.objectContaining({
        type: "DisruptionAllowed",
        status: "False",
        reason: "SyncFailed",
        message: expect.stringMatching(/^found no controllers for pod "p-\d+"$/),
      }),
    ]);
  });
  it("minAvailable and maxUnavailable together are refused", () => {
    expect(
      PodDisruptionBudget.safeParse({
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: { name: "x" },
        spec: { minAvailable: 1, maxUnavailable: 1 },
      }).success,
    ).toBe(false);
  });
});

describe("Table cells (printers.go: printReplicationController, printHorizontalPodAutoscaler, printPodDisruptionBudget)", () => {
  const meta = { name: "x", namespace: "default", uid: "u", creationTimestamp: new Date(NOW - 120_000).toISOString() };
  it("rc, hpa (formatHPAMetrics) and pdb rows; the CLI prints the same", async () => {
    const { workloadCells, WORKLOAD_COLUMNS } = await import("../../../src/kubeapi/kinds/workload-table.js");
    const rc = {
      apiVersion: "v1",
      kind: "ReplicationController" as const,
      metadata: meta,
      spec: {
        replicas: 2,
        selector: { role: "master", app: "redis" },
        template: { spec: { containers: [container] } },
      },
      status: { replicas: 2, readyReplicas: 1 },
    };
    expect(workloadCells(rc, NOW)).toEqual(["x", 2, 2, 1, "2m", "c", "localhost/busybox:1", "app=redis,role=master"]);
    const hpa = {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler" as const,
      metadata: meta,
      spec: {
        scaleTargetRef: { kind: "Deployment", name: "podinfo" },
        minReplicas: 2,
        maxReplicas: 4,
        metrics: [
          { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 99 } } },
          { type: "Resource", resource: { name: "memory", target: { type: "AverageValue", averageValue: "200Mi" } } },
        ],
      },
      status: {
        currentReplicas: 2,
        currentMetrics: [{ type: "Resource", resource: { name: "cpu", current: { averageUtilization: 3 } } }],
      },
    };
    expect(workloadCells(hpa, NOW)).toEqual([
      "x",
      "Deployment/podinfo",
      "cpu: 3%/99%, memory: <unknown>/200Mi",
      "2",
      4,
      2,
      "2m",
    ]);
    const pdb = {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget" as const,
      metadata: meta,
      spec: { minAvailable: "50%" },
      status: { disruptionsAllowed: 1 },
    };
    expect(workloadCells(pdb, NOW)).toEqual(["x", "50%", "N/A", 1, "2m"]);
    expect(WORKLOAD_COLUMNS.PodDisruptionBudget.map((c) => c.name)).toEqual([
      "Name",
      "Min Available",
      "Max Unavailable",
      "Allowed Disruptions",
      "Age",
    ]);
    const { findResource } = await import("../../../src/cli/resources/index.js");
    const r = (await findResource("hpa"))!;
    expect(r.header({ wide: false })).toEqual([
      "NAME",
      "REFERENCE",
      "TARGETS",
      "MINPODS",
      "MAXPODS",
      "REPLICAS",
      "AGE",
    ]);
    expect(await findResource("rc")).toBeDefined();
    expect(await findResource("pdb")).toBeDefined();
  });
});

describe("settings", () => {
  it("PODSYNC_UNKNOWN_KINDS warn|refuse (default warn); the HPA's sync period and downscale window default to upstream's", async () => {
    const { commonSettings } = await import("../../../src/settings/common.js");
    expect(commonSettings.PODSYNC_UNKNOWN_KINDS.parse(undefined)).toBe("warn");
    expect(commonSettings.PODSYNC_UNKNOWN_KINDS.parse("refuse")).toBe("refuse");
    expect(commonSettings.PODSYNC_UNKNOWN_KINDS.safeParse("skip").success).toBe(false);
    expect(commonSettings.PODSYNC_HPA_SYNC_PERIOD_MS.parse(undefined)).toBe(15_000);
    expect(commonSettings.PODSYNC_HPA_DOWNSCALE_STABILIZATION_MS.parse(undefined)).toBe(300_000);
  });
});
