// The HTTP function: one Hono app, the same on Node and on Workers. A route authenticates, calls the
// engine's front door (which locks the pod) and renders; everything it touches comes in through
// createApp, so tests and both entry points wire their own runtime, keys and clock.
import { Hono, type Context } from "hono";
import type { Verifier } from "../auth/verify.js";
import type { PodRuntime } from "../kuberuntime/runtime.js";
import { ProblemError, toProblemError } from "./problems.js";
import { checkGraceClaim, readBearer, readSignedPod } from "./signed-request.js";
import { actionsJSON, statusJSON } from "./serialize.js";
import { openApiDocument } from "./openapi.js";
import { ROUTES } from "./routes.js";

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
  runtime: PodRuntime;
  verifier: Verifier;
  /** This node's name, reported by /healthz (tokens must be signed for it). */
  nodeName: string;
  maxBodyBytes?: number;
  log?: (rec: RequestLog) => void;
  now?: () => number;
}

type Env = { Variables: { podUid?: string; criCalls: number; jti?: string; error?: string } };

const UID_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function createApp(o: AppOptions) {
  const app = new Hono<Env>();
  const maxBody = o.maxBodyBytes ?? 1024 * 1024;
  const log = o.log ?? ((rec) => console.log(JSON.stringify(rec)));
  const now = o.now ?? Date.now;
  const rt = o.runtime;

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
    const r = await rt.plan(pod);
    c.set("criCalls", r.criCalls);
    return c.json({ ok: true, pod: r.pod, actions: actionsJSON(pod, r.actions), status: statusJSON(r.status) });
  });

  app.post(ROUTES.sync, async (c) => {
    const { pod, token } = await readSignedPod(c.req.raw, o.verifier, "sync", maxBody);
    note(c, pod.metadata.uid, token.payload.jti);
    const r = await rt.sync(pod);
    c.set("criCalls", r.criCalls);
    // 207: the request was fine and some steps ran, but not all succeeded; the body says which.
    return c.json({ ok: r.ok, pod: r.pod, actions: actionsJSON(pod, r.actions), steps: r.steps, status: statusJSON(r.status) }, r.ok ? 200 : 207);
  });

  app.get(ROUTES.status, async (c) => {
    const uid = pathUid(c.req.param("uid"));
    const token = await readBearer(c.req.raw, o.verifier, "status", uid, false);
    note(c, uid, token.payload.jti);
    const r = await rt.status(uid);
    if (!r) throw new ProblemError("pod-not-found", `the runtime has no sandbox or container for pod uid ${uid}`);
    c.set("criCalls", r.criCalls);
    return c.json({ pod: r.pod, status: statusJSON(r.status) });
  });

  app.delete(ROUTES.pod, async (c) => {
    const uid = pathUid(c.req.param("uid"));
    const token = await readBearer(c.req.raw, o.verifier, "delete", uid, true, checkGraceClaim);
    note(c, uid, token.payload.jti);
    const r = await rt.delete(uid, token.payload["gracePeriodSeconds"] as number | undefined);
    c.set("criCalls", r.criCalls);
    const { criCalls: _, ...body } = r;
    return c.json(body, r.ok ? 200 : 207);
  });

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
