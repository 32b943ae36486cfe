// The Kubernetes API's read side without a runtime: selectors, the watch hub, Table cells, events from steps,
// the serving certificate, and the routes (createKubeApi) over hubs fed by hand, with real read tokens.
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SignJWT } from "jose";
import { parseFieldSelector, parseLabelSelector, SelectorError } from "../../src/kubeapi/selectors.js";
import { RvClock, WatchHub } from "../../src/kubeapi/watch-hub.js";
import { KubeStatusError } from "../../src/kubeapi/status.js";
import { podCells } from "../../src/kubeapi/table.js";
import { EventRecorder, eventsFromSteps } from "../../src/kubeapi/events.js";
import { selfSignedCert } from "../../src/host/serving/serving-cert.js";
import { createKubeApi } from "../../src/kubeapi/routes.js";
import { nodeObject, type V1Node } from "../../src/kubeapi/node-object.js";
import { createPodFeed } from "../../src/kubeapi/pod-feed.js";
import { fingerprintOf } from "../../src/pleg/relist.js";
import { createVerifier } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import type { V1Pod } from "../../src/status/api-status.js";
import type { PodRuntime } from "../../src/kubelet/pod-runtime.js";
import { makeKey, ISSUER, NODE } from "../support/http.js";
import { pod } from "../support/pods.js";

describe("label selectors (labels.Parse)", () => {
  const L = { app: "web", tier: "front", "example.com/x": "1" };
  it.each([
    ["", true],
    ["app=web", true],
    ["app==web", true],
    ["app!=web", false],
    ["app", true],
    ["!app", false],
    ["!missing", true],
    ["app in (web,db)", true],
    ["app notin (web)", false],
    ["app=web,tier=back", false],
    ["example.com/x>0", true],
    ["example.com/x<1", false],
    ["missing!=x", true],
  ])("%s → %s", (s, want) => expect(parseLabelSelector(s).matches(L)).toBe(want));
  it.each(["app in (x", "=x", "app=web,", "a b", "app=bad value!", "-bad=x", "x>y"])("%s does not parse", (s) =>
    expect(() => parseLabelSelector(s)).toThrow(SelectorError),
  );
});

describe("field selectors (fields.ParseSelector)", () => {
  const fields = { "metadata.name": (o: { n: string }) => o.n, "status.phase": () => "Running" };
  it("=, == and != over the fields a resource indexes", () => {
    expect(parseFieldSelector("metadata.name=web", fields, "pods").matches({ n: "web" })).toBe(true);
    expect(parseFieldSelector("metadata.name==web,status.phase!=Running", fields, "pods").matches({ n: "web" })).toBe(
      false,
    );
    expect(parseFieldSelector("status.phase!=Failed,status.phase!=Succeeded", fields, "pods").matches({ n: "x" })).toBe(
      true,
    );
    expect(parseFieldSelector("metadata.name=web", fields, "pods").equals("metadata.name")).toBe("web");
  });
  it("an unknown field is refused as the API server refuses it", () => {
    expect(() => parseFieldSelector("spec.foo=1", fields, "pods")).toThrow(/field label not supported: spec.foo/);
    expect(() => parseFieldSelector("metadata.name", fields, "pods")).toThrow(/can't understand/);
  });
});

const v1pod = (
  name: string,
  ns = "default",
  extra: Partial<V1Pod["status"]> = {},
  labels?: Record<string, string>,
): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    namespace: ns,
    uid: `uid-${ns}-${name}`,
    ...(labels ? { labels } : {}),
    creationTimestamp: "2026-01-01T00:00:00Z",
  },
  spec: { ...pod({}, { name, namespace: ns }).spec, nodeName: NODE } as V1Pod["spec"],
  status: {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True", lastProbeTime: null, lastTransitionTime: null }],
    containerStatuses: [
      {
        name: "main",
        ready: true,
        restartCount: 0,
        state: { running: { startedAt: "2026-01-01T00:00:01Z" } },
        lastState: {},
        image: "i",
        imageID: "i",
      },
    ],
    qosClass: "BestEffort",
    podIPs: [{ ip: "10.0.0.9" }],
    ...extra,
  },
});

describe("the watch hub", () => {
  it("stamps each change with a higher resourceVersion and sends it to watchers; an equal object is no change", () => {
    const clock = new RvClock(1000);
    const hub = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
    hub.replaceAll([v1pod("a")]);
    const seen: string[] = [];
    const stop = hub.watch({
      since: hub.resourceVersion,
      filter: () => true,
      send: (c) => seen.push(`${c.type} ${c.object.metadata.name} ${c.rv}`),
    });
    hub.replaceAll([v1pod("a")]);
    hub.replaceAll([v1pod("a", "default", { phase: "Failed" }), v1pod("b")]);
    hub.replaceAll([v1pod("b")]);
    stop();
    expect((hub.get("uid-default-b")!.metadata as { resourceVersion?: string }).resourceVersion).toBe("1003");
    hub.replaceAll([]);
    expect(seen).toEqual(["MODIFIED a 1002", "ADDED b 1003", "DELETED a 1004"]);
  });
  it("a watch from a resourceVersion older than the history holds is 410 Expired; without one it starts with ADDED", () => {
    const hub = new WatchHub<V1Pod>(new RvClock(50), { key: (p) => p.metadata.uid, history: 2 });
    hub.replaceAll([v1pod("a"), v1pod("b"), v1pod("c")]);
    let err: unknown;
    try {
      hub.watch({ since: 50, filter: () => true, send: () => undefined });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KubeStatusError);
    expect((err as KubeStatusError).toStatus()).toMatchObject({ code: 410, reason: "Expired" });
    const got: string[] = [];
    hub.watch({
      since: undefined,
      filter: (p) => p.metadata.name !== "b",
      send: (c) => got.push(`${c.type} ${c.object.metadata.name}`),
    });
    expect(got).toEqual(["ADDED a", "ADDED c"]);
  });
});

describe("Table cells (printPod)", () => {
  it("the columns kubectl shows, with the wide ones", () => {
    const now = Date.parse("2026-01-01T00:05:00Z");
    expect(podCells(v1pod("web"), now)).toEqual([
      "web",
      "1/1",
      "Running",
      "0",
      "5m",
      "10.0.0.9",
      NODE,
      "<none>",
      "<none>",
    ]);
    const crash = v1pod("c", "default", {
      phase: "Running",
      containerStatuses: [
        {
          name: "main",
          ready: false,
          restartCount: 3,
          state: { waiting: { reason: "CrashLoopBackOff" } },
          lastState: {
            terminated: { exitCode: 1, reason: "Error", startedAt: null, finishedAt: "2026-01-01T00:04:50Z" },
          },
          image: "i",
          imageID: "i",
        },
      ],
    });
    expect(podCells(crash, now).slice(0, 4)).toEqual(["c", "0/1", "CrashLoopBackOff", "3 (10s ago)"]);
  });
});

describe("events from SyncPod steps (kubelet's reasons and messages)", () => {
  const p = pod({}, { name: "web" });
  const ref = p.metadata;
  it("a start: Pulled, Created, Started on the container; a pull: Pulling first", () => {
    const ev = eventsFromSteps(ref, p, [
      {
        action: "StartContainer",
        target: "main",
        ok: true,
        message: 'Container image "localhost/busybox:1" already present on machine; started abc (restartCount 0)',
        durationMs: 1,
      },
    ]);
    expect(ev.map((e) => `${e.type} ${e.reason} ${e.message} ${e.fieldPath}`)).toEqual([
      'Normal Pulled Container image "localhost/busybox:1" already present on machine spec.containers{main}',
      "Normal Created Created container: main spec.containers{main}",
      "Normal Started Started container main spec.containers{main}",
    ]);
    const pulled = eventsFromSteps(ref, p, [
      {
        action: "StartContainer",
        target: "main",
        ok: true,
        message: 'Successfully pulled image "localhost/busybox:1" in 1.2s; started abc (restartCount 0)',
        durationMs: 1,
      },
    ]);
    expect(pulled[0]).toMatchObject({ reason: "Pulling", message: 'Pulling image "localhost/busybox:1"' });
  });
  it("back-off, a pull failure and a kill", () => {
    const ev = eventsFromSteps(ref, p, [
      {
        action: "StartContainer",
        target: "main",
        ok: false,
        error: "CrashLoopBackOff",
        message: "back-off 10s",
        durationMs: 0,
      },
      {
        action: "StartContainer",
        target: "main",
        ok: false,
        error: "ErrImagePull",
        message: 'Failed to pull image "x": nope',
        durationMs: 0,
      },
      {
        action: "KillContainer",
        target: "main",
        ok: true,
        message: "Container main failed liveness probe, will be restarted",
        durationMs: 0,
      },
    ]);
    expect(ev.map((e) => `${e.type} ${e.reason}: ${e.message}`)).toEqual([
      `Warning BackOff: Back-off restarting failed container main in pod web_default(${ref.uid})`,
      'Normal Pulling: Pulling image "localhost/busybox:1"',
      'Warning Failed: Failed to pull image "x": nope',
      "Warning Failed: Error: ErrImagePull",
      "Normal Killing: Container main failed liveness probe, will be restarted",
    ]);
  });
  it("the recorder counts a repeated event instead of adding it, and keeps a bounded ring", () => {
    let t = Date.parse("2026-01-01T00:00:00Z");
    const r = new EventRecorder(new RvClock(1), "n1", 3, () => (t += 1000));
    for (let i = 0; i < 3; i++) r.record(ref, { type: "Warning", reason: "BackOff", message: "same" });
    expect(r.hub.list()).toHaveLength(1);
    expect(r.hub.list()[0]).toMatchObject({
      count: 3,
      involvedObject: { kind: "Pod", name: "web", uid: ref.uid },
      source: { component: "kubelet", host: "n1" },
    });
    for (let i = 0; i < 5; i++) r.record(ref, { type: "Normal", reason: "Started", message: `m${i}` });
    expect(r.hub.list()).toHaveLength(3);
  });
});

describe("the self-signed serving certificate", () => {
  it("names the node's addresses and verifies itself", () => {
    const c = selfSignedCert("n1@podsync", ["localhost", "n1"], ["127.0.0.1", "::1", "192.0.2.7"]);
    const x = new X509Certificate(c.cert);
    expect(x.ca).toBe(true);
    expect(x.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(x.checkIP("::1")).toBeDefined();
    expect(x.checkIP("192.0.2.7")).toBe("192.0.2.7");
    expect(x.checkHost("n1")).toBe("n1");
    expect(x.verify(x.publicKey)).toBe(true);
  });
});

describe("the routes (createKubeApi)", async () => {
  const key = await makeKey("EdDSA", "k1");
  const verifier = createVerifier({
    keys: { jwks: { keys: [key.publicJwk] } },
    issuers: [ISSUER],
    audience: [NODE],
    replay: new MemoryReplayStore(),
  });
  const token = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "EdDSA", kid: "k1" })
      .setIssuer(ISSUER)
      .setAudience(NODE)
      .setIssuedAt()
      .setExpirationTime("2m")
      .setJti(crypto.randomUUID())
      .sign(key.privateKey);
  const clock = new RvClock(100);
  const pods = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
  pods.replaceAll([
    v1pod("web", "default", {}, { app: "web" }),
    v1pod("db", "default", { phase: "Pending" }),
    v1pod("web", "other"),
  ]);
  const events = new EventRecorder(clock, NODE);
  const nodeHub = new WatchHub<V1Node>(clock, { key: (n) => n.metadata.name });
  const runtime = {
    ready: async () => ({
      ok: true,
      criCalls: 2,
      runtime: {
        name: "containerd",
        version: "1.6",
        apiVersion: "v1",
        conditions: { RuntimeReady: true, NetworkReady: true },
      },
    }),
  } as unknown as PodRuntime;
  const app = createKubeApi({
    verifier,
    pods,
    events,
    node: {
      hub: nodeHub,
      refresh: async () =>
        nodeHub.replaceAll([
          nodeObject(
            {
              info: { name: NODE, labels: { "kubernetes.io/hostname": NODE }, taints: [], allocatable: {} },
              hostIPs: ["192.0.2.1"],
              startedAt: 0,
            },
            await runtime.ready(),
            Date.now(),
          ),
        ]),
    },
    runtime,
    podsyncVersion: "0.1.0",
    allowExec: false,
    arch: "amd64",
    followMaxMs: 1000,
  });
  const read = await token({ act: "read" });
  const get = (path: string, headers: Record<string, string> = {}, bearer: string | null = read) =>
    app.request(path, { headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...headers } });

  it("answers nothing without a read token, and a token of another scope is refused", async () => {
    for (const p of ["/version", "/api", "/api/v1/pods"]) {
      const r = await get(p, {}, null);
      expect(r.status).toBe(401);
      expect(await r.json()).toMatchObject({ kind: "Status", reason: "Unauthorized", code: 401 });
    }
    const status = await get("/api/v1/pods", {}, await token({ act: "status" }));
    expect(status.status).toBe(401);
    expect((await status.json()).message).toMatch(/"act" claim must be "read"/);
  });

  it("/version in Kubernetes' shape with podsync's own version; discovery, legacy and aggregated", async () => {
    expect(await (await get("/version")).json()).toMatchObject({
      major: "1",
      minor: "33",
      gitVersion: "v1.33.0",
      podsync: "0.1.0",
    });
    expect(await (await get("/api")).json()).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
    const agg = await get("/api", {
      accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
    });
    expect(agg.headers.get("content-type")).toContain("as=APIGroupDiscoveryList");
    const body = await agg.json();
    expect(body.items[0].versions[0].resources.map((r: { resource: string }) => r.resource)).toEqual([
      "events",
      "nodes",
      "pods",
      "namespaces",
    ]);
    expect((await (await get("/api/v1")).json()).resources.map((r: { name: string }) => r.name)).toContain("pods/log");
  });

  it("lists pods per namespace and cluster-wide, by label and field, in pages", async () => {
    const names = async (p: string) =>
      ((await (await get(p)).json()).items as V1Pod[]).map((x) => `${x.metadata.namespace}/${x.metadata.name}`);
    expect(await names("/api/v1/namespaces/default/pods")).toEqual(["default/db", "default/web"]);
    expect(await names("/api/v1/pods")).toEqual(["default/db", "default/web", "other/web"]);
    expect(await names("/api/v1/pods?labelSelector=app%3Dweb")).toEqual(["default/web"]);
    expect(await names("/api/v1/pods?fieldSelector=status.phase%3DPending")).toEqual(["default/db"]);
    expect(await names(`/api/v1/pods?fieldSelector=spec.nodeName%3D${NODE},metadata.namespace%3Dother`)).toEqual([
      "other/web",
    ]);
    const page1 = await (await get("/api/v1/pods?limit=2")).json();
    expect(page1.items).toHaveLength(2);
    expect(page1.metadata.remainingItemCount).toBe(1);
    const page2 = await (await get(`/api/v1/pods?limit=2&continue=${page1.metadata.continue}`)).json();
    expect(page2.items.map((p: V1Pod) => p.metadata.namespace)).toEqual(["other"]);
    expect(page2.metadata.continue).toBeUndefined();
  });

  it("a selector that does not parse is 400, an unknown pod 404, an unknown resource 404, a write 403 naming the signed way", async () => {
    const bad = await get("/api/v1/pods?labelSelector=app%20in%20(x");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ kind: "Status", reason: "BadRequest", code: 400 });
    expect((await get("/api/v1/pods?fieldSelector=spec.foo%3D1")).status).toBe(400);
    const missing = await get("/api/v1/namespaces/default/pods/nope");
    expect(await missing.json()).toMatchObject({
      code: 404,
      reason: "NotFound",
      message: 'pods "nope" not found',
      details: { name: "nope", kind: "pods" },
    });
    expect(await (await get("/api/v1/namespaces/default/services")).json()).toMatchObject({
      code: 404,
      message: "the server could not find the requested resource",
    });
    expect((await get("/apis/apps/v1/deployments")).status).toBe(404);
    const del = await app.request("/api/v1/namespaces/default/pods/web", {
      method: "DELETE",
      headers: { authorization: `Bearer ${read}` },
    });
    expect(del.status).toBe(403);
    expect((await del.json()).message).toMatch(/pods "web" is forbidden: .*podsync delete pods\/web /);
    const post = await app.request("/api/v1/namespaces/default/pods", {
      method: "POST",
      headers: { authorization: `Bearer ${read}` },
      body: "{}",
    });
    expect((await post.json()).message).toMatch(/podsync apply/);
  });

  it("the Table form with kubectl's columns, one pod or a list; the node", async () => {
    const accept = { accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" };
    const t = await (await get("/api/v1/namespaces/default/pods", accept)).json();
    expect(t.kind).toBe("Table");
    expect(t.columnDefinitions.map((c: { name: string; priority: number }) => `${c.name}:${c.priority}`)).toEqual([
      "Name:0",
      "Ready:0",
      "Status:0",
      "Restarts:0",
      "Age:0",
      "IP:1",
      "Node:1",
      "Nominated Node:1",
      "Readiness Gates:1",
    ]);
    expect(t.rows[1].cells.slice(0, 3)).toEqual(["web", "1/1", "Running"]);
    expect(t.rows[1].object).toMatchObject({ kind: "PartialObjectMetadata", metadata: { name: "web" } });
    const one = await (await get("/api/v1/namespaces/default/pods/web?includeObject=Object", accept)).json();
    expect(one.rows).toHaveLength(1);
    expect(one.rows[0].object.kind).toBe("Pod");
    const n = await (await get("/api/v1/nodes", accept)).json();
    expect(n.rows[0].cells.slice(0, 2)).toEqual([NODE, "Ready"]);
    expect((await (await get(`/api/v1/nodes/${NODE}`)).json()).status.nodeInfo.containerRuntimeVersion).toBe(
      "containerd://1.6",
    );
  });

  it("a watch streams changes after the list's resourceVersion, as Table rows with headers once; 410 when too old", async () => {
    const list = await (await get("/api/v1/namespaces/default/pods")).json();
    const ac = new AbortController();
    const r = await app.request(
      `/api/v1/namespaces/default/pods?watch=1&resourceVersion=${list.metadata.resourceVersion}`,
      {
        headers: { authorization: `Bearer ${read}`, accept: "application/json;as=Table;v=v1;g=meta.k8s.io" },
        signal: ac.signal,
      },
    );
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    pods.replaceAll([
      v1pod("web", "default", { phase: "Failed" }, { app: "web" }),
      v1pod("db", "default", { phase: "Pending" }),
      v1pod("web", "other", { phase: "Failed" }),
    ]);
    pods.replaceAll([
      v1pod("web", "default", { phase: "Failed" }, { app: "web" }),
      v1pod("web", "other", { phase: "Failed" }),
    ]);
    let text = "";
    while (text.split("\n").length < 3) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const [a, b] = text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(a.type).toBe("MODIFIED");
    expect(a.object.columnDefinitions).toHaveLength(9);
    expect(a.object.rows[0].conditions[0]).toMatchObject({ type: "Completed", reason: "Failed" });
    expect(b.type).toBe("DELETED");
    expect(b.object.columnDefinitions).toBeUndefined();
    const old = await get("/api/v1/pods?watch=true&resourceVersion=5");
    expect(old.status).toBe(410);
    expect(await old.json()).toMatchObject({ reason: "Expired", code: 410 });
  });

  it("a watcher that does not read is dropped, not buffered without bound", async () => {
    const small = createKubeApi({
      verifier,
      pods,
      events,
      node: { hub: nodeHub, refresh: async () => undefined },
      runtime,
      podsyncVersion: "x",
      arch: "amd64",
      allowExec: false,
      followMaxMs: 1000,
      watch: { maxQueueBytes: 4096 },
    });
    const before = pods.watcherCount;
    const r = await small.request("/api/v1/pods?watch=true", { headers: { authorization: `Bearer ${read}` } });
    expect(pods.watcherCount).toBe(before + 1);
    for (let i = 0; i < 100; i++) pods.upsert(v1pod(`p${i}`, "flood"));
    expect(pods.watcherCount).toBe(before);
    await expect(
      r
        .body!.getReader()
        .read()
        .then(async function drain(x): Promise<unknown> {
          return x.done ? x : drain(await r.body!.getReader().read());
        }),
    ).rejects.toThrow();
  });
});

describe("the pod feed", () => {
  it("makes v1.Pods from the relist for the desired pods, with this node's name, and records a probe turning to Failure", () => {
    const clock = new RvClock(1);
    const hub = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
    const rec = new EventRecorder(clock, NODE);
    const feed = createPodFeed(hub, {
      nodeName: NODE,
      hostIPs: ["192.0.2.1"],
      runtimeName: () => "containerd",
      recorder: rec,
    });
    const p = pod({}, { name: "web" });
    const entry = {
      pod: p,
      audit: { iss: "i", kid: undefined, jti: "j", iat: 1 },
      storedAt: Date.parse("2026-01-01T00:00:00Z"),
    };
    feed([entry], undefined, () => undefined);
    expect(hub.list()[0]).toMatchObject({
      metadata: { name: "web", creationTimestamp: "2026-01-01T00:00:00Z" },
      spec: { nodeName: NODE },
      status: { phase: "Pending" },
    });
    const rv = hub.resourceVersion;
    feed([entry], undefined, () => undefined);
    expect(hub.resourceVersion).toBe(rv);
    const status = {
      id: p.metadata.uid,
      name: "web",
      namespace: "default",
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [
        {
          id: "c1",
          name: "main",
          state: "running" as const,
          createdAt: 1000,
          startedAt: 0,
          finishedAt: 0,
          exitCode: 0,
          image: "i",
          imageRef: "r",
          hash: "",
          restartCount: 0,
          reason: "",
          message: "",
          attempt: 0,
          sandboxId: "s",
          gracePeriodSeconds: 30,
          backoffStreak: 0,
        },
      ],
    };
    feed([entry], { pods: new Map([[p.metadata.uid, { status, fingerprint: "f1" }]]) }, () => ({
      liveness: new Map([["c1", "Failure" as const]]),
    }));
    expect(rec.hub.list().map((e) => `${e.reason} ${e.message} ${e.involvedObject.fieldPath}`)).toEqual([
      "Unhealthy Liveness probe failed spec.containers{main}",
    ]);
    feed([], undefined, () => undefined);
    expect(hub.list()).toEqual([]);
  });

  it("a sync's read-back updates its pod between relists, and a delete removes it", () => {
    const hub = new WatchHub<V1Pod>(new RvClock(1), { key: (p) => p.metadata.uid });
    const feed = createPodFeed(hub, { nodeName: NODE, hostIPs: [], runtimeName: () => "containerd" });
    const p = pod({}, { name: "fresh" });
    const status = {
      id: p.metadata.uid,
      name: "fresh",
      namespace: "default",
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [
        {
          id: "c9",
          name: "main",
          state: "running" as const,
          createdAt: 1000,
          startedAt: 2000,
          finishedAt: 0,
          exitCode: 0,
          image: "i",
          imageRef: "r",
          hash: "",
          restartCount: 0,
          reason: "",
          message: "",
          attempt: 0,
          sandboxId: "s",
          gracePeriodSeconds: 30,
          backoffStreak: 0,
        },
      ],
    };
    feed.synced(p, status, undefined);
    expect(hub.list()[0]?.status.containerStatuses[0]).toMatchObject({
      containerID: "containerd://c9",
      state: { running: { startedAt: "1970-01-01T00:00:02Z" } },
    });
    feed.removed(p.metadata.uid);
    expect(hub.list()).toEqual([]);
  });

  it("a converged sync (the same spec, the same status) rebuilds nothing and changes no resourceVersion; a changed label does", () => {
    const hub = new WatchHub<V1Pod>(new RvClock(1), { key: (p) => p.metadata.uid });
    const feed = createPodFeed(hub, { nodeName: NODE, hostIPs: [], runtimeName: () => "containerd" });
    const p = pod({}, { name: "steady" });
    const entry = { pod: p, audit: { iss: "i", kid: undefined, jti: "j", iat: 1 }, storedAt: 5 };
    feed([entry], undefined, () => undefined);
    const status = {
      id: p.metadata.uid,
      name: "steady",
      namespace: "default",
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [],
    };
    const upserts: V1Pod[] = [];
    const upsert = hub.upsert.bind(hub);
    hub.upsert = (o) => (upserts.push(o), upsert(o));
    feed.synced(structuredClone(p), status, undefined);
    const [obj, rv] = [hub.list()[0], hub.resourceVersion];
    // A request's spec is a fresh parse each time: equal content is the same build (the very object handed over).
    feed.synced(structuredClone(p), { ...status }, undefined);
    expect(upserts[1]).toBe(upserts[0]);
    expect(hub.list()[0]).toBe(obj);
    expect(hub.resourceVersion).toBe(rv);
    feed.synced({ ...p, metadata: { ...p.metadata, labels: { tier: "web" } } }, status, undefined);
    expect(hub.list()[0]?.metadata.labels).toEqual({ tier: "web" });
    expect(hub.resourceVersion).not.toBe(rv);
  });

  it("an idle pod's relists and loop syncs reuse one object: built again only for a fuller read-back or a change", () => {
    const hub = new WatchHub<V1Pod>(new RvClock(1), { key: (p) => p.metadata.uid });
    // The objects the feed hands the hub (its replaceAll upserts each; the hub keeps an equal object as it was).
    const handed: V1Pod[] = [];
    const upsert = hub.upsert.bind(hub);
    hub.upsert = (o) => (handed.push(o), upsert(o));
    const feed = createPodFeed(hub, { nodeName: NODE, hostIPs: [], runtimeName: () => "containerd" });
    const p = pod({}, { name: "idle" });
    const entry = { pod: p, audit: { iss: "i", kid: undefined, jti: "j", iat: 1 }, storedAt: 5 };
    const status = {
      id: p.metadata.uid,
      name: "idle",
      namespace: "default",
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [],
    };
    const view = { pods: new Map([[p.metadata.uid, { status, fingerprint: fingerprintOf(status) }]]) };
    feed([entry], view, () => undefined);
    // The first loop sync's read-back is fuller than the relist's view: built from it.
    feed.synced(structuredClone(p), { ...status }, undefined);
    expect(handed[1]).not.toBe(handed[0]);
    // Then relists and resyncs in turn, nothing changed: the same object each time.
    for (let i = 0; i < 3; i++) {
      feed([entry], view, () => undefined);
      feed.synced(structuredClone(p), { ...status }, undefined);
      feed.synced(p, { ...status }, undefined); // the loop's sync hands over the stored pod itself
    }
    expect(new Set(handed.slice(1)).size).toBe(1);
    // A new token for the same spec (a request's converged sync) is a new audit: built again, once.
    const again = { ...entry, audit: { ...entry.audit, jti: "j2", iat: 2 } };
    feed([again], view, () => undefined);
    feed.synced(structuredClone(p), { ...status }, undefined);
    feed([again], view, () => undefined);
    expect(new Set(handed.slice(-3)).size).toBe(1);
    expect(handed.at(-1)).not.toBe(handed[1]);
  });

  it("a pod synced while a relist ran (its entries read before the pod was stored) stays until the next feed decides", () => {
    const hub = new WatchHub<V1Pod>(new RvClock(1), { key: (p) => p.metadata.uid });
    const feed = createPodFeed(hub, { nodeName: NODE, hostIPs: [], runtimeName: () => "containerd" });
    const p = pod({}, { name: "racer" });
    const status = {
      id: p.metadata.uid,
      name: "racer",
      namespace: "default",
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [],
    };
    feed.synced(p, status, undefined);
    feed([], undefined, () => undefined); // entries read before the sync stored the pod
    expect(hub.list().map((x) => x.metadata.name)).toEqual(["racer"]);
    feed.again(); // an eviction's rebuild from the same entries removes nothing
    expect(hub.list().map((x) => x.metadata.name)).toEqual(["racer"]);
    feed([], undefined, () => undefined); // read after it: the pod is not desired
    expect(hub.list()).toEqual([]);
  });

  it("a sync's read-back wins over a relist whose list calls went out before it, and loses to a later one", () => {
    let t = 1000;
    const hub = new WatchHub<V1Pod>(new RvClock(1), { key: (p) => p.metadata.uid });
    const feed = createPodFeed(hub, { nodeName: NODE, hostIPs: [], runtimeName: () => "containerd", now: () => t });
    const p = pod({}, { name: "web" });
    const entry = { pod: p, audit: { iss: "i", kid: undefined, jti: "j", iat: 1 }, storedAt: 0 };
    const c = {
      id: "c1",
      name: "main",
      createdAt: 1000,
      startedAt: 1000,
      finishedAt: 0,
      exitCode: 0,
      image: "i",
      imageRef: "r",
      hash: "",
      restartCount: 0,
      reason: "",
      message: "",
      attempt: 0,
      sandboxId: "s",
      gracePeriodSeconds: 30,
      backoffStreak: 0,
    };
    const st = (state: "running" | "exited") => ({
      id: p.metadata.uid,
      name: "web",
      namespace: "default",
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [{ ...c, state }],
    });
    const empty = {
      id: p.metadata.uid,
      name: "web",
      namespace: "default",
      ips: [],
      sandboxStatuses: [],
      containerStatuses: [],
    };
    feed.synced(p, st("running"), undefined);
    const phase = () => hub.list()[0]?.status.containerStatuses?.[0]?.state;
    feed(
      [entry],
      { at: 900, pods: new Map([[p.metadata.uid, { status: empty, fingerprint: "old" }]]) },
      () => undefined,
    );
    expect(phase()).toMatchObject({ running: {} });
    t = 2000;
    feed(
      [entry],
      { at: 1500, pods: new Map([[p.metadata.uid, { status: st("exited"), fingerprint: "new" }]]) },
      () => undefined,
    );
    expect(phase()).toMatchObject({ terminated: {} });
  });
});

describe("an eviction on the read side", () => {
  it("the pod feed shows the verdict (Failed, Evicted, DisruptionTarget); the recording runtime records Evicted, then the kill's events, and asks the feed again", async () => {
    const { recordingEvents } = await import("../../src/kubeapi/events.js");
    const clock = new RvClock(1);
    const hub = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
    const rec = new EventRecorder(clock, NODE);
    const verdicts = new Map<string, import("../../src/status/api-status.js").PodEviction>();
    const feed = createPodFeed(hub, {
      nodeName: NODE,
      hostIPs: [],
      runtimeName: () => "containerd",
      eviction: (uid) => verdicts.get(uid),
    });
    const p = pod({}, { name: "big" });
    feed([{ pod: p, audit: { iss: "i", kid: undefined, jti: "j", iat: 1 }, storedAt: 0 }], undefined, () => undefined);
    expect(hub.list()[0]!.status.phase).toBe("Pending");
    const message = "The node was low on resource: ephemeral-storage. ";
    const inner = {
      evict: async (q: typeof p, e: import("../../src/status/api-status.js").PodEviction) => (
        verdicts.set(q.metadata.uid, e),
        { ok: true, criCalls: 1, steps: [{ action: "KillContainer", target: "main", ok: true, message: "stopped c1" }] }
      ),
    } as unknown as PodRuntime;
    let asked = 0;
    const rt = recordingEvents(inner, rec, {
      synced: () => undefined,
      deleted: () => undefined,
      evicted: () => (asked++, feed.again()),
    });
    await rt.evict(p, {
      reason: "Evicted",
      message,
      at: Date.parse("2026-01-01T00:00:00Z"),
      condition: { type: "DisruptionTarget", reason: "TerminationByKubelet", message },
    });
    expect(asked).toBe(1);
    const s = hub.list()[0]!.status;
    expect(s).toMatchObject({ phase: "Failed", reason: "Evicted", message });
    expect(s.conditions[0]).toMatchObject({ type: "DisruptionTarget", status: "True", reason: "TerminationByKubelet" });
    expect(rec.hub.list().map((e) => `${e.type} ${e.reason} ${e.message}`)).toEqual([
      `Warning Evicted ${message}`,
      "Normal Killing Stopping container main",
    ]);
  });
});
