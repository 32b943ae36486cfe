// The Workers node object's reconcile alarm, in-process: NodeDesiredState over an in-memory storage, the node's
// cri-proxy (gRPC-Web) in front of the fake CRI, and the per-pod lease served by a PodSerializer object in the
// same process. Covers when the alarm is set and removed, what a pass costs, and an object rebuilt after eviction.
// The same alarm in workerd on the real containerd: worker-alarm.e2e.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { startProxy, type RunningProxy } from "../../src/proxy/cri-proxy.js";
import { NodeDesiredState, PodSerializer, type Env } from "../../src/worker.js";
import { Pod } from "../../src/pod/schema.js";
import type { DesiredPod } from "../../src/pleg/desired-state.js";
import { Deployment } from "../../src/pod/workloads/schema.js";
import type { StoredWorkload } from "../../src/controllers/store.js";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import type { FakeServer } from "../support/fake-cri.js";
import { ISSUER, makeKey } from "../support/http.js";
import { uid } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const TOKEN = "alarm-unit-token";

/** The Durable Object storage calls the object makes, in memory, counting reads. */
class MemoryStorage {
  readonly data = new Map<string, unknown>();
  alarm: number | null = null;
  reads = 0;
  async get<T>(key: string) {
    this.reads++;
    return structuredClone(this.data.get(key)) as T | undefined;
  }
  async put(key: string | Record<string, unknown>, value?: unknown) {
    for (const [k, v] of typeof key === "string" ? [[key, value] as const] : Object.entries(key))
      this.data.set(k, structuredClone(v));
  }
  async delete(keys: string | string[]): Promise<never> {
    let n = 0;
    for (const k of Array.isArray(keys) ? keys : [keys]) if (this.data.delete(k)) n++;
    return (Array.isArray(keys) ? n : n > 0) as never;
  }
  async list<T>(o: { prefix?: string } = {}) {
    this.reads++;
    return new Map(
      [...this.data].filter(([k]) => k.startsWith(o.prefix ?? "")).map(([k, v]) => [k, structuredClone(v) as T]),
    );
  }
  async getAlarm() {
    return this.alarm;
  }
  async setAlarm(at: number) {
    this.alarm = at;
  }
  async deleteAlarm() {
    this.alarm = null;
  }
}

let fake: FakeServer;
let proxy: RunningProxy;
let env: Env;

const suite = useFakeCri();
beforeAll(async () => {
  ({ fake } = suite);
  proxy = await startProxy({
    upstream: fake.endpoint,
    grpcWebListen: "127.0.0.1:0",
    token: TOKEN,
    log: () => undefined,
  });
  const key = await makeKey("EdDSA", "au-1");
  const ns = (make: () => { fetch(r: Request): Promise<Response> }) => {
    const objs = new Map<string, { fetch(r: Request): Promise<Response> }>();
    return {
      idFromName: (n: string) => n,
      get: (id: unknown) => {
        const name = String(id);
        if (!objs.has(name)) objs.set(name, make());
        return { fetch: (input: string, init?: RequestInit) => objs.get(name)!.fetch(new Request(input, init)) };
      },
    };
  };
  env = {
    PODSYNC_NODES: JSON.stringify({ "unit-node": { url: `http://127.0.0.1:${proxy.grpcWebPort}` } }),
    PODSYNC_ISSUERS: ISSUER,
    PODSYNC_JWKS: JSON.stringify({ keys: [key.publicJwk] }),
    PODSYNC_PROXY_TOKEN: TOKEN,
    PODSYNC_RELIST_INTERVAL_MS: "1000",
    POD_LOCK: ns(() => new PodSerializer()),
    REPLAY: ns(() => ({ fetch: async () => Response.json({ fresh: true }) })),
    DESIRED: ns(() => ({ fetch: async () => Response.json(null) })),
  };
});
afterAll(async () => {
  await proxy?.shutdown(100);
});
beforeEach(() => vi.restoreAllMocks());

function nodeObject(storage = new MemoryStorage(), e: Env = env) {
  const obj = new NodeDesiredState({ storage } as never, e);
  const call = async (op: string, arg: unknown, node = "unit-node") => {
    const r = await obj.fetch(
      new Request(`https://desired/${op}`, {
        method: "POST",
        headers: { "podsync-node": node },
        body: JSON.stringify(arg),
      }),
    );
    return r.json() as Promise<any>;
  };
  return { obj, storage, call };
}
const entry = (name: string): DesiredPod => ({
  pod: Pod.parse({
    metadata: { name, namespace: "unit", uid: uid(name) },
    spec: {
      containers: [
        { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] },
      ],
    },
  }),
  audit: { iss: ISSUER, iat: Math.floor(Date.now() / 1000) },
  storedAt: Date.now(),
});
const containersOf = (podUid: string) =>
  [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === podUid);
const runningOf = (podUid: string) =>
  containersOf(podUid).filter((c) => c.state === api.ContainerState.CONTAINER_RUNNING);

describe("NodeDesiredState's reconcile alarm", () => {
  it("no alarm while empty; one once a pod is stored; a pass restarts a container that exited; converged passes cost 2 CRI calls and no storage read", async () => {
    const { obj, storage, call } = nodeObject();
    expect(await call("list", null)).toEqual([]);
    expect(storage.alarm).toBeNull();

    const e = entry("alarm-a");
    const t0 = Date.now();
    await call("put", e);
    expect(storage.alarm).toBeGreaterThanOrEqual(t0 + 1000);
    expect(storage.data.get("node")).toBe("unit-node");

    // The object's first pass is a start-up pass: the pod (which no request synced here) is made.
    await obj.alarm();
    const [first] = runningOf(e.pod.metadata.uid);
    expect(first).toBeDefined();
    expect(storage.alarm).not.toBeNull();

    fake.runtime.resetCalls();
    const reads = storage.reads;
    storage.alarm = null;
    await obj.alarm();
    expect(fake.runtime.totalCalls()).toBe(2);
    expect([...fake.runtime.calls.keys()].sort()).toEqual(["ListContainers", "ListPodSandbox"]);
    expect(storage.reads).toBe(reads);
    expect(storage.alarm).not.toBeNull();

    fake.runtime.exit(first!.id, 137);
    await obj.alarm();
    const [second] = runningOf(e.pod.metadata.uid);
    expect(second!.id).not.toBe(first!.id);
    expect(second!.config.annotations["io.kubernetes.container.restartCount"]).toBe("1");

    // The set emptied: the alarm is deleted, and an alarm already on its way does nothing and sets none.
    expect(await call("replace", { generation: 1, entries: [] })).toEqual({ removed: [e.pod.metadata.uid] });
    expect(storage.alarm).toBeNull();
    fake.runtime.resetCalls();
    await obj.alarm();
    expect(fake.runtime.totalCalls()).toBe(0);
    expect(storage.alarm).toBeNull();
  });

  it("an object rebuilt after eviction reads its set and node from storage, and its first pass syncs every desired pod once (start-up)", async () => {
    const { call, storage } = nodeObject();
    const [a, b] = [entry("alarm-b"), entry("alarm-c")];
    await call("replace", { generation: 1, entries: [a, b] });
    const again = nodeObject(storage);
    fake.runtime.resetCalls();
    await again.obj.alarm();
    for (const e of [a, b]) expect(runningOf(e.pod.metadata.uid)).toHaveLength(1);
    expect(fake.runtime.calls.get("RunPodSandbox")).toBe(2);
    await again.call("replace", { generation: 2, entries: [] });
    expect(storage.alarm).toBeNull();
  });

  it("a pod that left the set (DELETE) stops being reconciled; an alarm for a node PODSYNC_NODES no longer names logs it and sets none", async () => {
    const { obj, storage, call } = nodeObject();
    const e = entry("alarm-d");
    await call("put", e);
    await obj.alarm();
    const [c] = runningOf(e.pod.metadata.uid);
    expect(await call("remove", { uid: e.pod.metadata.uid })).toBe(true);
    expect(storage.alarm).toBeNull();
    fake.runtime.exit(c!.id, 137);
    await obj.alarm();
    expect(runningOf(e.pod.metadata.uid)).toEqual([]);

    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((s: string) => void lines.push(s));
    const other = nodeObject(new MemoryStorage(), {
      ...env,
      PODSYNC_NODES: JSON.stringify({ "another-node": { url: "http://127.0.0.1:9" } }),
    });
    await other.call("put", entry("alarm-e"));
    other.storage.alarm = null;
    await other.obj.alarm();
    expect(other.storage.alarm).toBeNull();
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([
      { loop: "reconcile", node: "unit-node", event: "error", error: expect.stringMatching(/not in PODSYNC_NODES/) },
    ]);
  });
});

describe("NodeDesiredState's workloads", () => {
  const deployment = (replicas: number): StoredWorkload => ({
    workload: Deployment.parse({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "unit-wl", uid: "unit-wl-d1" },
      spec: {
        replicas,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: {
            containers: [
              {
                name: "main",
                image: "localhost/busybox:1",
                imagePullPolicy: "IfNotPresent",
                command: ["sleep", "3600"],
                env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "creds", key: "pw" } } }],
              },
            ],
          },
        },
      },
    }),
    objects: {
      secrets: [{ apiVersion: "v1", kind: "Secret", metadata: { name: "creds" }, data: { pw: btoa("unit-s3cret") } }],
    },
    audit: { iss: ISSUER, iat: Math.floor(Date.now() / 1000) },
    storedAt: Date.now(),
  });
  const sealedEnv = () => ({ ...env, PODSYNC_SECRETS_KEY: Buffer.alloc(32, 9).toString("base64") });

  it("stored with their Secrets sealed; a change sets the alarm to now; the alarm's controllers make the pods and record the status; an emptied set goes idle", async () => {
    const { obj, storage, call } = nodeObject(new MemoryStorage(), sealedEnv());
    const t0 = Date.now();
    await call("workloads/putAll", { entries: [deployment(2)] });
    expect(storage.alarm).not.toBeNull();
    expect(storage.alarm!).toBeLessThanOrEqual(Date.now());
    expect(storage.alarm!).toBeGreaterThanOrEqual(t0);
    // At rest the Secret is sealed; the store's readers get it opened.
    expect(JSON.stringify(storage.data.get("wl:Deployment/unit-wl/web"))).not.toContain(btoa("unit-s3cret"));
    expect((await call("workloads/list", null))[0].objects.secrets[0].data.pw).toBe(btoa("unit-s3cret"));

    await obj.alarm();
    const pods = (await call("list", null)) as DesiredPod[];
    expect(pods.map((p) => p.pod.metadata.name)).toEqual([
      expect.stringMatching(/^web-[a-z0-9]+-[a-z0-9]{5}$/),
      expect.stringMatching(/^web-[a-z0-9]+-[a-z0-9]{5}$/),
    ]);
    for (const p of pods) {
      const [c] = runningOf(p.pod.metadata.uid);
      expect(new TextDecoder().decode(c!.config.envs.find((e) => e.key === "PW")!.value)).toBe("unit-s3cret");
    }
    await obj.alarm();
    const d = ((await call("workloads/list", null)) as StoredWorkload[]).find((w) => w.workload.kind === "Deployment")!;
    expect(d.status).toMatchObject({ replicas: 2 });

    // The set emptied: the next pass's controllers take the pods out, and the object goes idle.
    await call("workloads/replace", { entries: [] });
    await obj.alarm();
    expect(await call("list", null)).toEqual([]);
    await vi.waitFor(() => expect(pods.flatMap((p) => runningOf(p.pod.metadata.uid))).toEqual([]));
    storage.alarm = null;
    await obj.alarm();
    expect(storage.alarm).toBeNull();
  });
});
