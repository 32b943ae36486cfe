// End to end on a REAL containerd (scripts/containerd-lab.sh, started by the global setup): real sandboxes,
// real runc processes. This suite fails, never skips, when no runtime is there (unless PODSYNC_SKIP_E2E=1).
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { getPodStatus } from "../../src/kuberuntime/pod-status.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { createPodRuntime, type PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";
import type { Pod } from "../../src/pod/schema.js";
import { deleteAll, pod, syncOnce } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

let cri: CriClient;
const made: Pod[] = [];
const opts: PodRuntimeOptions = {
  pullBackOff: new MemoryPullBackOff(),
  node: {
    ...(await import("../../src/container/node-config.js")).defaultNodeConfig(),
    podLogsDir: "/tmp/podsync-e2e-logs",
  },
};

function track(p: Pod): Pod {
  made.push(p);
  return p;
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const containersOf = async (p: Pod) => (await getPodStatus(cri, p.metadata, "full")).containerStatuses;
const exited = (p: Pod, name: string) =>
  waitFor(`${name} to exit`, async () => (await containersOf(p)).find((c) => c.name === name && c.state === "exited"));

describe.skipIf(skip)("SyncPod on real containerd", () => {
  beforeAll(() => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
  });
  afterAll(async () => {
    await deleteAll(
      createPodRuntime(cri),
      made.map((p) => p.metadata.uid),
    );
    cri?.close();
  });

  it("the runtime answers Version over CRI v1", async () => {
    const v = await cri.version({});
    expect(v.runtimeApiVersion).toBe("v1");
    expect(v.runtimeName).toBe("containerd");
  });

  it("creates a real pod (sandbox on the CNI bridge, container running), then converges; a spec change restarts it", async () => {
    const p = track(pod());
    const r = await syncOnce(cri, p, opts);
    expect(r.steps.filter((s) => !s.ok)).toEqual([]);
    expect(r.steps.map((s) => s.action)).toEqual(expect.arrayContaining(["CreatePodSandbox", "StartContainer"]));
    const status = await getPodStatus(cri, p.metadata, "full");
    expect(status.sandboxStatuses[0]!.state).toBe(api.PodSandboxState.SANDBOX_READY);
    expect(status.ips[0]).toMatch(/^\d{1,3}(\.\d{1,3}){3}$/); // an address on the CNI bridge (the lab's: 10.244.78.0/24)
    expect(status.containerStatuses).toMatchObject([{ name: "main", state: "running", restartCount: 0 }]);
    // The image as the spec named it (containerd 1.6 lists the id it was created with), and the id as imageRef.
    for (const st of [status, await getPodStatus(cri, p.metadata)])
      expect(st.containerStatuses[0]).toMatchObject({
        image: "localhost/busybox:1",
        imageRef: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      });

    const again = await syncOnce(cri, p, opts);
    expect(again.steps).toEqual([]);

    const changed = pod(
      { containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "7200"] }] },
      { uid: p.metadata.uid, name: p.metadata.name },
    );
    const r2 = await syncOnce(cri, changed, opts);
    expect(r2.steps.map((s) => `${s.action}:${s.ok}`)).toEqual(["KillContainer:true", "StartContainer:true"]);
    const after = await containersOf(changed);
    expect(after[0]).toMatchObject({ name: "main", state: "running", restartCount: 1 });
    expect(after[1]).toMatchObject({ name: "main", state: "exited" });
    expect((await syncOnce(cri, changed, opts)).steps).toEqual([]);
  });

  it("a killed container process is restarted under Always and left dead under Never", async () => {
    for (const restartPolicy of ["Always", "Never"] as const) {
      const p = track(pod({ restartPolicy, hostNetwork: true }));
      expect((await syncOnce(cri, p, opts)).ok).toBe(true);
      const [c] = await containersOf(p);
      const info = (await cri.containerStatus({ containerId: c!.id, verbose: true })).info["info"];
      const pid = (JSON.parse(info!) as { pid: number }).pid;
      expect(pid).toBeGreaterThan(1);
      process.kill(pid, "SIGKILL");
      const dead = await exited(p, "main");
      expect(dead.exitCode).toBe(137);
      const r = await syncOnce(cri, p, opts);
      if (restartPolicy === "Always") {
        expect(r.steps.map((s) => `${s.action}:${s.ok}`)).toEqual(["StartContainer:true"]);
        expect((await containersOf(p))[0]).toMatchObject({ state: "running", restartCount: 1 });
      } else {
        expect(r.actions).toMatchObject({ killPod: true, createSandbox: false, containersToStart: [] });
        expect((await containersOf(p)).filter((x) => x.state === "running")).toEqual([]);
      }
    }
  });

  it("a failing command goes into CrashLoopBackOff", async () => {
    const p = track(
      pod({
        hostNetwork: true,
        containers: [{ name: "crash", image: "localhost/busybox:1", command: ["sh", "-c", "exit 3"] }],
      }),
    );
    expect((await syncOnce(cri, p, opts)).ok).toBe(true);
    expect((await exited(p, "crash")).exitCode).toBe(3);
    const r1 = await syncOnce(cri, p, opts); // first restart: no back-off yet
    expect(r1.steps.map((s) => `${s.action}:${s.ok}`)).toEqual(["StartContainer:true"]);
    await waitFor("the restarted instance to exit", async () => {
      const cs = await containersOf(p);
      return cs[0]?.restartCount === 1 && cs[0].state === "exited" ? cs[0] : undefined;
    });
    const r2 = await syncOnce(cri, p, opts);
    const start = r2.steps.find((s) => s.action === "StartContainer")!;
    expect(start).toMatchObject({ ok: false, error: "CrashLoopBackOff" });
    expect(start.message).toMatch(/^back-off 10s restarting failed container=crash/);
  });

  it("runs init containers to completion before the app container", async () => {
    const p = track(
      pod({
        hostNetwork: true,
        initContainers: [{ name: "init", image: "localhost/busybox:1", command: ["sh", "-c", "echo ready"] }],
      }),
    );
    const r1 = await syncOnce(cri, p, opts);
    expect(r1.steps.filter((s) => s.action === "InitContainer").map((s) => s.ok)).toEqual([true]);
    const init = await exited(p, "init");
    expect(init.exitCode).toBe(0);
    const r2 = await syncOnce(cri, p, opts);
    expect(r2.steps.map((s) => `${s.action}:${s.target}:${s.ok}`)).toEqual(["StartContainer:main:true"]);
  });

  it("runAsNonRoot: the lab image (no USER) counts as root and is refused; runAsUser 1000 runs", async () => {
    const p = track(pod({ hostNetwork: true, securityContext: { runAsNonRoot: true } }));
    const r = await syncOnce(cri, p, opts);
    expect(r.steps.at(-1)).toMatchObject({ action: "StartContainer", ok: false, error: "CreateContainerConfigError" });
    const q = track(pod({ hostNetwork: true, securityContext: { runAsNonRoot: true, runAsUser: 1000 } }));
    expect((await syncOnce(cri, q, opts)).ok).toBe(true);
    const [c] = await containersOf(q);
    expect(c).toMatchObject({ state: "running" });
    const info = JSON.parse((await cri.containerStatus({ containerId: c!.id, verbose: true })).info["info"]!) as {
      runtimeSpec: { process: { user: { uid: number } } };
    };
    expect(info.runtimeSpec.process.user.uid).toBe(1000);
  });

  it("DELETE path: kills the pod and removes its containers and sandbox", async () => {
    const p = pod({ hostNetwork: true });
    await syncOnce(cri, p, opts);
    const r = await createPodRuntime(cri).delete(p.metadata.uid);
    expect(r.ok).toBe(true);
    const after = await getPodStatus(cri, p.metadata);
    expect(after.sandboxStatuses).toEqual([]);
    expect(after.containerStatuses).toEqual([]);
  });
});

describe.skipIf(skip)("the function and its CLI on real containerd", () => {
  it("npm start's server + `podsync sync` run a real pod end to end; `podsync delete` removes it", async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { execFile } = await import("node:child_process");
    const { startNode } = await import("../../src/node.js");
    const dir = mkdtempSync(join(tmpdir(), "podsync-e2e-"));
    const running = await startNode(
      {
        PODSYNC_CRI_ENDPOINT: endpoint,
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_PORT: "0",
        PODSYNC_NODE_NAME: "e2e-node",
        PODSYNC_POLICY: "privileged",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
      },
      true,
    );
    const id = `cli-${Date.now()}`;
    const port = 18000 + (process.pid % 1000);
    const podFile = join(dir, "pod.yaml");
    writeFileSync(
      podFile,
      [
        `metadata: { name: cli-web, uid: ${id} }`,
        "spec:",
        "  hostNetwork: true",
        "  terminationGracePeriodSeconds: 2",
        "  containers:",
        "    - name: web",
        "      image: localhost/busybox:1",
        "      imagePullPolicy: IfNotPresent",
        `      command: ["sh", "-c", "mkdir -p /w && echo hi-from-$(WHO) > /w/index.html && exec httpd -f -p 127.0.0.1:${port} -h /w"]`,
        "      env: [{ name: WHO, value: podsync }]",
      ].join("\n"),
    );
    const cli = (...args: string[]) =>
      new Promise<{ code: number; out: string }>((res) =>
        execFile(
          "node",
          ["bin/podsync.mjs", ...args, "--url", running.url, "--key", join(dir, "dev-key.json"), "--json"],
          (err, stdout) => res({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout }),
        ),
      );
    try {
      const sync = await cli("sync", podFile);
      expect(sync.code, sync.out).toBe(0);
      expect(JSON.parse(sync.out)).toMatchObject({ ok: true, pod: { uid: id }, actions: { createSandbox: true } });
      const page = await waitFor("the pod's web server", async () => {
        try {
          return await (await fetch(`http://127.0.0.1:${port}/`)).text();
        } catch {
          return undefined;
        }
      });
      expect(page.trim()).toBe("hi-from-podsync");
      const again = await cli("sync", podFile);
      expect(JSON.parse(again.out).steps).toEqual([]);
      const del = await cli("delete", id);
      expect(del.code, del.out).toBe(0);
      expect(JSON.parse(del.out)).toMatchObject({ ok: true, deleted: true });
      const own = connectGrpc({ endpoint });
      expect((await getPodStatus(own, { uid: id, name: "", namespace: "" })).sandboxStatuses).toEqual([]);
      own.close();
    } finally {
      await running.close();
    }
  });
});
