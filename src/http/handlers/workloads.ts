// The node's workloads over HTTP. Sync and PUT /v1/node/pods store the workloads of their bodies (after the same
// checks as a pod: each template against the node owner's policy, the deployment's probe handlers and the runtime's
// refusals, its fields named under the workload's path); the node's controllers make their pods (src/controllers).
//   GET    /v1/workloads        the stored workloads with their status, as a v1.List of Kubernetes objects
//                               (`?kind=Deployment` for one kind). Token: act "status", no uid (a node-wide read,
//                               as GET /v1/pods).
//   DELETE /v1/workloads/{uid}  forget a workload: its controller's pods (and the workloads it made) go at the
//                               controllers' next pass; its claims stay. Token: act "delete", uid the workload's.
import type { Context, Env, Hono } from "hono";
import type { Verifier } from "../../auth/verify.js";
import type { WorkloadStore } from "../../controllers/store.js";
import { deleteWorkload, listWorkloads } from "../../usecases/workloads/reads.js";
import { readBearer, readNodeWideBearer } from "../signed-request.js";

export interface WorkloadRoutesDeps {
  workloads: WorkloadStore;
  verifier: Verifier;
  note: (c: Context, f: { jti?: string | undefined }) => void;
}

export function registerWorkloads<E extends Env>(
  app: Hono<E>,
  routes: { list: string; one: string },
  d: WorkloadRoutesDeps,
): void {
  app.get(routes.list, async (c) => {
    const token = await readNodeWideBearer(c.req.raw, d.verifier, "workload list");
    d.note(c, { jti: token.payload.jti });
    const items = await listWorkloads(d.workloads, c.req.query("kind"));
    return c.json({ apiVersion: "v1", kind: "List", metadata: {}, items });
  });

  app.delete(routes.one, async (c) => {
    const uid = c.req.param("uid") ?? "";
    const token = await readBearer(c.req.raw, d.verifier, "delete", uid, true);
    d.note(c, { jti: token.payload.jti });
    const workload = await deleteWorkload(d.workloads, uid);
    return c.json({ ok: true, workload });
  });
}
