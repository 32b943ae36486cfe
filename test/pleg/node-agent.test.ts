// The node agent's desired state through the real HTTP app, in front of the in-process CRI runtime: PUT
// /v1/node/pods (a signed set at a generation), GET /v1/pods (v1.PodList + orphans), sync and DELETE keeping
// the store, and the refusals that leave the node unchanged.
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import * as nodeFs from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base64url, exportJWK } from "jose";
import { stringify as toYaml } from "yaml";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness, ISSUER, NODE } from "../support/http.js";
import { uid } from "../support/pods.js";
import { until } from "../support/wait.js";
import type { CriClient } from "../../src/cri/client.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { FileDesiredState, type StateFs } from "../../src/state/desired-pods.js";
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

/** A node with its own store on disk (fs may fail on demand). */
async function node(dir = mkdtempSync(join(tmpdir(), "podsync-agent-")), fs?: StateFs) {
  const desired = new FileDesiredState(dir, fs ? { fs } : {});
  const h = await Harness.start(cri, { desired });
  harnesses.push(h);
  return { h, dir, desired };
}

const podInput = (name: string, id = uid(name)) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace: "agent", uid: id },
  spec: {
    terminationGracePeriodSeconds: 2,
    containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }],
  },
});

const digest = async (body: string) =>
  base64url.encode(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body))));

async function put(h: Harness, pods: unknown[], generation: unknown, o: { iat?: number } = {}) {
  const token = await h.sign({ act: "apply", generation, pods }, o);
  return h.fetch("/v1/node/pods", { method: "PUT", headers: { "content-type": "application/jose" }, body: token });
}
async function putDetached(
  h: Harness,
  body: string,
  type: "application/yaml" | "application/json",
  generation: number,
) {
  const sig = await h.sign({ act: "apply", generation, body_sha256: await digest(body) });
  return h.fetch("/v1/node/pods", { method: "PUT", headers: { "content-type": type, "podsync-signature": sig }, body });
}
async function list(h: Harness) {
  const r = await h.fetch("/v1/pods", { headers: { authorization: `Bearer ${await h.sign({ act: "status" })}` } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}
const containerIds = (id: string) =>
  [...fake.runtime.containers.values()]
    .filter((c) => c.config.labels?.["io.kubernetes.pod.uid"] === id)
    .map((c) => c.id)
    .sort();
const sandboxesOf = (id: string) => [...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === id);

/** Refused with this status and problem type; the runtime saw no call (but the uid check's ListPodSandbox, a
 * read, made before a store that then fails), the store did not change. */
const callsButUidCheck = () => fake.runtime.totalCalls() - (fake.runtime.calls.get("ListPodSandbox") ?? 0);
async function refused(
  n: { h: Harness; desired: DesiredState },
  p: Promise<{ status: number; type: string; body: any }>,
  status: number,
  slug: string,
) {
  const before = { calls: callsButUidCheck(), gen: await n.desired.generation(), pods: await n.desired.list() };
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.type).toBe("application/problem+json");
  expect(r.body).toMatchObject({ type: `urn:podsync:problem:${slug}`, status });
  expect(callsButUidCheck()).toBe(before.calls);
  expect(await n.desired.generation()).toBe(before.gen);
  expect(await n.desired.list()).toEqual(before.pods);
  if (n.desired instanceof FileDesiredState) {
    const fresh = new FileDesiredState(n.desired.stateDir);
    expect([await fresh.generation(), (await fresh.list()).length]).toEqual([before.gen, before.pods.length]);
  }
  return r.body;
}

describe("PUT /v1/node/pods", () => {
  it("3 pods, then 2: one is removed, the other two are untouched (same containers, no step)", async () => {
    const n = await node();
    const [a, b, c] = [podInput("a"), podInput("b"), podInput("c")];
    const r1 = await put(n.h, [a, b, c], 1);
    expect(r1.status, JSON.stringify(r1.body)).toBe(200);
    expect(r1.body).toMatchObject({ ok: true, generation: 1, removed: [] });
    expect(r1.body.pods.map((p: any) => [p.pod.name, p.ok, p.steps.map((s: any) => s.action)])).toEqual(
      ["a", "b", "c"].map((x) => [x, true, ["CreatePodSandbox", "StartContainer"]]),
    );
    expect(r1.body.pods[0].status).toMatchObject({ phase: "Running" });
    const ids = [a, b].map((p) => containerIds(p.metadata.uid));

    const r2 = await put(n.h, [a, b], 2);
    expect(r2.status, JSON.stringify(r2.body)).toBe(200);
    expect(r2.body.pods.map((p: any) => p.steps)).toEqual([[], []]);
    expect(r2.body.removed).toMatchObject([
      { ok: true, deleted: true, pod: { namespace: "agent", name: "c", uid: c.metadata.uid } },
    ]);
    expect([a, b].map((p) => containerIds(p.metadata.uid))).toEqual(ids);
    expect(sandboxesOf(c.metadata.uid)).toEqual([]);
    expect((await n.desired.list()).map((e) => e.pod.metadata.name).sort()).toEqual(["a", "b"]);
    // The audit record is the token's.
    expect((await n.desired.get(a.metadata.uid))!.audit).toMatchObject({
      iss: "fleet-controller",
      kid: "ed-1",
      jti: expect.any(String),
      iat: expect.any(Number),
    });

    // An empty set drains the node (of the store's pods).
    const r3 = await put(n.h, [], 3);
    expect(r3.body.removed.map((p: any) => p.pod.name).sort()).toEqual(["a", "b"]);
    expect([a, b].flatMap((p) => sandboxesOf(p.metadata.uid))).toEqual([]);
    expect(await list(n.h)).toMatchObject({ metadata: { resourceVersion: "3" }, items: [] });
  });

  it("a sync stored just before the commit and dropped by it is named in `removed` (the PUT reads the store in its admission step)", async () => {
    const desired = new MemoryDesiredState();
    const h = await Harness.start(cri, { desired });
    harnesses.push(h);
    const x = podInput("just-before");
    // Right after the PUT's read of the store, a sync of x starts and is given a moment to be stored.
    const list = desired.list.bind(desired);
    let sync: Promise<{ status: number; body: any }> | undefined;
    desired.list = async () => {
      const read = await list();
      if (!sync) {
        sync = h.post("/v1/pods/sync", x);
        for (let i = 0; i < 25 && !(await desired.get(x.metadata.uid)); i++)
          await new Promise((r) => setTimeout(r, 20));
      }
      return read;
    };
    const r = await put(h, [], 1);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await sync;
    // Either x was stored before the commit (dropped by it, and named), or after it (kept): never a nameless removal.
    for (const p of r.body.removed)
      expect(p.pod).toEqual({ namespace: "agent", name: "just-before", uid: x.metadata.uid });
    await createPodRuntime(cri).delete(x.metadata.uid, 0);
  });

  it("a pod a later sync changed while the PUT ran is not rolled back: reported superseded, the newer spec stays", async () => {
    const desired = new MemoryDesiredState();
    const h = await Harness.start(cri, { desired, applyConcurrency: 1 });
    harnesses.push(h);
    const [a, b] = [podInput("sup-a"), podInput("sup-b")];
    const v3 = { ...b, spec: { ...b.spec, containers: [{ ...b.spec.containers[0]!, command: ["sleep", "3d"] }] } };
    // The PUT syncs one pod at a time; a's start hangs, and meanwhile a newer sync of b is stored and runs.
    fake.runtime.fault("StartContainer", { kind: "hang", ms: 1000, times: 1 });
    const pending = put(h, [a, b], 1);
    for (const end = Date.now() + 10_000; !fake.runtime.inFlight.get("StartContainer") && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 20));
    const s = await h.post("/v1/pods/sync", v3);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    const r = await pending;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.pods[1]).toMatchObject({
      ok: true,
      pod: { name: "sup-b" },
      steps: [],
      superseded: expect.stringContaining("later request"),
    });
    const commands = [...fake.runtime.containers.values()]
      .filter((c) => c.config.labels?.["io.kubernetes.pod.uid"] === b.metadata.uid)
      .map((c) => c.config.command.join(" "));
    expect(commands).toEqual(["sleep 3d"]);
    expect((await desired.get(b.metadata.uid))!.pod.spec.containers[0]!.command).toEqual(["sleep", "3d"]);
    expect((await put(h, [], 2)).status).toBe(200);
  });

  it("a pod a later sync put back while the PUT ran is not deleted by it: reported superseded, it keeps running", async () => {
    const desired = new MemoryDesiredState();
    const h = await Harness.start(cri, { desired, applyConcurrency: 1 });
    harnesses.push(h);
    const [y, x] = [podInput("back-y"), podInput("back-x")];
    expect((await put(h, [y, x], 1)).status).toBe(200);
    const xContainers = containerIds(x.metadata.uid);
    // The PUT drops both, one at a time; y's stop hangs, and meanwhile a newer sync puts x back.
    fake.runtime.fault("StopContainer", { kind: "hang", ms: 1000, times: 1 });
    const pending = put(h, [], 2);
    for (const end = Date.now() + 10_000; !fake.runtime.inFlight.get("StopContainer") && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 20));
    const s = await h.post("/v1/pods/sync", x);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    const r = await pending;
    expect(r.body.removed).toMatchObject([
      { ok: true, pod: { name: "back-y" }, deleted: true },
      { ok: true, pod: { name: "back-x" }, deleted: false, superseded: expect.stringContaining("put the pod back") },
    ]);
    expect(containerIds(x.metadata.uid)).toEqual(xContainers);
    expect(await desired.get(x.metadata.uid)).toBeDefined();
    expect((await put(h, [], 3)).status).toBe(200);
  });

  it("a detached signature over a YAML stream (empty documents skipped) or a JSON v1.List", async () => {
    const n = await node();
    const [a, b] = [podInput("ya"), podInput("yb")];
    const yaml = `---\n${toYaml(a)}---\n---\n${toYaml(b)}`;
    const r = await putDetached(n.h, yaml, "application/yaml", 1);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.pods.map((p: any) => p.pod.name)).toEqual(["ya", "yb"]);
    const json = JSON.stringify({ apiVersion: "v1", kind: "List", items: [b] });
    const r2 = await putDetached(n.h, json, "application/json", 2);
    expect(r2.status, JSON.stringify(r2.body)).toBe(200);
    expect(r2.body.removed.map((p: any) => p.pod.name)).toEqual(["ya"]);
    // The body must be the signed one.
    const sig = await n.h.sign({ act: "apply", generation: 3, body_sha256: await digest(json) });
    await refused(
      n,
      n.h.fetch("/v1/node/pods", {
        method: "PUT",
        headers: { "content-type": "application/json", "podsync-signature": sig },
        body: json.replace("yb", "yc"),
      }),
      401,
      "unauthorized",
    );
    await put(n.h, [], 9);
  });

  it("a generation not above the node's is 409 stale-generation; a refused PUT does not use up its generation", async () => {
    const n = await node();
    const a = podInput("g");
    expect((await put(n.h, [a], 5)).status).toBe(200);
    const body = await refused(n, put(n.h, [], 5), 409, "stale-generation");
    expect(body).toMatchObject({ current: 5, detail: expect.stringContaining("generation 5 is not above") });
    await refused(n, put(n.h, [], 4), 409, "stale-generation");
    // Refused for a bad item at 6: 6 is still free.
    await refused(n, put(n.h, [{ ...a, spec: { containers: [{ name: "main" }] } }], 6), 400, "invalid-pod");
    const ok = await put(n.h, [], 6);
    expect(ok.status).toBe(200);
    expect(await n.desired.generation()).toBe(6);
    // The claim itself: a whole number from 1, checked before anything.
    for (const g of [0, 1.5, "7", null]) {
      const b = await refused(n, put(n.h, [], g), 400, "bad-request");
      expect(b.errors).toEqual([{ path: "generation", message: expect.stringContaining("whole number") }]);
    }
    await refused(
      n,
      n.h.fetch("/v1/node/pods", {
        method: "PUT",
        headers: { "content-type": "application/jose" },
        body: await n.h.sign({ act: "sync", generation: 7, pods: [] }),
      }),
      401,
      "unauthorized",
    );
  });

  it("a malformed item fails the whole PUT naming the item and field; the node is left unchanged", async () => {
    const n = await node();
    const a = podInput("m");
    expect((await put(n.h, [a], 1)).status).toBe(200);
    const bad = { ...podInput("m2"), spec: { containers: [{ name: "main", image: "localhost/busybox:1", bogus: 1 }] } };
    const body = await refused(n, put(n.h, [podInput("m1"), bad, "not a pod"], 2), 400, "invalid-pod");
    expect(body.errors).toEqual([
      { path: "pods[1].spec.containers[0].bogus", message: expect.stringContaining("unknown field") },
      { path: "pods[2]", message: expect.any(String) },
    ]);
    // In a YAML stream, items[i] is the i-th document.
    const yaml = `${toYaml(podInput("m3"))}---\n${toYaml({ ...podInput("m4"), metadata: { name: "Not_A_Name", uid: "x1" } })}`;
    const b2 = await refused(n, putDetached(n.h, yaml, "application/yaml", 2), 400, "invalid-pod");
    expect(b2.errors).toEqual([{ path: "items[1].metadata.name", message: expect.any(String) }]);
    // The node owner's policy, per item.
    const host = { ...podInput("m5"), spec: { ...podInput("m5").spec, hostNetwork: true } };
    const b3 = await refused(n, put(n.h, [podInput("m6"), host], 2), 403, "policy");
    expect(b3.errors).toEqual([{ path: "pods[1].spec.hostNetwork", message: expect.any(String) }]);
    expect(containerIds(a.metadata.uid)).toHaveLength(1);
    await put(n.h, [], 3);
  });

  it("two pods with one uid, or one namespace/name, in a set are refused", async () => {
    const n = await node();
    const a = podInput("d");
    const body = await refused(
      n,
      put(n.h, [a, { ...podInput("other"), metadata: { ...a.metadata, name: "other" } }, { ...podInput("d") }], 1),
      400,
      "invalid-pod",
    );
    expect(body.errors).toEqual([
      {
        path: "pods[1].metadata.uid",
        message: `duplicate uid "${a.metadata.uid}" (also pods[0]): a set holds each pod once`,
      },
      { path: "pods[2].metadata.name", message: "duplicate pod agent/d (also pods[0]): a set holds each pod once" },
    ]);
  });

  it("a store that cannot be written: 503 state-unavailable, nothing acts, the previous state stays", async () => {
    let failing = false;
    const nospc = () => Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
    const fs: StateFs = {
      ...nodeFs,
      open: (async (p: string, flags?: string, mode?: number) => {
        if (failing && flags === "w") throw nospc();
        return nodeFs.open(p, flags, mode);
      }) as StateFs["open"],
      unlink: async (p) => {
        if (failing) throw nospc();
        return nodeFs.unlink(p);
      },
    };
    const n = await node(undefined, fs);
    const [a, b] = [podInput("f1"), podInput("f2")];
    expect((await put(n.h, [a, b], 1)).status).toBe(200);
    failing = true;
    await refused(n, put(n.h, [a], 2), 503, "state-unavailable");
    await refused(n, n.h.post("/v1/pods/sync", podInput("f3")), 503, "state-unavailable");
    await refused(
      n,
      n.h.fetch(`/v1/pods/${a.metadata.uid}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${await n.h.sign({ act: "delete", uid: a.metadata.uid })}` },
      }),
      503,
      "state-unavailable",
    );
    expect([a, b].map((p) => containerIds(p.metadata.uid).length)).toEqual([1, 1]);
    failing = false;
    expect((await put(n.h, [], 2)).status).toBe(200);
  });
});

describe("the store kept by sync and DELETE", () => {
  it("sync stores the pod with its audit before acting; an older iat is 409 stale-generation, for sync and DELETE", async () => {
    const n = await node();
    const p = podInput("s");
    expect((await n.h.post("/v1/pods/sync", p)).status).toBe(200);
    const stored = (await n.desired.get(p.metadata.uid))!;
    expect(stored.pod).toEqual(Pod.parse(p));
    const changed = { ...p, spec: { ...p.spec, containers: [{ ...p.spec.containers[0], command: ["sleep", "2d"] }] } };
    const body = await refused(n, n.h.post("/v1/pods/sync", changed, { iat: -10 }), 409, "stale-generation");
    expect(body.detail).toContain("older");
    const del = n.h.fetch(`/v1/pods/${p.metadata.uid}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await n.h.sign({ act: "delete", uid: p.metadata.uid }, { iat: -10 })}` },
    });
    await refused(n, del, 409, "stale-generation");
    expect((await n.desired.get(p.metadata.uid))!.pod.spec.containers[0]!.command).toEqual(["sleep", "1d"]);
    // A newer token goes through.
    expect((await n.h.post("/v1/pods/sync", changed, { iat: 1 })).status).toBe(200);
    expect((await n.desired.get(p.metadata.uid))!.pod.spec.containers[0]!.command).toEqual(["sleep", "2d"]);
    const ok = await n.h.fetch(`/v1/pods/${p.metadata.uid}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await n.h.sign({ act: "delete", uid: p.metadata.uid }, { iat: 2 })}` },
    });
    expect(ok.body).toMatchObject({ ok: true, deleted: true, desired: true });
    expect(await n.desired.get(p.metadata.uid)).toBeUndefined();
  });

  it("a sync overtaken by a PUT that drops its pod: 409 stale-generation, and nothing of the pod is left running", async () => {
    const n = await node();
    const x = podInput("overtaken");
    fake.runtime.fault("StartContainer", { kind: "hang", ms: 1500, times: 1 });
    const sync = n.h.post("/v1/pods/sync", x);
    for (const end = Date.now() + 10_000; !fake.runtime.inFlight.get("StartContainer") && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 20));
    const [s, p] = await Promise.all([sync, put(n.h, [], 1)]);
    expect(s.status, JSON.stringify(s.body)).toBe(409);
    expect(s.body).toMatchObject({
      type: "urn:podsync:problem:stale-generation",
      detail: expect.stringContaining("left the desired state"),
    });
    expect(p.body.removed).toMatchObject([{ ok: true, pod: { uid: x.metadata.uid } }]);
    expect(sandboxesOf(x.metadata.uid)).toEqual([]);
    expect(containerIds(x.metadata.uid)).toEqual([]);
  });

  it("a DELETE whose iat is older than a sync stored while it ran is refused, and the newer pod stays (the check is in the store's write)", async () => {
    const desired = new MemoryDesiredState();
    const h = await Harness.start(cri, { desired });
    harnesses.push(h);
    const p = podInput("del-race");
    expect((await h.post("/v1/pods/sync", p, { iat: -20 })).status).toBe(200);
    // A newer sync is stored right after the DELETE's route read the store (between its read and its removal).
    const newer = {
      ...(await desired.get(p.metadata.uid))!,
      audit: { iss: ISSUER, iat: Math.floor(Date.now() / 1000) + 100 },
    };
    const get = desired.get.bind(desired);
    let armed = true;
    desired.get = async (id) => {
      const r = await get(id);
      if (armed) {
        armed = false;
        await desired.put(newer);
      }
      return r;
    };
    const r = await h.fetch(`/v1/pods/${p.metadata.uid}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: p.metadata.uid }, { iat: -10 })}` },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body).toMatchObject({ type: "urn:podsync:problem:stale-generation" });
    expect((await desired.get(p.metadata.uid))!.audit.iat).toBe(newer.audit.iat);
    expect(sandboxesOf(p.metadata.uid)).toHaveLength(1);
    await createPodRuntime(cri).delete(p.metadata.uid, 0);
  });

  it("a sync whose stored spec a later sync replaced while it waited for the pod's lock does nothing: 409, the later spec is applied", async () => {
    const desired = new MemoryDesiredState();
    const h = await Harness.start(cri, { desired });
    harnesses.push(h);
    const p = podInput("lock-wait");
    const v = (cmd: string) => ({
      ...p,
      spec: { ...p.spec, containers: [{ ...p.spec.containers[0]!, command: ["sleep", cmd] }] },
    });
    expect((await h.post("/v1/pods/sync", p)).status).toBe(200);
    const command = async () => (await desired.get(p.metadata.uid))?.pod.spec.containers[0]?.command?.join(" ");
    const until = async (f: () => Promise<boolean> | boolean) => {
      for (const end = Date.now() + 10_000; !(await f()) && Date.now() < end; )
        await new Promise((r) => setTimeout(r, 20));
    };
    // A resync holds the pod's lock (its status read hangs); v2 is stored and waits for the lock; then v3.
    fake.runtime.fault("ListContainers", { kind: "hang", ms: 1000, times: 1 });
    const holder = h.post("/v1/pods/sync", p);
    await until(() => (fake.runtime.inFlight.get("ListContainers") ?? 0) > 0);
    const v2 = h.post("/v1/pods/sync", v("2d"));
    await until(async () => (await command()) === "sleep 2d");
    const v3 = h.post("/v1/pods/sync", v("3d"));
    await until(async () => (await command()) === "sleep 3d");
    const [r0, r2, r3] = await Promise.all([holder, v2, v3]);
    expect(r0.status, JSON.stringify(r0.body)).toBe(200); // it held the lock, its spec current when it took it
    expect(r2.status, JSON.stringify(r2.body)).toBe(409);
    expect(r2.body).toMatchObject({
      type: "urn:podsync:problem:stale-generation",
      detail: expect.stringContaining("later request"),
    });
    expect(r3.status, JSON.stringify(r3.body)).toBe(200);
    const commands = [...fake.runtime.containers.values()]
      .filter((c) => c.config.labels?.["io.kubernetes.pod.uid"] === p.metadata.uid)
      .map((c) => c.config.command.join(" "));
    expect(commands).toEqual(["sleep 1d", "sleep 3d"]); // v2 never ran
    await createPodRuntime(cri).delete(p.metadata.uid, 0);
  });

  it("a pod whose uid belongs to another pod on the node is refused before it is stored (sync and PUT): 409 uid-conflict, nothing changed", async () => {
    const n = await node();
    const a = podInput("id-a");
    expect((await put(n.h, [a], 1)).status).toBe(200);
    const impostor = { ...podInput("id-b"), metadata: { ...podInput("id-b").metadata, uid: a.metadata.uid } };
    const body = await refused(n, n.h.post("/v1/pods/sync", impostor), 409, "uid-conflict");
    expect(body).toMatchObject({ holder: { namespace: "agent", name: "id-a" } });
    expect((await list(n.h)).items.map((p: any) => p.metadata.name)).toEqual(["id-a"]);
    // In a set: the item is named, the generation is not used up.
    const set = await refused(n, put(n.h, [podInput("id-c"), impostor], 2), 409, "uid-conflict");
    expect(set).toMatchObject({
      holder: { name: "id-a" },
      errors: [{ path: "pods[1].metadata.uid", message: expect.stringContaining("already belongs to pod agent/id-a") }],
    });
    expect(sandboxesOf(a.metadata.uid).map((s) => s.config.metadata?.name)).toEqual(["id-a"]);
    expect((await put(n.h, [], 2)).status).toBe(200);
  });

  it("DELETE forgets a pod only the store holds, and removes an orphan only the runtime holds", async () => {
    const n = await node();
    const p = podInput("only-store");
    await n.h.post("/v1/pods/sync", p);
    await createPodRuntime(cri).delete(p.metadata.uid, 0); // gone from the runtime behind podsync's back
    const del = async (id: string) =>
      n.h.fetch(`/v1/pods/${id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${await n.h.sign({ act: "delete", uid: id })}` },
      });
    expect((await del(p.metadata.uid)).body).toMatchObject({
      ok: true,
      deleted: false,
      desired: true,
      pod: { name: "only-store", namespace: "agent" },
    });
    expect(await n.desired.get(p.metadata.uid)).toBeUndefined();

    const orphan = Pod.parse(podInput("orphan"));
    await createPodRuntime(cri).sync(orphan);
    expect((await list(n.h)).orphans.map((o: any) => o.metadata.uid)).toContain(orphan.metadata.uid);
    expect((await del(orphan.metadata.uid)).body).toMatchObject({ ok: true, deleted: true, desired: false });
    expect(sandboxesOf(orphan.metadata.uid)).toEqual([]);
  });

  it("DELETE ?wait=false answers 202 once the pod is out of the desired state, and the kill follows; an orphan still waits", async () => {
    const n = await node();
    const p = podInput("nowait");
    await n.h.post("/v1/pods/sync", p);
    const del = async (id: string) =>
      n.h.fetch(`/v1/pods/${id}?wait=false`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${await n.h.sign({ act: "delete", uid: id })}` },
      });
    const r = await del(p.metadata.uid);
    expect(r.status).toBe(202);
    expect(r.body).toEqual({
      ok: true,
      accepted: true,
      desired: true,
      pod: { namespace: "agent", name: "nowait", uid: p.metadata.uid },
    });
    expect(await n.desired.get(p.metadata.uid)).toBeUndefined();
    await until("the kill after the answer", async () => sandboxesOf(p.metadata.uid).length === 0, 5000);

    const orphan = Pod.parse(podInput("nowait-orphan"));
    await createPodRuntime(cri).sync(orphan);
    const o = await del(orphan.metadata.uid);
    expect(o.status).toBe(200);
    expect(o.body).toMatchObject({ ok: true, deleted: true, desired: false });
    expect(sandboxesOf(orphan.metadata.uid)).toEqual([]);
  });
});

describe("GET /v1/pods", () => {
  it("a v1.PodList of the desired pods with status (resourceVersion = generation) and the orphans; one node-wide list", async () => {
    const n = await node();
    const [a, b] = [podInput("la"), podInput("lb")];
    await put(n.h, [b, a], 4);
    const missing = podInput("lc");
    await n.h.post("/v1/pods/sync", missing);
    await createPodRuntime(cri).delete(missing.metadata.uid, 0);
    const orphan = Pod.parse(podInput("lorphan"));
    await createPodRuntime(cri).sync(orphan);
    // A pod some other tool made (no podsync label) is none of podsync's business: not listed at all.
    const foreign = await cri.runPodSandbox({
      config: {
        metadata: { name: "foreign", namespace: "agent", uid: uid("foreign"), attempt: 0 },
        labels: { "io.kubernetes.pod.uid": "foreign-uid" },
      },
    });

    const body = await list(n.h);
    expect(body).toMatchObject({ apiVersion: "v1", kind: "PodList", metadata: { resourceVersion: "4" } });
    expect(body.items.map((p: any) => [p.metadata.name, p.status.phase])).toEqual([
      ["la", "Running"],
      ["lb", "Running"],
      ["lc", "Pending"],
    ]);
    expect(body.items[0]).toMatchObject({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { namespace: "agent", uid: a.metadata.uid },
      spec: { containers: [{ name: "main" }] },
      status: { containerStatuses: [{ name: "main", ready: true, state: { running: {} } }] },
    });
    const orphans = body.orphans.filter((o: any) => o.metadata.uid === orphan.metadata.uid);
    expect(orphans).toMatchObject([{ kind: "Pod", metadata: { name: "lorphan" }, status: { phase: "Running" } }]);
    expect(orphans[0].spec).toBeUndefined();
    expect(JSON.stringify(body)).not.toContain("foreign");
    // One ListPodSandbox and one ListContainers for the node, whatever the number of pods.
    fake.runtime.resetCalls();
    await list(n.h);
    expect([fake.runtime.calls.get("ListPodSandbox"), fake.runtime.calls.get("ListContainers")]).toEqual([1, 1]);

    // A token scoped to one pod cannot read the node's list; nor can another act.
    for (const claims of [{ act: "status", uid: a.metadata.uid }, { act: "delete" }]) {
      const r = await n.h.fetch("/v1/pods", { headers: { authorization: `Bearer ${await n.h.sign(claims)}` } });
      expect(r.status).toBe(401);
      expect(r.body.reason).toBe("bad-claims");
    }
    await cri.removePodSandbox({ podSandboxId: foreign.podSandboxId });
    await createPodRuntime(cri).delete(orphan.metadata.uid, 0);
    await put(n.h, [], 5);
  });

  it("a new instance on the same state dir (a restart) sees the same set and generation", async () => {
    const n = await node();
    const [a, b] = [podInput("ra"), podInput("rb")];
    await put(n.h, [a, b], 11);
    await n.h.post("/v1/pods/sync", podInput("rc"));
    const before = await list(n.h);
    const again = await node(n.dir);
    const after = await list(again.h);
    expect(after.metadata.resourceVersion).toBe("11");
    expect(after.items.map((p: any) => [p.metadata.name, p.spec])).toEqual(
      before.items.map((p: any) => [p.metadata.name, p.spec]),
    );
    // The same specs: a sync from the restarted node changes nothing.
    const r = await put(again.h, [a, b], 12);
    expect(r.body.pods.map((p: any) => p.steps)).toEqual([[], []]);
    await put(again.h, [], 13);
  });

  it("is in /openapi.json with PUT /v1/node/pods and the stale-generation problem", async () => {
    const n = await node();
    const doc = (await n.h.fetch("/openapi.json")).body;
    expect(doc.paths["/v1/pods"].get.responses["200"].description).toContain("orphans");
    expect(doc.paths["/v1/node/pods"].put.responses["409"].description).toContain(
      "urn:podsync:problem:stale-generation",
    );
    expect(doc.paths["/v1/pods/sync"].post.responses["409"].description).toContain(
      "urn:podsync:problem:stale-generation",
    );
  });
});

describe("the CLI: podsync apply and podsync pods", () => {
  it("apply names each pod created, configured, unchanged or deleted; --generation auto is the node's + 1; --dry-run plans; removing every pod needs --prune-all", async () => {
    const n = await node();
    const key = n.h.keys[0]!;
    const tmp = mkdtempSync(join(tmpdir(), "podsync-cli-apply-"));
    const keyFile = join(tmp, "key.json");
    writeFileSync(
      keyFile,
      JSON.stringify({ ...(await exportJWK(key.privateKey)), kid: key.kid, alg: key.alg, iss: ISSUER }),
    );
    const cli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((res) =>
        execFile(
          process.execPath,
          ["bin/podsync.mjs", "--url", n.h.url, "--key", keyFile, "--aud", NODE, ...args],
          (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const [a, b] = [podInput("cli-a"), podInput("cli-b")];
    const file = join(tmp, "node.yaml");
    writeFileSync(file, `${toYaml(a)}---\n${toYaml(b)}`);
    const plan = await cli("apply", "-f", file, "--dry-run");
    expect(plan, plan.stderr).toMatchObject({
      code: 0,
      stdout:
        "pod/cli-a created (dry run): would create sandbox (attempt 0); start main\npod/cli-b created (dry run): would create sandbox (attempt 0); start main\n",
    });
    expect(plan.stderr).toContain("generation 1 would be applied; nothing changed");
    expect((await cli("pods")).stderr).not.toContain("generation"); // a read says no generation (issue 41)

    const r1 = await cli("apply", "-f", file);
    expect(r1, r1.stderr).toMatchObject({ code: 0, stdout: "pod/cli-a created\npod/cli-b created\n" });
    expect(r1.stderr).toContain("generation 1: 2 created, 0 configured, 0 unchanged, 0 deleted");
    writeFileSync(file, toYaml({ ...a, metadata: { ...a.metadata, labels: { tier: "web" } } }));
    const r2 = await cli("apply", file, "--detached");
    expect(r2, r2.stderr).toMatchObject({ code: 0, stdout: "pod/cli-a configured\npod/cli-b deleted\n" });
    expect(r2.stderr).toContain("generation 2:");
    expect((await cli("apply", "-f", file, "-q")).stdout).toBe("pod/cli-a unchanged\n");
    const stale = await cli("apply", "-f", file, "--generation", "2");
    expect(stale).toMatchObject({ code: 1, stdout: "" });
    expect(stale.stderr).toContain("409 Older than the node's desired state");
    expect((await cli("apply", "-f", file, "--generation", "x")).stderr).toContain(
      '--generation must be auto or a whole number from 1, not "x"',
    );

    const table = await cli("pods");
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.split("\n");
    expect(lines[0]).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
    expect(lines[1]).toMatch(/^agent\s+cli-a\s+1\/1\s+Running\s+0\s+\d+s$/);
    expect(table.stdout).not.toContain("generation");
    expect(table.stderr).not.toContain("generation");
    const json = JSON.parse((await cli("pods", "-o", "json")).stdout);
    expect(json).toMatchObject({ kind: "List", items: [{ metadata: { name: "cli-a" } }] });

    const empty = join(tmp, "empty.yaml");
    writeFileSync(empty, "");
    const drain = await cli("apply", "-f", empty);
    expect(drain).toMatchObject({ code: 1, stdout: "" });
    expect(drain.stderr).toContain("applying it would remove all 1 pods from the node (agent/cli-a); add --prune-all");
    expect((await cli("apply", "-f", empty, "--prune-all")).stdout).toBe("pod/cli-a deleted\n");
    const two = await cli("sync", file.replace("node.yaml", "two.yaml"));
    expect(two.stderr).toContain("cannot read");
    writeFileSync(join(tmp, "two.yaml"), `${toYaml(a)}---\n${toYaml(b)}`);
    expect((await cli("sync", join(tmp, "two.yaml"))).stderr).toContain(
      `holds 2 pods; sync takes one. To make several pods the node's set, use podsync apply -f ${join(tmp, "two.yaml")}`,
    );
  }, 60_000);
});
