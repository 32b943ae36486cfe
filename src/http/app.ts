// The HTTP function: one Hono app, the same on Node and on Workers. A route authenticates, calls the
// engine's front door (which locks the pod) and renders; everything it touches comes in through
// createApp, so tests and both entry points wire their own runtime, keys and clock.
import { Hono, type Context } from "hono";
import type { Verifier } from "../auth/verify.js";
import { DEFAULT_POLICY_LEVEL, type NodePolicy } from "../auth/policy.js";
import { admitOnRuntime, admit, admitOnNode, checkUidsOnRuntime } from "./admission.js";
import { serialQueue } from "../kuberuntime/serial.js";
import type { NodeInfo } from "../kuberuntime/predicates.js";
import { SupersededError, type PodRuntime, type SyncResult } from "../kuberuntime/runtime.js";
import { ProblemError, toProblemError } from "./problems.js";
import { checkGraceClaim, readBearer, readSignedPod } from "./signed-request.js";
import { actionsJSON, statusJSON } from "./serialize.js";
import { openApiDocument } from "./openapi.js";
import { ROUTES } from "./routes.js";
import { registerLogsAndExec } from "./logs-exec.js";
import { registerMetrics, type MetricsRouteOptions } from "./metrics.js";
import { registerVolumes } from "./volumes.js";
import type { Pod, ProbeHandler } from "../pod/schema.js";
import { ALL_PROBE_HANDLERS, probeHandlerErrors } from "../pod/probes.js";
import { InvalidPodError } from "../pod/validate.js";
import { toV1Pod, type PodProbeResults } from "../kuberuntime/api-status.js";
import type { Prober } from "../kuberuntime/prober/prober.js";
import { checkPut, MemoryDesiredState, StaleGenerationError, whileStored, type DesiredState } from "../kuberuntime/desired-state.js";
import { desiredEntry, registerNodePods } from "./node-pods.js";

export interface RequestLog {
  time: string;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  podUid?: string;
  criCalls: number;
  jti?: string;
  /** exec only: who ran it, and the SHA-256 of its argv (never the argv or its output). */
  iss?: string;
  commandSha256?: string;
  error?: string;
}

export interface AppOptions {
  runtime: PodRuntime;
  verifier: Verifier;
  /** This node's name, reported by /healthz (tokens must be signed for it). */
  nodeName: string;
  /** The node owner's admission policy; every pod is held against it before any runtime call. */
  policy?: NodePolicy;
  /** The node as kubelet's admission sees it (labels, taints, allocatable); default: kubelet's default labels
   * for `nodeName`, no taints, resources unchecked. */
  nodeInfo?: NodeInfo;
  maxBodyBytes?: number;
  /** exec is off unless the node owner turns it on. */
  allowExec?: boolean;
  execMaxOutputBytes?: number;
  /** The longest a followed log stream lasts. */
  logFollowMaxMs?: number;
  log?: (rec: RequestLog) => void;
  now?: () => number;
  /** Runs the pods' probes; synced pods are handed to it and its results go into every sync and status. */
  prober?: Prober;
  /** Where the probes run elsewhere (the Workers node object's alarm): their results, for the GET routes. */
  probeResults?: (uids: string[]) => Promise<Map<string, PodProbeResults>>;
  /** GET /metrics (Node); absent: not served. */
  metrics?: MetricsRouteOptions;
  /** The node's desired state: every accepted sync is stored here before it acts, DELETE removes, PUT
   * /v1/node/pods replaces; GET reads specs from it; admission counts their requests and host ports. In
   * memory when not given. */
  desired?: DesiredState;
  /** Pods a PUT /v1/node/pods syncs (or deletes) at once (default 8). */
  applyConcurrency?: number;
  /** Probe handlers this deployment can run, and why the others cannot (Workers: exec only). */
  probeHandlers?: { allowed: readonly ProbeHandler[]; why: string };
}

type Env = { Variables: { podUid?: string; criCalls: number; jti?: string; iss?: string; commandSha256?: string; error?: string } };

const UID_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function createApp(o: AppOptions) {
  const app = new Hono<Env>();
  const maxBody = o.maxBodyBytes ?? 1024 * 1024;
  const log = o.log ?? ((rec) => console.log(JSON.stringify(rec)));
  const now = o.now ?? Date.now;
  const rt = o.runtime;
  const policy = o.policy ?? { level: DEFAULT_POLICY_LEVEL, hostPathAllow: [] };
  const nodeInfo: NodeInfo = o.nodeInfo ?? { name: o.nodeName, labels: { "kubernetes.io/hostname": o.nodeName, "kubernetes.io/os": "linux" }, taints: [], allocatable: {} };
  const desired = o.desired ?? new MemoryDesiredState();
  const admitting = serialQueue();
  const prober = o.prober;
  const handlers = o.probeHandlers ?? { allowed: ALL_PROBE_HANDLERS, why: "" };
  /** A probe this deployment cannot run is refused like any invalid field, before any runtime call. */
  const checkProbes = (pod: Pod, prefix = "") => {
    const errors = probeHandlerErrors(pod, handlers.allowed, handlers.why).map((e) => ({ ...e, path: prefix + e.path }));
    if (errors.length) throw new InvalidPodError(errors);
  };

  app.use(async (c, next) => {
    const t0 = performance.now();
    c.set("criCalls", 0);
    await next();
    const rec: RequestLog = {
      time: new Date(now()).toISOString(),
      method: c.req.method,
      route: c.req.routePath,
      status: c.res.status,
      durationMs: Math.round((performance.now() - t0) * 100) / 100,
      criCalls: c.get("criCalls"),
    };
    const uid = c.get("podUid");
    if (uid) rec.podUid = uid;
    const jti = c.get("jti");
    if (jti) rec.jti = jti;
    const iss = c.get("iss");
    if (iss) rec.iss = iss;
    const cmd = c.get("commandSha256");
    if (cmd) rec.commandSha256 = cmd;
    const err = c.get("error");
    if (err) rec.error = err;
    log(rec);
  });

  app.onError((e, c) => {
    const p = toProblemError(e);
    // Only the log sees an unexpected error's stack; the caller gets the bare problem.
    c.set("error", p.slug === "internal" && !(e instanceof ProblemError) ? String((e as Error)?.stack ?? e) : p.message);
    return p.toResponse(c.req.path);
  });
  app.notFound((c) => new ProblemError("not-found", `no route for ${c.req.method} ${c.req.path}`).toResponse(c.req.path));

  /** Record who acted and what it cost, for the request log. */
  const note = (c: Context<Env>, uid: string, jti: string | undefined) => {
    c.set("podUid", uid);
    if (jti) c.set("jti", jti);
  };

  app.get(ROUTES.healthz, (c) => c.json({ ok: true, node: o.nodeName }));

  app.get(ROUTES.readyz, async (c) => {
    const r = await rt.ready();
    c.set("criCalls", r.criCalls);
    const body = { ok: r.ok, node: o.nodeName, runtime: r.runtime };
    if (r.ok) return c.json(body);
    return new ProblemError("runtime-not-ready", "the runtime reports RuntimeReady=false", { runtime: r.runtime }).toResponse(c.req.path);
  });

  app.get(ROUTES.openapi, (c) => c.json(openApiDocument()));

  app.post(ROUTES.plan, async (c) => {
    const { pod, token } = await readSignedPod(c.req.raw, o.verifier, "plan", maxBody);
    note(c, pod.metadata.uid, token.payload.jti);
    admit(pod, policy);
    await admitOnNode(pod, nodeInfo, desired);
    checkProbes(pod);
    const r = await rt.plan(pod, prober?.results(pod.metadata.uid));
    c.set("criCalls", r.criCalls);
    return c.json({ ok: true, pod: r.pod, actions: actionsJSON(pod, r.actions), status: statusJSON(r.status) });
  });

  app.post(ROUTES.sync, async (c) => {
    const { pod, objects, token } = await readSignedPod(c.req.raw, o.verifier, "sync", maxBody);
    note(c, pod.metadata.uid, token.payload.jti);
    admit(pod, policy);
    checkProbes(pod);
    admitOnRuntime(rt, pod);
    const uid = pod.metadata.uid;
    // Admitted against the other desired pods and stored as one step on the node (kubelet admits one pod at a
    // time), before anything acts: the loop keeps it running from here on. An older token than the one that
    // last changed the pod is refused here (409 stale-generation), a store that cannot be written with 503.
    const mine = desiredEntry(pod, token, now(), objects);
    // An older token is refused first (put checks again, atomically): a stale request makes no runtime call.
    checkPut(await desired.get(uid), mine);
    // One uid is one pod: a pod whose uid belongs to another pod on the node is refused (409 uid-conflict) in
    // the same step, before it is stored, so the refusal changes nothing.
    let idCalls = 0;
    await admitting(async () => {
      await admitOnNode(pod, nodeInfo, desired);
      idCalls = await checkUidsOnRuntime(rt, [{ pod }], (u) => desired.get(u));
      c.set("criCalls", idCalls);
      await desired.put(mine);
    });
    // The prober learns the pod first, so its results (liveness/startup failures) count in this sync.
    prober?.upsert(pod);
    // Synced only if this request's entry (or the same spec) is still stored once the pod's lock is held: a later request
    // that changed or removed the pod meanwhile acts after this one, and this older spec does not undo it.
    let r: SyncResult;
    try {
      r = await rt.sync(pod, prober?.results(uid), objects, whileStored(desired, mine));
    } catch (e) {
      if (!(e instanceof SupersededError)) throw e;
      const left = !(await desired.get(uid));
      if (left) prober?.remove(uid);
      throw new StaleGenerationError(left ? `pod ${uid} left the desired state (a later PUT /v1/node/pods or DELETE) before this sync ran; nothing was done` : `pod ${uid} was changed in the desired state by a later request before this sync ran; that request's spec is the one applied, nothing was done for this one`);
    }
    c.set("criCalls", idCalls + r.criCalls);
    // A later PUT or DELETE that dropped the pod while this sync waited for the pod's lock may have run its
    // delete before this sync's steps: then nothing would remove what they made (the loop acts only on the
    // store). So a pod that has left the desired state is deleted again, and the request is told why.
    if (!(await desired.get(uid))) {
      prober?.remove(uid);
      const d = await rt.delete(uid);
      c.set("criCalls", idCalls + r.criCalls + d.criCalls);
      throw new StaleGenerationError(`pod ${uid} left the desired state (a later PUT /v1/node/pods or DELETE) while this sync ran; what it made was deleted again`);
    }
    prober?.observe(uid, r.after);
    // 207: the request was fine and some steps ran, but not all succeeded; the body says which.
    // `status` is the v1.PodStatus read back after the steps; `runtime` the same read at CRI level.
    return c.json({ ok: r.ok, pod: r.pod, actions: actionsJSON(pod, r.actions), steps: r.steps, status: r.apiStatus, runtime: statusJSON(r.after) }, r.ok ? 200 : 207);
  });

  const runtimeView = async (c: Context<Env>) => {
    const uid = pathUid(c.req.param("uid") ?? "");
    const token = await readBearer(c.req.raw, o.verifier, "status", uid, false);
    note(c, uid, token.payload.jti);
    const r = await rt.status(uid);
    if (!r) throw new ProblemError("pod-not-found", `the runtime has no sandbox or container for pod uid ${uid}`);
    c.set("criCalls", r.criCalls);
    return c.json({ pod: r.pod, status: statusJSON(r.status) });
  };
  app.get(ROUTES.runtime, runtimeView);
  app.get(ROUTES.status, runtimeView);

  // The v1.Pod: the spec as last given (left out when only the runtime knows the pod), the status as kubelet
  // generates it.
  app.get(ROUTES.pod, async (c, next) => {
    // /v1/pods/sync and /plan are POST routes, not pods: let their 405 answer.
    if (c.req.param("uid") === "sync" || c.req.param("uid") === "plan") return next();
    const uid = pathUid(c.req.param("uid"));
    const token = await readBearer(c.req.raw, o.verifier, "status", uid, false);
    note(c, uid, token.payload.jti);
    const [stored, remote] = await Promise.all([desired.get(uid), o.probeResults?.([uid])]);
    const spec = stored?.pod ?? prober?.spec(uid);
    const r = await rt.apiStatus(uid, spec, prober?.results(uid) ?? remote?.get(uid));
    if (!r) throw new ProblemError("pod-not-found", `the runtime has no sandbox or container for pod uid ${uid}`);
    c.set("criCalls", r.criCalls);
    prober?.observe(uid, r.status);
    return c.json(toV1Pod(spec, r.pod, r.apiStatus));
  });

  app.delete(ROUTES.pod, async (c) => {
    const uid = pathUid(c.req.param("uid"));
    const token = await readBearer(c.req.raw, o.verifier, "delete", uid, true, checkGraceClaim);
    note(c, uid, token.payload.jti);
    // Out of the desired state first: once the pod is asked gone, nothing (the loop, a PUT) brings it back, and
    // a store that cannot be written refuses (503) before anything acts. A token issued before the one that
    // last changed the pod is a rollback (409 stale-generation). A pod only the runtime knows (an orphan) is
    // deleted all the same, and one only the store knew is just forgotten.
    // The iat check runs inside the store's write (remove's `iat`): a sync with a newer token stored while this
    // request waited is never removed by it. `known` is read first only to name the pod in the answer.
    const known = await desired.get(uid);
    const wasStored = await desired.remove(uid, { iat: Number(token.payload.iat) });
    const stored = wasStored ? known : undefined;
    prober?.remove(uid);
    const r = await rt.delete(uid, token.payload["gracePeriodSeconds"] as number | undefined);
    c.set("criCalls", r.criCalls);
    // Nothing podsync made is there under this uid (another manager's objects do not count), and the desired
    // state did not hold it either (node data it left that could not be removed is a 207 below, not a 404).
    if (!r.deleted && !wasStored && r.ok) throw new ProblemError("pod-not-found", `neither the desired state nor the runtime has anything of podsync's for pod uid ${uid}`);
    const { criCalls: _, ...body } = r;
    const m = stored?.pod.metadata;
    if (m && !r.deleted) body.pod = { namespace: m.namespace, name: m.name, uid };
    return c.json({ ...body, desired: wasStored }, r.ok ? 200 : 207);
  });

  registerNodePods(app, { nodePods: ROUTES.nodePods, pods: ROUTES.pods }, {
    runtime: rt,
    verifier: o.verifier,
    desired,
    policy,
    nodeInfo,
    admitting,
    prober,
    probeResults: o.probeResults,
    maxBodyBytes: maxBody,
    now,
    concurrency: o.applyConcurrency ?? 8,
    checkProbes: (pod) => checkProbes(pod),
    note: (c, f) => {
      const ctx = c as unknown as Context<Env>;
      if (f.jti) ctx.set("jti", f.jti);
      if (f.criCalls !== undefined) ctx.set("criCalls", f.criCalls);
    },
  });

  registerLogsAndExec(app, { logs: ROUTES.logs, exec: ROUTES.exec }, {
    runtime: rt,
    verifier: o.verifier,
    maxBodyBytes: maxBody,
    allowExec: o.allowExec ?? false,
    execMaxOutputBytes: o.execMaxOutputBytes ?? 1024 * 1024,
    followMaxMs: o.logFollowMaxMs ?? 1_800_000,
    now,
    note: (c, f) => {
      c.set("podUid", f.uid);
      if (f.jti) c.set("jti", f.jti);
      if (f.iss) c.set("iss", f.iss);
      if (f.commandSha256) c.set("commandSha256", f.commandSha256);
      if (f.criCalls !== undefined) c.set("criCalls", f.criCalls);
    },
    // Only the server log hears of a stream that broke after its first byte; never its content.
    onStreamError: (e) => log({ time: new Date(now()).toISOString(), method: "GET", route: ROUTES.logs, status: 200, durationMs: 0, criCalls: 0, error: `log stream ended early: ${(e as Error)?.message ?? e}` }),
    pathUid,
  });

  registerVolumes(app, { list: ROUTES.nodeVolumes, one: ROUTES.nodeVolume }, {
    runtime: rt,
    verifier: o.verifier,
    admitting,
    // A desired pod's claims are in use even while it has no container.
    ...(o.desired ? { desired: async () => (await o.desired!.list()).map((e) => e.pod) } : {}),
    note: (c, f) => {
      if (f.jti) c.set("jti", f.jti);
      if (f.criCalls !== undefined) c.set("criCalls", f.criCalls);
    },
  });

  if (o.metrics) registerMetrics(app, ROUTES.metrics, o.verifier, o.metrics, (c, jti) => jti && c.set("jti", jti));

  // A known path with a method it does not serve: 405 naming the ones it does.
  const allowed = new Map<string, string[]>();
  for (const r of app.routes) if (r.method !== "ALL") allowed.set(r.path, [...(allowed.get(r.path) ?? []), r.method]);
  for (const [path, methods] of allowed)
    app.all(path, (c) => new ProblemError("method-not-allowed", `${c.req.method} is not served at ${path}; use ${methods.join(", ")}`).toResponse(c.req.path, { allow: methods.join(", ") }));

  return app;
}

function pathUid(uid: string): string {
  if (!UID_PATH.test(uid)) throw new ProblemError("bad-request", "the pod uid in the path must be alphanumerics, '-', '_' or '.', at most 128 characters", { errors: [{ path: "uid", message: "invalid pod uid" }] });
  return uid;
}
