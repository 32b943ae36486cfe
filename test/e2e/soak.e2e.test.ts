// Soak: the runtime goes away under load. containerd is killed (SIGKILL; its shims and the pods live on) and
// started again 5 times while 20 pods are synced one by one and PUT as a set in a loop, against `npm start`'s
// server (dist/node.js, a process of its own, so its RSS is its own). Afterwards every desired pod runs, none
// twice; no store file is torn; no request outlived its deadline; the server's retained heap (after a full GC)
// and, once it is quiet, its RSS are back within 10 % of where they were after a warm-up round of the same traffic.
//
// It runs on a lab containerd of its own (scripts/containerd-lab.sh with PODSYNC_LAB_DIR), never the shared one:
// the other e2e files of the same run use the shared runtime at the same time, and killing it would fail them.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { importJWK, SignJWT, type JWK } from "jose";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { ContainerState, PodSandboxState } from "../../src/gen/runtime/v1/api_pb.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { until } from "../support/wait.js";
import { uid, deleteAll } from "../support/pods.js";
import { ownLab } from "../support/own-lab.js";

const skip = inject("skipE2E");
const NODE_NAME = "soak-node";
const PODS = 20;
const ROUNDS = 5;
/** The client's deadline for any request: the server's CRI deadline (10 s) and then some. */
const DEADLINE_MS = 30_000;

const lab = ownLab("soak");
const sock = lab.sock;
const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);

describe.skipIf(skip)("soak: containerd killed and restarted under load (a lab of its own)", () => {
  const dir = mkdtempSync(join(tmpdir(), "podsync-soak-"));
  const stateDir = join(dir, "state");
  let server: ChildProcess | undefined;
  let url = "";
  let cri: CriClient;
  let key: JWK & { iss: string };
  const heaps: NodeJS.MemoryUsage[] = [];
  /** The server's memory after a full collection (test/support/heap-probe.mjs). */
  const heap = async () => {
    const n = heaps.length;
    server!.kill("SIGUSR2");
    return until("the server's heap report", async () => heaps[n], 10_000, 20);
  };

  beforeAll(async () => {
    const r = lab.start();
    if (r.status !== 0) throw new Error(`own lab did not start: ${r.stderr}`);
    cri = connectGrpc({ endpoint: `unix://${sock}`, timeoutMs: 30_000 });
    server = spawn(process.execPath, ["--expose-gc", "--import", "./test/support/heap-probe.mjs", "dist/node.js"], {
      env: {
        ...process.env,
        PODSYNC_PORT: "0",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_STATE_DIR: stateDir,
        PODSYNC_CRI_ENDPOINT: `unix://${sock}`,
        PODSYNC_CRI_TIMEOUT_MS: "10000",
        PODSYNC_NODE_NAME: NODE_NAME,
        PODSYNC_POLICY: "privileged",
        PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
        PODSYNC_ROOT_DIR: join(dir, "root"),
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    server.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      for (const m of d.toString().matchAll(/^HEAP (.*)$/gm)) heaps.push(JSON.parse(m[1]!) as NodeJS.MemoryUsage);
    });
    url = await until(
      "the server to listen",
      async () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(err)?.[1],
      30_000,
      50,
    );
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { iss: string };
  }, 320_000);
  afterAll(async () => {
    server?.kill("SIGTERM");
    await new Promise((r) => (server?.exitCode !== null ? r(undefined) : server.once("exit", r)));
    const rt = createPodRuntime(cri);
    const listed = await cri.listPodSandbox({}).catch(() => ({ items: [] }));
    await deleteAll(
      rt,
      listed.items.map((s) => s.labels["io.kubernetes.pod.uid"]!),
    );
    cri?.close();
    lab.stop();
  }, 120_000);

  it("20 pods synced and PUT in a loop while containerd is killed and restarted 5 times: every desired pod runs once, no torn store file, no request past its deadline; heap and RSS back near their start", async () => {
    const pods = Array.from({ length: PODS }, (_, i) => ({
      metadata: { name: `soak-${i}`, namespace: "soak", uid: uid(`soak-${i}`) },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: "main", image: "localhost/busybox:1", imagePullPolicy: "Never", command: ["sleep", "3600"] },
        ],
      },
    }));
    const sign = async (claims: Record<string, unknown>) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "EdDSA", kid: key.kid! })
        .setIssuer(key.iss)
        .setAudience(NODE_NAME)
        .setIssuedAt()
        .setExpirationTime("2m")
        .setJti(uid("jti"))
        .sign(await importJWK(key, "EdDSA"));
    const overdue: string[] = [];
    const statuses = new Map<number, number>();
    /** A request with the client's deadline; one that outlives it is recorded, not awaited forever. */
    const request = async (what: string, method: string, path: string, body: string) => {
      const t0 = Date.now();
      try {
        const r = await fetch(`${url}${path}`, {
          method,
          headers: { "content-type": "application/jose" },
          body,
          signal: AbortSignal.timeout(DEADLINE_MS),
        });
        await r.arrayBuffer();
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      } catch (e) {
        if ((e as Error).name === "TimeoutError") overdue.push(`${what} after ${Date.now() - t0} ms`);
        else throw e;
      }
    };
    let generation = 0;
    const traffic = async (ms: number) => {
      const end = Date.now() + ms;
      let i = 0;
      while (Date.now() < end) {
        const p = pods[i++ % PODS]!;
        await Promise.all([
          request(`sync ${p.metadata.name}`, "POST", "/v1/pods/sync", await sign({ act: "sync", pod: p })),
          i % 5 === 0
            ? request(
                `PUT ${generation + 1}`,
                "PUT",
                "/v1/node/pods",
                await sign({ act: "apply", generation: ++generation, pods }),
              )
            : undefined,
        ]);
      }
    };
    const allRunningOnce = async () => {
      const [sbs, ctrs] = await Promise.all([cri.listPodSandbox({}), cri.listContainers({})]);
      return pods.every((p) => {
        const id = p.metadata.uid;
        return (
          sbs.items.filter((s) => s.labels["io.kubernetes.pod.uid"] === id && s.state === PodSandboxState.SANDBOX_READY)
            .length === 1 &&
          ctrs.containers.filter(
            (c) => c.labels["io.kubernetes.pod.uid"] === id && c.state === ContainerState.CONTAINER_RUNNING,
          ).length === 1
        );
      });
    };

    // Warm-up: the set, then a round of the traffic, so the baseline is the server's working size.
    await request("PUT 1", "PUT", "/v1/node/pods", await sign({ act: "apply", generation: ++generation, pods }));
    await until("all 20 pods to run", allRunningOnce, 60_000, 250);
    await traffic(2000);
    await until("all 20 pods to run after the warm-up", allRunningOnce, 60_000, 250);
    const baseline = rssKiB(server!.pid!);
    const heap0 = await heap();

    for (let round = 0; round < ROUNDS; round++) {
      const containerd = Number(readFileSync(`${lab.dir}/containerd.pid`, "utf8"));
      process.kill(containerd, "SIGKILL"); // the shims and their pods live on, as when containerd crashes
      await traffic(1500);
      const r = lab.start();
      expect(r.status, r.stderr).toBe(0);
      await traffic(2000);
    }

    await until("every desired pod to run, once", allRunningOnce, 60_000, 250);
    expect(overdue).toEqual([]);
    // The traffic met the runtime both up (200/207) and down (503 runtime-unavailable or a 409 for a superseded sync).
    expect([...statuses.keys()].some((s) => s === 200)).toBe(true);

    // The store as a new process would load it: every file whole.
    for (const name of readdirSync(join(stateDir, "pods"))) {
      expect(name).toMatch(/^[^.].*\.json$/);
      expect(JSON.parse(readFileSync(join(stateDir, "pods", name), "utf8")).metadata.uid).toBe(name.slice(0, -5));
    }
    expect(readdirSync(join(stateDir, "pods"))).toHaveLength(PODS);
    // Committed and completed (no set half put in place); a PUT refused while the runtime was down used up no generation.
    const g = JSON.parse(readFileSync(join(stateDir, "generation.json"), "utf8")) as {
      generation: number;
      keep?: unknown;
    };
    expect(g.keep).toBeUndefined();
    expect(g.generation).toBeGreaterThanOrEqual(1);
    expect(g.generation).toBeLessThanOrEqual(generation);
    // Memory, once the node is quiet again. No leak: measured (issue #22) with this test, the server's heap after a
    // full collection (test/support/heap-probe.mjs) went 27.3 → 31.2 MiB over the five rounds, about what the
    // Kubernetes API's bounded histories (1000 pod changes, 1000 events) hold once full, and stayed there; its RSS,
    // 142 MiB at the baseline, was 146 MiB after the rounds and 92 MiB 30 s later. What made RSS look 45 % up 20 s
    // after the rounds before is V8's young generation: grown under load (heapTotal 63–69 MiB for 27–31 MiB live),
    // it is handed back by V8's memory reducer only after some idle time. glibc is not it: with MALLOC_ARENA_MAX=2
    // the same run went 126 → 147 → 90 MiB. So both are asserted: the retained heap within 10 % of the baseline's
    // plus those histories' room (8 MiB), and RSS back within 10 % of the baseline once V8 has let go (polled).
    const mib = (m: NodeJS.MemoryUsage) =>
      Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Math.round((v / 1048576) * 10) / 10]));
    const heap1 = await heap();
    console.log(
      `soak: after a full GC, baseline ${JSON.stringify(mib(heap0))}, after the rounds ${JSON.stringify(mib(heap1))}`,
    );
    expect(heap1.heapUsed).toBeLessThanOrEqual(heap0.heapUsed * 1.1 + 8 * 1048576);
    const rss = await until(
      "the server's RSS back within 10 % of its start",
      async () => {
        const now = rssKiB(server!.pid!);
        return now <= baseline * 1.1 && now;
      },
      90_000,
      1000,
    ).catch(() => rssKiB(server!.pid!));
    console.log(
      `soak: RSS ${rss} KiB once quiet, baseline ${baseline} KiB (${Math.round((rss / baseline - 1) * 100)} %)`,
    );
    expect(rss).toBeLessThanOrEqual(baseline * 1.1);
  }, 330_000);
});
