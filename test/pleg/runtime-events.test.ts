// The loop with the runtime's event stream, on the in-process fake CRI (GetContainerEvents, sent after the state
// changed): an exit restarts its pod through the event, with the relist slowed to its evented period; a stream
// that closes and cannot be opened again falls back to the relist at its interval at once, and /metrics's port
// is told; 100 containers of one pod exiting together make one or two syncs.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { GrpcTransport } from "../../src/cri/grpc-transport.js";
import { createCriClient, type CriClient } from "../../src/cri/client.js";
import { watchContainerEvents, type ContainerEvent } from "../../src/cri/container-events.js";
import { GrpcCode } from "../../src/cri/errors.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { PodStatusCache } from "../../src/container/cache.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { startReconcileLoop, type ReconcileLoop } from "../../src/syncloop/sync-loop.js";
import type { NodeMetrics } from "../../src/metrics/metrics.js";
import { createPromMetrics } from "../../src/host/metrics/metrics.js";
import type { FakeServer } from "../support/fake-cri.js";
import { useFakeCri } from "../support/fake-cri-suite.js";
import { pod } from "../support/pods.js";
import { until } from "../support/wait.js";

let fake: FakeServer;
let transport: GrpcTransport;
let cri: CriClient;
let loop: ReconcileLoop | undefined;
const desired = () => new MemoryDesiredState();

const suite = useFakeCri({ each: true, timeoutMs: 2000 });
beforeEach(() => {
  fake = suite.fake;
  transport = new GrpcTransport({ endpoint: fake.endpoint, timeoutMs: 2000 });
  cri = createCriClient(transport);
});
afterEach(async () => {
  await loop?.stop();
  loop = undefined;
  transport.close();
});

function recorder() {
  const rec = { streams: [] as [boolean, string][], events: 0, relists: 0 };
  const m: NodeMetrics = {
    sync: () => undefined,
    criCall: () => undefined,
    relist: () => void rec.relists++,
    loopRestart: () => undefined,
    setSource: () => undefined,
    eventStream: (up, source) => void rec.streams.push([up, source]),
    runtimeEvent: () => void rec.events++,
  };
  return { m, rec };
}

/** Until no relist has run for 300 ms (those the last change asked for are over). */
async function relistsSettled(rec: { relists: number }) {
  let seen = -1;
  await until(
    "the relists to settle",
    async () => (seen === rec.relists ? true : ((seen = rec.relists), false)),
    5000,
    300,
  );
}

let syncs = 0;
function start(
  store: MemoryDesiredState,
  o: { relistIntervalMs: number; resyncIntervalMs?: number; metrics?: NodeMetrics; logs?: Record<string, unknown>[] },
) {
  const rt = createPodRuntime(cri);
  syncs = 0;
  return startReconcileLoop({
    runtime: { ...rt, sync: (...a) => (syncs++, rt.sync(...a)) },
    cri,
    desired: store,
    relistIntervalMs: o.relistIntervalMs,
    eventedRelistIntervalMs: 60_000,
    resyncIntervalMs: o.resyncIntervalMs ?? 600_000,
    metrics: o.metrics,
    log: (r) => o.logs?.push(r),
    events: (on) =>
      watchContainerEvents({
        transport,
        version: () => cri.version({}),
        onEvent: on.event,
        onState: on.state,
        backOffMs: { initial: 50, max: 200 },
      }),
  });
}

const running = (uid: string) =>
  [...fake.runtime.containers.values()].filter(
    (c) => c.config.labels["io.kubernetes.pod.uid"] === uid && c.state === api.ContainerState.CONTAINER_RUNNING,
  );

describe("the loop with runtime events", () => {
  it("an exit restarts the container through its event while the relist waits its evented period; a lost stream falls back to the relist at once", async () => {
    const store = desired();
    const [p, q] = [pod(), pod()];
    for (const x of [p, q]) await store.put({ pod: x, audit: { iss: "t", iat: 0 }, storedAt: 0 });
    const { m, rec } = recorder();
    const logs: Record<string, unknown>[] = [];
    // A relist interval far longer than the test: only events (or the fallback's immediate relist) can restart.
    loop = start(store, { relistIntervalMs: 30_000, metrics: m, logs });
    const [first] = await until(
      "the start-up sync",
      async () => running(p.metadata.uid).length === 1 && running(p.metadata.uid),
    );
    await until("the stream up", async () => rec.streams.at(-1)?.[0] === true);
    // The relist the stream's opening asked for (and one more if it came during the start-up relist) has run.
    await relistsSettled(rec);
    const relistsBefore = rec.relists;
    fake.runtime.exit(first!.id, 137);
    await until(
      "the event's restart",
      async () => running(p.metadata.uid).length === 1 && running(p.metadata.uid)[0]!.id !== first!.id,
      5000,
      10,
    );
    expect(rec.events).toBeGreaterThanOrEqual(1);
    // (Only the event could: the relist interval is 30 s and the evented period 60 s. The event's sync asks for a
    // relist after it, so the relist's readers see the restart too.)
    await until("the relist after the event's sync", async () => rec.relists > relistsBefore);
    expect(rec.streams.at(-1)).toEqual([true, "cri"]);

    // The stream closes and the runtime refuses a new one: reported down, relisted at once, then every interval.
    await relistsSettled(rec);
    const beforeDown = rec.relists;
    fake.runtime.eventsRefused = GrpcCode.UNAVAILABLE;
    fake.runtime.closeEventStreams();
    await until("reported down", async () => rec.streams.at(-1)?.[0] === false);
    await until("the fallback relist", async () => rec.relists > beforeDown);
    expect(logs).toContainEqual(
      expect.objectContaining({
        event: "error",
        what: "events",
        error: expect.stringMatching(/runtime event stream down \(relisting every 30000 ms\)/),
      }),
    );
    // Back up: logged as recovered.
    fake.runtime.eventsRefused = undefined;
    await until("up again", async () => rec.streams.at(-1)?.[0] === true, 5000, 20);
    expect(logs).toContainEqual(expect.objectContaining({ event: "recovered", what: "events" }));
    // (Another pod: a second crash of the first container would wait out its 10 s back-off.)
    const [other] = running(q.metadata.uid);
    fake.runtime.exit(other!.id, 137);
    await until(
      "the other pod restarted through its event",
      async () => running(q.metadata.uid).length === 1 && running(q.metadata.uid)[0]!.id !== other!.id,
      5000,
      10,
    );
  });

  it("containerd 1.6's TaskExit, which comes before CRI records the exit, restarts the container from the exit it carries; the relist after it waits for the record", async () => {
    const store = desired();
    const p = pod();
    await store.put({ pod: p, audit: { iss: "t", iat: 0 }, storedAt: 0 });
    const { m, rec } = recorder();
    const logs: Record<string, unknown>[] = [];
    let on: { event(e: ContainerEvent): void } | undefined;
    loop = startReconcileLoop({
      runtime: createPodRuntime(cri),
      cri,
      desired: store,
      relistIntervalMs: 30_000,
      eventedRelistIntervalMs: 60_000,
      resyncIntervalMs: 600_000,
      metrics: m,
      log: (r) => logs.push(r),
      // containerd's event service, as container-events.ts reads it: unsettled exits, with how they ended.
      events: (h) => {
        on = h;
        setTimeout(() => h.state({ up: true, source: "containerd", reconnects: 0 }), 0);
        return { close: () => undefined };
      },
    });
    const [first] = await until(
      "the start-up sync",
      async () => running(p.metadata.uid).length === 1 && running(p.metadata.uid),
    );
    await relistsSettled(rec);
    const relistsBefore = rec.relists;
    // The process is dead; CRI still shows it running (the fake has not been told).
    on!.event({ id: first!.id, kind: "exited", settled: false, exit: { code: 137, at: Date.now() } });
    const [, second] = await until(
      "the restart from the event's exit",
      async () => {
        const r = running(p.metadata.uid);
        return r.length === 2 && r;
      },
      5000,
      10,
    );
    expect(second!.config.metadata?.attempt).toBe(1);
    expect(second!.config.annotations["io.kubernetes.container.restartCount"]).toBe("1");
    await until("the sync's restart line", async () => logs.some((l) => l["event"] === "restart"));
    expect(logs).toContainEqual(
      expect.objectContaining({ event: "restart", container: "main", exitCode: 137, reason: "Error", restartCount: 1 }),
    );
    // The relist the sync asks for waits until CRI shows the exit: its readers never see the old instance running.
    await new Promise((r) => setTimeout(r, 200));
    expect(rec.relists).toBe(relistsBefore);
    fake.runtime.exit(first!.id, 137);
    await until("the relist once CRI recorded the exit", async () => rec.relists > relistsBefore);
    expect(running(p.metadata.uid).map((c) => c.id)).toEqual([second!.id]);
  });

  it("while the stream is down the relist at its interval restarts an exited container (the safety net)", async () => {
    fake.runtime.eventsRefused = GrpcCode.UNIMPLEMENTED;
    const store = desired();
    const p = pod();
    await store.put({ pod: p, audit: { iss: "t", iat: 0 }, storedAt: 0 });
    const { m, rec } = recorder();
    loop = start(store, { relistIntervalMs: 200, metrics: m });
    const [first] = await until(
      "the start-up sync",
      async () => running(p.metadata.uid).length === 1 && running(p.metadata.uid),
    );
    expect(rec.streams.every(([up]) => !up)).toBe(true);
    fake.runtime.exit(first!.id, 137);
    await until(
      "the relist's restart",
      async () => running(p.metadata.uid).length === 1 && running(p.metadata.uid)[0]!.id !== first!.id,
      5000,
    );
    expect(rec.events).toBe(0);
  });

  it("with the stream up, resyncs wait for the next slot of resync/2: pods synced at scattered times share relists on the slot grid", async () => {
    const store = desired();
    const starts: number[] = [];
    const m: NodeMetrics = {
      ...recorder().m,
      relist: (seconds, _late, relisted) => void (relisted && starts.push(Date.now() - seconds * 1000)),
    };
    // Resync 1.8 s, so slots of 900 ms; a relist floor of 20 ms so that, without the grid, every pod's resync would
    // have a relist of its own at its own time.
    const resync = 1800;
    const slot = resync / 2;
    loop = start(store, { relistIntervalMs: 20, resyncIntervalMs: resync, metrics: m });
    const pods = Array.from({ length: 8 }, () => pod());
    // Each pod stored and first synced 30 ms after the last: their resyncs fall due across a few slots.
    for (const p of pods) {
      await store.put({ pod: p, audit: { iss: "t", iat: 0 }, storedAt: 0 });
      loop.kick();
      await until("its first sync", async () => running(p.metadata.uid).length === 1, 5000, 10);
      await new Promise((r) => setTimeout(r, 30));
    }
    // Two resync rounds: each comes 1 to 1.5 intervals after the last (the sync ends just after its slot began,
    // so the next is due a little after resync on, and waits for the slot after that).
    const from = starts.length;
    await new Promise((r) => setTimeout(r, 2 * (resync + slot) + slot));
    const resyncs = starts.slice(from);
    // Without the grid: one relist per pod per round (16). With it: one per slot the pods fell due in (their
    // first syncs spanned one to three slots, more on a slow machine), and no second relist after each (a pass
    // does not wait for its syncs: the pods being synced are not taken as still due).
    expect(resyncs.length).toBeGreaterThanOrEqual(2);
    expect(resyncs.length).toBeLessThanOrEqual(8);
    // Each began on a slot boundary (a timer fires late, never early; the start is read back to the millisecond).
    for (const t of resyncs) expect(Math.min(t % slot, slot - (t % slot))).toBeLessThan(100);
    // No resync was skipped: every pod is still running its first container, and was synced again (a resync).
    for (const p of pods) expect(running(p.metadata.uid)).toHaveLength(1);
  });

  it("a resync decides from the status cache while the stream is up (no status read); a relist that sees the pod change empties its entry", async () => {
    const store = desired();
    const p = pod();
    await store.put({ pod: p, audit: { iss: "t", iat: 0 }, storedAt: 0 });
    const cache = new PodStatusCache();
    const rt = createPodRuntime(cri, { statusCache: cache });
    const changed: string[] = [];
    syncs = 0;
    // As the node wires it (src/node/loop.ts): the cache hears each event and the stream's state first.
    loop = startReconcileLoop({
      runtime: { ...rt, sync: (...a) => (syncs++, rt.sync(...a)) },
      cri,
      desired: store,
      relistIntervalMs: 20,
      eventedRelistIntervalMs: 60_000,
      resyncIntervalMs: 1000,
      statusChanged: (uid) => (changed.push(uid), cache.invalidate(uid)),
      events: (on) =>
        watchContainerEvents({
          transport,
          version: () => cri.version({}),
          onEvent: (e) => (cache.event(e), on.event(e)),
          onState: (st) => (cache.streamUp(st.up), on.state(st)),
          backOffMs: { initial: 50, max: 200 },
        }),
    });
    await until("the start-up sync", async () => running(p.metadata.uid).length === 1);
    // A resync's fresh read is kept once the pod's own events are a second past (QUIET_MS); the next resyncs hit it.
    // (A lone pod: its resyncs keep coming only if its sync's end, not a relist for another pod, schedules them.)
    await until("two resyncs answered by the cache", async () => cache.stats.hits >= 2, 10_000, 50);
    fake.runtime.resetCalls();
    const before = syncs;
    // Resyncs come 1 to 1.5 s apart (the slot grid of resync / 2).
    await new Promise((r) => setTimeout(r, 3200));
    expect(syncs - before).toBeGreaterThanOrEqual(2);
    expect(fake.runtime.calls.get("ListPodSandbox") ?? 0).toBeGreaterThanOrEqual(1);
    expect(fake.runtime.calls.get("PodSandboxStatus") ?? 0).toBe(0);
    expect(fake.runtime.calls.get("ContainerStatus") ?? 0).toBe(0);

    // The container ends with no event (one the stream lost): the relist sees it, empties the pod's entry, and the
    // restart's sync reads the runtime.
    const [c] = running(p.metadata.uid);
    c!.state = api.ContainerState.CONTAINER_EXITED;
    c!.exitCode = 1;
    await until("the restart the relist found", async () => running(p.metadata.uid).length === 1, 5000, 10);
    expect(changed).toContain(p.metadata.uid);
    expect(fake.runtime.calls.get("PodSandboxStatus") ?? 0).toBeGreaterThanOrEqual(1);
  });

  it("a request's release asks for a relist when the pod is new to the loop; a converged request asks for none", async () => {
    const store = desired();
    const p = pod();
    await store.put({ pod: p, audit: { iss: "t", iat: 0 }, storedAt: 0 });
    const { m, rec } = recorder();
    loop = start(store, { relistIntervalMs: 30_000, metrics: m });
    await until("the start-up sync", async () => running(p.metadata.uid).length === 1);
    await until("the stream up", async () => rec.streams.at(-1)?.[0] === true);
    await relistsSettled(rec);
    // As the HTTP route does it: store, then dispatch the sync to the pod's worker.
    const rt = createPodRuntime(cri);
    const request = async (x: typeof p) => {
      const entry = { pod: x, audit: { iss: "t", iat: 1 }, storedAt: Date.now() };
      await store.put(entry);
      const o = await loop!.pods.sync({ runtime: rt, entry, pod: x });
      if (o.kind !== "done") throw new Error(`the request's sync was ${o.kind}`);
      return o.value;
    };
    // A converged request on the loop's own pod: no relist.
    let before = rec.relists;
    expect((await request(p)).steps).toEqual([]);
    await new Promise((r) => setTimeout(r, 300));
    expect(rec.relists).toBe(before);
    // A new pod: one relist, so the loop knows it (its resync, its exits) before the evented period.
    const q = pod();
    before = rec.relists;
    await request(q);
    await until("the relist after the new pod's release", async () => rec.relists > before, 2000, 10);
  });

  it("100 containers of one pod exiting at once: a few syncs of that pod, not 100", async () => {
    const store = desired();
    const containers = Array.from({ length: 100 }, (_, i) => ({
      name: `c${i}`,
      image: "localhost/busybox:1",
      command: ["sleep", "3600"],
    }));
    const p = pod({ containers });
    await store.put({ pod: p, audit: { iss: "t", iat: 0 }, storedAt: 0 });
    const { m, rec } = recorder();
    loop = start(store, { relistIntervalMs: 30_000, metrics: m });
    await until("all 100 running", async () => running(p.metadata.uid).length === 100, 20_000);
    await until("the stream up", async () => rec.streams.at(-1)?.[0] === true);
    fake.runtime.resetCalls();
    syncs = 0;
    const ids = running(p.metadata.uid).map((c) => c.id);
    for (const id of ids) fake.runtime.exit(id, 137);
    await until(
      "all 100 restarted",
      async () => running(p.metadata.uid).length === 100 && running(p.metadata.uid).every((c) => !ids.includes(c.id)),
      20_000,
    );
    await until("every event", async () => rec.events === 100);
    await new Promise((r) => setTimeout(r, 300));
    // The first exit's sync, then one per wave of exits that arrived while the previous sync ran (the exact
    // coalescing is in evented-trigger.test.ts; here the events' arrival spreads with the machine's load).
    expect(syncs).toBeLessThanOrEqual(10);
    expect(fake.runtime.calls.get("CreateContainer")).toBe(100);
  });

  it("/metrics says whether the stream is up, and counts its events and failures", async () => {
    const pm = createPromMetrics();
    pm.eventStream!(true, "containerd");
    pm.runtimeEvent!("exited");
    pm.eventStream!(false, "containerd");
    const text = await pm.render();
    expect(text).toMatch(/podsync_runtime_events_up\{source="containerd"\} 0/);
    expect(text).toMatch(/podsync_runtime_events_total\{kind="exited"\} 1/);
    expect(text).toMatch(/podsync_runtime_event_stream_failures_total 1/);
  });
});

describe("the loop with runtime events and workloads", () => {
  /** The loop's quiet time, shorter than its default (CONTROLLERS_QUIET_MS, 10 s) to keep the test short. */
  const QUIET_MS = 2000;
  it("while workloads are stored and their pods change the loop relists at its interval (their controllers watch pods through it); quiet, it waits; a stored workload is run at the next pass", async () => {
    const { createControllers } = await import("../../src/controllers/run.js");
    const { MemoryWorkloadStore } = await import("../../src/controllers/store.js");
    const { Deployment } = await import("../../src/pod/workloads/schema.js");
    const store = desired();
    const workloads = new MemoryWorkloadStore();
    const rt = createPodRuntime(cri);
    const controllers = createControllers({ workloads, desired: store, runtime: rt, nodeName: "node-a" });
    const { m, rec } = recorder();
    loop = startReconcileLoop({
      runtime: rt,
      cri,
      desired: store,
      controllers,
      relistIntervalMs: 100,
      eventedRelistIntervalMs: 60_000,
      controllersQuietMs: QUIET_MS,
      metrics: m,
      events: (on) =>
        watchContainerEvents({
          transport,
          version: () => cri.version({}),
          onEvent: on.event,
          onState: on.state,
          backOffMs: { initial: 50, max: 200 },
        }),
    });
    await until("the event stream", async () => rec.streams.some(([up]) => up));
    const d = Deployment.parse({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", uid: "d1" },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: { containers: [{ name: "c", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent" }] },
        },
      },
    });
    await workloads.put({ workload: d, audit: { iss: "t", iat: 0 }, storedAt: Date.now(), generation: 1 });
    loop.kick();
    await until(
      "two ready pods, by relists at the interval",
      async () =>
        (
          (await workloads.list()).find((w) => w.workload.kind === "Deployment")?.status as
            | { availableReplicas?: number }
            | undefined
        )?.availableReplicas === 2,
    );
    expect(controllers.watching()).toBe(true);
    // Quiet: nothing changed for the quiet time, so no relist at the interval (the next comes at the controllers'
    // requeue time, at most the quiet time on).
    await new Promise((r) => setTimeout(r, QUIET_MS + 500));
    // At the interval this window would hold 15 relists; quiet, they are at least QUIET_MS apart.
    const quiet = rec.relists;
    await new Promise((r) => setTimeout(r, 1500));
    expect(rec.relists - quiet).toBeLessThanOrEqual(1);
    // A pod's container exits: its event's sync brings a relist that sees the change, and the interval again.
    const c = [...fake.runtime.containers.values()].find((x) => x.state === api.ContainerState.CONTAINER_RUNNING)!;
    const before = rec.relists;
    fake.runtime.exit(c.id, 137);
    await until("relists at the interval again", async () => rec.relists >= before + 5, 3000, 20);
  }, 30_000);
});
