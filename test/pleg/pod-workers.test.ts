// The pod workers (src/podworkers/pod-workers.ts) with a fake sync function, as pkg/kubelet/pod_workers_test.go
// drives them: serialisation per pod, parallelism across pods, coalescing of work pending while busy, terminating
// then terminated, syncs after a kill ignored, restart of a terminating pod, cleanup. No runtime.
import { describe, expect, it } from "vitest";
import { PodWorkers, StaleWorkError, type PodWork, type UpdateType } from "../../src/podworkers/pod-workers.js";

/** A controllable piece of work: it starts when the worker runs it and ends when released. */
function gate() {
  let release!: (v?: unknown) => void;
  let fail!: (e: unknown) => void;
  const done = new Promise((res, rej) => ((release = res), (fail = rej)));
  return { done, release, fail };
}

function harness() {
  const log: string[] = [];
  const running = new Map<string, number>();
  let maxAtOnce = 0;
  let now = 0;
  const w = new PodWorkers({ onDone: (uid, type, outcome) => log.push(`done ${uid} ${type} ${outcome}`) });
  const work = (uid: string, type: UpdateType, name: string, until?: Promise<unknown>): PodWork<string> => ({
    type,
    run: async () => {
      running.set(uid, (running.get(uid) ?? 0) + 1);
      now++;
      maxAtOnce = Math.max(
        maxAtOnce,
        [...running.values()].reduce((a, b) => a + b, 0),
      );
      expect(running.get(uid)).toBe(1); // never two of one pod at once
      log.push(`run ${name}`);
      try {
        await until;
        return name;
      } finally {
        running.set(uid, running.get(uid)! - 1);
      }
    },
  });
  return { w, log, work, maxAtOnce: () => maxAtOnce, ticks: () => now };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("pod workers", () => {
  it("serialise one pod's work and run different pods' work in parallel", async () => {
    const { w, log, work, maxAtOnce } = harness();
    const [a, b] = [gate(), gate()];
    const pa = w.update("a", work("a", "create", "a1", a.done));
    const pb = w.update("b", work("b", "create", "b1", b.done));
    await tick();
    expect(log).toEqual(["run a1", "run b1"]);
    expect(maxAtOnce()).toBe(2);
    const pa2 = w.update("a", work("a", "update", "a2"));
    await tick();
    expect(log).toEqual(["run a1", "run b1"]); // a2 waits for a1
    expect(w.busy("a")).toBe(true);
    a.release();
    b.release();
    expect(await pa).toEqual({ kind: "done", value: "a1" });
    expect(await pb).toEqual({ kind: "done", value: "b1" });
    expect(await pa2).toEqual({ kind: "done", value: "a2" });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run a1", "run b1", "run a2"]);
    await w.idle();
    expect(w.busy("a")).toBe(false);
  });

  it("a worker is idle when its last work's waiters hear the outcome (a waiter may hand it new work at once)", async () => {
    const { w, work } = harness();
    const seen: boolean[] = [];
    const after = w.update("a", work("a", "create", "a1")).then(async (o) => {
      seen.push(w.busy("a"));
      return [o, await w.update("a", work("a", "sync", "a2"))];
    });
    expect(await after).toEqual([
      { kind: "done", value: "a1" },
      { kind: "done", value: "a2" },
    ]);
    // A failed work's waiter, and one with work still pending (the worker then stays busy for it).
    const g = gate();
    const failed = w.update("a", work("a", "update", "b1", g.done)).catch(() => w.busy("a"));
    await tick();
    const next = w.update("a", work("a", "update", "b2")).then(() => w.busy("a"));
    g.fail(new Error("boom"));
    expect(await failed).toBe(true);
    expect(await next).toBe(false);
    expect(seen).toEqual([false]);
  });

  it("coalesce work that comes while busy: the latest update wins, the replaced one is superseded", async () => {
    const { w, log, work } = harness();
    const g = gate();
    const first = w.update("a", work("a", "create", "v1", g.done));
    await tick();
    const v2 = w.update("a", work("a", "update", "v2"));
    const v3 = w.update("a", work("a", "update", "v3"));
    // A loop sync meets pending work: that work syncs the pod, the sync is superseded at once.
    expect(await w.update("a", work("a", "sync", "resync"))).toEqual({ kind: "superseded" });
    expect(await v2).toEqual({ kind: "superseded" });
    g.release();
    expect(await first).toEqual({ kind: "done", value: "v1" });
    expect(await v3).toEqual({ kind: "done", value: "v3" });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run v1", "run v3"]);
  });

  it("a replaced update that does the same (the same key: one spec) joins the newer one and gets its result", async () => {
    const { w, log, work } = harness();
    const g = gate();
    void w.update("a", work("a", "create", "first", g.done));
    await tick();
    // Keys are computed only when an update replaces another.
    const keys: string[] = [];
    const key = (k: string, name: string) => () => (keys.push(name), k);
    const same = (name: string) => ({ ...work("a", "update", name), key: key("spec-1", name) });
    const waiting = [w.update("a", same("s1")), w.update("a", same("s2")), w.update("a", same("s3"))];
    const other = w.update("a", { ...work("a", "update", "other"), key: key("spec-2", "other") });
    g.release();
    expect(await Promise.all(waiting)).toEqual(Array(3).fill({ kind: "superseded" }));
    expect(await other).toEqual({ kind: "done", value: "other" });
    const g2 = gate();
    void w.update("a", work("a", "create", "again", g2.done));
    await tick();
    const joined = [w.update("a", same("j1")), w.update("a", same("j2"))];
    g2.release();
    expect(await Promise.all(joined)).toEqual(Array(2).fill({ kind: "done", value: "j2" }));
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run first", "run other", "run again", "run j2"]);
    expect(keys).toEqual(["s1", "s2", "s2", "s3", "s3", "other", "j1", "j2"]);
  });

  it("a request's update replaces a pending loop sync", async () => {
    const { w, work } = harness();
    const g = gate();
    void w.update("a", work("a", "sync", "s1", g.done));
    await tick();
    const s2 = w.update("a", work("a", "sync", "s2"));
    const req = w.update("a", work("a", "update", "req"));
    expect(await s2).toEqual({ kind: "superseded" });
    g.release();
    expect(await req).toEqual({ kind: "done", value: "req" });
  });

  it("work that finds itself stale (StaleWorkError) is superseded, and the worker goes on", async () => {
    const { w, work } = harness();
    const stale: PodWork<string> = { type: "update", run: () => Promise.reject(new StaleWorkError("moot")) };
    expect(await w.update("a", stale)).toEqual({ kind: "superseded" });
    expect(w.state("a")).toBe("syncing");
    expect(await w.update("a", work("a", "sync", "next"))).toEqual({ kind: "done", value: "next" });
  });

  it("work waiting for its slot is still pending: a newer update replaces it, and parallelism is bounded", async () => {
    const { w, log, work, maxAtOnce } = harness();
    let free = 1;
    const queue: (() => void)[] = [];
    const slot = () =>
      new Promise<() => void>((r) => {
        const grant = () => (free--, r(() => (free++, queue.shift()?.())));
        if (free > 0) grant();
        else queue.push(grant);
      });
    const g = gate();
    const a = w.update("a", { ...work("a", "create", "a", g.done), slot });
    const b = w.update("b", { ...work("b", "create", "b v1"), slot });
    await tick();
    expect(log).toEqual(["run a"]);
    // b's update waits for the slot; a newer one (no slot) replaces it and runs at once.
    const b2 = w.update("b", work("b", "update", "b v2"));
    expect(await b).toEqual({ kind: "superseded" });
    expect(await b2).toEqual({ kind: "done", value: "b v2" });
    g.release();
    expect(await a).toEqual({ kind: "done", value: "a" });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run a", "run b v2"]);
    expect(maxAtOnce()).toBe(2);
    await w.idle();
    expect(free).toBe(1);
  });

  it("a kill is not lost to a later sync: terminating, then terminated; syncs after it are ignored", async () => {
    const { w, log, work } = harness();
    const g = gate();
    void w.update("a", work("a", "create", "v1", g.done));
    await tick();
    const pendingSync = w.update("a", work("a", "update", "v2"));
    const kill = w.update("a", work("a", "kill", "kill", undefined));
    // The kill replaced the pending update; a second kill joins it; a later loop sync is ignored.
    expect(await pendingSync).toEqual({ kind: "superseded" });
    expect(w.state("a")).toBe("terminating");
    const kill2 = w.update("a", work("a", "kill", "kill2"));
    expect(await w.update("a", work("a", "sync", "resync"))).toEqual({ kind: "ignored", state: "terminating" });
    g.release();
    expect(await kill).toEqual({ kind: "done", value: "kill" });
    expect(await kill2).toEqual({ kind: "done", value: "kill" });
    expect(w.state("a")).toBe("terminated");
    // kubelet: "pod is finished processing, no further updates".
    expect(await w.update("a", work("a", "sync", "late"))).toEqual({ kind: "ignored", state: "terminated" });
    expect(await w.update("a", work("a", "kill", "again"))).toEqual({ kind: "ignored", state: "terminated" });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run v1", "run kill"]);
  });

  it("a kill that comes while a kill runs joins it: one teardown, every waiter told", async () => {
    const { w, log, work } = harness();
    const g = gate();
    const k1 = w.update("a", work("a", "kill", "k1", g.done));
    await tick();
    const k2 = w.update("a", work("a", "kill", "k2"));
    g.release();
    expect(await k1).toEqual({ kind: "done", value: "k1" });
    expect(await k2).toEqual({ kind: "done", value: "k1" });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run k1"]);
  });

  it("a request for a terminating pod restarts it once the teardown ends", async () => {
    const { w, log, work } = harness();
    const g = gate();
    const kill = w.update("a", work("a", "kill", "kill", g.done));
    await tick();
    const r1 = w.update("a", work("a", "create", "r1"));
    const r2 = w.update("a", work("a", "create", "r2"));
    expect(await r1).toEqual({ kind: "superseded" });
    g.release();
    expect(await kill).toEqual({ kind: "done", value: "kill" });
    expect(await r2).toEqual({ kind: "done", value: "r2" });
    expect(w.state("a")).toBe("syncing");
    // A terminated pod's request restarts it too.
    await w.update("a", work("a", "kill", "kill again"));
    expect(w.state("a")).toBe("terminated");
    expect(await w.update("a", work("a", "update", "back"))).toEqual({ kind: "done", value: "back" });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run kill", "run r2", "run kill again", "run back"]);
  });

  it("a stale kill (its pod was put back) returns the worker to syncing, and a waiting request runs", async () => {
    const { w, work } = harness();
    const g = gate();
    void w.update("a", work("a", "create", "v1", g.done));
    await tick();
    const kill = w.update("a", { type: "kill", run: () => Promise.reject(new StaleWorkError("put back")) });
    g.release();
    expect(await kill).toEqual({ kind: "superseded" });
    expect(w.state("a")).toBe("syncing");
    expect(await w.update("a", work("a", "sync", "resync"))).toEqual({ kind: "done", value: "resync" });
  });

  it("a failed sync rejects its waiter and the worker goes on; a failed kill removes the worker", async () => {
    const { w, log, work } = harness();
    const g = gate();
    const p = w.update("a", work("a", "create", "v1", g.done));
    await tick();
    const next = w.update("a", work("a", "update", "v2"));
    g.fail(new Error("boom"));
    await expect(p).rejects.toThrow("boom");
    expect(await next).toEqual({ kind: "done", value: "v2" });
    const k = gate();
    const kill = w.update("a", work("a", "kill", "kill", k.done));
    k.fail(new Error("kill failed"));
    await expect(kill).rejects.toThrow("kill failed");
    expect(w.state("a")).toBeUndefined();
    expect(log).toContain("done a kill error");
  });

  it("syncKnownPods cleans up the terminated workers of pods no longer desired; those desired again sync again", async () => {
    const { w, work } = harness();
    await w.update("a", work("a", "create", "a"));
    await w.update("b", work("b", "kill", "b"));
    await w.update("c", work("c", "kill", "c"));
    expect(w.size).toBe(3);
    expect(await w.update("c", work("c", "sync", "c ignored"))).toEqual({ kind: "ignored", state: "terminated" });
    await w.idle();
    expect(w.syncKnownPods(new Set(["a", "c"]))).toEqual(["b"]);
    expect(w.size).toBe(2);
    expect(w.state("c")).toBe("syncing");
    expect(await w.update("c", work("c", "sync", "c again"))).toEqual({ kind: "done", value: "c again" });
    expect(w.state("b")).toBeUndefined();
    expect(w.forget("a")).toBe(false); // syncing: stays
    await w.update("a", work("a", "kill", "a killed"));
    await w.idle();
    expect(w.forget("a")).toBe(true);
    expect(w.state("a")).toBeUndefined();
    // Its uid may start again: a new worker.
    expect(await w.update("b", work("b", "create", "b again"))).toEqual({ kind: "done", value: "b again" });
    expect(w.state("b")).toBe("syncing");
  });
});

describe("pod workers: kills of different kinds (podsync's DELETE and eviction)", () => {
  const kind = (k: PodWork<string>, extra: Partial<PodWork<string>>): PodWork<string> => ({ ...k, ...extra });

  it("a DELETE's kill runs on a terminated worker, after a running kill, with its own result", async () => {
    const { w, log, work } = harness();
    const g = gate();
    const first = w.update("a", work("a", "kill", "teardown", g.done));
    await tick();
    // Not joined to the running teardown: it finds what that one left.
    const del = w.update("a", kind(work("a", "kill", "delete"), { always: true }));
    g.release();
    expect(await first).toEqual({ kind: "done", value: "teardown" });
    expect(await del).toEqual({ kind: "done", value: "delete" });
    expect(w.state("a")).toBe("terminated");
    // Terminated: a plain kill is ignored, a DELETE's runs again.
    expect(await w.update("a", work("a", "kill", "again"))).toEqual({ kind: "ignored", state: "terminated" });
    expect(await w.update("a", kind(work("a", "kill", "delete2"), { always: true }))).toEqual({
      kind: "done",
      value: "delete2",
    });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run teardown", "run delete", "run delete2"]);
  });

  it("a DELETE's kill that comes while a sync runs waits behind it, and the running work can see it waiting", async () => {
    const { w, log, work } = harness();
    const g = gate();
    const sync = w.update("a", work("a", "create", "v1", g.done));
    await tick();
    expect(w.killPending("a")).toBe(false);
    const del = w.update("a", kind(work("a", "kill", "delete"), { always: true }));
    // The sync's own clean-up leaves the teardown to this kill (dispatch.ts), which reports what it removed.
    expect(w.killPending("a")).toBe(true);
    g.release();
    expect(await sync).toEqual({ kind: "done", value: "v1" });
    expect(await del).toEqual({ kind: "done", value: "delete" });
    expect(w.killPending("a")).toBe(false);
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run v1", "run delete"]);
  });

  it("a DELETE's kill takes a waiting teardown's place and answers its waiters", async () => {
    const { w, log, work } = harness();
    const g = gate();
    void w.update("a", work("a", "create", "v1", g.done));
    await tick();
    const teardown = w.update("a", work("a", "kill", "teardown"));
    const del = w.update("a", kind(work("a", "kill", "delete"), { always: true }));
    g.release();
    expect(await del).toEqual({ kind: "done", value: "delete" });
    expect(await teardown).toEqual({ kind: "done", value: "delete" });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run v1", "run delete"]);
  });

  it("an eviction joins an eviction, is ignored while the pod is torn down, and a teardown replaces a waiting one", async () => {
    const { w, log, work } = harness();
    const g = gate();
    void w.update("a", work("a", "create", "v1", g.done));
    await tick();
    const evict = w.update("a", kind(work("a", "kill", "evict"), { evict: true }));
    const evict2 = w.update("a", kind(work("a", "kill", "evict2"), { evict: true }));
    expect(w.state("a")).toBe("terminating");
    // A teardown replaces the waiting eviction; an eviction after it is moot.
    const teardown = w.update("a", work("a", "kill", "teardown"));
    expect(await evict).toEqual({ kind: "superseded" });
    expect(await evict2).toEqual({ kind: "superseded" });
    expect(await w.update("a", kind(work("a", "kill", "evict3"), { evict: true }))).toEqual({
      kind: "ignored",
      state: "terminating",
    });
    g.release();
    expect(await teardown).toEqual({ kind: "done", value: "teardown" });
    expect(log.filter((l) => l.startsWith("run"))).toEqual(["run v1", "run teardown"]);
    // A running eviction is joined by the next, and leaves the worker terminated.
    const { w: w2, work: work2 } = harness();
    const h = gate();
    const e1 = w2.update("b", kind(work2("b", "kill", "e1", h.done), { evict: true }));
    await tick();
    const e2 = w2.update("b", kind(work2("b", "kill", "e2"), { evict: true }));
    h.release();
    expect(await e1).toEqual({ kind: "done", value: "e1" });
    expect(await e2).toEqual({ kind: "done", value: "e1" });
    expect(w2.state("b")).toBe("terminated");
  });
});
