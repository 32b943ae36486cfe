// Workloads through the Worker (workerd, started by wrangler) on the REAL containerd: the node's Durable Object
// stores them and runs the node-local controllers from its alarm, whose pods reach the node through its cri-proxy.
// A Deployment's replicas run, a Job completes; sync, PUT /v1/node/pods, GET and DELETE /v1/workloads as on Node.
// Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startProxy, type RunningProxy } from "../../src/proxy/cri-proxy.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { Harness, makeKey } from "../support/http.js";
import { startWorkerd, type Workerd } from "../support/workerd.js";
import { until } from "../support/wait.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const TOKEN = "workloads-proxy-token";
const NODE = "wl-node";
const ns = `wlw-${Date.now().toString(36)}`;

let proxy: RunningProxy;
let worker: Workerd;
let base: URL;
let signer: Harness;
let cri: CriClient;

// hostNetwork keeps the pods on loopback (no CNI on the shared containerd).
const podSpec = (command: string[], extra: Record<string, unknown> = {}) => ({
  hostNetwork: true,
  terminationGracePeriodSeconds: 1,
  containers: [{ name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command }],
  ...extra,
});
const deployment = (replicas: number) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: ns },
  spec: {
    replicas,
    selector: { matchLabels: { app: "web" } },
    template: { metadata: { labels: { app: "web" } }, spec: podSpec(["sleep", "3600"]) },
  },
});
const job = {
  apiVersion: "batch/v1",
  kind: "Job",
  metadata: { name: "once", namespace: ns },
  spec: { completions: 1, template: { spec: podSpec(["true"], { restartPolicy: "Never" }) } },
};

async function call(method: string, path: string, init: { jose?: string; bearer?: string }) {
  const headers: Record<string, string> = init.bearer
    ? { authorization: `Bearer ${init.bearer}` }
    : { "content-type": "application/jose" };
  const r = await fetch(new URL(`/nodes/${NODE}${path}`, base), {
    method,
    headers,
    ...(init.jose ? { body: init.jose } : {}),
  });
  return { status: r.status, body: (await r.json()) as any };
}
const status = async () => signer.sign({ act: "status" }, { aud: NODE });
const workloads = async (kind: string) =>
  ((await call("GET", `/v1/workloads?kind=${kind}`, { bearer: await status() })).body.items as any[]).filter(
    (w) => w.metadata.namespace === ns,
  );
const podsOf = async (prefix: string) =>
  ((await call("GET", "/v1/pods", { bearer: await status() })).body.items as any[]).filter(
    (p) => p.metadata.namespace === ns && p.metadata.name.startsWith(prefix),
  );
/** The containers the runtime itself runs for this namespace's pods whose names start so. */
const running = async (prefix: string) =>
  (await cri.listContainers({})).containers.filter(
    (c) =>
      c.labels["io.kubernetes.pod.namespace"] === ns &&
      c.labels["io.kubernetes.pod.name"]?.startsWith(prefix) &&
      c.state === 1,
  ).length;

describe.skipIf(skip)(
  "workloads through the Worker in workerd, run by the node object's alarm on the real containerd",
  () => {
    beforeAll(async () => {
      if (!endpoint) throw new Error(`no containerd for the Worker workloads e2e: ${setupError}`);
      cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
      proxy = await startProxy({
        upstream: endpoint,
        grpcWebListen: "127.0.0.1:0",
        token: TOKEN,
        log: () => undefined,
        policy: { level: "privileged", hostPathAllow: [] },
      });
      const key = await makeKey("EdDSA", "wlw-1");
      signer = new Harness([key], undefined as never);
      ({ worker, base } = await startWorkerd({
        nodes: { [NODE]: { url: `http://127.0.0.1:${proxy.grpcWebPort}` } },
        jwk: key.publicJwk,
        proxyToken: TOKEN,
        env: { PODSYNC_POLICY: "privileged", PODSYNC_RELIST_INTERVAL_MS: "500" },
      }));
    }, 120_000);

    afterAll(async () => {
      // Empty the node's set (pods and workloads) through the Worker, then make sure nothing is left on the runtime.
      const gen = Number(
        (
          await call("GET", "/v1/pods", { bearer: await status() }).catch(() => ({
            body: { metadata: { resourceVersion: "0" } },
          }))
        ).body.metadata.resourceVersion,
      );
      await call("PUT", "/v1/node/pods", {
        jose: await signer.sign({ act: "apply", generation: gen + 1, pods: [] }, { aud: NODE }),
      }).catch(() => undefined);
      await worker?.dispose();
      await proxy?.shutdown(100);
      if (cri) {
        const rt = createPodRuntime(cri);
        for (const s of (await cri.listPodSandbox({})).items.filter((x) => x.metadata?.namespace === ns))
          await rt.delete(s.metadata!.uid, 0).catch(() => undefined);
        cri.close();
      }
    }, 60_000);

    it("a Deployment's replicas reach the node (sync, then scaled by PUT); a Job completes; DELETE /v1/workloads removes its pods", async () => {
      const r = await call("POST", "/v1/pods/sync", {
        jose: await signer.sign({ act: "sync", items: [deployment(2), job] }, { aud: NODE }),
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.workloads).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ kind: "Deployment", name: "web" }),
          expect.objectContaining({ kind: "Job", name: "once" }),
        ]),
      );

      await until(
        "the Deployment's 2 replicas available",
        async () => (await workloads("Deployment"))[0]?.status.availableReplicas === 2,
      );
      const rs = (await workloads("ReplicaSet"))[0];
      expect(rs.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: "Deployment", name: "web", controller: true }),
      ]);
      const pods = await podsOf("web-");
      expect(pods.map((p) => p.status.phase)).toEqual(["Running", "Running"]);
      for (const p of pods) expect(p.metadata.name).toMatch(new RegExp(`^${rs.metadata.name}-[a-z0-9]{5}$`));
      expect(await running("web-")).toBe(2);

      const done = await until("the Job to complete", async () => {
        const j = (await workloads("Job"))[0];
        return (
          j?.status.succeeded === 1 &&
          j.status.conditions?.some((c: any) => c.type === "Complete" && c.status === "True") &&
          j
        );
      });
      expect(done.status).toMatchObject({ succeeded: 1, failed: 0 });

      // The node's whole set by PUT, with workloads as on Node: the Deployment at 3 replicas, the Job kept.
      const gen = Number((await call("GET", "/v1/pods", { bearer: await status() })).body.metadata.resourceVersion);
      const put = await call("PUT", "/v1/node/pods", {
        jose: await signer.sign({ act: "apply", generation: gen + 1, pods: [deployment(3), job] }, { aud: NODE }),
      });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      await until(
        "3 replicas running on the node",
        async () => (await workloads("Deployment"))[0]?.status.availableReplicas === 3 && (await running("web-")) === 3,
      );

      const uid = (await workloads("Deployment"))[0].metadata.uid as string;
      const del = await call("DELETE", `/v1/workloads/${uid}`, {
        bearer: await signer.sign({ act: "delete", uid }, { aud: NODE }),
      });
      expect(del.status, JSON.stringify(del.body)).toBe(200);
      await until(
        "the Deployment's pods and ReplicaSet to go",
        async () =>
          (await podsOf("web-")).length === 0 &&
          (await workloads("ReplicaSet")).length === 0 &&
          (await running("web-")) === 0,
        60_000,
      );
    }, 180_000);
  },
);
