// The e2e setup the sidecar, hook and pod-field suites share: the HTTP server with the node agent's loop and
// prober on the lab containerd (as on a node), and pods whose containers write what they see into a hostPath
// directory of the test's (mounted at /h), read back from the host.
import { chmodSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";
import { createProber } from "../../src/prober/prober.js";
import { startReconcileLoop, type ReconcileLoop } from "../../src/syncloop/sync-loop.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { MemoryPodLock } from "../../src/kuberuntime/pod-lock.js";
import type { V1Pod } from "../../src/status/api-status.js";
import { nodeLogFiles } from "../../src/host/logs/log-files.js";
import { nodeTerminationFiles } from "../../src/host/volumes/termination-files.js";
import { nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { nodeProbeNetwork } from "../../src/host/probe-network.js";
import { nodeVolumeHost } from "../../src/host/volumes/volume-host.js";
import { nodeDiskUsage } from "../../src/host/metrics/disk-usage.js";
import { Harness } from "./http.js";
import { uid, deleteAll } from "./pods.js";

export const IMAGE = "localhost/busybox:1";

/** A directory of the test's, world-writable, for a pod's hostPath volume "h". */
export function hostDir(): string {
  const d = mkdtempSync(join(tmpdir(), "podsync-h-"));
  chmodSync(d, 0o777);
  return d;
}
export const readIn = (dir: string, f: string) =>
  existsSync(join(dir, f)) ? readFileSync(join(dir, f), "utf8") : undefined;
/** A busybox container running `script` with the test's directory at /h. */
export const shContainer = (name: string, script: string, extra: Record<string, unknown> = {}) => ({
  name,
  image: IMAGE,
  imagePullPolicy: "Never",
  command: ["sh", "-c", script],
  volumeMounts: [{ name: "h", mountPath: "/h" }],
  ...extra,
});

export interface StepsBody {
  steps: { action: string; target: string; ok: boolean; error?: string; message?: string }[];
}

export interface HostDirPods {
  cri: CriClient;
  /** A pod named `name` with a fresh uid and the hostPath volume "h" on `dir`. */
  podInput(
    name: string,
    dir: string,
    spec: Record<string, unknown>,
  ): { metadata: { name: string; namespace: string; uid: string }; spec: Record<string, unknown> };
  sync(p: unknown): Promise<StepsBody>;
  get(id: string): Promise<V1Pod>;
  del(id: string): Promise<StepsBody>;
  close(): Promise<void>;
}

export async function startHostDirPods(endpoint: string): Promise<HostDirPods> {
  const cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
  const node = {
    ...defaultNodeConfig(),
    podLogsDir: mkdtempSync(join(tmpdir(), "podsync-h-logs-")),
    rootDir: mkdtempSync(join(tmpdir(), "podsync-h-root-")),
  };
  const runtimeOpts: PodRuntimeOptions = {
    node,
    logFiles: nodeLogFiles,
    terminationFiles: nodeTerminationFiles,
    podDirs: nodePodDirs,
    volumeHost: nodeVolumeHost,
    hookNetwork: nodeProbeNetwork,
    localStorageLimits: true,
    hostIPs: ["127.0.0.1"],
    lock: new MemoryPodLock(),
  };
  const prober = createProber({ cri, network: nodeProbeNetwork, hostIP: "127.0.0.1" });
  const desired = new MemoryDesiredState();
  // One engine for the server and the loop, as on a node (the eviction manager's verdicts live in it).
  const engine = createPodRuntime(cri, runtimeOpts);
  const h = await Harness.start(
    cri,
    { prober, desired, policy: { level: "privileged", hostPathAllow: [] }, runtime: engine },
    {},
    runtimeOpts,
  );
  const loop: ReconcileLoop = startReconcileLoop({
    runtime: engine,
    cri,
    desired,
    prober,
    relistIntervalMs: 200,
    eviction: { cri, disk: nodeDiskUsage, node, intervalMs: 500, volumeStatsAggPeriodMs: 500, recreateAfterMs: 1000 },
  });
  const made: string[] = [];
  const auth = async (act: string, id: string) => ({ authorization: `Bearer ${await h.sign({ act, uid: id })}` });
  return {
    cri,
    podInput(name, dir, spec) {
      const id = uid(name);
      made.push(id);
      return {
        metadata: { name, namespace: "default", uid: id },
        spec: { terminationGracePeriodSeconds: 10, volumes: [{ name: "h", hostPath: { path: dir } }], ...spec },
      };
    },
    async sync(p) {
      const r = await h.post("/v1/pods/sync", p);
      expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
      return r.body as StepsBody;
    },
    async get(id) {
      const r = await h.fetch(`/v1/pods/${id}`, { headers: await auth("status", id) });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body as V1Pod;
    },
    async del(id) {
      const r = await h.fetch(`/v1/pods/${id}`, { method: "DELETE", headers: await auth("delete", id) });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body as StepsBody;
    },
    async close() {
      await loop.stop();
      const rt = createPodRuntime(cri, runtimeOpts);
      await deleteAll(rt, made);
      await h.close();
      cri.close();
    },
  };
}

/** The suite's pods, for one describe block: the harness starts before its tests and stops after them. */
export function hostDirSuite(): Pick<HostDirPods, "podInput" | "sync" | "get" | "del"> {
  const endpoint = inject("criEndpoint");
  const setupError = inject("criError");
  let t: HostDirPods | undefined;
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    t = await startHostDirPods(endpoint);
  });
  afterAll(async () => t?.close());
  return {
    podInput: (...a) => t!.podInput(...a),
    sync: (p) => t!.sync(p),
    get: (id) => t!.get(id),
    del: (id) => t!.del(id),
  };
}
