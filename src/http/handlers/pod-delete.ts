// DELETE /v1/pods/{uid}: out of the desired state first, then the pod killed and removed with its node data.
import type { Context, Hono } from "hono";
import { note, type AppEnv, type PodRouteDeps } from "../context.js";
import { deletePod } from "../../usecases/pods/delete.js";
import { pathUid, ROUTES } from "../routes.js";
import { checkGraceClaim, readBearer } from "../signed-request.js";

/** Work that goes on after the answer: on Workers the runtime must be told to keep the request alive for it. */
function afterAnswer(c: Context<AppEnv>, work: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(work);
  } catch {
    // Node: no execution context, and nothing ends the process under the promise.
  }
}

export function registerPodDelete(app: Hono<AppEnv>, d: PodRouteDeps): void {
  app.delete(ROUTES.pod, async (c) => {
    const uid = pathUid(c.req.param("uid"));
    const token = await readBearer(c.req.raw, d.verifier, "delete", uid, true, checkGraceClaim);
    note(c, uid, token.payload.jti);
    const r = await deletePod(d, {
      uid,
      iat: Number(token.payload.iat),
      gracePeriodSeconds: token.payload["gracePeriodSeconds"] as number | undefined,
      wait: c.req.query("wait") !== "false",
    });
    if (r.accepted) {
      afterAnswer(c, r.kill);
      return c.json({ ok: true, accepted: true, desired: true, pod: r.pod }, 202);
    }
    c.set("criCalls", r.criCalls);
    return c.json(r.result, r.result.ok ? 200 : 207);
  });
}
