// DELETE /v1/pods/{uid}: out of the desired state first, then the pod killed and removed with its node data.
import type { Context, Hono } from "hono";
import { note, type AppEnv, type PodRouteDeps } from "../context.js";
import { ProblemError } from "../problems.js";
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
  const { runtime: rt, desired, prober } = d;
  app.delete(ROUTES.pod, async (c) => {
    const uid = pathUid(c.req.param("uid"));
    const token = await readBearer(c.req.raw, d.verifier, "delete", uid, true, checkGraceClaim);
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
    // ?wait=false (kubectl delete --wait=false): a desired pod is answered 202 once it is out of the desired
    // state, and killed after the answer (the same kill, under the pod's lock, so a later sync waits for it).
    // An orphan is still removed before the answer: only the kill can tell whether it exists (404).
    if (c.req.query("wait") === "false" && wasStored && known) {
      const m = known.pod.metadata;
      const kill = rt.delete(uid, token.payload["gracePeriodSeconds"] as number | undefined, undefined, known.pod).then(
        (r) =>
          r.ok ||
          console.error(
            JSON.stringify({
              time: new Date(d.now()).toISOString(),
              event: "delete-after-answer",
              podUid: uid,
              ok: false,
              failed: r.steps
                .filter((s) => !s.ok)
                .map((s) => `${s.action} ${s.target}: ${s.error ?? ""} ${s.message ?? ""}`.trim()),
            }),
          ),
        (e: Error) =>
          console.error(
            JSON.stringify({
              time: new Date(d.now()).toISOString(),
              event: "delete-after-answer",
              podUid: uid,
              error: e.message,
            }),
          ),
      );
      afterAnswer(c, kill);
      return c.json(
        { ok: true, accepted: true, desired: true, pod: { namespace: m.namespace, name: m.name, uid } },
        202,
      );
    }
    // The stored spec (when there was one) gives the kill its preStop hooks and the sidecars' order.
    const r = await rt.delete(uid, token.payload["gracePeriodSeconds"] as number | undefined, undefined, known?.pod);
    c.set("criCalls", r.criCalls);
    // Nothing podsync made is there under this uid (another manager's objects do not count), and the desired
    // state did not hold it either (node data it left that could not be removed is a 207 below, not a 404).
    if (!r.deleted && !wasStored && r.ok)
      throw new ProblemError(
        "pod-not-found",
        `neither the desired state nor the runtime has anything of podsync's for pod uid ${uid}`,
      );
    const { criCalls: _, ...body } = r;
    const m = stored?.pod.metadata;
    if (m && !r.deleted) body.pod = { namespace: m.namespace, name: m.name, uid };
    return c.json({ ...body, desired: wasStored }, r.ok ? 200 : 207);
  });
}
