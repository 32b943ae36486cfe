// The same Hono app as a Cloudflare Worker. One Worker serves many nodes: `/nodes/{node}/v1/...` is the
// node-embedded API of that node, reaching its runtime through the node's cri-proxy over gRPC-Web (fetch).
// Replay protection and per-pod serialisation are Durable Objects, since isolates share no memory.
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
import { createPodRuntime } from "./kuberuntime/runtime.js";
import { MemoryPullBackOff } from "./kuberuntime/backoff.js";
import { createVerifier, type Algorithm } from "./auth/verify.js";
import type { ReplayStore } from "./auth/replay.js";
import { connectGrpcWeb } from "./cri/grpc-web-transport.js";
import { checkCommon, commonSettings, formatIssues, nodeConfigFrom } from "./settings/common.js";
import { nodePolicy } from "./auth/policy.js";
import { NodeOverrides, nodeInfoFrom, withNodeOverrides } from "./settings/node-info.js";
import { proxyLogFiles } from "./host/proxy-log-files.js";
import { checkPut, checkReplace, StaleGenerationError, type DesiredPod, type DesiredState } from "./kuberuntime/desired-state.js";
import { StateUnavailableError } from "./state/state-unavailable.js";

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
      r = await this.ns.get(this.ns.idFromName(this.node)).fetch(`https://desired/${op}`, { method: "POST", body: JSON.stringify(arg) });
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
  remove = (uid: string) => this.call<boolean>("remove", { uid });
  generation = () => this.call<number>("generation");
  replace = (generation: number, entries: DesiredPod[]) => this.call<{ removed: string[] }>("replace", { generation, entries });
}

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

let cache: { key: string; root: Hono } | undefined;

/** The downward API's defaults for a missing limit: the node's allocatable where the owner set it. */
const nodeAllocatable = (info: { allocatable: { milliCPU?: number | undefined; memory?: number | undefined } }) => ({
  ...(info.allocatable.milliCPU !== undefined ? { cpuCapacity: info.allocatable.milliCPU / 1000 } : {}),
  ...(info.allocatable.memory !== undefined ? { memoryCapacity: info.allocatable.memory } : {}),
});

function build(env: Env): Hono {
  const parsed = WorkerSettings.safeParse(env);
  if (!parsed.success) throw new ProblemError("misconfigured", "invalid settings:\n" + formatIssues(parsed.error));
  const s = parsed.data;
  const tokens = s.PODSYNC_PROXY_TOKENS ? (JSON.parse(s.PODSYNC_PROXY_TOKENS) as Record<string, string>) : {};
  const keys = s.PODSYNC_JWKS ? { jwks: JSON.parse(s.PODSYNC_JWKS) } : { url: s.PODSYNC_JWKS_URL! };
  // A Worker has no resolv.conf of the node's; dnsPolicy Default gets the cluster settings only.
  const node = nodeConfigFrom(s, { dns: { servers: [], searches: [], options: [] }, memoryBytes: 8 * 2 ** 30 });
  const root = new Hono();
  root.get("/healthz", (c) => c.json({ ok: true, nodes: Object.keys(s.PODSYNC_NODES) }));
  for (const [name, cfg] of Object.entries(s.PODSYNC_NODES)) {
    const proxyToken = tokens[name] ?? s.PODSYNC_PROXY_TOKEN;
    const runtime = createPodRuntime(connectGrpcWeb({ baseUrl: cfg.url, token: proxyToken, timeoutMs: s.PODSYNC_CRI_TIMEOUT_MS }), {
      node: { ...node, nodeName: name, ...nodeAllocatable(nodeInfoFrom(withNodeOverrides(s, cfg), name, {})) },
      // Logs are read through the proxy's log endpoint; exec goes through ExecSync when the proxy allows it.
      logFiles: proxyLogFiles({ baseUrl: cfg.url, token: proxyToken, timeoutMs: s.PODSYNC_CRI_TIMEOUT_MS }),
      pullTimeoutMs: s.PODSYNC_CRI_PULL_TIMEOUT_MS,
      lock: new DurablePodLock(env.POD_LOCK, name, s.PODSYNC_LOCK_WAIT_MS),
      // Per isolate: the one piece of sync state with no runtime record (see backoff.ts).
      pullBackOff: new MemoryPullBackOff(),
    });
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
      // Secrets are stored sealed, never in clear in the Durable Object.
      desired: new SealedDesiredState(new DurableDesiredState(env.DESIRED, name), () =>
        s.PODSYNC_SECRETS_KEY
          ? importSealKey(s.PODSYNC_SECRETS_KEY)
          : Promise.reject(new ProblemError("misconfigured", "PODSYNC_SECRETS_KEY is not set: this Worker stores the Secrets signed with a pod only sealed, so it cannot take pods that bring Secrets")),
      ),
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

/** Durable Object: one per node, its desired state in the object's SQLite storage (`pod:<uid>` → the desired
 * pod with its audit record, `generation` → the node-wide set's generation). Requests to one object run one at
 * a time, and each change is its reads, then its writes issued together with no await between them, which
 * the runtime commits as one atomic write: a set and its generation are never half stored. */
export class NodeDesiredState {
  constructor(private readonly state: DOState) {}
  async fetch(req: Request): Promise<Response> {
    const s = this.state.storage;
    const op = new URL(req.url).pathname.slice(1);
    const arg = (await req.json()) as Record<string, unknown> | null;
    const key = (uid: unknown) => `pod:${String(uid)}`;
    try {
      switch (op) {
        case "list":
          return Response.json([...(await s.list<DesiredPod>({ prefix: "pod:" })).values()]);
        case "get":
          return Response.json((await s.get<DesiredPod>(key(arg!["uid"]))) ?? null);
        case "generation":
          return Response.json((await s.get<number>("generation")) ?? 0);
        case "put": {
          const entry = arg as unknown as DesiredPod;
          checkPut(await s.get<DesiredPod>(key(entry.pod.metadata.uid)), entry);
          await s.put(key(entry.pod.metadata.uid), entry);
          return Response.json(null);
        }
        case "remove":
          return Response.json(await s.delete(key(arg!["uid"])));
        case "replace": {
          const { generation, entries } = arg as { generation: number; entries: DesiredPod[] };
          checkReplace((await s.get<number>("generation")) ?? 0, generation);
          const keep = new Set(entries.map((e) => key(e.pod.metadata.uid)));
          const dropped = [...(await s.list<DesiredPod>({ prefix: "pod:" })).keys()].filter((k) => !keep.has(k));
          // All writes issued before any is awaited: one atomic commit (multi-key calls take 128 keys each).
          const writes: Promise<unknown>[] = [];
          for (let i = 0; i < dropped.length; i += 128) writes.push(s.delete(dropped.slice(i, i + 128)));
          for (let i = 0; i < entries.length; i += 127) writes.push(s.put(Object.fromEntries(entries.slice(i, i + 127).map((e) => [key(e.pod.metadata.uid), e]))));
          writes.push(s.put("generation", generation));
          await Promise.all(writes);
          return Response.json({ removed: dropped.map((k) => k.slice(4)) });
        }
        default:
          return Response.json({ message: `no operation ${op}` }, { status: 404 });
      }
    } catch (e) {
      if (e instanceof StaleGenerationError) return Response.json({ message: e.message, current: e.current }, { status: 409 });
      throw e;
    }
  }
}

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
