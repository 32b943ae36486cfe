// GET /v1/pods/{uid} (the v1.Pod: spec as stored, status as kubelet generates it) and its CRI-level view,
// GET /v1/pods/{uid}/runtime (alias /status).
import type { Context, Hono } from "hono";
import { note, type AppEnv, type PodRouteDeps } from "../context.js";
import { readPod, readRuntimeView } from "../../usecases/pods/reads.js";
import { pathUid, ROUTES } from "../routes.js";
import { statusJSON } from "../serialize.js";
import { readBearer } from "../signed-request.js";

export function registerPodReads(app: Hono<AppEnv>, d: PodRouteDeps): void {
  const runtimeView = async (c: Context<AppEnv>) => {
    const uid = pathUid(c.req.param("uid") ?? "");
    const token = await readBearer(c.req.raw, d.verifier, "status", uid, false);
    note(c, uid, token.payload.jti);
    const r = await readRuntimeView(d, uid);
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
    const token = await readBearer(c.req.raw, d.verifier, "status", uid, false);
    note(c, uid, token.payload.jti);
    const r = await readPod(d, uid);
    c.set("criCalls", r.criCalls);
    return c.json(r.pod);
  });
}
