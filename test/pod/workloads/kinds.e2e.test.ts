// Issue #35 items 4 and 5 on the REAL containerd, run by the node's controllers in the reconcile loop: a file with
// a custom resource and a Deployment runs the Deployment and warns; a pod waiting for a Secret
// (CreateContainerConfigError, kubelet's words) starts when a later sync brings it, and so do a Deployment's pods;
// a ReplicationController runs and scales; an HPA scales a CPU-burning Deployment from 1 to 3 replicas and back
// to 1 within its (short, test) stabilization window, from the runtime's CPU stats. Fails, never skips, without a
// runtime.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../../src/cri/grpc-transport.js";
import type { CriClient } from "../../../src/cri/client.js";
import { MemoryPullBackOff } from "../../../src/container/backoff.js";
import { defaultNodeConfig } from "../../../src/container/node-config.js";
import { createPodRuntime, type PodRuntime } from "../../../src/kubelet/pod-runtime.js";
import { nodeVolumeHost } from "../../../src/host/volumes/volume-host.js";
import { nodePodDirs } from "../../../src/host/volumes/pod-dirs.js";
import { FileDesiredState } from "../../../src/state/desired-pods.js";
import { FileWorkloadStore } from "../../../src/state/workloads.js";
import { importSealKey, newSealKeyBytes } from "../../../src/state/secret-seal.js";
import { createControllers } from "../../../src/controllers/run.js";
import { criPodUsage } from "../../../src/controllers/podautoscaler/metrics.js";
import { startReconcileLoop, type ReconcileLoop } from "../../../src/syncloop/sync-loop.js";
import { Harness, NODE } from "../../support/http.js";
import { until } from "../../support/wait.js";
import { deleteAll } from "../../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const root = mkdtempSync(join(tmpdir(), "podsync-kinds-e2e-"));
const ns = `kinds-${Date.now().toString(36)}`;
let cri: CriClient;
let rt: PodRuntime;
let h: Harness;
let loop: ReconcileLoop | undefined;
let controllers: ReturnType<typeof createControllers>;
const desired = new FileDesiredState(root);
const key = importSealKey(newSealKeyBytes());
const workloads = new FileWorkloadStore(root, () => key);
const node = {
  name: NODE,
  labels: { "kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux" },
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
const podSpec = (command: string[], extra: Record<string, unknown> = {}, c: Record<string, unknown> = {}) => ({
  hostNetwork: true,
  terminationGracePeriodSeconds: 1,
  containers: [container(command, c)],
  ...extra,
});

const sync = async (items: unknown[]) => {
  const r = await h.fetch("/v1/pods/sync", {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body: await h.sign({ act: "sync", items }),
  });
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body;
};
const bearer = async (claims: Record<string, unknown>) => ({ authorization: `Bearer ${await h.sign(claims)}` });
const listWorkloads = async (kind: string) =>
  (await h.fetch(`/v1/workloads?kind=${kind}`, { headers: await bearer({ act: "status" }) })).body.items as any[];
const workload = async (kind: string, name: string) =>
  (await listWorkloads(kind)).find((w) => w.metadata.name === name && w.metadata.namespace === ns);
const allPods = async () =>
  ((await h.fetch("/v1/pods", { headers: await bearer({ act: "status" }) })).body.items as any[]).filter(
    (p) => p.metadata.namespace === ns,
  );
const podsOf = async (prefix: string) => (await allPods()).filter((p) => p.metadata.name.startsWith(prefix));
const remove = async (kind: string, name: string) => {
  const w = await workload(kind, name);
  const r = await h.fetch(`/v1/workloads/${w.metadata.uid}`, {
    method: "DELETE",
    headers: await bearer({ act: "delete", uid: w.metadata.uid }),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
};
const running = (pods: any[]) =>
  pods.filter((p) => p.status?.phase === "Running" && p.status?.containerStatuses?.[0]?.state?.running);

describe.skipIf(skip)("kinds and partial application on real containerd", () => {
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
    controllers = createControllers({
      workloads,
      desired,
      runtime: rt,
      nodeName: NODE,
      node,
      podUsage: criPodUsage(cri),
      // Short windows for the test (the settings' defaults are upstream's: 15 s, 5 min).
      autoscaler: { syncPeriodMs: 1000, cpuInitializationPeriodMs: 0, delayOfInitialReadinessStatusMs: 0 },
    });
    loop = startReconcileLoop({ runtime: rt, cri, desired, controllers, relistIntervalMs: 300 });
  });
  afterAll(async () => {
    await loop?.stop();
    await controllers?.settle();
    await deleteAll(
      rt,
      (await desired.list()).map((e) => e.pod.metadata.uid),
    );
    await h?.close();
    cri?.close();
    if (!readFileSync("/proc/self/mountinfo", "utf8").includes(root)) rmSync(root, { recursive: true, force: true });
  });

  it("a file with a custom resource and a Deployment runs the Deployment and warns for the rule", async () => {
    const body = await sync([
      {
        apiVersion: "monitoring.coreos.com/v1",
        kind: "PrometheusRule",
        metadata: { name: "alerts", namespace: ns },
        spec: { groups: [] },
      },
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "cr", namespace: ns, labels: null },
        spec: {
          selector: { matchLabels: { app: "cr" } },
          template: { metadata: { labels: { app: "cr" } }, spec: podSpec(["sleep", "3600"], { volumes: null }) },
        },
      },
    ]);
    expect(body.warnings).toEqual([
      expect.stringContaining("skipped: custom resource monitoring.coreos.com/v1 PrometheusRule"),
    ]);
    await until("the Deployment's pod to run", async () => running(await podsOf("cr-")).length === 1);
    await remove("Deployment", "cr");
    await until("cr's pods to go", async () => (await podsOf("cr-")).length === 0);
  });

  it("a pod waiting for a Secret (CreateContainerConfigError) starts when a later sync brings it; so do a Deployment's", async () => {
    const env = [{ name: "PW", valueFrom: { secretKeyRef: { name: "db", key: "password" } } }];
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "waits", namespace: ns },
      spec: podSpec(["sh", "-c", 'echo "pw=$PW"; sleep 3600'], {}, { env }),
    };
    const dep = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "needs-db", namespace: ns },
      spec: {
        selector: { matchLabels: { app: "needs-db" } },
        template: {
          metadata: { labels: { app: "needs-db" } },
          spec: podSpec(["sh", "-c", "sleep 3600"], {}, { env }),
        },
      },
    };
    const first = await sync([pod]);
    expect(first.warnings).toEqual([
      expect.stringContaining(
        'spec.containers[0].env[0].valueFrom.secretKeyRef.name: Secret "db" is not in the signed body',
      ),
    ]);
    await sync([dep]);
    const waiting = (p: any) => p?.status?.containerStatuses?.[0]?.state?.waiting;
    await until("the pod to wait with kubelet's reason", async () => {
      const w = waiting((await podsOf("waits"))[0]);
      return w?.reason === "CreateContainerConfigError" && w.message === 'secret "db" not found';
    });
    await until(
      "the Deployment's pod to wait too",
      async () => waiting((await podsOf("needs-db-"))[0])?.reason === "CreateContainerConfigError",
    );
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db", namespace: ns },
      stringData: { password: "s3cret" },
    };
    await sync([secret, pod]);
    await sync([secret, dep]);
    await until("the pod to run", async () => running(await podsOf("waits")).length === 1);
    await until("the Deployment's pod to run", async () => running(await podsOf("needs-db-")).length === 1);
    await remove("Deployment", "needs-db");
  });

  it("a ReplicationController runs and scales (guestbook-go's redis-master shape)", async () => {
    const rc = (replicas: number) => ({
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "redis-master", namespace: ns },
      spec: {
        replicas,
        template: { metadata: { labels: { app: "redis", role: "master" } }, spec: podSpec(["sleep", "3600"]) },
      },
    });
    await sync([rc(1)]);
    const ready = (n: number) =>
      until(`redis-master: ${n} ready`, async () => {
        const w = await workload("ReplicationController", "redis-master");
        const pods = running(await podsOf("redis-master-"));
        return (
          w?.status.readyReplicas === n &&
          w.status.replicas === n &&
          pods.length === n &&
          (await podsOf("redis-master-")).length === n && { w, pods }
        );
      });
    const one = await ready(1);
    expect(one.w.spec.selector).toEqual({ app: "redis", role: "master" });
    expect(one.pods[0].metadata.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: "v1",
        kind: "ReplicationController",
        name: "redis-master",
        controller: true,
      }),
    ]);
    await sync([rc(3)]);
    await ready(3);
    await sync([rc(1)]);
    await ready(1);
    await remove("ReplicationController", "redis-master");
    await until("redis-master's pods to go", async () => (await podsOf("redis-master-")).length === 0);
  });

  it("an HPA scales a CPU-burning Deployment from 1 to 3 replicas and back to 1 within its stabilization window", async () => {
    // Each pod burns a core for a few seconds after it starts, then idles: 1 → 3 while the first burns, back to 1
    // once all idle and the (test) scale-down window of 3 s has passed.
    const burn = 'end=$(( $(date +%s) + 6 )); while [ "$(date +%s)" -lt "$end" ]; do :; done; exec sleep 3600';
    const dep = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "burner", namespace: ns },
      spec: {
        selector: { matchLabels: { app: "burner" } },
        template: {
          metadata: { labels: { app: "burner" } },
          spec: podSpec(["sh", "-c", burn], {}, { resources: { requests: { cpu: "100m" } } }),
        },
      },
    };
    const hpa = {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "burner", namespace: ns },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "burner" },
        minReplicas: 1,
        maxReplicas: 3,
        metrics: [
          { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } } },
        ],
        behavior: { scaleDown: { stabilizationWindowSeconds: 3 } },
      },
    };
    await sync([dep, hpa]);
    const up = await until(
      "the HPA to scale burner to 3",
      async () => {
        const d = await workload("Deployment", "burner");
        return d?.spec.replicas === 3 && d;
      },
      60_000,
      200,
    );
    expect(up.metadata.generation).toBeGreaterThan(1);
    const h3 = await workload("HorizontalPodAutoscaler", "burner");
    expect(h3.status.desiredReplicas).toBe(3);
    expect(h3.status.conditions).toContainEqual(expect.objectContaining({ type: "ScalingActive", status: "True" }));
    await until("3 burner pods", async () => (await podsOf("burner-")).length === 3, 30_000);
    const down = await until(
      "the HPA to scale burner back to 1",
      async () => {
        const d = await workload("Deployment", "burner");
        return d?.spec.replicas === 1 && (await workload("HorizontalPodAutoscaler", "burner"));
      },
      90_000,
      200,
    );
    expect(down.status.currentMetrics[0].resource.current.averageUtilization).toBeLessThan(50);
    await until("1 burner pod", async () => (await podsOf("burner-")).length === 1, 30_000);
    await remove("HorizontalPodAutoscaler", "burner");
    await remove("Deployment", "burner");
  });
});
