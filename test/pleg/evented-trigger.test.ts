// The PLEG's event trigger (src/pleg/evented.ts): an exit syncs its pod at once, coalesced per pod, after CRI
// shows it; an exit nobody owns asks for a relist.
import { describe, expect, it } from "vitest";
import { createEventTrigger, type Owner } from "../../src/pleg/evented.js";
import type { RuntimeExit } from "../../src/cri/container-events.js";

function harness(owners: Record<string, Owner>, stoppedAfter = 0) {
  const syncs: { uid: string; reason: string; exited?: [string, RuntimeExit][] }[] = [];
  const checks = new Map<string, number>();
  let unknown = 0;
  let release: (() => void) | undefined;
  let hold = false;
  const t = createEventTrigger({
    ownerOf: (id) => owners[id],
    stopped: async (id) => {
      const n = (checks.get(id) ?? 0) + 1;
      checks.set(id, n);
      return n > stoppedAfter;
    },
    sync: async (uid, reason, exited) => {
      syncs.push({ uid, reason, ...(exited && { exited: [...exited] }) });
      if (hold) await new Promise<void>((r) => (release = r));
    },
    unknown: () => unknown++,
    sleep: async () => undefined,
  });
  return {
    t,
    syncs,
    checks,
    unknown: () => unknown,
    holdSyncs: (h: boolean) => (hold = h),
    release: () => release?.(),
  };
}

describe("the event trigger", () => {
  it("100 containers of one pod exiting at once: one sync while the first runs, one more for the rest", async () => {
    const owners: Record<string, Owner> = {};
    for (let i = 0; i < 100; i++) owners[`c${i}`] = { uid: "pod-a", sandbox: false };
    const h = harness(owners);
    h.holdSyncs(true);
    for (let i = 0; i < 100; i++) h.t.handle({ id: `c${i}`, kind: "exited", settled: true });
    await new Promise((r) => setTimeout(r, 10));
    expect(h.syncs).toEqual([{ uid: "pod-a", reason: "container exited" }]);
    h.holdSyncs(false);
    h.release();
    await h.t.idle();
    expect(h.syncs).toHaveLength(2);
    expect(h.t.busy).toBe(0);
  });

  it("pods apart sync apart; events that are not exits change nothing; an exit nobody owns asks for a relist", async () => {
    const h = harness({ a: { uid: "pod-a", sandbox: false }, sb: { uid: "pod-b", sandbox: true } });
    h.t.handle({ id: "a", kind: "exited", settled: true });
    h.t.handle({ id: "sb", kind: "exited", settled: true });
    h.t.handle({ id: "a", kind: "changed", settled: true });
    h.t.handle({ id: "stranger", kind: "exited", settled: true });
    await h.t.idle();
    expect(h.syncs.sort((x, y) => x.uid.localeCompare(y.uid))).toEqual([
      { uid: "pod-a", reason: "container exited" },
      { uid: "pod-b", reason: "sandbox exited" },
    ]);
    expect(h.unknown()).toBe(1);
    // A CRI event names its pod itself: no owner needed.
    h.t.handle({ id: "new", podUid: "pod-c", kind: "exited", settled: true });
    await h.t.idle();
    expect(h.syncs.at(-1)).toEqual({ uid: "pod-c", reason: "container exited" });
  });

  it("an unsettled exit (containerd's TaskExit) syncs only once CRI shows the container stopped", async () => {
    const h = harness({ a: { uid: "pod-a", sandbox: false } }, 3);
    h.t.handle({ id: "a", kind: "exited", settled: false });
    await h.t.idle();
    expect(h.checks.get("a")).toBe(4);
    expect(h.syncs).toHaveLength(1);
  });

  it("a TaskExit that carries its exit syncs at once with it, without waiting for CRI; a sandbox's waits", async () => {
    const h = harness(
      { a: { uid: "pod-a", sandbox: false }, b: { uid: "pod-a", sandbox: false }, sb: { uid: "pod-b", sandbox: true } },
      3,
    );
    h.holdSyncs(true);
    h.t.handle({ id: "a", kind: "exited", settled: false, exit: { code: 137, at: 5 } });
    await new Promise((r) => setTimeout(r, 5));
    expect(h.checks.get("a")).toBeUndefined();
    expect(h.syncs).toEqual([{ uid: "pod-a", reason: "container exited", exited: [["a", { code: 137, at: 5 }]] }]);
    // Joined while the first sync runs: one more sync, with its own exit; one without its exit waits for CRI.
    h.t.handle({ id: "b", kind: "exited", settled: false, exit: { code: 1, at: 6 } });
    h.t.handle({ id: "sb", kind: "exited", settled: false, exit: { code: 0, at: 7 } });
    h.holdSyncs(false);
    h.release();
    await h.t.idle();
    expect(h.syncs.slice(1).sort((x, y) => x.uid.localeCompare(y.uid))).toEqual([
      { uid: "pod-a", reason: "container exited", exited: [["b", { code: 1, at: 6 }]] },
      { uid: "pod-b", reason: "sandbox exited" },
    ]);
    expect(h.checks.get("b")).toBeUndefined();
    expect(h.checks.get("sb")).toBe(4);
    // What follows such a sync can wait for CRI to show the exit.
    await h.t.settle("a", false);
    expect(h.checks.get("a")).toBe(4);
  });

  it("a sync that fails leaves the trigger free for the next exit", async () => {
    let n = 0;
    const failing = createEventTrigger({
      ownerOf: () => ({ uid: "p", sandbox: false }),
      stopped: async () => true,
      sync: async () => {
        n++;
        throw new Error("runtime down");
      },
      unknown: () => undefined,
    });
    failing.handle({ id: "a", kind: "exited", settled: true });
    await failing.idle();
    failing.handle({ id: "a", kind: "exited", settled: true });
    await failing.idle();
    expect(n).toBe(2);
    expect(failing.busy).toBe(0);
  });
});
