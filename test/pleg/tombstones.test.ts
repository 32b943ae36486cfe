// A late token cannot bring a removed pod back, and a refused request leaves the store as it was: tombstones
// (src/pleg/tombstones.ts) kept by each store for the token lifetime plus the skew, the PUT-versus-per-pod
// ordering by iat, and the uid check made inside the store's write. Through the real HTTP app in front of the
// in-process CRI runtime, on the file store (and the memory store).
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness } from "../support/http.js";
import { uid } from "../support/pods.js";
import type { CriClient } from "../../src/cri/client.js";
import { FileDesiredState } from "../../src/state/desired-pods.js";
import { MemoryDesiredState, type DesiredState } from "../../src/pleg/desired-state.js";
import { Pod } from "../../src/pod/schema.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
let cri: CriClient;
const harnesses: Harness[] = [];

const suite = useFakeCri();
beforeAll(() => ({ fake, cri } = suite));
afterAll(async () => {
  for (const h of harnesses) await h.close();
});

const podInput = (name: string, id = uid(name), namespace = "tomb", command = ["sleep", "1d"]) => ({
  metadata: { name, namespace, uid: id },
  spec: { terminationGracePeriodSeconds: 0, containers: [{ name: "main", image: "localhost/busybox:1", command }] },
});
const sandboxesOf = (id: string) => [...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === id);

async function node(desired: DesiredState = new FileDesiredState(mkdtempSync(join(tmpdir(), "podsync-tomb-")))) {
  const h = await Harness.start(cri, { desired });
  harnesses.push(h);
  const sync = (pod: unknown, iat = 0) => h.post("/v1/pods/sync", pod, { iat });
  const del = async (id: string, iat = 0) =>
    h.fetch(`/v1/pods/${id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: id, gracePeriodSeconds: 0 }, { iat })}` },
    });
  const put = async (pods: unknown[], generation: number, iat = 0) =>
    h.fetch("/v1/node/pods", {
      method: "PUT",
      headers: { "content-type": "application/jose" },
      body: await h.sign({ act: "apply", generation, pods }, { iat }),
    });
  return { h, desired, sync, del, put };
}

describe("tombstones: a token signed before a pod's removal cannot bring it back", () => {
  for (const [name, make] of [
    ["file store", () => new FileDesiredState(mkdtempSync(join(tmpdir(), "podsync-tomb-")))],
    ["memory store", () => new MemoryDesiredState()],
  ] as const)
    it(`${name}: sync, DELETE, then a sync token signed 20 s before the DELETE: 409 stale-generation, nothing stored or run`, async () => {
      const n = await node(make());
      const p = podInput("late");
      const id = p.metadata.uid;
      // Signed first (20 s before the DELETE's token), sent last: a captured, unspent token.
      const late = await n.h.sign({ act: "sync", pod: p }, { iat: -20 });
      expect((await n.sync(p, -30)).status).toBe(200);
      const d = await n.del(id);
      expect(d.status, JSON.stringify(d.body)).toBe(200);
      const calls = fake.runtime.totalCalls();
      const r = await n.h.fetch("/v1/pods/sync", {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: late,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(409);
      expect(r.body).toMatchObject({
        type: "urn:podsync:problem:stale-generation",
        detail: expect.stringMatching(
          /was removed \(DELETE\) by a token issued at \d+; this token was issued at \d+ \(older\)/,
        ),
      });
      expect(await n.desired.get(id)).toBeUndefined();
      expect(sandboxesOf(id)).toEqual([]);
      expect(fake.runtime.totalCalls()).toBe(calls); // refused before any runtime call
      // A token newer than the DELETE syncs it again (the tombstone refuses only older ones).
      expect((await n.sync(p, 1)).status).toBe(200);
      expect(await n.desired.get(id)).toBeDefined();
      await n.del(id, 2);
    });

  it("a pod dropped by PUT /v1/node/pods: a sync signed before that PUT is 409; the tombstone survives a restart and expires after the token lifetime plus the skew", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-tomb-"));
    let t = Date.now();
    const n = await node(new FileDesiredState(dir, { now: () => t }));
    const a = podInput("dropped");
    const b = podInput("kept");
    expect((await n.put([a, b], 1, -40)).status).toBe(200);
    const r = await n.put([b], 2, -10);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.removed).toMatchObject([{ pod: { uid: a.metadata.uid }, deleted: true }]);
    const late = await n.sync(a, -20);
    expect(late.status, JSON.stringify(late.body)).toBe(409);
    expect(late.body.detail).toMatch(/dropped by PUT \/v1\/node\/pods at generation 2/);
    expect(sandboxesOf(a.metadata.uid)).toEqual([]);
    // On disk, and read again by a new store on the same directory (a restart).
    expect(Object.keys(JSON.parse(readFileSync(join(dir, "tombstones.json"), "utf8")))).toEqual([a.metadata.uid]);
    const again = new FileDesiredState(dir, { now: () => t });
    const tomb = await again.tombstone(a.metadata.uid);
    expect(tomb).toMatchObject({ generation: 2 });
    // The PUT's token was signed 10 s ago (a second boundary may have passed since).
    const iat = tomb!.iat;
    expect(Math.floor(Date.now() / 1000) - 10 - iat).toBeLessThanOrEqual(1);
    // No token issued before the PUT is valid after iat + 300 s + 30 s: the tombstone is gone then.
    t = (iat + 330) * 1000 + 1;
    expect(await again.tombstone(a.metadata.uid)).toBeUndefined();
    expect(await n.desired.tombstone(a.metadata.uid)).toBeUndefined();
    const h2 = await node(again);
    await h2.del(b.metadata.uid);
  });

  it("a PUT at a newer generation signed before a per-pod sync of one of its pods is refused (409 naming the pod), nothing changed; one signed after it applies", async () => {
    const n = await node();
    const a = podInput("set-a");
    expect((await n.put([a], 1, -60)).status).toBe(200);
    const changed = podInput("set-a", a.metadata.uid, "tomb", ["sleep", "2d"]);
    expect((await n.sync(changed, -10)).status).toBe(200);
    const before = await n.desired.get(a.metadata.uid);
    const r = await n.put([a], 2, -30);
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body).toMatchObject({
      type: "urn:podsync:problem:stale-generation",
      detail: expect.stringContaining(`${a.metadata.uid} (synced at iat`),
    });
    expect(await n.desired.generation()).toBe(1);
    expect(await n.desired.get(a.metadata.uid)).toEqual(before);
    // Dropping it is the same rollback; a DELETE after the PUT was signed too (the set would bring it back).
    expect((await n.put([], 2, -30)).status).toBe(409);
    const other = podInput("set-b");
    expect((await n.sync(other, -50)).status).toBe(200);
    expect((await n.del(other.metadata.uid, -5)).status).toBe(200);
    expect((await n.put([changed, other], 2, -7)).body.detail).toMatch(
      new RegExp(`${other.metadata.uid} \\(deleted at iat`),
    );
    // A set signed after those requests is newer than all of them.
    const ok = await n.put([changed], 2, 0);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(await n.desired.generation()).toBe(2);
    // A later PUT signed before this one, at a higher generation, is ordered by its generation alone.
    expect((await n.put([], 3, -1)).status).toBe(200);
  });
});

describe("a tombstone knows its pod's controller (issue #35)", () => {
  for (const [name, make] of [
    ["file store", () => new FileDesiredState(mkdtempSync(join(tmpdir(), "podsync-tomb-")))],
    ["memory store", () => new MemoryDesiredState()],
  ] as const)
    it(`${name}: a controller's pod removed by a DELETE is put again by that controller (same workload audit) at once; a request signed before the DELETE, even one naming the owner, stays refused; a newer one clears the tombstone`, async () => {
      const desired = make();
      const owner = { apiVersion: "apps/v1", kind: "StatefulSet", name: "db", uid: "sts-uid", controller: true };
      const pod = Pod.parse({
        ...podInput("db-1"),
        metadata: { ...podInput("db-1").metadata, ownerReferences: [owner] },
      });
      const now = Math.floor(Date.now() / 1000);
      const workloadAudit = { iss: "t", kid: undefined, jti: "sts-token", iat: now - 60 };
      const entry = (audit: typeof workloadAudit) => ({ pod, audit, storedAt: Date.now() });
      await desired.put(entry(workloadAudit));
      expect(await desired.remove(pod.metadata.uid, { iat: now })).toBe(true);
      expect((await desired.tombstone(pod.metadata.uid))?.owner).toEqual({ uid: "sts-uid", jti: "sts-token" });
      // The controller makes it anew with the workload's audit: stored, the tombstone kept.
      await desired.put(entry(workloadAudit));
      expect(await desired.get(pod.metadata.uid)).toBeDefined();
      expect(await desired.tombstone(pod.metadata.uid)).toBeDefined();
      // A request signed before the DELETE (its own jti, ownerReferences and all) is refused.
      await expect(desired.put(entry({ ...workloadAudit, jti: "late-request", iat: now - 5 }))).rejects.toThrow(
        /was removed \(DELETE\) by a token issued at/,
      );
      // Another controller's audit is not the owner's.
      const other = Pod.parse({
        ...podInput("db-1", pod.metadata.uid),
        metadata: { ...pod.metadata, ownerReferences: [{ ...owner, uid: "other" }] },
      });
      await expect(desired.put({ pod: other, audit: workloadAudit, storedAt: Date.now() })).rejects.toThrow(/older/);
      // A request newer than the DELETE syncs it and clears the tombstone.
      await desired.put(entry({ ...workloadAudit, jti: "new-request", iat: now + 1 }));
      expect(await desired.tombstone(pod.metadata.uid)).toBeUndefined();
    });
});

describe("409 uid-conflict leaves the desired state exactly as it was", () => {
  it("a uid the store holds for another pod whose sandbox is not made yet: the intruder is refused in the store's write; the victim stays stored", async () => {
    const n = await node();
    const victim = Pod.parse(podInput("victim-a", uid("victim"), "team-a"));
    // Stored by its request, which has not made the sandbox yet (the runtime shows nothing under the uid).
    await n.desired.put({
      pod: victim,
      audit: { iss: "fleet-controller", iat: Math.floor(Date.now() / 1000) - 5 },
      storedAt: Date.now(),
    });
    const before = await n.desired.get(victim.metadata.uid);
    const r = await n.sync(podInput("intruder-b", victim.metadata.uid, "team-b"));
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body).toMatchObject({
      type: "urn:podsync:problem:uid-conflict",
      holder: { namespace: "team-a", name: "victim-a" },
    });
    expect(await n.desired.get(victim.metadata.uid)).toEqual(before);
    expect(sandboxesOf(victim.metadata.uid)).toEqual([]);
    // A set naming the uid for another pod: 409 uid-conflict naming the item; nothing changed.
    const p = await n.put([podInput("ok"), podInput("intruder-b", victim.metadata.uid, "team-b")], 1);
    expect(p.status, JSON.stringify(p.body)).toBe(409);
    expect(p.body).toMatchObject({
      type: "urn:podsync:problem:uid-conflict",
      errors: [{ path: "pods[1].metadata.uid" }],
    });
    expect(await n.desired.generation()).toBe(0);
    expect(await n.desired.get(victim.metadata.uid)).toEqual(before);
  });
});
