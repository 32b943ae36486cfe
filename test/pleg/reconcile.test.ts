// The node agent's reconcile loop against the in-process CRI runtime, driven tick by tick with an injected
// clock: a converged node costs exactly the 2 list calls per relist (1, 10, 100 pods); only pods whose state
// changed are synced; the periodic resync; crash-loop back-off holds; pods outside the desired state are never
// touched; start-up syncs every desired pod; a runtime restart brings pods back as new sandbox attempts; one
// pod's failure neither stops the loop nor floods the log. And decide(), the pure part, on its own.
import { beforeEach, describe, expect, it } from "vitest";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import type { CriClient } from "../../src/cri/client.js";
import { createPodRuntime, type PodRuntime } from "../../src/kubelet/pod-runtime.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { startReconcileLoop, type ReconcileLoopOptions } from "../../src/syncloop/sync-loop.js";
import { decide, syncReason } from "../../src/syncloop/decide.js";
import type { Pod } from "../../src/pod/schema.js";
import type { FakeServer } from "../support/fake-cri.js";
import { pod } from "../support/pods.js";
import { containerStatus } from "../support/status.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
let cri: CriClient;
let runtime: PodRuntime;
let desired: MemoryDesiredState;
let t: number;
let synced: string[];
let logs: Record<string, unknown>[];

const suite = useFakeCri({ each: true });
beforeEach(async () => {
  ({ fake, cri } = suite);
  t = Date.now();
  // The engine's clock is the loop's (its crash-loop back-off check must agree with the loop's).
  const rt = createPodRuntime(cri, { pullBackOff: new MemoryPullBackOff(), now: () => t });
  synced = [];
  // The loop's syncs, as the engine sees them.
  runtime = {
    ...rt,
    sync: (p, probes, objects, guard) => (synced.push(p.metadata.uid), rt.sync(p, probes, objects, guard)),
  };
  desired = new MemoryDesiredState();
  logs = [];
});

const want = async (...pods: Pod[]) => {
  for (const p of pods) await desired.put({ pod: p, audit: { iss: "test", iat: 0 }, storedAt: 0 });
};
const loopWith = (o: Partial<ReconcileLoopOptions> = {}) =>
  startReconcileLoop({ runtime, cri, desired, manual: true, now: () => t, log: (r) => logs.push(r), ...o });
const containersOf = (uid: string, name = "main") =>
  [...fake.runtime.containers.values()].filter(
    (c) => c.config.labels["io.kubernetes.pod.uid"] === uid && c.config.metadata?.name === name,
  );
const runningOf = (uid: string, name = "main") =>
  containersOf(uid, name).filter((c) => c.state === api.ContainerState.CONTAINER_RUNNING);
const sandboxesOf = (uid: string) =>
  [...fake.runtime.sandboxes.values()].filter((s) => s.config.labels["io.kubernetes.pod.uid"] === uid);
const pods = (n: number) => Array.from({ length: n }, () => pod());

describe("relist cost on a converged node", () => {
  for (const n of [1, 10, 100])
    it(`${n} pod(s): exactly ListPodSandbox + ListContainers per relist, and no sync`, async () => {
      const ps = pods(n);
      await want(...ps);
      const loop = loopWith();
      const first = await loop.tick(); // start-up: every desired pod synced (and so created)
      expect(first.synced).toHaveLength(n);
      expect(first.synced.every((s) => s.reason === "start-up")).toBe(true);
      for (const p of ps) expect(runningOf(p.metadata.uid)).toHaveLength(1);
      await loop.tick(); // sees what start-up made
      for (let i = 0; i < 3; i++) {
        fake.runtime.resetCalls();
        synced = [];
        t += 1000;
        const r = await loop.tick();
        expect(r.relistCalls).toBe(2);
        expect(Object.fromEntries(fake.runtime.calls)).toEqual({ ListPodSandbox: 1, ListContainers: 1 });
        expect(synced).toEqual([]);
      }
      expect(loop.podPhases()).toMatchObject({ Running: n, Pending: 0 });
      await loop.stop();
    });

  it("exited containers and sandbox details are read once in their life, then cached", async () => {
    const p = pod({ restartPolicy: "Never" });
    await want(p);
    const loop = loopWith();
    await loop.tick();
    fake.runtime.exit(runningOf(p.metadata.uid)[0]!.id, 0);
    t += 1000;
    // The exit is news: its ContainerStatus is read, and a Never pod whose containers are done has its
    // sandbox killed (kubelet's killPod); what that sync read back is not read again.
    expect((await loop.tick()).synced).toEqual([{ uid: p.metadata.uid, reason: "pod to kill" }]);
    for (let i = 0; i < 2; i++) {
      fake.runtime.resetCalls();
      t += 1000;
      expect((await loop.tick()).synced).toEqual([]);
      expect(fake.runtime.totalCalls()).toBe(2);
    }
    expect(loop.podPhases()).toMatchObject({ Succeeded: 1 });
    await loop.stop();
  });
});

describe("what the loop syncs", () => {
  it("a pod whose worker runs a request's work (its PUT or sync) is left to it until done; what the request read back is not read again", async () => {
    const [a, b] = pods(2);
    await want(a!);
    const loop = loopWith();
    await loop.tick(); // start-up
    // A request stores b and dispatches its sync to b's worker, where it waits: a relist meanwhile does not sync it.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const rt = createPodRuntime(cri, { now: () => t });
    const gated: PodRuntime = { ...rt, sync: async (...args) => (await gate, rt.sync(...args)) };
    await want(b!);
    const work = loop.pods.sync({ runtime: gated, entry: (await desired.get(b!.metadata.uid))!, pod: b! });
    synced = [];
    t += 1000;
    expect((await loop.tick()).synced).toEqual([]);
    expect(synced).toEqual([]);
    // The request's own sync runs in the worker; the loop learns what it read back (the new sandbox's status).
    open();
    expect((await work).kind).toBe("done");
    fake.runtime.resetCalls();
    t += 1000;
    expect((await loop.tick()).synced).toEqual([]);
    expect(Object.fromEntries(fake.runtime.calls)).toEqual({ ListPodSandbox: 1, ListContainers: 1 });
    // A needed action (its container exited) while a request's work holds the worker: the relist after it syncs it.
    fake.runtime.exit(runningOf(b!.metadata.uid)[0]!.id, 137);
    let release!: () => void;
    const held = loop.pods.workers.update(b!.metadata.uid, {
      type: "update",
      run: () => new Promise<void>((r) => (release = r)),
    });
    t += 1000;
    expect((await loop.tick()).synced).toEqual([]);
    await new Promise((r) => setTimeout(r, 0));
    release();
    await held;
    t += 1000;
    expect((await loop.tick()).synced).toEqual([{ uid: b!.metadata.uid, reason: "containers to start" }]);
    await loop.stop();
  });

  it("only the pod whose container exited: restarted (restartPolicy Always), restartCount up, others untouched", async () => {
    const ps = pods(10);
    await want(...ps);
    const loop = loopWith();
    await loop.tick();
    await loop.tick();
    const victim = ps[3]!.metadata.uid;
    const before = new Map(ps.map((p) => [p.metadata.uid, runningOf(p.metadata.uid)[0]!.id]));
    fake.runtime.exit(before.get(victim)!, 137, "Error");
    synced = [];
    t += 1000;
    const r = await loop.tick();
    expect(synced).toEqual([victim]);
    expect(r.synced).toEqual([{ uid: victim, reason: "containers to start" }]);
    const now = runningOf(victim)[0]!;
    expect(now.id).not.toBe(before.get(victim));
    expect(now.config.annotations["io.kubernetes.container.restartCount"]).toBe("1");
    for (const p of ps)
      if (p.metadata.uid !== victim) expect(runningOf(p.metadata.uid)[0]!.id).toBe(before.get(p.metadata.uid));
    // one log line for the restart: the pod, the container, and how its last instance ended
    const v = ps[3]!.metadata;
    expect(logs.filter((l) => l["event"] === "restart")).toEqual([
      {
        event: "restart",
        pod: `${v.namespace}/${v.name}`,
        podUid: victim,
        container: ps[3]!.spec.containers[0]!.name,
        exitCode: 137,
        reason: "Error",
        restartCount: 1,
      },
    ]);
    await loop.stop();
  });

  it("the full resync comes every PODSYNC_RESYNC_INTERVAL_MS, not before", async () => {
    const ps = pods(3);
    await want(...ps);
    const loop = loopWith({ resyncIntervalMs: 60_000 });
    await loop.tick();
    const start = t;
    synced = [];
    for (const dt of [1000, 30_000, 59_000]) {
      t = start + dt;
      await loop.tick();
    }
    expect(synced).toEqual([]);
    t = start + 60_000;
    const r = await loop.tick();
    expect(r.synced.map((s) => s.reason)).toEqual(["resync", "resync", "resync"]);
    expect(synced.sort()).toEqual(ps.map((p) => p.metadata.uid).sort());
    synced = [];
    t = start + 61_000;
    await loop.tick();
    expect(synced).toEqual([]);
    await loop.stop();
  });

  it("a finished pod (restartPolicy Never, its container exited, its sandbox stopped) is not resynced: kubelet's pod worker stops syncing a terminated pod", async () => {
    const done = pod({
      restartPolicy: "Never",
      containers: [{ name: "main", image: "localhost/busybox:1", command: ["true"] }],
    });
    const running = pod();
    await want(done, running);
    const loop = loopWith({ resyncIntervalMs: 60_000 });
    await loop.tick(); // both started; the fake runtime's `true` exits 0 at once
    t += 1000;
    await loop.tick(); // the exit seen: the pod is killed (its sandbox stopped)
    t += 1000;
    await loop.tick();
    synced = [];
    const start = t;
    for (const dt of [60_000, 120_000, 180_000]) {
      t = start + dt;
      await loop.tick();
    }
    // The running pod is resynced each period; the finished one never again.
    expect(synced.filter((u) => u === done.metadata.uid)).toEqual([]);
    expect(synced.filter((u) => u === running.metadata.uid).length).toBeGreaterThanOrEqual(2);
    expect(containersOf(done.metadata.uid)).toHaveLength(1);
    await loop.stop();
  });

  it("crash-loop back-off holds: the first restart at once, the next only when its 10 s back-off has ended", async () => {
    const p = pod({ containers: [{ name: "main", image: "localhost/busybox:1", command: ["false"] }] });
    await want(p);
    const loop = loopWith();
    await loop.tick(); // started; the fake runtime exits `false` at once
    t += 1000;
    await loop.tick(); // first crash: no back-off
    expect(containersOf(p.metadata.uid)).toHaveLength(2);
    const last = () => containersOf(p.metadata.uid).sort((a, b) => Number(b.createdAt - a.createdAt))[0]!;
    const fin = Number(last().finishedAt / 1_000_000n);
    synced = [];
    for (const dt of [0, 1000, 5000, 9999]) {
      t = fin + dt;
      await loop.tick();
    }
    expect(synced).toEqual([]); // not a sync per relist while the back-off holds
    t = fin + 10_000;
    const r = await loop.tick();
    expect(r.synced).toEqual([{ uid: p.metadata.uid, reason: "back-off expired" }]);
    expect(last().config.annotations["io.kubernetes.container.restartCount"]).toBe("2");
    await loop.stop();
  });

  it("pods outside the desired state are never touched: podsync-labelled orphans and foreign pods", async () => {
    const mine = pod();
    const orphan = pod();
    await want(mine);
    await createPodRuntime(cri).sync(orphan); // podsync made it, but the store does not hold it
    // Another tool's pod, made with plain CRI calls and none of podsync's labels.
    const sb = await cri.runPodSandbox({
      config: {
        metadata: { name: "foreign", namespace: "other", uid: "foreign-uid", attempt: 0 },
        labels: { app: "foreign" },
      },
    });
    const fc = await cri.createContainer({
      podSandboxId: sb.podSandboxId,
      config: {
        metadata: { name: "x", attempt: 0 },
        image: { image: "localhost/busybox:1" },
        command: ["sleep", "1"],
        labels: { app: "foreign" },
      },
      sandboxConfig: { metadata: { name: "foreign", namespace: "other", uid: "foreign-uid", attempt: 0 } },
    });
    await cri.startContainer({ containerId: fc.containerId });
    const loop = loopWith();
    await loop.tick();
    fake.runtime.exit(runningOf(orphan.metadata.uid)[0]!.id, 1);
    fake.runtime.exit(fc.containerId, 1);
    await cri.stopPodSandbox({ podSandboxId: sb.podSandboxId });
    synced = [];
    for (let i = 0; i < 3; i++) {
      t += 61_000; // past the resync too
      await loop.tick();
    }
    expect(new Set(synced)).toEqual(new Set([mine.metadata.uid]));
    expect(runningOf(orphan.metadata.uid)).toHaveLength(0);
    expect(containersOf(orphan.metadata.uid)).toHaveLength(1);
    expect(fake.runtime.containers.get(fc.containerId)!.state).toBe(api.ContainerState.CONTAINER_EXITED);
    expect(fake.runtime.sandboxes.get(sb.podSandboxId)!.state).toBe(api.PodSandboxState.SANDBOX_NOTREADY);
    expect(loop.orphanPods()).toBe(1);
    await loop.stop();
  });

  it("start-up syncs every desired pod: a pod with no sandbox is created; a restarted loop syncs them all once", async () => {
    const ps = pods(3);
    await want(...ps);
    const loop = loopWith();
    await loop.tick();
    for (const p of ps) expect(sandboxesOf(p.metadata.uid)).toHaveLength(1);
    await loop.stop();
    // podsync restarts: a new loop; nothing changed, so each start-up sync finds the pod converged.
    const again = loopWith();
    synced = [];
    const r = await again.tick();
    expect(r.synced.map((s) => s.reason)).toEqual(["start-up", "start-up", "start-up"]);
    for (const p of ps) expect(sandboxesOf(p.metadata.uid)).toHaveLength(1);
    await again.stop();
  });

  it("after the runtime lost every sandbox (a containerd restart), each desired pod comes back with a new sandbox attempt", async () => {
    const ps = pods(3);
    await want(...ps);
    const loop = loopWith();
    await loop.tick();
    await loop.tick();
    for (const s of fake.runtime.sandboxes.values()) await cri.stopPodSandbox({ podSandboxId: s.id });
    t += 1000;
    await loop.tick();
    for (const p of ps) {
      const ready = sandboxesOf(p.metadata.uid).filter((s) => s.state === api.PodSandboxState.SANDBOX_READY);
      expect(ready).toHaveLength(1);
      expect(ready[0]!.config.metadata?.attempt).toBe(1);
      expect(runningOf(p.metadata.uid)).toHaveLength(1);
    }
    await loop.stop();
  });

  it("with nothing desired and no probes, a tick makes no CRI call", async () => {
    const loop = loopWith();
    fake.runtime.resetCalls();
    expect(await loop.tick()).toMatchObject({ relisted: false, relistCalls: 0 });
    expect(fake.runtime.totalCalls()).toBe(0);
    await loop.stop();
  });

  it("a new desired pod after start-up is created at the next relist; a removed one is left alone", async () => {
    const loop = loopWith();
    await want(pod());
    await loop.tick();
    const p = pod();
    await want(p);
    t += 1000;
    const r = await loop.tick();
    expect(r.synced).toEqual([{ uid: p.metadata.uid, reason: "no sandbox" }]);
    expect(runningOf(p.metadata.uid)).toHaveLength(1);
    await desired.remove(p.metadata.uid);
    fake.runtime.exit(runningOf(p.metadata.uid)[0]!.id, 1);
    synced = [];
    t += 1000;
    await loop.tick();
    expect(synced).toEqual([]);
    await loop.stop();
  });
});

describe("the loop and requests share the per-pod lock", () => {
  it("a request's sync and the loop's start-up sync of one new pod at once make one sandbox and one container", async () => {
    const p = pod();
    await want(p);
    const loop = loopWith();
    const [req] = await Promise.all([runtime.sync(p), loop.tick()]);
    expect(req.ok).toBe(true);
    expect(sandboxesOf(p.metadata.uid)).toHaveLength(1);
    expect(containersOf(p.metadata.uid)).toHaveLength(1);
    expect(synced).toEqual([p.metadata.uid, p.metadata.uid]);
    await loop.stop();
  });
});

describe("the spec a loop sync acts on", () => {
  it("is the stored one once the pod's lock is held: a spec replaced while the sync waited is not applied", async () => {
    const v1 = pod({ containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }] });
    await want(v1);
    let entered!: () => void;
    const waiting = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const rt = runtime;
    // The start-up sync reads the store, then waits (as if for the pod's lock) while a request stores v2.
    const loop = loopWith({
      runtime: {
        ...rt,
        sync: async (p, probes, objects, guard) => (entered(), await gate, rt.sync(p, probes, objects, guard)),
      },
    });
    const first = loop.tick();
    await waiting;
    const v2: Pod = {
      ...v1,
      spec: { ...v1.spec, containers: [{ ...v1.spec.containers[0]!, command: ["sleep", "2d"] }] },
    };
    await desired.put({ pod: v2, audit: { iss: "test", iat: 1 }, storedAt: 1 });
    release();
    await first;
    expect(containersOf(v1.metadata.uid)).toEqual([]); // v1 was not started
    t += 1000;
    await loop.tick();
    expect(containersOf(v1.metadata.uid).map((c) => c.config.command)).toEqual([["sleep", "2d"]]);
    await loop.stop();
  });
});

describe("failures", () => {
  it("a pod whose sync fails does not stop the others; its error is logged once, retried after 10 s", async () => {
    const bad = pod({
      containers: [
        { name: "main", image: "localhost/missing:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "1"] },
      ],
    });
    const good = pod();
    await want(bad, good);
    const loop = loopWith();
    await loop.tick();
    expect(runningOf(good.metadata.uid)).toHaveLength(1);
    const errs = () => logs.filter((l) => l["event"] === "error" && l["podUid"] === bad.metadata.uid);
    expect(errs()).toHaveLength(1);
    expect(String(errs()[0]!["error"])).toMatch(/^StartContainer main: ErrImagePull/);
    synced = [];
    for (let i = 0; i < 5; i++) {
      t += 1000;
      await loop.tick();
    }
    expect(synced).toEqual([]); // not retried on every relist
    expect(errs()).toHaveLength(1);
    // The healthy pod still gets its restart meanwhile.
    fake.runtime.exit(runningOf(good.metadata.uid)[0]!.id, 1);
    t += 1000;
    await loop.tick();
    expect(synced).toEqual([good.metadata.uid]);
    t += 10_000;
    synced = [];
    await loop.tick();
    expect(synced).toEqual([bad.metadata.uid]);
    await loop.stop();
  });

  it("a sync that fails after its pod was dropped leaves no error behind: the pod's next error, once it is back, is logged", async () => {
    const p = pod();
    await want(p);
    let entered!: () => void;
    const inSync = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const failing: PodRuntime = {
      ...runtime,
      sync: async () => (entered(), await gate, Promise.reject(new Error("boom"))),
    };
    const loop = loopWith({ runtime: failing });
    const first = loop.tick(); // the start-up sync, held in the engine
    await inSync;
    await desired.remove(p.metadata.uid);
    t += 1000;
    await loop.tick(); // the loop forgets the dropped pod
    release();
    await first;
    const errs = () =>
      logs.filter((l) => l["event"] === "error" && l["podUid"] === p.metadata.uid && l["desired"] !== false);
    expect(errs()).toEqual([]);
    // Back in the desired set and failing the same way: logged (not taken for the dropped pod's error).
    await want(p);
    t += 1000;
    await loop.tick();
    expect(errs()).toEqual([expect.objectContaining({ what: "sync", error: "boom" })]);
    await loop.stop();
  });

  it("a relist that fails is logged once, not per tick, and its recovery once", async () => {
    const p = pod();
    await want(p);
    const loop = loopWith();
    await loop.tick();
    await fake.stop();
    for (let i = 0; i < 3; i++) {
      t += 1000;
      const r = await loop.tick();
      expect(r.relisted).toBe(false);
    }
    expect(logs.filter((l) => l["what"] === "relist")).toEqual([
      expect.objectContaining({ event: "error", what: "relist" }),
    ]);
    await fake.restart();
    t += 1000;
    await expect.poll(async () => (await loop.tick()).relisted, { timeout: 10_000 }).toBe(true);
    expect(logs.filter((l) => l["what"] === "relist").map((l) => l["event"])).toEqual(["error", "recovered"]);
    await loop.stop();
  });
});

describe("decide (pure)", () => {
  const p = pod();
  const sandbox = {
    id: "sb",
    state: api.PodSandboxState.SANDBOX_READY,
    metadata: { attempt: 0 },
    network: { ip: "10.0.0.2" },
    linux: { namespaces: { options: { network: api.NamespaceMode.POD } } },
  } as unknown as api.PodSandboxStatus;
  const status = (containers: ReturnType<typeof containerStatus>[]) => ({
    id: p.metadata.uid,
    name: p.metadata.name,
    namespace: "default",
    ips: ["10.0.0.2"],
    sandboxStatuses: [sandbox],
    containerStatuses: containers,
  });
  const now = 1_000_000;

  it("no sandbox: act; converged: nothing", async () => {
    expect(decide(p, { ...status([]), sandboxStatuses: [] }, undefined, now)).toEqual({
      kind: "act",
      why: "no sandbox",
    });
    const { specHash, hashContainer } = await import("../../src/container/hash.js");
    const c = p.spec.containers[0]!;
    expect(
      decide(
        p,
        status([containerStatus("c1", "main", "running", hashContainer(c), { specHash: specHash(c) })]),
        undefined,
        now,
      ),
    ).toEqual({ kind: "converged" });
  });

  it("an exited container in back-off waits until it ends; then act, saying when it ended", async () => {
    const { specHash, hashContainer } = await import("../../src/container/hash.js");
    const c = p.spec.containers[0]!;
    const exited = containerStatus("c1", "main", "exited", hashContainer(c), {
      specHash: specHash(c),
      exitCode: 1,
      finishedAt: now - 4000,
      startedAt: now - 5000,
      backoffStreak: 1,
    });
    expect(decide(p, status([exited]), undefined, now)).toEqual({ kind: "back-off", until: now - 4000 + 10_000 });
    expect(decide(p, status([exited]), undefined, now + 6000)).toEqual({
      kind: "act",
      why: "back-off expired",
      backOffExpiredAt: now + 6000,
    });
  });

  it("syncReason: a change that needs action, an expired back-off once, a retry when due, the resync", () => {
    const rec = { fingerprint: "a", lastSyncStart: 100, lastSyncEnd: 200, retryAt: 10_200 };
    const timing = { now: 1000, resyncIntervalMs: 60_000 };
    const act = { kind: "act" as const, why: "containers to start" };
    expect(syncReason(rec, act, true, timing)).toBe("containers to start");
    expect(syncReason(rec, act, false, timing)).toBeUndefined();
    expect(syncReason(rec, { kind: "converged" }, true, timing)).toBeUndefined();
    expect(syncReason(rec, { ...act, backOffExpiredAt: 900 }, false, timing)).toBe("containers to start");
    expect(
      syncReason({ ...rec, lastSyncStart: 950 }, { ...act, backOffExpiredAt: 900 }, false, timing),
    ).toBeUndefined();
    expect(syncReason(rec, act, false, { ...timing, now: 10_200 })).toBe("retry: containers to start");
    expect(syncReason(rec, { kind: "converged" }, false, { ...timing, now: 60_200 })).toBe("resync");
    expect(syncReason(rec, { kind: "converged", finished: true }, false, { ...timing, now: 60_200 })).toBeUndefined();
  });
});

describe("loop settings", () => {
  it("defaults (relist: each entry point's), bounds and names", async () => {
    const { loadSettings } = await import("../../src/settings/node.js");
    const { RELIST_INTERVAL_DEFAULT_MS } = await import("../../src/settings/common.js");
    const s = loadSettings({});
    expect(s.PODSYNC_RELIST_INTERVAL_MS).toBeUndefined();
    expect(RELIST_INTERVAL_DEFAULT_MS).toEqual({ node: 1000, workers: 10_000 });
    expect(s).toMatchObject({ PODSYNC_RESYNC_INTERVAL_MS: 60_000, PODSYNC_METRICS: "loopback" });
    expect(loadSettings({ PODSYNC_RELIST_INTERVAL_MS: "250", PODSYNC_METRICS: "off" })).toMatchObject({
      PODSYNC_RELIST_INTERVAL_MS: 250,
      PODSYNC_METRICS: "off",
    });
    const bad = (() => {
      try {
        loadSettings({
          PODSYNC_RELIST_INTERVAL_MS: "10",
          PODSYNC_RESYNC_INTERVAL_MS: "soon",
          PODSYNC_METRICS: "public",
        });
      } catch (e) {
        return (e as Error).message;
      }
      return "";
    })();
    expect(bad).toMatch(/PODSYNC_RELIST_INTERVAL_MS: must be at least 100/);
    expect(bad).toMatch(/PODSYNC_RESYNC_INTERVAL_MS/);
    expect(bad).toMatch(/PODSYNC_METRICS: allowed: loopback, token, off/);
  });
});
