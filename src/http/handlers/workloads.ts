// The node's workloads over HTTP. Sync and PUT /v1/node/pods store the workloads of their bodies (after the same
// checks as a pod: each template against the node owner's policy, the deployment's probe handlers and the runtime's
// refusals, its fields named under the workload's path); the node's controllers make their pods (src/controllers).
//   GET    /v1/workloads        the stored workloads with their status, as a v1.List of Kubernetes objects
//                               (`?kind=Deployment` for one kind). Token: act "status", no uid (a node-wide read,
//                               as GET /v1/pods).
//   DELETE /v1/workloads/{uid}  forget a workload: its controller's pods (and the workloads it made) go at the
//                               controllers' next pass; its claims stay. Token: act "delete", uid the workload's.
import type { Context, Env, Hono } from "hono";
import type { Verifier, VerifiedToken } from "../../auth/verify.js";
import type { NodePolicy } from "../../auth/policy.js";
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import type { Pod } from "../../pod/schema.js";
import { storedObjects } from "../../pod/objects.js";
import type { WorkloadItem } from "../../pod/workloads/intake.js";
import { isWorkloadKind } from "../../pod/workloads/schema.js";
import { canonicalJSON } from "../../container/hash.js";
import { workloadKey, type StoredWorkload, type WorkloadStore } from "../../controllers/store.js";
import { admit, admitOnRuntime } from "../admission.js";
import { ProblemError } from "../problems.js";
import { readBearer, readNodeWideBearer } from "../signed-request.js";

/** The checks a pod gets, on each workload's template: the policy, the probe handlers, the runtime's refusals. */
export function admitWorkloads(
  items: readonly WorkloadItem[],
  policy: NodePolicy,
  rt: Pick<PodRuntime, "admit">,
  checkProbes: (pod: Pod, prefix: string) => void,
): void {
  for (const w of items) if (w.template) admit(w.template.pod, policy, `${w.template.at}.`);
  for (const w of items) if (w.template) checkProbes(w.template.pod, `${w.template.at}.`);
  for (const w of items) if (w.template) admitOnRuntime(rt, w.template.pod, `${w.template.at}.`, true);
}

/** The store records of a request's workloads. */
export function workloadEntries(
  items: readonly WorkloadItem[],
  token: VerifiedToken,
  now: number,
  stored: readonly StoredWorkload[] = [],
): StoredWorkload[] {
  const p = token.payload;
  const byKey = new Map(stored.map((s) => [workloadKey(s.workload), s]));
  return items.map(({ workload, objects }) => {
    const prev = byKey.get(workloadKey(workload));
    const objs = objects.configMaps.length || objects.secrets.length ? storedObjects(objects) : undefined;
    // A workload sent again keeps its status (and a CronJob its last schedule time) while its uid is the same.
    const same = prev !== undefined && prev.workload.metadata.uid === workload.metadata.uid;
    const keep = same && prev.status ? { status: prev.status } : {};
    const generation = !same
      ? 1
      : canonicalJSON((prev.workload as { spec?: unknown }).spec) ===
          canonicalJSON((workload as { spec?: unknown }).spec)
        ? (prev.generation ?? 1)
        : (prev.generation ?? 1) + 1;
    return {
      workload,
      audit: { iss: String(p.iss), kid: token.kid, jti: p.jti, iat: Number(p.iat) },
      storedAt: same ? prev.storedAt : now,
      generation,
      ...(objs ? { objects: objs } : {}),
      ...keep,
    };
  });
}

/** A stored workload as the Kubernetes API shows it: with creationTimestamp, its owner and its status. */
export function toV1Workload(s: StoredWorkload): Record<string, unknown> {
  const { status: _sent, ...w } = s.workload as typeof s.workload & { status?: unknown };
  return {
    ...w,
    metadata: {
      ...w.metadata,
      generation: s.generation ?? 1,
      creationTimestamp: new Date(s.storedAt).toISOString(),
      ...(s.owner ? { ownerReferences: [s.owner] } : {}),
    },
    status: s.status ?? {},
  };
}

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
    const kind = c.req.query("kind");
    if (kind !== undefined && !isWorkloadKind(kind))
      throw new ProblemError(
        "bad-request",
        `kind must be one of Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet, Job, CronJob, PersistentVolumeClaim, HorizontalPodAutoscaler, PodDisruptionBudget, Service (got ${JSON.stringify(kind)})`,
        { errors: [{ path: "kind", message: "unknown workload kind" }] },
      );
    const all = (await d.workloads.list()).filter((s) => kind === undefined || s.workload.kind === kind);
    all.sort(
      (a, b) =>
        a.workload.kind.localeCompare(b.workload.kind) ||
        a.workload.metadata.namespace.localeCompare(b.workload.metadata.namespace) ||
        a.workload.metadata.name.localeCompare(b.workload.metadata.name),
    );
    return c.json({ apiVersion: "v1", kind: "List", metadata: {}, items: all.map(toV1Workload) });
  });

  app.delete(routes.one, async (c) => {
    const uid = c.req.param("uid") ?? "";
    const token = await readBearer(c.req.raw, d.verifier, "delete", uid, true);
    d.note(c, { jti: token.payload.jti });
    const found = (await d.workloads.list()).find((s) => s.workload.metadata.uid === uid);
    if (!found) throw new ProblemError("not-found", `the node holds no workload with uid ${uid}`);
    await d.workloads.remove(workloadKey(found.workload));
    const m = found.workload.metadata;
    return c.json({ ok: true, workload: { kind: found.workload.kind, namespace: m.namespace, name: m.name, uid } });
  });
}
