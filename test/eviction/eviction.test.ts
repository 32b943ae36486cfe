// The eviction manager's local storage checks (kubelet's localStorageEviction: emptyDir, pod, container, in
// that order, with helpers.go's messages) and its pass over the desired pods (a fake runtime records what
// it is asked to do).
import { describe, expect, it } from "vitest";
import { Pod } from "../../src/pod/schema.js";
import {
  hasLocalStorageLimits,
  localStorageEviction,
  formatBytes,
  type PodStorageUsage,
} from "../../src/eviction/local-storage.js";
import { evictionPass } from "../../src/eviction/manager.js";
import type { PodRuntime } from "../../src/kubelet/pod-runtime.js";
import type { PodEviction } from "../../src/status/api-status.js";
import type { CriClient } from "../../src/cri/client.js";
import type { PodStatus } from "../../src/container/types.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { containerStatus } from "../support/status.js";

const MiB = 1024 * 1024;
const pod = (spec: Record<string, unknown>, policy = "Never") =>
  Pod.parse({
    metadata: { name: "p", uid: "u1" },
    spec: { restartPolicy: policy, containers: [{ name: "c", image: "busybox:1" }], ...spec },
  });
const usage = (o: Partial<{ c: [number, number]; vols: [string, number][]; hosts: number }>): PodStorageUsage => ({
  containers: new Map([["c", { rootfs: o.c?.[0] ?? 0, logs: o.c?.[1] ?? 0 }]]),
  volumes: new Map(o.vols ?? []),
  etcHosts: o.hosts ?? 0,
});

describe("localStorageEviction", () => {
  const withDir = pod({
    volumes: [
      { name: "v", emptyDir: { sizeLimit: "1Mi" } },
      { name: "m", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
    ],
  });
  it("an emptyDir on disk over its sizeLimit (strictly): emptyDirMessageFmt; a memory one is the tmpfs's business", () => {
    expect(localStorageEviction(withDir, usage({ vols: [["v", MiB]] }))).toBeUndefined();
    expect(localStorageEviction(withDir, usage({ vols: [["v", MiB + 1]] }))).toBe(
      'Usage of EmptyDir volume "v" exceeds the limit "1Mi". ',
    );
    expect(localStorageEviction(withDir, usage({ vols: [["m", 5 * MiB]] }))).toBeUndefined();
  });
  it("the pod total (writable layers, logs, disk emptyDirs, hosts file) over the containers' limits: podEphemeralStorageMessageFmt, before the container's", () => {
    const p = pod({
      volumes: [{ name: "v", emptyDir: {} }],
      containers: [{ name: "c", image: "busybox:1", resources: { limits: { "ephemeral-storage": "2Mi" } } }],
    });
    expect(localStorageEviction(p, usage({ c: [MiB, 0], vols: [["v", MiB]], hosts: 0 }))).toBeUndefined();
    expect(localStorageEviction(p, usage({ c: [MiB, 0], vols: [["v", MiB]], hosts: 1 }))).toBe(
      "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ",
    );
  });
  it("a container's writable layer and logs over its limit: containerEphemeralStorageMessageFmt", () => {
    const p = pod({
      containers: [
        { name: "c", image: "busybox:1", resources: { limits: { "ephemeral-storage": "1Mi" } } },
        { name: "d", image: "busybox:1", resources: { limits: { "ephemeral-storage": "9Mi" } } },
      ],
    });
    const u: PodStorageUsage = {
      containers: new Map([
        ["c", { rootfs: MiB, logs: 1 }],
        ["d", { rootfs: 0, logs: 0 }],
      ]),
      volumes: new Map(),
      etcHosts: 0,
    };
    expect(localStorageEviction(p, u)).toBe('Container c exceeded its local ephemeral storage limit "1Mi". ');
  });
  it("which pods are measured at all, and quantities printed as Quantity.String()", () => {
    expect(hasLocalStorageLimits(pod({}))).toBe(false);
    expect(
      hasLocalStorageLimits(pod({ volumes: [{ name: "m", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } }] })),
    ).toBe(false);
    expect(hasLocalStorageLimits(withDir)).toBe(true);
    expect([formatBytes(2 * MiB), formatBytes(1536), formatBytes(1000)]).toEqual(["2Mi", "1536", "1000"]);
  });
});

describe("evictionPass", () => {
  function fakeRuntime() {
    const evictions = new Map<string, PodEviction>();
    const calls: string[] = [];
    const rt = {
      eviction: (uid: string) => evictions.get(uid),
      forgetEviction: (uid: string) => void evictions.delete(uid),
      evict: async (p: Pod, e: PodEviction) => (
        evictions.set(p.metadata.uid, e), calls.push(`evict ${p.metadata.uid}`), { ok: true, steps: [], criCalls: 0 }
      ),
      delete: async (uid: string) => (
        calls.push(`delete ${uid}`),
        evictions.delete(uid),
        { ok: true, steps: [], criCalls: 0, deleted: true, wasRunning: false, pod: { uid, name: "", namespace: "" } }
      ),
    } as unknown as PodRuntime;
    return { rt, calls, evictions };
  }
  const cri = (calls: string[]) =>
    ({
      listContainerStats: async () => (
        calls.push("ListContainerStats"),
        { stats: [{ attributes: { id: "c1" }, writableLayer: { usedBytes: { value: 0n } } }] }
      ),
    }) as unknown as CriClient;
  const running = (p: Pod): PodStatus => ({
    id: p.metadata.uid,
    name: "p",
    namespace: "default",
    ips: [],
    sandboxStatuses: [],
    containerStatuses: [containerStatus("c1", "c", "running", "h")],
  });

  it("one ListContainerStats for the node; only pods with limits; an Always pod is made anew after the back-off, a Never pod stays evicted", async () => {
    const { rt, calls } = fakeRuntime();
    const never = pod({ volumes: [{ name: "v", emptyDir: { sizeLimit: "1Mi" } }] });
    const always = Pod.parse({
      ...never,
      metadata: { name: "q", uid: "u2" },
      spec: { ...never.spec, restartPolicy: "Always" },
    });
    const plain = Pod.parse({
      metadata: { name: "r", uid: "u3" },
      spec: { containers: [{ name: "c", image: "busybox:1" }] },
    });
    const disk = { usage: async (path: string) => (path.includes("empty-dir") ? 2 * MiB : 0) };
    const o = { cri: cri(calls), disk, node: defaultNodeConfig(), recreateAfterMs: 1000 };
    const pods = [never, always, plain].map((p) => ({ pod: p, status: running(p) }));
    const r1 = await evictionPass(o, rt, pods, 5_000);
    expect(r1).toMatchObject({ statsCalls: 1, recreated: [] });
    expect(r1.evicted.map((e) => e.uid)).toEqual(["u1", "u2"]);
    // A local storage limit's eviction sets no condition (localStorageEviction's evictPod(pod, 0, msg, nil, nil)).
    expect(rt.eviction("u1")?.condition).toBeUndefined();
    expect(calls).toEqual(["ListContainerStats", "evict u1", "evict u2"]);
    // Evicted pods are not measured again; before the back-off nothing is made anew.
    calls.length = 0;
    await r1.killed;
    expect(await evictionPass(o, rt, pods, 5_500)).toMatchObject({ statsCalls: 0, evicted: [], recreated: [] });
    expect(await evictionPass(o, rt, pods, 6_000)).toMatchObject({ statsCalls: 0, evicted: [], recreated: ["u2"] });
    expect(calls).toEqual(["delete u2"]);
    expect(rt.eviction("u1")).toBeDefined();
    expect(rt.eviction("u2")).toBeUndefined();
  });

  it("emptyDirs are measured as kubelet's fsResourceAnalyzer does: cached per pod for --volume-stats-agg-period (jittered up to twice), logs and hosts file every pass; a pod made anew after its eviction is measured afresh", async () => {
    const { rt } = fakeRuntime();
    const p = pod({ volumes: [{ name: "v", emptyDir: { sizeLimit: "1Mi" } }] }, "Always");
    const measured: string[] = [];
    let emptyDirUse = 0;
    const disk = {
      usage: async (path: string) => (
        measured.push(path.includes("empty-dir") ? "emptyDir" : path.includes("etc-hosts") ? "hosts" : "logs"),
        path.includes("empty-dir") ? emptyDirUse : 0
      ),
    };
    const o = { cri: cri([]), disk, node: defaultNodeConfig(), volumeStatsAggPeriodMs: 60_000, recreateAfterMs: 1000 };
    const pods = [{ pod: p, status: running(p) }];
    // The first pass measures the pod at once (kubelet's calculator would have nothing for up to a period).
    expect((await evictionPass(o, rt, pods, 0)).evicted).toEqual([]);
    expect(measured.sort()).toEqual(["emptyDir", "hosts", "logs"]);
    // The emptyDir grows past its limit: passes within the period read the cached use, and measure logs and hosts.
    emptyDirUse = 2 * MiB;
    measured.length = 0;
    expect((await evictionPass(o, rt, pods, 10_000)).evicted).toEqual([]);
    expect((await evictionPass(o, rt, pods, 59_000)).evicted).toEqual([]);
    expect(measured.sort()).toEqual(["hosts", "hosts", "logs", "logs"]);
    // At the latest two periods on, it is measured again and the pod is evicted.
    const r = await evictionPass(o, rt, pods, 120_000);
    expect(r.evicted.map((e) => e.message)).toEqual(['Usage of EmptyDir volume "v" exceeds the limit "1Mi". ']);
    await r.killed;
    // Made anew after the back-off with an empty emptyDir: its old cached use is gone, so it is measured afresh.
    expect((await evictionPass(o, rt, pods, 121_000)).recreated).toEqual(["u1"]);
    emptyDirUse = 0;
    measured.length = 0;
    expect((await evictionPass(o, rt, pods, 122_000)).evicted).toEqual([]);
    expect(measured.sort()).toEqual(["emptyDir", "hosts", "logs"]);
  });
});

describe("where no eviction manager runs (Workers)", () => {
  it("ephemeral-storage limits and disk emptyDir sizeLimits are refused, naming the field; requests are taken", async () => {
    const { createPodRuntime } = await import("../../src/kubelet/pod-runtime.js");
    const { InvalidPodError } = await import("../../src/pod/validate.js");
    const rt = createPodRuntime({} as CriClient, {});
    const p = pod({
      volumes: [{ name: "v", emptyDir: { sizeLimit: "1Mi" } }],
      containers: [
        {
          name: "c",
          image: "busybox:1",
          resources: { requests: { "ephemeral-storage": "1Mi" }, limits: { "ephemeral-storage": "2Mi" } },
        },
      ],
    });
    let err: unknown;
    try {
      rt.admit(p);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidPodError);
    expect((err as InstanceType<typeof InvalidPodError>).errors.map((e) => e.path)).toEqual([
      "spec.volumes[0].emptyDir.sizeLimit",
      "spec.containers[0].resources.limits.ephemeral-storage",
    ]);
    expect(() => createPodRuntime({} as CriClient, { localStorageLimits: true }).admit(p)).not.toThrow();
  });
});

describe("node disk pressure (a hard threshold on nodefs.available)", () => {
  it("rankDiskPressureFunc: over their requests first, then lower priority, then the larger use beyond requests; kubelet's message", async () => {
    const { rankForDiskPressure, diskPressureMessage } = await import("../../src/eviction/local-storage.js");
    const mkp = (uid: string, request: string | undefined, priority?: number) =>
      Pod.parse({
        metadata: { name: uid, uid },
        spec: {
          ...(priority !== undefined ? { priority } : {}),
          containers: [
            {
              name: "c",
              image: "busybox:1",
              ...(request ? { resources: { requests: { "ephemeral-storage": request } } } : {}),
            },
          ],
        },
      });
    const u = (n: number) => usage({ c: [n, 0] });
    const within = { pod: mkp("within", "10Mi"), usage: u(MiB) };
    const overLow = { pod: mkp("over-low-prio", "1Mi", -5), usage: u(2 * MiB) };
    const overBig = { pod: mkp("over-big", "1Mi"), usage: u(9 * MiB) };
    const overSmall = { pod: mkp("over-small", undefined), usage: u(3 * MiB) };
    expect(rankForDiskPressure([within, overSmall, overBig, overLow]).map((x) => x.pod.metadata.uid)).toEqual([
      "over-low-prio",
      "over-big",
      "over-small",
      "within",
    ]);
    expect(diskPressureMessage(overBig.pod, overBig.usage)).toBe(
      "The node was low on resource: ephemeral-storage. Container c was using 9Mi, request is 1Mi, has larger consumption of ephemeral-storage. ",
    );
  });

  it("one pod per pass while under the threshold, reported as DiskPressure; such a pod is not made anew", async () => {
    const evictions = new Map<string, PodEviction>();
    const calls: string[] = [];
    const rt = {
      eviction: (uid: string) => evictions.get(uid),
      forgetEviction: (uid: string) => void evictions.delete(uid),
      evict: async (p: Pod, e: PodEviction) => (
        evictions.set(p.metadata.uid, e), calls.push(`evict ${p.metadata.uid}`), { ok: true, steps: [], criCalls: 0 }
      ),
      delete: async (uid: string) => (calls.push(`delete ${uid}`), { ok: true }),
    } as unknown as PodRuntime;
    const mk = (uid: string) =>
      Pod.parse({ metadata: { name: uid, uid }, spec: { containers: [{ name: "c", image: "busybox:1" }] } });
    const pods = ["a", "b"].map((uid) => ({
      pod: mk(uid),
      status: {
        id: uid,
        name: uid,
        namespace: "default",
        ips: [],
        sandboxStatuses: [],
        containerStatuses: [containerStatus(`${uid}-c`, "c", "running", "h")],
      } as PodStatus,
    }));
    const cri = {
      listContainerStats: async () => ({
        stats: [
          { attributes: { id: "a-c" }, writableLayer: { usedBytes: { value: 1n } } },
          { attributes: { id: "b-c" }, writableLayer: { usedBytes: { value: 5n } } },
        ],
      }),
    } as unknown as CriClient;
    let available = 5;
    const o = {
      cri,
      disk: { usage: async () => 0 },
      node: defaultNodeConfig(),
      recreateAfterMs: 0,
      diskPressure: { threshold: { percent: 10 }, fs: async () => ({ capacity: 100, available }) },
    };
    const r1 = await evictionPass(
      o,
      rt,
      pods.map((p) => ({ ...p, pod: Pod.parse({ ...p.pod, spec: { ...p.pod.spec, restartPolicy: "Always" } }) })),
      1_000,
    );
    const message =
      "The node was low on resource: ephemeral-storage. Container c was using 5, request is 0, has larger consumption of ephemeral-storage. ";
    expect(r1).toMatchObject({ diskPressure: true, statsCalls: 1, evicted: [{ uid: "b", message }] });
    // synchronize's condition on a node-pressure eviction.
    expect(evictions.get("b")?.condition).toEqual({
      type: "DisruptionTarget",
      reason: "TerminationByKubelet",
      message,
    });
    await r1.killed;
    available = 50;
    const r2 = await evictionPass(o, rt, pods, 2_000);
    expect(r2).toMatchObject({ diskPressure: false, evicted: [], recreated: [] });
    expect(calls).toEqual(["evict b"]);
  });
});

describe("evictions run beside the loop, as kubelet's eviction manager blocks only itself", () => {
  it("the pass returns while the kill runs; under pressure no other pod is chosen until it is done; DiskPressure is reported every pass", async () => {
    const evictions = new Map<string, PodEviction>();
    let release!: () => void;
    const kill = new Promise<void>((r) => (release = r));
    const killed: string[] = [];
    const rt = {
      eviction: (uid: string) => evictions.get(uid),
      forgetEviction: (uid: string) => void evictions.delete(uid),
      evict: (p: Pod, e: PodEviction) => (
        evictions.set(p.metadata.uid, e), kill.then(() => ({ ok: true, steps: [], criCalls: 0 }))
      ),
    } as unknown as PodRuntime;
    const mk = (uid: string) =>
      Pod.parse({ metadata: { name: uid, uid }, spec: { containers: [{ name: "c", image: "busybox:1" }] } });
    const pods = ["a", "b"].map((uid) => ({
      pod: mk(uid),
      status: {
        id: uid,
        name: uid,
        namespace: "default",
        ips: [],
        sandboxStatuses: [],
        containerStatuses: [containerStatus(`${uid}-c`, "c", "running", "h")],
      } as PodStatus,
    }));
    const cri = { listContainerStats: async () => ({ stats: [] }) } as unknown as CriClient;
    const seen: boolean[] = [];
    const o = {
      cri,
      disk: { usage: async () => 0 },
      node: defaultNodeConfig(),
      diskPressure: { threshold: { bytes: 10 }, fs: async () => ({ capacity: 100, available: 1 }) },
      onDiskPressure: (p: boolean) => void seen.push(p),
      onKilled: (uid: string) => void killed.push(uid),
    };
    const r1 = await evictionPass(o, rt, pods, 1_000);
    expect(r1.evicted).toHaveLength(1);
    expect(killed).toEqual([]);
    // Still under pressure, the first one still being killed: nobody else is evicted yet.
    const r2 = await evictionPass(o, rt, pods, 2_000);
    expect(r2.evicted).toEqual([]);
    release();
    await r1.killed;
    expect(killed).toEqual([r1.evicted[0]!.uid]);
    expect((await evictionPass(o, rt, pods, 3_000)).evicted).toHaveLength(1);
    expect(seen).toEqual([true, true, true]);
  });
});

describe("nodeDiskUsage", () => {
  it("counts as du -s -B1 -x does (blocks in use, symlinks not followed), in-process; a missing path uses nothing", async () => {
    const { mkdtempSync, mkdirSync, writeFileSync, symlinkSync } = await import("node:fs");
    const { execFileSync } = await import("node:child_process");
    const { tmpdir } = await import("node:os");
    const { nodeDiskUsage } = await import("../../src/host/metrics/disk-usage.js");
    const dir = mkdtempSync(`${tmpdir()}/podsync-du-`);
    mkdirSync(`${dir}/a/b`, { recursive: true });
    writeFileSync(`${dir}/a/f`, Buffer.alloc(300_000, 7));
    writeFileSync(`${dir}/a/b/g`, "x".repeat(5000));
    symlinkSync("/etc", `${dir}/a/link`);
    const du = Number.parseInt(execFileSync("du", ["-s", "-B1", "-x", `${dir}/a`], { encoding: "utf8" }), 10);
    expect(await nodeDiskUsage.usage(`${dir}/a`)).toBe(du);
    expect(await nodeDiskUsage.usage(`${dir}/missing`)).toBe(0);
  });
});

describe("the eviction's kill (evictPod → pod worker → killContainer)", () => {
  it("calculateEffectiveGracePeriod with override 0: the pod's own grace, at least 1", async () => {
    const { effectiveGracePeriod } = await import("../../src/kuberuntime/kill.js");
    expect(effectiveGracePeriod({ spec: { terminationGracePeriodSeconds: 7 } }, 0)).toBe(7);
    expect(effectiveGracePeriod({ spec: { terminationGracePeriodSeconds: undefined } }, 0)).toBe(30);
    expect(effectiveGracePeriod({ spec: { terminationGracePeriodSeconds: 0 } }, 0)).toBe(1);
    expect(effectiveGracePeriod({ spec: { terminationGracePeriodSeconds: 30 } }, 5)).toBe(5);
  });

  it("the preStop hook runs within the override, applied before it; StopContainer gets what is left, at least 2 s", async () => {
    const { killPod, effectiveGracePeriod } = await import("../../src/kuberuntime/kill.js");
    const { Steps } = await import("../../src/container/steps.js");
    const calls: string[] = [];
    const cri = {
      execSync: async (r: { cmd: string[] }, o: { timeoutMs: number }) => (
        calls.push(`exec ${r.cmd.join(" ")} within ${o.timeoutMs} ms`),
        { exitCode: 0, stdout: new Uint8Array(), stderr: new Uint8Array() }
      ),
      stopContainer: async (r: { timeout: bigint }) => void calls.push(`stop ${r.timeout}`),
      stopPodSandbox: async () => ({}),
    } as unknown as CriClient;
    const run = async (grace: number) => {
      calls.length = 0;
      const p = pod({
        terminationGracePeriodSeconds: grace,
        containers: [
          { name: "c", image: "busybox:1", lifecycle: { preStop: { exec: { command: ["touch", "/h/prestop"] } } } },
        ],
      });
      const status: PodStatus = {
        id: "u1",
        name: "p",
        namespace: "default",
        ips: [],
        sandboxStatuses: [],
        containerStatuses: [containerStatus("c1", "c", "running", "h")],
      };
      const target = { metadata: p.metadata, spec: p.spec };
      await killPod(cri, target, status, new Steps(), undefined, effectiveGracePeriod(target, 0));
      return [...calls];
    };
    expect(await run(7)).toEqual(["exec touch /h/prestop within 7000 ms", "stop 7"]);
    // A pod with no grace of its own still gets 1 s from the pod worker: its preStop runs, the stop gets 2.
    expect(await run(0)).toEqual(["exec touch /h/prestop within 1000 ms", "stop 2"]);
  });

  it("generateAPIPodStatus lists the eviction's DisruptionTarget first, from when it was set", async () => {
    const { generateAPIPodStatus } = await import("../../src/status/api-status.js");
    const p = pod({});
    const status: PodStatus = {
      id: "u1",
      name: "p",
      namespace: "default",
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [containerStatus("c1", "c", "exited", "h")],
    };
    const at = Date.parse("2026-01-01T00:00:05Z");
    const s = generateAPIPodStatus({
      pod: p,
      status,
      now: at,
      runtimeName: "containerd",
      eviction: {
        reason: "Evicted",
        message: "m",
        at,
        condition: { type: "DisruptionTarget", reason: "TerminationByKubelet", message: "m" },
      },
    });
    expect(s).toMatchObject({ phase: "Failed", reason: "Evicted", message: "m" });
    expect(s.conditions[0]).toEqual({
      type: "DisruptionTarget",
      status: "True",
      reason: "TerminationByKubelet",
      message: "m",
      lastProbeTime: null,
      lastTransitionTime: "2026-01-01T00:00:05Z",
    });
    expect(s.conditions.map((c) => c.type)).toEqual([
      "DisruptionTarget",
      "PodReadyToStartContainers",
      "Initialized",
      "Ready",
      "ContainersReady",
      "PodScheduled",
    ]);
  });
});

describe("the node under disk pressure (the v1.Node)", () => {
  it("MemoryPressure, DiskPressure, PIDPressure before Ready, with kubelet's reasons; the disk-pressure taint while under it", async () => {
    const { nodeObject } = await import("../../src/kubeapi/node-object.js");
    const facts = {
      info: {
        name: "n",
        labels: {},
        taints: [{ key: "dedicated", value: "x", effect: "NoSchedule" as const }],
        allocatable: {},
      },
      hostIPs: [],
      startedAt: 0,
    };
    const calm = nodeObject(facts, undefined, 1000);
    expect(calm.status.conditions.map((c) => `${c.type}=${c.status} ${c.reason}`)).toEqual([
      "MemoryPressure=False KubeletHasSufficientMemory",
      "DiskPressure=False KubeletHasNoDiskPressure",
      "PIDPressure=False KubeletHasSufficientPID",
      "Ready=Unknown NodeStatusUnknown",
    ]);
    expect(calm.spec.taints).toEqual([{ key: "dedicated", value: "x", effect: "NoSchedule" }]);
    const pressed = nodeObject(facts, undefined, 9000, { disk: { pressure: true, since: 5000 } });
    expect(pressed.status.conditions[1]).toMatchObject({
      type: "DiskPressure",
      status: "True",
      reason: "KubeletHasDiskPressure",
      message: "kubelet has disk pressure",
      lastTransitionTime: "1970-01-01T00:00:05Z",
    });
    expect(pressed.spec.taints).toEqual([
      { key: "dedicated", value: "x", effect: "NoSchedule" },
      { key: "node.kubernetes.io/disk-pressure", effect: "NoSchedule" },
    ]);
  });
});
