// The HTTP function: one Hono app, the same on Node and on Workers. Everything it touches comes in
// through createApp, so tests and both entry points wire their own CRI client, keys, clock and stores.
import { Hono, type Context } from "hono";
import type { CriClient } from "../cri/client.js";
import { countCalls } from "../cri/counting.js";
import type { Verifier } from "../auth/verify.js";
import { getPodStatus } from "../kuberuntime/pod-status.js";
import { computePodActions } from "../kuberuntime/compute-actions.js";
import { deletePod, syncPod, type SyncOptions } from "../kuberuntime/sync-pod.js";
import { PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import { ProblemError, toProblemError, type Problem } from "./problem.js";
import { readBearer, readSignedPod } from "./signed-request.js";
import { actionsJSON, statusJSON } from "./serialize.js";
import { MemoryPodLock, type PodLock } from "./pod-lock.js";
import { openApiDocument } from "./openapi.js";

export interface RequestLog {
  time: string;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  podUid?: string;
  criCalls: number;
  jti?: string;
  error?: string;
}

export interface AppOptions {
  cri: CriClient;
  verifier: Verifier;
  /** This node's name, reported by /healthz (tokens must be signed for it). */
  nodeName: string;
  sync?: SyncOptions;
  maxBodyBytes?: number;
  lock?: PodLock;
  log?: (rec: RequestLog) => void;
  now?: () => number;
}

type Env = { Variables: { podUid?: string; criCalls: number; jti?: string; error?: string } };

const UID_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function createApp(o: AppOptions) {
  const app = new Hono<Env>();
  const maxBody = o.maxBodyBytes ?? 1024 * 1024;
  const lock = o.lock ?? new MemoryPodLock();
  const log = o.log ?? ((rec) => console.log(JSON.stringify(rec)));
  const now = o.now ?? Date.now;
  const syncOptions: SyncOptions = { ...o.sync, now: o.sync?.now ?? now };

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
    const err = c.get("error");
    if (err) rec.error = err;
    log(rec);
  });

  app.onError((e, c) => {
    const p = toProblemError(e);
    // Only the log sees an unexpected error's stack; the caller gets the bare problem.
    c.set("error", p.slug === "internal" && !(e instanceof ProblemError) ? String((e as Error)?.stack ?? e) : p.message);
    return problem(c, p.toProblem(c.req.path));
  });
  app.notFound((c) => problem(c, new ProblemError(404, "not-found", "Not found", `no route for ${c.req.method} ${c.req.path}`).toProblem(c.req.path)));

  /** Run fn with a per-request counting CRI client, recording the count for the log line. */
  const withCri = async <T,>(c: Context<Env>, fn: (cri: CriClient) => Promise<T>): Promise<T> => {
    const counted = countCalls(o.cri);
    try {
      return await fn(counted.client);
    } finally {
      c.set("criCalls", counted.calls);
    }
  };

  app.get("/healthz", (c) => c.json({ ok: true, node: o.nodeName }));

  // Ready = the runtime answers and reports RuntimeReady (kubelet's runtime health check); NetworkReady is
  // reported but not required, since hostNetwork pods still work without it.
  app.get("/readyz", async (c) => {
    const [v, st] = await withCri(c, (cri) => Promise.all([cri.version({}), cri.status({})]));
    const conditions = Object.fromEntries((st.status?.conditions ?? []).map((k) => [k.type, k.status]));
    const ok = conditions["RuntimeReady"] === true;
    const body = { ok, node: o.nodeName, runtime: { name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion, conditions } };
    if (ok) return c.json(body);
    return problem(c, new ProblemError(503, "runtime-not-ready", "Container runtime not ready", "the runtime reports RuntimeReady=false", { runtime: body.runtime }).toProblem(c.req.path));
  });

  app.get("/openapi.json", (c) => c.json(openApiDocument()));

  app.post("/v1/pods/plan", async (c) => {
    const { pod, token } = await readSignedPod(c.req.raw, o.verifier, "plan", maxBody);
    c.set("podUid", pod.metadata.uid);
    c.set("jti", token.payload.jti);
    const status = await withCri(c, (cri) => getPodStatus(cri, pod.metadata));
    const actions = computePodActions(pod, status);
    return c.json({ ok: true, pod: podRef(pod.metadata), actions: actionsJSON(pod, actions), status: statusJSON(status) });
  });

  app.post("/v1/pods/sync", async (c) => {
    const { pod, token } = await readSignedPod(c.req.raw, o.verifier, "sync", maxBody);
    c.set("podUid", pod.metadata.uid);
    c.set("jti", token.payload.jti);
    const body = await lock.run(pod.metadata.uid, () =>
      withCri(c, async (cri) => {
        const status = await getPodStatus(cri, pod.metadata);
        const result = await syncPod(cri, pod, status, syncOptions);
        return { ok: result.ok, pod: podRef(pod.metadata), actions: actionsJSON(pod, result.actions), steps: result.steps, status: statusJSON(status) };
      }),
    );
    // 207: the request was fine and some steps ran, but not all succeeded; the body says which.
    return c.json(body, body.ok ? 200 : 207);
  });

  app.get("/v1/pods/:uid/status", async (c) => {
    const uid = pathUid(c.req.param("uid"));
    const token = await readBearer(c.req.raw, o.verifier, "status", uid, false);
    c.set("podUid", uid);
    c.set("jti", token.payload.jti);
    const status = await withCri(c, (cri) => getPodStatus(cri, { uid, name: "", namespace: "" }, "full"));
    if (status.sandboxStatuses.length === 0 && status.containerStatuses.length === 0)
      throw new ProblemError(404, "pod-not-found", "Pod not found", `the runtime has no sandbox or container for pod uid ${uid}`);
    const meta = status.sandboxStatuses[0]?.metadata;
    return c.json({ pod: { uid, name: meta?.name ?? "", namespace: meta?.namespace ?? "" }, status: statusJSON(status) });
  });

  app.delete("/v1/pods/:uid", async (c) => {
    const uid = pathUid(c.req.param("uid"));
    const token = await readBearer(c.req.raw, o.verifier, "delete", uid, true);
    c.set("podUid", uid);
    c.set("jti", token.payload.jti);
    const grace = token.payload["gracePeriodSeconds"];
    const body = await lock.run(uid, () =>
      withCri(c, async (cri) => {
        const status = await getPodStatus(cri, { uid, name: "", namespace: "" });
        const meta = status.sandboxStatuses[0]?.metadata;
        const ref = { uid, name: meta?.name ?? "", namespace: meta?.namespace ?? "" };
        if (status.sandboxStatuses.length === 0 && status.containerStatuses.length === 0) return { ok: true, pod: ref, steps: [], deleted: false };
        const running = status.sandboxStatuses.some((s) => s.state === PodSandboxState.SANDBOX_READY);
        const r = await deletePod(cri, { metadata: ref, spec: { terminationGracePeriodSeconds: typeof grace === "number" && grace >= 0 ? grace : undefined } }, status);
        return { ok: r.ok, pod: ref, steps: r.steps, deleted: true, wasRunning: running };
      }),
    );
    return c.json(body, body.ok ? 200 : 207);
  });

  return app;
}

function podRef(m: { uid: string; name: string; namespace: string }) {
  return { namespace: m.namespace, name: m.name, uid: m.uid };
}

function pathUid(uid: string): string {
  if (!UID_PATH.test(uid)) throw new ProblemError(400, "bad-request", "Bad request", "the pod uid in the path must be alphanumerics, '-', '_' or '.', at most 128 characters", { errors: [{ path: "uid", message: "invalid pod uid" }] });
  return uid;
}

function problem(c: Context, p: Problem) {
  return c.body(JSON.stringify(p), p.status as 400, { "content-type": "application/problem+json" });
}
