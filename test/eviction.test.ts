// The eviction manager's local storage checks (kubelet's localStorageEviction: emptyDir, pod, container, in
// that order, with helpers.go's messages) and its pass over the desired pods (a fake runtime records what
// it is asked to do).
import { describe, expect, it } from "vitest";
import { Pod } from "../src/pod/schema.js";
import { hasLocalStorageLimits, localStorageEviction, formatBytes, type PodStorageUsage } from "../src/eviction/local-storage.js";
import { evictionPass } from "../src/eviction/manager.js";
import type { PodRuntime } from "../src/kuberuntime/runtime.js";
import type { PodEviction } from "../src/status/api-status.js";
import type { CriClient } from "../src/cri/client.js";
import type { PodStatus } from "../src/container/types.js";
import { defaultNodeConfig } from "../src/container/node-config.js";
import { containerStatus } from "./support/status.js";

const MiB = 1024 * 1024;
const pod = (spec: Record<string, unknown>, policy = "Never") => Pod.parse({ metadata: { name: "p", uid: "u1" }, spec: { restartPolicy: policy, containers: [{ name: "c", image: "busybox:1" }], ...spec } });
const usage = (o: Partial<{ c: [number, number]; vols: [string, number][]; hosts: number }>): PodStorageUsage => ({
  containers: new Map([["c", { rootfs: o.c?.[0] ?? 0, logs: o.c?.[1] ?? 0 }]]),
  volumes: new Map(o.vols ?? []),
  etcHosts: o.hosts ?? 0,
});

describe("localStorageEviction", () => {
  const withDir = pod({ volumes: [{ name: "v", emptyDir: { sizeLimit: "1Mi" } }, { name: "m", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } }] });
  it("an emptyDir on disk over its sizeLimit (strictly): emptyDirMessageFmt; a memory one is the tmpfs's business", () => {
    expect(localStorageEviction(withDir, usage({ vols: [["v", MiB]] }))).toBeUndefined();
    expect(localStorageEviction(withDir, usage({ vols: [["v", MiB + 1]] }))).toBe('Usage of EmptyDir volume "v" exceeds the limit "1Mi". ');
    expect(localStorageEviction(withDir, usage({ vols: [["m", 5 * MiB]] }))).toBeUndefined();
  });
  it("the pod total (writable layers, logs, disk emptyDirs, hosts file) over the containers' limits: podEphemeralStorageMessageFmt, before the container's", () => {
    const p = pod({ volumes: [{ name: "v", emptyDir: {} }], containers: [{ name: "c", image: "busybox:1", resources: { limits: { "ephemeral-storage": "2Mi" } } }] });
    expect(localStorageEviction(p, usage({ c: [MiB, 0], vols: [["v", MiB]], hosts: 0 }))).toBeUndefined();
    expect(localStorageEviction(p, usage({ c: [MiB, 0], vols: [["v", MiB]], hosts: 1 }))).toBe("Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ");
  });
  it("a container's writable layer and logs over its limit: containerEphemeralStorageMessageFmt", () => {
    const p = pod({ containers: [{ name: "c", image: "busybox:1", resources: { limits: { "ephemeral-storage": "1Mi" } } }, { name: "d", image: "busybox:1", resources: { limits: { "ephemeral-storage": "9Mi" } } }] });
    const u: PodStorageUsage = { containers: new Map([["c", { rootfs: MiB, logs: 1 }], ["d", { rootfs: 0, logs: 0 }]]), volumes: new Map(), etcHosts: 0 };
    expect(localStorageEviction(p, u)).toBe('Container c exceeded its local ephemeral storage limit "1Mi". ');
  });
  it("which pods are measured at all, and quantities printed as Quantity.String()", () => {
    expect(hasLocalStorageLimits(pod({}))).toBe(false);
    expect(hasLocalStorageLimits(pod({ volumes: [{ name: "m", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } }] }))).toBe(false);
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
      evict: async (p: Pod, e: PodEviction) => (evictions.set(p.metadata.uid, e), calls.push(`evict ${p.metadata.uid}`), { ok: true, steps: [], criCalls: 0 }),
      delete: async (uid: string) => (calls.push(`delete ${uid}`), evictions.delete(uid), { ok: true, steps: [], criCalls: 0, deleted: true, wasRunning: false, pod: { uid, name: "", namespace: "" } }),
    } as unknown as PodRuntime;
    return { rt, calls, evictions };
  }
  const cri = (calls: string[]) => ({ listContainerStats: async () => (calls.push("ListContainerStats"), { stats: [{ attributes: { id: "c1" }, writableLayer: { usedBytes: { value: 0n } } }] }) }) as unknown as CriClient;
  const running = (p: Pod): PodStatus => ({ id: p.metadata.uid, name: "p", namespace: "default", ips: [], sandboxStatuses: [], containerStatuses: [containerStatus("c1", "c", "running", "h")] });

  it("one ListContainerStats for the node; only pods with limits; an Always pod is made anew after the back-off, a Never pod stays evicted", async () => {
    const { rt, calls } = fakeRuntime();
    const never = pod({ volumes: [{ name: "v", emptyDir: { sizeLimit: "1Mi" } }] });
    const always = Pod.parse({ ...never, metadata: { name: "q", uid: "u2" }, spec: { ...never.spec, restartPolicy: "Always" } });
    const plain = Pod.parse({ metadata: { name: "r", uid: "u3" }, spec: { containers: [{ name: "c", image: "busybox:1" }] } });
    const disk = { usage: async (path: string) => (path.includes("empty-dir") ? 2 * MiB : 0) };
    const o = { cri: cri(calls), disk, node: defaultNodeConfig(), recreateAfterMs: 1000 };
    const pods = [never, always, plain].map((p) => ({ pod: p, status: running(p) }));
    const r1 = await evictionPass(o, rt, pods, 5_000);
    expect(r1).toMatchObject({ statsCalls: 1, recreated: [] });
    expect(r1.evicted.map((e) => e.uid)).toEqual(["u1", "u2"]);
    expect(calls).toEqual(["ListContainerStats", "evict u1", "evict u2"]);
    // Evicted pods are not measured again; before the back-off nothing is made anew.
    calls.length = 0;
    expect(await evictionPass(o, rt, pods, 5_500)).toEqual({ statsCalls: 0, evicted: [], recreated: [] });
    expect(await evictionPass(o, rt, pods, 6_000)).toEqual({ statsCalls: 0, evicted: [], recreated: ["u2"] });
    expect(calls).toEqual(["delete u2"]);
    expect(rt.eviction("u1")).toBeDefined();
    expect(rt.eviction("u2")).toBeUndefined();
  });
});

describe("where no eviction manager runs (Workers)", () => {
  it("ephemeral-storage limits and disk emptyDir sizeLimits are refused, naming the field; requests are taken", async () => {
    const { createPodRuntime } = await import("../src/kuberuntime/runtime.js");
    const { InvalidPodError } = await import("../src/pod/validate.js");
    const rt = createPodRuntime({} as CriClient, {});
    const p = pod({ volumes: [{ name: "v", emptyDir: { sizeLimit: "1Mi" } }], containers: [{ name: "c", image: "busybox:1", resources: { requests: { "ephemeral-storage": "1Mi" }, limits: { "ephemeral-storage": "2Mi" } } }] });
    let err: unknown;
    try {
      rt.admit(p);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidPodError);
    expect((err as InstanceType<typeof InvalidPodError>).errors.map((e) => e.path)).toEqual(["spec.volumes[0].emptyDir.sizeLimit", "spec.containers[0].resources.limits.ephemeral-storage"]);
    expect(() => createPodRuntime({} as CriClient, { localStorageLimits: true }).admit(p)).not.toThrow();
  });
});

describe("node disk pressure (a hard threshold on nodefs.available)", () => {
  it("rankDiskPressureFunc: over their requests first, then lower priority, then the larger use beyond requests; kubelet's message", async () => {
    const { rankForDiskPressure, diskPressureMessage } = await import("../src/eviction/local-storage.js");
    const mkp = (uid: string, request: string | undefined, priority?: number) =>
      Pod.parse({ metadata: { name: uid, uid }, spec: { ...(priority !== undefined ? { priority } : {}), containers: [{ name: "c", image: "busybox:1", ...(request ? { resources: { requests: { "ephemeral-storage": request } } } : {}) }] } });
    const u = (n: number) => usage({ c: [n, 0] });
    const within = { pod: mkp("within", "10Mi"), usage: u(MiB) };
    const overLow = { pod: mkp("over-low-prio", "1Mi", -5), usage: u(2 * MiB) };
    const overBig = { pod: mkp("over-big", "1Mi"), usage: u(9 * MiB) };
    const overSmall = { pod: mkp("over-small", undefined), usage: u(3 * MiB) };
    expect(rankForDiskPressure([within, overSmall, overBig, overLow]).map((x) => x.pod.metadata.uid)).toEqual(["over-low-prio", "over-big", "over-small", "within"]);
    expect(diskPressureMessage(overBig.pod, overBig.usage)).toBe("The node was low on resource: ephemeral-storage. Container c was using 9Mi, request is 1Mi, has larger consumption of ephemeral-storage. ");
  });

  it("one pod per pass while under the threshold, reported as DiskPressure; such a pod is not made anew", async () => {
    const evictions = new Map<string, PodEviction>();
    const calls: string[] = [];
    const rt = {
      eviction: (uid: string) => evictions.get(uid),
      forgetEviction: (uid: string) => void evictions.delete(uid),
      evict: async (p: Pod, e: PodEviction) => (evictions.set(p.metadata.uid, e), calls.push(`evict ${p.metadata.uid}`), { ok: true, steps: [], criCalls: 0 }),
      delete: async (uid: string) => (calls.push(`delete ${uid}`), { ok: true }),
    } as unknown as PodRuntime;
    const mk = (uid: string) => Pod.parse({ metadata: { name: uid, uid }, spec: { containers: [{ name: "c", image: "busybox:1" }] } });
    const pods = ["a", "b"].map((uid) => ({ pod: mk(uid), status: { id: uid, name: uid, namespace: "default", ips: [], sandboxStatuses: [], containerStatuses: [containerStatus(`${uid}-c`, "c", "running", "h")] } as PodStatus }));
    const cri = { listContainerStats: async () => ({ stats: [{ attributes: { id: "a-c" }, writableLayer: { usedBytes: { value: 1n } } }, { attributes: { id: "b-c" }, writableLayer: { usedBytes: { value: 5n } } }] }) } as unknown as CriClient;
    let available = 5;
    const o = { cri, disk: { usage: async () => 0 }, node: defaultNodeConfig(), recreateAfterMs: 0, diskPressure: { threshold: { percent: 10 }, fs: async () => ({ capacity: 100, available }) } };
    const r1 = await evictionPass(o, rt, pods.map((p) => ({ ...p, pod: Pod.parse({ ...p.pod, spec: { ...p.pod.spec, restartPolicy: "Always" } }) })), 1_000);
    expect(r1).toMatchObject({ diskPressure: true, statsCalls: 1, evicted: [{ uid: "b", message: "The node was low on resource: ephemeral-storage. Container c was using 5, request is 0, has larger consumption of ephemeral-storage. " }] });
    available = 50;
    const r2 = await evictionPass(o, rt, pods, 2_000);
    expect(r2).toMatchObject({ diskPressure: false, evicted: [], recreated: [] });
    expect(calls).toEqual(["evict b"]);
  });
});

describe("nodeDiskUsage", () => {
  it("counts as du -s -B1 -x does (blocks in use, symlinks not followed), in-process; a missing path uses nothing", async () => {
    const { mkdtempSync, mkdirSync, writeFileSync, symlinkSync } = await import("node:fs");
    const { execFileSync } = await import("node:child_process");
    const { tmpdir } = await import("node:os");
    const { nodeDiskUsage } = await import("../src/host/disk-usage.js");
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
