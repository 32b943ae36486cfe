// The same Hono app as a Cloudflare Worker. One Worker serves many nodes: `/nodes/{node}/v1/...` is the
// node-embedded API of that node, reaching its runtime through the node's cri-proxy over gRPC-Web (fetch).
// Replay protection and per-pod serialisation are Durable Objects, since isolates share no memory; so is each
// node's desired state, whose object also runs the node agent's reconcile loop on an alarm (NodeDesiredState).
//
// Settings (wrangler vars and secrets):
//   PODSYNC_NODES        JSON {"edge-7": {"url": "https://edge-7.example:9091", "aliases": ["m-123"]}} (optional per node:
//                        labels, taints, cpu, memoryBytes, maxPods, arch, over the shared PODSYNC_NODE_* settings)
//   PODSYNC_PROXY_TOKEN  secret: the bearer token for the proxies (or per node in PODSYNC_PROXY_TOKENS, JSON)
//   PODSYNC_JWKS         secret/var: the trusted JWK set (JSON), or PODSYNC_JWKS_URL
//   PODSYNC_ISSUERS      comma separated trusted `iss`
//   PODSYNC_SECRETS_KEY  secret: 32 random bytes, base64 (`openssl rand -base64 32`): seals the Secrets signed
//                        with pods in the desired state; without it a pod that brings Secrets is refused (500)
//   and every setting Node has in common (src/settings/common.ts: algorithms, token lifetime, clock skew,
//   body limit, lock wait, CRI deadlines, node layout, cgroup parent, DNS, memory capacity), same names.
import { Hono } from "hono";
import { z } from "zod";
import { createApp } from "./http/app.js";
import { SealedDesiredState } from "./state/sealed-desired-state.js";
import { importSealKey } from "./state/secret-seal.js";
import { ProblemError, toProblemError } from "./http/problems.js";
import { MemoryPodLock, PodBusyError, type PodLock } from "./kuberuntime/pod-lock.js";
import { createPodRuntime, type PodRuntime } from "./kuberuntime/runtime.js";
import { MemoryPullBackOff } from "./kuberuntime/backoff.js";
import { createVerifier, type Algorithm } from "./auth/verify.js";
import type { ReplayStore } from "./auth/replay.js";
import { connectGrpcWeb } from "./cri/grpc-web-transport.js";
import { checkCommon, commonSettings, formatIssues, nodeConfigFrom, RELIST_INTERVAL_DEFAULT_MS } from "./settings/common.js";
import { nodePolicy } from "./auth/policy.js";
import { NodeOverrides, nodeInfoFrom, withNodeOverrides } from "./settings/node-info.js";
import { proxyLogFiles } from "./host/proxy-log-files.js";
import { checkPut, checkRemove, checkReplace, StaleGenerationError, type DesiredPod, type DesiredState, type RemoveOptions } from "./kuberuntime/desired-state.js";
import { StateUnavailableError } from "./state/state-unavailable.js";
import type { CriClient } from "./cri/client.js";
import { startReconcileLoop, type ReconcileLoop } from "./kuberuntime/reconcile/loop.js";
import { createProber, type Prober } from "./kuberuntime/prober/prober.js";
import type { PodProbeResults } from "./kuberuntime/api-status.js";

// The few Workers runtime shapes used here (kept local rather than pulling the global workers types
// into a project that also type-checks against Node's and the DOM's).
interface DOStorage {
  get<T>(key: string): Promise<T | undefined>;
  put(key: string, value: unknown): Promise<void>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  list<T>(options?: { limit?: number; prefix?: string }): Promise<Map<string, T>>;
  getAlarm(): Promise<number | null>;
  setAlarm(at: number): Promise<void>;
  deleteAlarm(): Promise<void>;
}
interface DOState {
  storage: DOStorage;
}
interface DONamespace {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(input: string, init?: RequestInit): Promise<Response> };
}

export interface Env extends Partial<Record<`PODSYNC_${string}`, string>> {
  PODSYNC_NODES: string;
  PODSYNC_ISSUERS: string;
  REPLAY: DONamespace;
  POD_LOCK: DONamespace;
  DESIRED: DONamespace;
}

// Each node may carry its own admission values (labels, taints, cpu, memoryBytes, maxPods, arch), over the shared
// PODSYNC_NODE_* settings: a Worker fronts several nodes, which are not all alike.
const NodeMap = z.record(z.string().min(1), z.strictObject({ url: z.url(), aliases: z.array(z.string()).default([]), ...NodeOverrides.shape }));
const WorkerSettings = z
  .object({
    ...commonSettings,
    PODSYNC_NODES: z.string().transform((s, ctx) => {
      try {
        return NodeMap.parse(JSON.parse(s));
      } catch (e) {
        ctx.addIssue({ code: "custom", message: `must be JSON {"node": {"url": "https://…"}}: ${(e as Error).message}` });
        return z.NEVER;
      }
    }),
    PODSYNC_ISSUERS: commonSettings.PODSYNC_ISSUERS.unwrap().pipe(z.array(z.string()).min(1, "required: the trusted issuers")),
    PODSYNC_PROXY_TOKEN: z.string().optional(),
    PODSYNC_PROXY_TOKENS: z.string().optional(),
    PODSYNC_SECRETS_KEY: z
      .string()
      .transform((v, ctx) => {
        try {
          const b = Uint8Array.from(atob(v.trim().replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
          if (b.byteLength === 32) return b;
        } catch {
          /* reported below */
        }
        ctx.addIssue({ code: "custom", message: "must be 32 random bytes, base64 (openssl rand -base64 32)" });
        return z.NEVER;
      })
      .optional(),
  })
  .superRefine((s, ctx) => {
    if (!s.PODSYNC_JWKS === !s.PODSYNC_JWKS_URL) ctx.addIssue({ code: "custom", path: ["PODSYNC_JWKS"], message: "set exactly one of PODSYNC_JWKS and PODSYNC_JWKS_URL" });
    checkCommon(s, ctx, Boolean(s.PODSYNC_JWKS));
  });

/** Replay store backed by a Durable Object (one per node): claim is atomic inside the object. */
class DurableReplayStore implements ReplayStore {
  constructor(private readonly ns: DONamespace, private readonly node: string) {}
  async claim(key: string, expiresAtMs: number): Promise<boolean> {
    const stub = this.ns.get(this.ns.idFromName(this.node));
    const r = await stub.fetch("https://replay/claim", { method: "POST", body: JSON.stringify({ key, expiresAtMs }) });
    if (!r.ok) throw new Error(`replay store answered ${r.status}`);
    return ((await r.json()) as { fresh: boolean }).fresh;
  }
}

/** The node's desired state, kept by its Durable Object (NodeDesiredState): every isolate serving the node
 * sees one store, and the generation and iat checks run inside the object, atomic with the write. */
class DurableDesiredState implements DesiredState {
  constructor(private readonly ns: DONamespace, private readonly node: string) {}
  private async call<T>(op: string, arg: unknown = null): Promise<T> {
    let r: Response;
    try {
      // The object learns its node's name from its callers (an id made from a name does not carry it), for
      // the reconcile alarm.
      r = await this.ns.get(this.ns.idFromName(this.node)).fetch(`https://desired/${op}`, { method: "POST", headers: { [NODE_HEADER]: this.node }, body: JSON.stringify(arg) });
    } catch (e) {
      throw new StateUnavailableError("the desired state (the node's Durable Object)", e);
    }
    if (r.status === 409) {
      const j = (await r.json()) as { message: string; current?: number };
      throw new StaleGenerationError(j.message, j.current);
    }
    if (!r.ok) throw new StateUnavailableError("the desired state (the node's Durable Object)", new Error(`it answered ${r.status}`));
    return (await r.json()) as T;
  }
  list = () => this.call<DesiredPod[]>("list");
  get = async (uid: string) => (await this.call<DesiredPod | null>("get", { uid })) ?? undefined;
  put = (entry: DesiredPod) => this.call<void>("put", entry);
  remove = (uid: string, opts?: RemoveOptions) => this.call<boolean>("remove", { uid, ...(opts?.iat !== undefined ? { iat: opts.iat } : {}) });
  generation = () => this.call<number>("generation");
  replace = (generation: number, entries: DesiredPod[]) => this.call<{ removed: string[] }>("replace", { generation, entries });
  /** The node object's probe results for these pods (its alarm runs the probes). */
  probeResults = async (uids: string[]): Promise<Map<string, PodProbeResults>> =>
    new Map(Object.entries(await this.call<Record<string, ProbeResultsJSON>>("probe-results", { uids })).map(([uid, j]) => [uid, probeResultsFrom(j)]));
}

/** PodProbeResults as JSON (its maps as entry lists), between the node object and the Worker's routes. */
type ProbeResultsJSON = Partial<Record<keyof PodProbeResults, [string, unknown][]>>;
const probeResultsJSON = (r: PodProbeResults): ProbeResultsJSON =>
  Object.fromEntries((["liveness", "readiness", "startup", "changedAt"] as const).flatMap((k) => (r[k] ? [[k, [...r[k]!.entries()]]] : [])));
const probeResultsFrom = (j: ProbeResultsJSON): PodProbeResults => Object.fromEntries(Object.entries(j).map(([k, v]) => [k, new Map(v)])) as PodProbeResults;

/** The holder's side of a lease: aborts once the lease may have expired. A renewal sent at time t that the
 * Durable Object granted keeps the lease to at least t + leaseMs (its timer restarted after t), so the fence
 * fires a margin before that unless a later renewal succeeds, and at once when a renewal is refused. */
class LeaseFence {
  private readonly ac = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  constructor(private readonly leaseMs: number) {}
  get signal(): AbortSignal {
    return this.ac.signal;
  }
  renewed(sentAt: number): void {
    if (this.stopped || this.ac.signal.aborted) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.lose("the pod's lease could not be renewed in time"), sentAt + this.leaseMs * 0.9 - Date.now());
  }
  lose(reason: string): void {
    clearTimeout(this.timer);
    if (!this.ac.signal.aborted) this.ac.abort(new Error(reason));
  }
  /** The holder is done: a renewal answered late changes nothing. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

/** Per-pod lock: a Durable Object per node/pod uid hands out one lease at a time. A lease expires unless
 * renewed, so a vanished holder cannot wedge the pod; a live holder renews it every quarter lease while it
 * runs (a slow pull or a long grace period may take many leases), and is fenced (no further runtime write,
 * calls in flight cancelled) once a renewal is refused or none has succeeded in time. Guaranteed: no holder
 * starts a write after its lease may have expired, so two holders never act on the pod at once; a write
 * already received by the runtime when the lease is lost may still complete. */
export class DurablePodLock implements PodLock {
  constructor(private readonly ns: DONamespace, private readonly node: string, private readonly maxWaitMs: number) {}
  async run<T>(uid: string, fn: (fence: AbortSignal) => Promise<T>): Promise<T> {
    const stub = this.ns.get(this.ns.idFromName(`${this.node}/${uid}`));
    const leaseMs = Math.max(1000, this.maxWaitMs * 2);
    const sentAt = Date.now();
    const r = await stub.fetch(`https://lock/acquire?wait=${this.maxWaitMs}&lease=${leaseMs}`, { method: "POST" });
    if (r.status === 409) throw new PodBusyError(uid, this.maxWaitMs);
    if (!r.ok) throw new Error(`pod lock answered ${r.status}`);
    const { lease } = (await r.json()) as { lease: string };
    const fence = new LeaseFence(leaseMs);
    fence.renewed(sentAt);
    const beat = setInterval(() => {
      const at = Date.now();
      stub.fetch("https://lock/renew", { method: "POST", body: JSON.stringify({ lease }) }).then(
        (res) => {
          void res.body?.cancel();
          if (res.ok) fence.renewed(at);
          else if (res.status === 409) fence.lose("the pod's lease expired and may be held by another request");
        },
        () => undefined, // a failed renewal is retried on the next beat; the fence's deadline still holds
      );
    }, leaseMs / 4);
    try {
      return await fn(fence.signal);
    } finally {
      clearInterval(beat);
      fence.stop();
      await stub.fetch("https://lock/release", { method: "POST", body: JSON.stringify({ lease }) });
    }
  }
}

/** The header DurableDesiredState names its node in. */
const NODE_HEADER = "podsync-node";

type WorkerConfig = z.output<typeof WorkerSettings>;

/** The settings, parsed once per isolate for each configuration (the Worker's routes and the node objects). */
let settingsCache: { key: string; s: WorkerConfig } | undefined;
function settingsOf(env: Env): WorkerConfig {
  const key = JSON.stringify(Object.entries(env).filter(([k, v]) => k.startsWith("PODSYNC_") && typeof v === "string"));
  if (settingsCache?.key === key) return settingsCache.s;
  const parsed = WorkerSettings.safeParse(env);
  if (!parsed.success) throw new ProblemError("misconfigured", "invalid settings:\n" + formatIssues(parsed.error));
  settingsCache = { key, s: parsed.data };
  return parsed.data;
}

/** One node's engine, as both the node's HTTP routes and its reconcile alarm use it: its cri-proxy over
 * gRPC-Web, the per-pod lease (a Durable Object per node/pod, so a request and the alarm never act on one pod
 * at once), and this isolate's pull back-off. Undefined for a node PODSYNC_NODES does not name. */
function nodeRuntime(env: Env, s: WorkerConfig, name: string): { cri: CriClient; runtime: PodRuntime } | undefined {
  const cfg = s.PODSYNC_NODES[name];
  if (!cfg) return undefined;
  const tokens = s.PODSYNC_PROXY_TOKENS ? (JSON.parse(s.PODSYNC_PROXY_TOKENS) as Record<string, string>) : {};
  const proxyToken = tokens[name] ?? s.PODSYNC_PROXY_TOKEN;
  // A Worker has no resolv.conf of the node's; dnsPolicy Default gets the cluster settings only.
  const base = nodeConfigFrom(s, { dns: { servers: [], searches: [], options: [] }, memoryBytes: 8 * 2 ** 30 });
  const node = { ...base, nodeName: name, ...nodeAllocatable(nodeInfoFrom(withNodeOverrides(s, cfg), name, {})) };
  const cri = connectGrpcWeb({ baseUrl: cfg.url, token: proxyToken, timeoutMs: s.PODSYNC_CRI_TIMEOUT_MS });
  const runtime = createPodRuntime(cri, {
    node,
    // Logs are read through the proxy's log endpoint; exec goes through ExecSync when the proxy allows it.
    logFiles: proxyLogFiles({ baseUrl: cfg.url, token: proxyToken, timeoutMs: s.PODSYNC_CRI_TIMEOUT_MS }),
    pullTimeoutMs: s.PODSYNC_CRI_PULL_TIMEOUT_MS,
    lock: new DurablePodLock(env.POD_LOCK, name, s.PODSYNC_LOCK_WAIT_MS),
    // Per isolate: the one piece of sync state with no runtime record (see backoff.ts).
    pullBackOff: new MemoryPullBackOff(),
  });
  return { cri, runtime };
}

let cache: { key: string; root: Hono } | undefined;

/** Secrets are stored sealed, never in clear in the Durable Object; the routes and the node's alarm loop both
 * read the set through this. */
const sealed = (inner: DesiredState, s: WorkerConfig) =>
  new SealedDesiredState(inner, () =>
    s.PODSYNC_SECRETS_KEY
      ? importSealKey(s.PODSYNC_SECRETS_KEY)
      : Promise.reject(new ProblemError("misconfigured", "PODSYNC_SECRETS_KEY is not set: this Worker stores the Secrets signed with a pod only sealed, so it cannot take pods that bring Secrets")),
  );

/** The downward API's defaults for a missing limit: the node's allocatable where the owner set it. */
const nodeAllocatable = (info: { allocatable: { milliCPU?: number | undefined; memory?: number | undefined } }) => ({
  ...(info.allocatable.milliCPU !== undefined ? { cpuCapacity: info.allocatable.milliCPU / 1000 } : {}),
  ...(info.allocatable.memory !== undefined ? { memoryCapacity: info.allocatable.memory } : {}),
});

function build(env: Env): Hono {
  const s = settingsOf(env);
  const keys = s.PODSYNC_JWKS ? { jwks: JSON.parse(s.PODSYNC_JWKS) } : { url: s.PODSYNC_JWKS_URL! };
  const root = new Hono();
  root.get("/healthz", (c) => c.json({ ok: true, nodes: Object.keys(s.PODSYNC_NODES) }));
  for (const [name, cfg] of Object.entries(s.PODSYNC_NODES)) {
    const { runtime } = nodeRuntime(env, s, name)!;
    const desiredOf = new DurableDesiredState(env.DESIRED, name);
    const app = createApp({
      runtime,
      verifier: createVerifier({
        keys,
        issuers: s.PODSYNC_ISSUERS,
        audience: [name, ...cfg.aliases],
        algorithms: s.PODSYNC_ALGORITHMS as Algorithm[],
        maxLifetimeSeconds: s.PODSYNC_MAX_TOKEN_LIFETIME_S,
        clockSkewSeconds: s.PODSYNC_CLOCK_SKEW_S,
        replay: new DurableReplayStore(env.REPLAY, name),
      }),
      nodeName: name,
      desired: sealed(desiredOf, s),
      // The node object's alarm runs the probes; the GET routes read its results from there.
      probeResults: (uids) => desiredOf.probeResults(uids),
      policy: nodePolicy(s),
      // A Worker cannot see the node's machine: arch, cpu and memory are checked only when the owner sets them.
      nodeInfo: nodeInfoFrom(withNodeOverrides(s, cfg), name, {}),
      maxBodyBytes: s.PODSYNC_MAX_BODY_BYTES,
      allowExec: s.PODSYNC_ALLOW_EXEC,
      execMaxOutputBytes: s.PODSYNC_EXEC_MAX_OUTPUT_BYTES,
      logFollowMaxMs: s.PODSYNC_LOG_FOLLOW_MAX_S * 1000,
      // exec probes go through the proxy (ExecSync); a Worker cannot open a connection to a pod.
      probeHandlers: { allowed: ["exec"], why: "a Worker reaches the node only through cri-proxy and cannot connect to the pod" },
    });
    root.route(`/nodes/${encodeURIComponent(name)}`, app);
  }
  root.notFound((c) => new ProblemError("not-found", `no route for ${c.req.method} ${c.req.path}; node APIs live under /nodes/{node}/`).toResponse(c.req.path));
  return root;
}

export default {
  async fetch(req: Request, env: Env, ctx: unknown): Promise<Response> {
    try {
      const key = `${env.PODSYNC_NODES}\u0000${env.PODSYNC_ISSUERS}\u0000${env.PODSYNC_JWKS ?? env.PODSYNC_JWKS_URL}`;
      if (cache?.key !== key) cache = { key, root: build(env) };
      return await cache.root.fetch(req, env, ctx as never);
    } catch (e) {
      return toProblemError(e).toResponse(new URL(req.url).pathname);
    }
  },
};

/** Durable Object: atomic jti claims for one node, expired entries swept by an alarm. */
export class ReplayGuard {
  constructor(private readonly state: DOState) {}
  async fetch(req: Request): Promise<Response> {
    const { key, expiresAtMs } = (await req.json()) as { key: string; expiresAtMs: number };
    const now = Date.now();
    const until = await this.state.storage.get<number>(key);
    if (until !== undefined && until > now) return Response.json({ fresh: false });
    await this.state.storage.put(key, expiresAtMs);
    const alarm = await this.state.storage.getAlarm();
    if (alarm === null || alarm > expiresAtMs) await this.state.storage.setAlarm(expiresAtMs);
    return Response.json({ fresh: true });
  }
  async alarm(): Promise<void> {
    const now = Date.now();
    const all = await this.state.storage.list<number>();
    const dead = [...all].filter(([, until]) => until <= now).map(([k]) => k);
    for (let i = 0; i < dead.length; i += 128) await this.state.storage.delete(dead.slice(i, i + 128));
    const next = Math.min(...[...all.values()].filter((u) => u > now));
    if (Number.isFinite(next)) await this.state.storage.setAlarm(next);
  }
}

/** The node's desired state over its Durable Object's storage (`pod:<uid>` → the desired pod with its audit
 * record, `generation` → the node-wide set's generation). This object is the store's only writer, so it keeps
 * the set in memory once read: a converged reconcile alarm reads no storage row. Each change is its reads,
 * then its writes issued together with no await between them, which the runtime commits as one atomic write:
 * a set and its generation are never half stored; the memory copy changes only once the write succeeded. */
class StorageDesiredState implements DesiredState {
  private pods: Promise<Map<string, DesiredPod>> | undefined;
  private gen: Promise<number> | undefined;
  constructor(private readonly s: DOStorage) {}
  private all(): Promise<Map<string, DesiredPod>> {
    return (this.pods ??= this.s.list<DesiredPod>({ prefix: "pod:" }).then(
      (m) => new Map([...m.values()].map((e) => [e.pod.metadata.uid, e])),
      (e) => ((this.pods = undefined), Promise.reject(e)),
    ));
  }
  async list() {
    return [...(await this.all()).values()];
  }
  async get(uid: string) {
    return (await this.all()).get(uid);
  }
  async generation() {
    return (this.gen ??= this.s.get<number>("generation").then(
      (g) => g ?? 0,
      (e) => ((this.gen = undefined), Promise.reject(e)),
    ));
  }
  async put(entry: DesiredPod) {
    const pods = await this.all();
    const uid = entry.pod.metadata.uid;
    checkPut(pods.get(uid), entry);
    await this.s.put(`pod:${uid}`, entry);
    pods.set(uid, entry);
  }
  async remove(uid: string, opts?: RemoveOptions) {
    const pods = await this.all();
    checkRemove(pods.get(uid), uid, opts);
    if (!pods.has(uid)) return false;
    await this.s.delete(`pod:${uid}`);
    pods.delete(uid);
    return true;
  }
  async replace(generation: number, entries: DesiredPod[]) {
    const pods = await this.all();
    checkReplace(await this.generation(), generation);
    const keep = new Set(entries.map((e) => e.pod.metadata.uid));
    const dropped = [...pods.keys()].filter((uid) => !keep.has(uid));
    // All writes issued before any is awaited: one atomic commit (multi-key calls take 128 keys each).
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < dropped.length; i += 128) writes.push(this.s.delete(dropped.slice(i, i + 128).map((uid) => `pod:${uid}`)));
    for (let i = 0; i < entries.length; i += 127) writes.push(this.s.put(Object.fromEntries(entries.slice(i, i + 127).map((e) => [`pod:${e.pod.metadata.uid}`, e]))));
    writes.push(this.s.put("generation", generation));
    await Promise.all(writes);
    pods.clear();
    for (const e of entries) pods.set(e.pod.metadata.uid, e);
    this.gen = Promise.resolve(generation);
    return { removed: dropped };
  }
}

/** Durable Object: one per node. It keeps the node's desired state (SQLite storage, see StorageDesiredState)
 * and runs the node agent's reconcile on an alarm: every PODSYNC_RELIST_INTERVAL_MS (default 10 s) while it
 * holds desired pods, and no alarm at all while it holds none (an idle node costs nothing). Each alarm is one
 * pass of the same loop Node runs on a timer (reconcile/loop.ts, driven by tick()): relist through the
 * node's cri-proxy (ListPodSandbox + ListContainers), decide, and sync the pods that need it through the
 * engine's front door, under the same per-pod lease the HTTP routes take (nodeRuntime).
 *
 * The loop's memory across alarms (the relist's detail caches, each pod's last fingerprint and decision, retry
 * and resync times) lives in this instance. When the runtime evicts the object it is rebuilt from nothing:
 * the first pass after that is a start-up pass (every desired pod synced once, its details read again).
 * Alarm work and requests to the object interleave at awaits; the loop reads each pod's spec at its sync and
 * a pod that left meanwhile is not brought back (as on Node). */
export class NodeDesiredState {
  private readonly store: StorageDesiredState;
  private node: string | undefined;
  private loop: { loop: ReconcileLoop; settings: WorkerConfig; prober: Prober } | undefined;
  constructor(
    private readonly state: DOState,
    private readonly env: Env,
  ) {
    this.store = new StorageDesiredState(state.storage);
  }

  async fetch(req: Request): Promise<Response> {
    const op = new URL(req.url).pathname.slice(1);
    const arg = (await req.json()) as Record<string, unknown> | null;
    const d = this.store;
    try {
      await this.learnNode(req.headers.get(NODE_HEADER));
      switch (op) {
        case "list":
          return Response.json(await d.list());
        case "get":
          return Response.json((await d.get(String(arg!["uid"]))) ?? null);
        case "generation":
          return Response.json(await d.generation());
        case "put":
          await d.put(arg as unknown as DesiredPod);
          await this.schedule();
          return Response.json(null);
        case "remove": {
          const iat = arg!["iat"];
          const removed = await d.remove(String(arg!["uid"]), typeof iat === "number" ? { iat } : undefined);
          await this.schedule();
          return Response.json(removed);
        }
        case "replace": {
          const { generation, entries } = arg as { generation: number; entries: DesiredPod[] };
          const r = await d.replace(generation, entries);
          await this.schedule();
          return Response.json(r);
        }
        case "probe-results": {
          // What the alarm's prober knows of these pods (readiness, startup, liveness by container id), for the
          // Worker's GET routes, which run outside this object. Nothing before the first pass.
          const uids = (arg!["uids"] as string[]).slice(0, 10_000);
          const prober = this.loop?.prober;
          return Response.json(Object.fromEntries(prober ? uids.map((uid) => [uid, probeResultsJSON(prober.results(uid))]) : []));
        }
        default:
          return Response.json({ message: `no operation ${op}` }, { status: 404 });
      }
    } catch (e) {
      if (e instanceof StaleGenerationError) return Response.json({ message: e.message, current: e.current }, { status: 409 });
      throw e;
    }
  }

  /** The reconcile pass. A pass that fails is logged and the next one comes at the interval all the same (a
   * throw would make the runtime retry the alarm on its own back-off). */
  async alarm(): Promise<void> {
    const began = Date.now();
    let interval: number = RELIST_INTERVAL_DEFAULT_MS.workers;
    try {
      const node = this.node ?? (this.node = await this.state.storage.get<string>("node"));
      // Nothing desired (an alarm set before the set emptied): no pass and no next alarm. The loop's memory
      // stays for the next pod stored, which its request has just synced.
      if (!node || (await this.store.list()).length === 0) return;
      const s = settingsOf(this.env);
      interval = relistInterval(s);
      const loop = this.loopFor(node, s);
      if (!loop) {
        log({ loop: "reconcile", node, event: "error", error: "the node is not in PODSYNC_NODES: its desired pods are not reconciled" });
        return;
      }
      await loop.tick();
    } catch (e) {
      log({ loop: "reconcile", node: this.node, event: "error", error: errorText(e) });
    }
    // A set emptied during the pass deleted the alarm: it stays off.
    if ((await this.store.list()).length > 0) await this.state.storage.setAlarm(Math.max(Date.now(), began + interval));
  }

  private async learnNode(name: string | null): Promise<void> {
    if (!name || name === this.node) return;
    if ((await this.state.storage.get<string>("node")) !== name) await this.state.storage.put("node", name);
    this.node = name;
  }

  /** After a change: an alarm while pods are desired (one already set stays), none once the set is empty. */
  private async schedule(): Promise<void> {
    const s = this.state.storage;
    if ((await this.store.list()).length === 0) return s.deleteAlarm();
    if ((await s.getAlarm()) !== null) return;
    let interval: number = RELIST_INTERVAL_DEFAULT_MS.workers;
    try {
      interval = relistInterval(settingsOf(this.env));
    } catch {
      // Misconfigured: the alarm logs it.
    }
    await s.setAlarm(Date.now() + interval);
  }

  /** The loop for this node, driven by the alarm (no timers of its own); rebuilt when the settings change. */
  private loopFor(node: string, s: WorkerConfig): ReconcileLoop | undefined {
    if (this.loop?.settings === s) return this.loop.loop;
    void this.loop?.loop.stop();
    this.loop = undefined;
    const engine = nodeRuntime(this.env, s, node);
    if (!engine) return undefined;
    const prober = createProber({ cri: engine.cri });
    const loop = startReconcileLoop({
      runtime: engine.runtime,
      cri: engine.cri,
      // Opened as the routes read it: the loop syncs pods with their Secrets.
      desired: sealed(this.store, s),
      // Exec probes only (ExecSync through the proxy, which must allow it); the routes refuse the other
      // handlers. They run in the alarm's passes, so no more often than the relist interval; their state lives in
      // this object's memory and starts over after an eviction.
      prober,
      manual: true,
      relistIntervalMs: relistInterval(s),
      resyncIntervalMs: s.PODSYNC_RESYNC_INTERVAL_MS,
      log: (rec) => log({ loop: "reconcile", node, ...rec }),
    });
    this.loop = { loop, settings: s, prober };
    return loop;
  }
}

const relistInterval = (s: WorkerConfig) => s.PODSYNC_RELIST_INTERVAL_MS ?? RELIST_INTERVAL_DEFAULT_MS.workers;
const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 300);
const log = (rec: Record<string, unknown>) => console.log(JSON.stringify({ time: new Date().toISOString(), ...rec }));

/** Durable Object: one per node/pod; a FIFO of requests, one lease at a time, leases expire unless renewed. */
export class PodSerializer {
  private readonly lock = new MemoryPodLock(Infinity); // callers bound their own wait (?wait=)
  private readonly leases = new Map<string, { release: () => void; renew: () => void }>();

  async fetch(req: Request): Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname === "/release") {
      const { lease } = (await req.json()) as { lease: string };
      this.leases.get(lease)?.release();
      return Response.json({ ok: true });
    }
    if (url.pathname === "/renew") {
      const { lease } = (await req.json()) as { lease: string };
      const held = this.leases.get(lease);
      if (!held) return Response.json({ lost: true }, { status: 409 });
      held.renew();
      return Response.json({ ok: true });
    }
    const wait = Number(url.searchParams.get("wait") ?? 30_000);
    const leaseMs = Number(url.searchParams.get("lease") ?? 60_000);
    let granted!: (lease: string) => void;
    const grant = new Promise<string>((r) => (granted = r));
    // The lease is held inside the in-memory lock until released (or expired, if the caller vanished).
    void this.lock.run("pod", () => {
      const lease = crypto.randomUUID();
      return new Promise<void>((release) => {
        let timer = setTimeout(() => done(), leaseMs);
        const done = () => {
          clearTimeout(timer);
          this.leases.delete(lease);
          release();
        };
        const renew = () => {
          clearTimeout(timer);
          timer = setTimeout(() => done(), leaseMs);
        };
        this.leases.set(lease, { release: done, renew });
        granted(lease);
      });
    });
    let waitTimer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<undefined>((r) => (waitTimer = setTimeout(() => r(undefined), wait)));
    const lease = await Promise.race([grant, timeout]);
    clearTimeout(waitTimer);
    if (lease === undefined) {
      // Give the slot back as soon as it comes, since nobody will use it.
      void grant.then((l) => this.leases.get(l)?.release());
      return Response.json({ busy: true }, { status: 409 });
    }
    return Response.json({ lease });
  }
}
