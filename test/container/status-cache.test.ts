// The pods' status cache (src/container/cache.ts): what it keeps, what voids it, and a sync's decision read from it
// on the in-process runtime (no CRI call for a converged pod nothing happened to; a read again after an event).
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { MAX_AGE_MS, PodStatusCache, QUIET_MS } from "../../src/container/cache.js";
import type { ContainerState, ContainerStatus, PodStatus } from "../../src/container/types.js";
import { PodSandboxState, PodSandboxStatusSchema } from "../../src/gen/runtime/v1/api_pb.js";
import { useFakeCri } from "../support/fake-cri-suite.js";
import { createPromMetrics } from "../../src/host/metrics/metrics.js";
import { startNode } from "../../src/node.js";
import { until } from "../support/wait.js";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importJWK, SignJWT, type JWK } from "jose";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { pod, uid } from "../support/pods.js";

const container = (id: string, state: ContainerState = "running"): ContainerStatus => ({
  id,
  name: id,
  state,
  createdAt: 1,
  startedAt: 0,
  finishedAt: 0,
  exitCode: 0,
  image: "i",
  imageRef: "i",
  hash: "",
  restartCount: 0,
  reason: "",
  message: "",
  attempt: 0,
  sandboxId: "sb",
  gracePeriodSeconds: undefined,
  backoffStreak: 0,
});
const sandbox = (id: string, state = PodSandboxState.SANDBOX_READY) => create(PodSandboxStatusSchema, { id, state });
const status = (o: { sandboxes?: ReturnType<typeof sandbox>[]; containers?: ContainerStatus[] } = {}): PodStatus => ({
  id: "u",
  name: "p",
  namespace: "n",
  ips: [],
  sandboxStatuses: o.sandboxes ?? [sandbox("sb")],
  containerStatuses: o.containers ?? [container("c1")],
});

/** A cache on a clock of its own, its stream up, QUIET_MS past its start. */
function upCache() {
  let t = 10_000;
  const cache = new PodStatusCache(() => t);
  cache.streamUp(true);
  return { cache, advance: (ms: number) => (t += ms) };
}
/** Read "from the runtime" as a sync does: a ticket, then the read, then set. */
const read = (cache: PodStatusCache, uid: string, st: PodStatus) => cache.set(uid, st, cache.ticket(uid));

describe("the pod status cache", () => {
  it("keeps a read while the stream is up, and serves it until MAX_AGE_MS; nothing while the stream is down", () => {
    const down = new PodStatusCache(() => 0);
    expect(down.ticket("u")).toBeUndefined();
    down.set("u", status(), { all: 0, pod: 0, at: 0 });
    expect(down.get("u")).toBeUndefined();

    const { cache, advance } = upCache();
    const st = status();
    read(cache, "u", st);
    expect(cache.get("u")).toBe(st);
    advance(MAX_AGE_MS);
    expect(cache.get("u")).toBe(st);
    advance(1);
    expect(cache.get("u")).toBeUndefined();
    expect(cache.stats).toMatchObject({ hits: 2, misses: 1 });
  });

  it("the stream going down or coming back voids every entry (events may have been missed)", () => {
    const { cache } = upCache();
    read(cache, "u", status());
    cache.streamUp(false);
    expect(cache.get("u")).toBeUndefined();
    cache.streamUp(true);
    expect(cache.get("u")).toBeUndefined();
    // A read whose ticket came before the stream went down is not kept.
    const t = cache.ticket("u");
    cache.streamUp(false);
    cache.streamUp(true);
    cache.set("u", status(), t);
    expect(cache.get("u")).toBeUndefined();
  });

  it("an event for a container or the sandbox of a kept pod drops that pod only; a read it raced is not kept", () => {
    const { cache, advance } = upCache();
    read(cache, "u", status());
    read(cache, "v", status({ sandboxes: [sandbox("sb2")], containers: [container("c2")] }));
    cache.event({ id: "c1", kind: "changed", settled: false });
    expect(cache.get("u")).toBeUndefined();
    expect(cache.get("v")).toBeDefined();
    cache.event({ id: "sb2", kind: "changed", settled: false });
    expect(cache.get("v")).toBeUndefined();

    // A ticket taken before an event of its pod: the read is void.
    advance(QUIET_MS);
    read(cache, "u", status());
    const t = cache.ticket("u");
    cache.event({ id: "c1", kind: "changed", settled: false });
    cache.set("u", status(), t);
    expect(cache.get("u")).toBeUndefined();
    // A read within QUIET_MS after the event is not kept either (the runtime's own record of it may lag); after it is.
    advance(QUIET_MS - 1);
    read(cache, "u", status());
    expect(cache.get("u")).toBeUndefined();
    advance(1);
    read(cache, "u", status());
    expect(cache.get("u")).toBeDefined();
  });

  it("an event for an id no entry owns (made since, by anyone) voids every entry, and reads wait out QUIET_MS", () => {
    const { cache, advance } = upCache();
    read(cache, "u", status());
    cache.event({ id: "new-container", kind: "changed", settled: false });
    expect(cache.get("u")).toBeUndefined();
    read(cache, "u", status());
    expect(cache.get("u")).toBeUndefined();
    advance(QUIET_MS);
    read(cache, "u", status());
    expect(cache.get("u")).toBeDefined();
    // An event that names its pod (CRI's events carry the sandbox's uid) drops that pod even if its ids are unknown.
    cache.event({ id: "other", podUid: "u", kind: "changed", settled: true });
    expect(cache.get("u")).toBeUndefined();
  });

  it("a read still showing running what an exit event named is never kept; one showing the exit is, and clears it", () => {
    const { cache, advance } = upCache();
    cache.event({ id: "c1", kind: "exited", settled: false }); // containerd 1.6: before CRI records it
    advance(10 * QUIET_MS);
    read(cache, "u", status());
    expect(cache.get("u")).toBeUndefined();
    read(cache, "u", status({ containers: [container("c1", "exited"), container("c1b")] }));
    expect(cache.get("u")).toBeDefined();
    // The exit was seen: a later read of the same id running (it cannot be, but) no longer waits for it.
    advance(QUIET_MS);
    read(cache, "u", status());
    expect(cache.get("u")?.containerStatuses[0]?.state).toBe("running");
    // The same for a sandbox: its pause task's exit.
    cache.event({ id: "sb", kind: "exited", settled: false });
    advance(10 * QUIET_MS);
    read(cache, "u", status());
    expect(cache.get("u")).toBeUndefined();
  });

  it("keeps no pod being made or changed: a container created or unknown, no sandbox, two, or one not ready", () => {
    const { cache } = upCache();
    for (const st of [
      status({ containers: [container("c1", "created")] }),
      status({ containers: [container("c1", "unknown")] }),
      status({ sandboxes: [] }),
      status({ sandboxes: [sandbox("sb"), sandbox("old", PodSandboxState.SANDBOX_NOTREADY)] }),
      status({ sandboxes: [sandbox("sb", PodSandboxState.SANDBOX_NOTREADY)] }),
    ]) {
      read(cache, "u", st);
      expect(cache.get("u")).toBeUndefined();
    }
  });

  it("invalidate (a sync that acted) and forget (a delete) drop the pod and void a read that raced them", () => {
    const { cache, advance } = upCache();
    read(cache, "u", status());
    cache.invalidate("u");
    expect(cache.get("u")).toBeUndefined();
    advance(QUIET_MS);
    read(cache, "v", status({ sandboxes: [sandbox("sb2")], containers: [container("c2")] }));
    const t = cache.ticket("u");
    cache.forget("u");
    cache.set("u", status(), t);
    expect(cache.get("u")).toBeUndefined();
    expect(cache.get("v")).toBeDefined(); // another pod's entry stands
    expect(cache.stats.invalidations).toBe(1);
  });
});

describe("the status cache in /metrics", () => {
  it("counts hits, misses and invalidations as the cache does, read at collection", async () => {
    const pm = createPromMetrics();
    const { cache } = upCache();
    pm.setStatusCache!(() => cache.stats);
    read(cache, "u", status());
    cache.get("u");
    cache.get("v");
    cache.invalidate("u");
    const text = await pm.render();
    expect(text).toMatch(/podsync_pod_status_cache_reads_total\{result="hit"\} 1/);
    expect(text).toMatch(/podsync_pod_status_cache_reads_total\{result="miss"\} 1/);
    expect(text).toMatch(/podsync_pod_status_cache_invalidations_total 1/);
    cache.get("u");
    expect(await pm.render()).toMatch(/podsync_pod_status_cache_reads_total\{result="miss"\} 2/);
  });
});

describe("a sync's decision from the cache (in-process runtime)", () => {
  const runtime = useFakeCri();

  it("a converged pod nothing touched is decided with no CRI call, the same answer as a read; an event brings the read back", async () => {
    const { cache, advance } = upCache();
    const rt = createPodRuntime(runtime.cri, { statusCache: cache });
    const p = pod(
      {
        hostNetwork: true,
        containers: [
          { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "1d"] },
        ],
      },
      { uid: uid("cache") },
    );
    const made = await rt.sync(p);
    expect(made.ok).toBe(true);
    // The sync acted: what it made is read again next time (and waits out QUIET_MS, as its own events would).
    const first = await rt.sync(p);
    expect(first.steps).toEqual([]);
    expect(first.criCalls).toBe(3);
    advance(QUIET_MS);
    const kept = await rt.sync(p);
    expect(kept.criCalls).toBe(3);
    const snapshot = structuredClone(kept.status);
    const hit = await rt.sync(p);
    expect(hit.criCalls).toBe(0);
    expect(hit.steps).toEqual([]);
    expect(hit.status).toEqual(kept.status);
    expect(hit.apiStatus).toEqual({ ...kept.apiStatus });
    // Nothing downstream changed the shared status (the read-back copies what it adds).
    await rt.sync(p);
    expect(cache.get(p.metadata.uid)).toEqual(snapshot);
    // The loop's syncs read the runtime (a relist, an event or a resync found the pod due: the safety net).
    expect((await rt.sync(p, undefined, undefined, { fresh: true })).criCalls).toBe(3);

    // An event for the container (containerd 1.6's come before CRI records them): the next sync reads the runtime.
    const id = hit.status.containerStatuses[0]!.id;
    cache.event({ id, kind: "changed", settled: false });
    const after = await rt.sync(p);
    expect(after.criCalls).toBe(3);
    // A delete forgets the pod.
    advance(QUIET_MS);
    await rt.sync(p);
    expect(cache.get(p.metadata.uid)).toBeDefined();
    await rt.delete(p.metadata.uid, 0);
    expect(cache.get(p.metadata.uid)).toBeUndefined();
  });
});

describe("the status cache through the Node entry (in-process runtime, its CRI events on)", () => {
  const runtime = useFakeCri();

  it("a converged request is answered from the cache once the pod's own sync has settled; after the container's exit the next one reads the runtime", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-cache-node-"));
    const node = await startNode(
      {
        PODSYNC_PORT: "0",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_STATE_DIR: join(dir, "state"),
        PODSYNC_ROOT_DIR: join(dir, "root"),
        PODSYNC_CRI_ENDPOINT: runtime.fake.endpoint,
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_NODE_NAME: "cache-node",
        PODSYNC_POLICY: "privileged",
      },
      true,
    );
    try {
      const key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { iss: string };
      const priv = await importJWK(key, "EdDSA");
      const id = uid("cache-node");
      const input = {
        metadata: { name: id, namespace: "cache", uid: id },
        spec: {
          hostNetwork: true,
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "1d"] },
          ],
        },
      };
      const sync = async () => {
        const token = await new SignJWT({ act: "sync", pod: input })
          .setProtectedHeader({ alg: "EdDSA", kid: key.kid! })
          .setIssuer(key.iss)
          .setAudience("cache-node")
          .setIssuedAt()
          .setExpirationTime("1m")
          .setJti(uid("jti"))
          .sign(priv);
        const res = await fetch(`${node.url}/v1/pods/sync`, {
          method: "POST",
          headers: { "content-type": "application/jose" },
          body: token,
        });
        expect(res.status).toBe(200);
        return (await res.json()) as { runtime: { containers: { id: string; state: string; restartCount: number }[] } };
      };
      const hits = async () =>
        Number(
          /^podsync_pod_status_cache_reads_total\{result="hit"\} (\d+)$/m.exec(
            await (await fetch(`${node.url}/metrics`)).text(),
          )?.[1] ?? 0,
        );
      const made = await sync();
      const first = made.runtime.containers[0]!;
      // Its own steps voided it; QUIET_MS on, a read is kept and the next request decides from it.
      await until(
        "a request answered from the cache",
        async () => {
          const before = await hits();
          await sync();
          return (await hits()) === before + 1;
        },
        10_000,
        QUIET_MS / 4,
      );

      runtime.fake.runtime.exit(first.id, 137);
      // Once the node has heard the exit (an answer in the moment between the exit and its event would still be the
      // cache's, as CRI's own answer lags the process's death).
      await until(
        "the exit's event heard",
        async () =>
          /^podsync_runtime_events_total\{kind="exited"\} 1$/m.test(await (await fetch(`${node.url}/metrics`)).text()),
        5000,
        10,
      );
      const before = await hits();
      const after = await until(
        "the restart seen by a request",
        async () => {
          const r = await sync();
          return r.runtime.containers.some((c) => c.state === "running" && c.restartCount === 1) && r;
        },
        10_000,
        50,
      );
      // No request after the exit was decided from what was kept before it.
      expect(await hits()).toBe(before);
      expect(after.runtime.containers.find((c) => c.id === first.id)?.state).toBe("exited");
    } finally {
      await node.close();
    }
  });
});
