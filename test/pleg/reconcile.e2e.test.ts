// The node agent's reconcile loop on REAL containerd, with nobody calling: a container SIGKILLed behind
// podsync's back (ctr) comes back; crash-loop back-off holds under the loop; another tool's pod is never
// touched; a desired pod with no sandbox is made at start-up; and after containerd is stopped, its tasks
// killed and containerd started again, every desired pod comes back as a new sandbox attempt. That last one
// runs on a lab containerd of its own (scripts/containerd-lab.sh with PODSYNC_LAB_DIR), never the shared one.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { ContainerState, NamespaceMode, PodSandboxState } from "../../src/gen/runtime/v1/api_pb.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { startReconcileLoop, type ReconcileLoop } from "../../src/syncloop/sync-loop.js";
import { Pod } from "../../src/pod/schema.js";
import { startNode } from "../../src/node.js";
import { importJWK, SignJWT, type JWK } from "jose";
import { until } from "../support/wait.js";
import { ownLab } from "../support/own-lab.js";
import { uid, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const node = {
  ...defaultNodeConfig(),
  podLogsDir: mkdtempSync(join(tmpdir(), "podsync-loop-logs-")),
  rootDir: mkdtempSync(join(tmpdir(), "podsync-loop-root-")),
};
const runtimeOpts: PodRuntimeOptions = { node };

const podOf = (name: string, command: string[], extra: Record<string, unknown> = {}) =>
  Pod.parse({
    metadata: { name, namespace: "default", uid: uid(name) },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command }],
      ...extra,
    },
  });
const entry = (pod: Pod) => ({ pod, audit: { iss: "test", iat: 0 }, storedAt: Date.now() });
const sockOf = (ep: string) => ep.replace(/^unix:\/\//, "");
const ctr = (sock: string, ...args: string[]) =>
  execFileSync("ctr", ["-a", sock, "--connect-timeout", "3s", "-n", "k8s.io", ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });

async function containers(cri: CriClient, podUid: string) {
  const r = await cri.listContainers({ filter: { labelSelector: { "io.kubernetes.pod.uid": podUid } } });
  return r.containers.sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
}
const running = async (cri: CriClient, podUid: string) =>
  (await containers(cri, podUid)).filter((c) => c.state === ContainerState.CONTAINER_RUNNING);
const restartCount = (c: { annotations: Record<string, string> }) =>
  Number(c.annotations["io.kubernetes.container.restartCount"]);

describe.skipIf(skip)("the reconcile loop on the shared lab containerd", () => {
  let cri: CriClient;
  let loop: ReconcileLoop;
  const desired = new MemoryDesiredState();
  const logs: Record<string, unknown>[] = [];
  const made: string[] = [];
  let foreign: string | undefined;

  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
  });
  afterAll(async () => {
    await loop?.stop();
    const rt = createPodRuntime(cri, runtimeOpts);
    await deleteAll(rt, made);
    if (foreign) {
      await cri.stopPodSandbox({ podSandboxId: foreign }).catch(() => undefined);
      await cri.removePodSandbox({ podSandboxId: foreign }).catch(() => undefined);
    }
    cri?.close();
  });

  it("start-up: a desired pod with no sandbox is made by the loop, with no request", async () => {
    const p = podOf("loop-kill", ["sleep", "3600"]);
    const crash = podOf("loop-crash", ["sh", "-c", "exit 1"]);
    made.push(p.metadata.uid, crash.metadata.uid);
    await desired.put(entry(p));
    await desired.put(entry(crash));
    expect(await containers(cri, p.metadata.uid)).toEqual([]);
    loop = startReconcileLoop({
      runtime: createPodRuntime(cri, runtimeOpts),
      cri,
      desired,
      relistIntervalMs: 1000,
      log: (r) => logs.push(r),
    });
    const [c] = await until("the loop to start the pod", async () => {
      const r = await running(cri, p.metadata.uid);
      return r.length === 1 && r;
    });
    expect(restartCount(c!)).toBe(0);
  });

  it("SIGKILL behind podsync's back (ctr tasks kill) under restartPolicy Always: the loop restarts it within 3 s, restartCount up", async () => {
    const uidOf = (await desired.list()).find((e) => e.pod.metadata.name === "loop-kill")!.pod.metadata.uid;
    const [before] = await running(cri, uidOf);
    ctr(sockOf(endpoint), "tasks", "kill", "-s", "SIGKILL", before!.id);
    const t0 = Date.now();
    const [after] = await until(
      "the loop to restart the killed container",
      async () => {
        const r = await running(cri, uidOf);
        return r.length === 1 && r[0]!.id !== before!.id && r;
      },
      3000,
    );
    logs.push({ restartedInMs: Date.now() - t0 });
    expect(restartCount(after!)).toBe(1);
  });

  it("back-off holds under the loop: the first crash restarts at once, the next waits out its 10 s, not a restart per relist", async () => {
    const uidOf = (await desired.list()).find((e) => e.pod.metadata.name === "loop-crash")!.pod.metadata.uid;
    // The first instance exits at once; the loop restarts it without back-off (restartCount 1), which exits too.
    await until("the first restart to exit", async () => {
      const c = await containers(cri, uidOf);
      return c.length === 2 && c.every((x) => x.state === ContainerState.CONTAINER_EXITED) && c;
    });
    const before = await containers(cri, uidOf);
    expect(restartCount(before[0]!)).toBe(1);
    // Several relists inside the 10 s back-off: nothing new is started.
    await new Promise((r) => setTimeout(r, 4000));
    const still = await containers(cri, uidOf);
    expect(still.map((c) => c.id)).toEqual(before.map((c) => c.id));
    // The engine's view agrees: waiting in CrashLoopBackOff.
    const st = await createPodRuntime(cri, runtimeOpts).apiStatus(uidOf, (await desired.get(uidOf))!.pod);
    expect(st!.apiStatus.containerStatuses[0]!.state.waiting).toMatchObject({ reason: "CrashLoopBackOff" });
  });

  it("a foreign pod made with plain CRI calls, without podsync's labels, survives every relist, also once its task died", async () => {
    const name = `foreign-${process.pid}-${Date.now().toString(36)}`;
    const meta = { name, namespace: "other-tool", uid: uid("foreign"), attempt: 0 };
    const linux = { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } };
    foreign = (await cri.runPodSandbox({ config: { metadata: meta, labels: { app: "other-tool" }, linux } }))
      .podSandboxId;
    const c = await cri.createContainer({
      podSandboxId: foreign,
      config: {
        metadata: { name: "x", attempt: 0 },
        image: { image: "localhost/busybox:1" },
        command: ["sleep", "3600"],
        labels: { app: "other-tool" },
      },
      sandboxConfig: { metadata: meta, labels: { app: "other-tool" }, linux },
    });
    await cri.startContainer({ containerId: c.containerId });
    ctr(sockOf(endpoint), "tasks", "kill", "-s", "SIGKILL", c.containerId);
    await new Promise((r) => setTimeout(r, 3000)); // three relists
    const list = await cri.listContainers({ filter: { podSandboxId: foreign } });
    expect(list.containers.map((x) => [x.id, x.state])).toEqual([[c.containerId, ContainerState.CONTAINER_EXITED]]);
    const sb = await cri.podSandboxStatus({ podSandboxId: foreign });
    expect(sb.status!.state).toBe(PodSandboxState.SANDBOX_READY);
  });
});

describe.skipIf(skip)("the reconcile loop after a containerd restart (a lab of its own)", () => {
  const own = ownLab("loop");
  const lab = own.dir;
  let cri: CriClient;
  let loop: ReconcileLoop | undefined;

  beforeAll(() => {
    const r = own.start();
    if (r.status !== 0) throw new Error(`own lab did not start: ${r.stderr}`);
    cri = connectGrpc({ endpoint: `unix://${own.sock}`, timeoutMs: 30_000 });
  }, 320_000);
  afterAll(async () => {
    await loop?.stop();
    cri?.close();
    own.stop();
  }, 120_000);

  it("stop containerd, kill its tasks, start it again: every desired pod comes back with a new sandbox attempt", async () => {
    const sock = `${lab}/containerd.sock`;
    const desired = new MemoryDesiredState();
    const pods = [podOf("boot-a", ["sleep", "3600"]), podOf("boot-b", ["sleep", "3600"])];
    for (const p of pods) await desired.put(entry(p));
    loop = startReconcileLoop({ runtime: createPodRuntime(cri, runtimeOpts), cri, desired, relistIntervalMs: 1000 });
    for (const p of pods)
      await until(`${p.metadata.name} to run`, async () => (await running(cri, p.metadata.uid)).length === 1);

    // The node goes down hard: containerd stops, every task and shim of this lab dies.
    const pids = ctr(sock, "tasks", "ls")
      .split("\n")
      .slice(1)
      .map((l) => Number(l.trim().split(/\s+/)[1]))
      .filter((n) => n > 0);
    expect(pids.length).toBeGreaterThanOrEqual(4); // two pods: a pause and an app task each
    const containerd = Number(readFileSync(`${lab}/containerd.pid`, "utf8"));
    process.kill(containerd, "SIGKILL");
    const shims = readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return (
            readFileSync(`/proc/${d}/cmdline`, "utf8").includes(sock) &&
            readFileSync(`/proc/${d}/cmdline`, "utf8").includes("containerd-shim")
          );
        } catch {
          return false;
        }
      })
      .map(Number);
    for (const pid of [...pids, ...shims])
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    await new Promise((r) => setTimeout(r, 1500)); // the loop's relists fail meanwhile
    const r = own.start();
    expect(r.status, r.stderr).toBe(0);

    for (const p of pods) {
      const sb = await until(
        `${p.metadata.name} to come back`,
        async () => {
          const list = await cri.listPodSandbox({
            filter: { labelSelector: { "io.kubernetes.pod.uid": p.metadata.uid } },
          });
          const ready = list.items.filter((s) => s.state === PodSandboxState.SANDBOX_READY);
          return ready.length === 1 && (await running(cri, p.metadata.uid)).length === 1 && ready[0];
        },
        60_000,
      );
      expect(sb.metadata!.attempt).toBe(1);
    }
  });
});

/** Signs for a Node server in dev mode (its key in `dir`, made at its first start). */
const devSigner = (dir: string, aud: string) => async (claims: Record<string, unknown>) => {
  const key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { iss: string };
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "EdDSA", kid: key.kid! })
    .setIssuer(key.iss)
    .setAudience(aud)
    .setIssuedAt()
    .setExpirationTime("1m")
    .setJti(uid("jti"))
    .sign(await importJWK(key, "EdDSA"));
};

describe.skipIf(skip)("the Node server's own loop on the shared lab containerd", () => {
  it("stop the server, remove the pod behind its back, start a new server on the same state dir: the desired pod runs again with no request", async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    const dir = mkdtempSync(join(tmpdir(), "podsync-loop-restart-"));
    const env = {
      PODSYNC_PORT: "0",
      PODSYNC_DEV_DIR: dir,
      PODSYNC_STATE_DIR: join(dir, "state"),
      PODSYNC_CRI_ENDPOINT: endpoint,
      PODSYNC_SERVICE_DATAPLANE: "off",
      PODSYNC_NODE_NAME: "restart-node",
      PODSYNC_POLICY: "privileged",
      PODSYNC_POD_LOGS_DIR: node.podLogsDir,
      PODSYNC_ROOT_DIR: node.rootDir,
    };
    const p = podOf("loop-restart", ["sleep", "3600"]); // hostNetwork: the policy is privileged for it
    const id = p.metadata.uid;
    const cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    let server = await startNode(env, true);
    const sign = devSigner(dir, "restart-node");
    try {
      const r = await fetch(`${server.url}/v1/pods/sync`, {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: await sign({ act: "sync", pod: p }),
      });
      expect(r.status).toBe(200);
      const [first] = await until("the container to run", async () => {
        const x = await running(cri, id);
        return x.length === 1 && x;
      });
      await server.close();
      // Behind podsync's back while it is down: the sandbox and its containers are gone.
      for (const s of (await cri.listPodSandbox({ filter: { labelSelector: { "io.kubernetes.pod.uid": id } } }))
        .items) {
        await cri.stopPodSandbox({ podSandboxId: s.id });
        await cri.removePodSandbox({ podSandboxId: s.id });
      }
      expect(await containers(cri, id)).toEqual([]);
      // A new server on the same state dir, and no request: its loop brings the desired pod back.
      server = await startNode(env, true);
      const [again] = await until("the new server's loop to run the pod again", async () => {
        const x = await running(cri, id);
        return x.length === 1 && x;
      });
      expect(again!.id).not.toBe(first!.id);
      expect(again!.podSandboxId).not.toBe(first!.podSandboxId);
    } finally {
      await fetch(`${server.url}/v1/pods/${id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${await sign({ act: "delete", uid: id, gracePeriodSeconds: 0 })}` },
      }).catch(() => undefined);
      await server.close();
      await createPodRuntime(cri, runtimeOpts)
        .delete(id, 0)
        .catch(() => undefined);
      cri.close();
    }
  });

  it("a pod synced by request whose liveness probe fails is restarted by the server's loop: /metrics counts a loop sync and a loop restart; probe state is on disk", async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    const dir = mkdtempSync(join(tmpdir(), "podsync-loop-node-"));
    const stateDir = join(dir, "state");
    const server = await startNode(
      {
        PODSYNC_PORT: "0",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_STATE_DIR: stateDir,
        PODSYNC_CRI_ENDPOINT: endpoint,
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_NODE_NAME: "loop-node",
        PODSYNC_POD_LOGS_DIR: node.podLogsDir,
        PODSYNC_ROOT_DIR: node.rootDir,
      },
      true,
    );
    const sign = devSigner(dir, "loop-node");
    const p = Pod.parse({
      metadata: { name: "loop-live", namespace: "default", uid: uid("loop-live") },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "Never",
            command: ["sleep", "3600"],
            livenessProbe: {
              exec: { command: ["sh", "-c", "[ ! -e /tmp/fail ]"] },
              periodSeconds: 1,
              failureThreshold: 1,
            },
          },
        ],
      },
    });
    const cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    try {
      const r = await fetch(`${server.url}/v1/pods/sync`, {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: await sign({ act: "sync", pod: p }),
      });
      expect(r.status).toBe(200);
      const [first] = await until("the container to run", async () => {
        const x = await running(cri, p.metadata.uid);
        return x.length === 1 && x;
      });
      // The probe passes until a file appears (the lab image has mkdir, not touch or rm); a restarted container
      // has a fresh root filesystem, so it passes again.
      const made = await cri.execSync({ containerId: first!.id, cmd: ["mkdir", "/tmp/fail"], timeout: 5n });
      expect(made.exitCode).toBe(0);
      const [second] = await until("the loop's restart", async () => {
        const x = await running(cri, p.metadata.uid);
        return x.length === 1 && x[0]!.id !== first!.id && x;
      });
      expect(restartCount(second!)).toBe(1);
      // The new container runs before the loop's sync has returned (and been counted): wait for the count.
      const text = await until("the loop's sync and restart in /metrics", async () => {
        const t = await (await fetch(`${server.url}/metrics`)).text();
        return /^podsync_loop_container_restarts_total [1-9]/m.test(t) && t;
      });
      expect(text).toMatch(/^podsync_syncs_total\{trigger="loop",result="ok"\} [1-9]/m);
      expect(text).toMatch(/^podsync_loop_container_restarts_total [1-9]/m);
      expect(readdirSync(join(stateDir, "probes"))).toContain(`${p.metadata.uid}.json`);
    } finally {
      await fetch(`${server.url}/v1/pods/${p.metadata.uid}`, {
        method: "DELETE",
        headers: {
          authorization: `Bearer ${await sign({ act: "delete", uid: p.metadata.uid, gracePeriodSeconds: 0 })}`,
        },
      }).catch(() => undefined);
      await server.close();
      cri.close();
    }
  });
});
