// POST /v1/pods/plan and POST /v1/pods/sync: a signed pod, verified, validated and admitted before any runtime
// call; sync stores it in the node's desired state and acts through the front door. The body may also hold
// workloads (Deployments, Jobs, ...; src/usecases/workloads/sync.ts), checked with the pod before anything is stored,
// and skip or drop things a node has no use for: those are the response's warnings (Warning headers too).
import type { Hono } from "hono";
import { StaleGenerationError } from "../../pleg/desired-state.js";
import { note, type AppEnv, type PodRouteDeps } from "../context.js";
import { ROUTES } from "../routes.js";
import { actionsJSON, statusJSON } from "../serialize.js";
import { readSignedBody } from "../signed-request.js";
import { jsonWithWarnings } from "../warnings.js";
import { desiredEntry } from "../../usecases/pods/entry.js";
import { planBody } from "../../usecases/pods/plan.js";
import { admitSync, checkSyncEntry, commitSync } from "../../usecases/pods/sync.js";

export function registerPodSync(app: Hono<AppEnv>, d: PodRouteDeps): void {
  const { runtime: rt, desired, prober, maxBodyBytes: maxBody, now } = d;
  app.post(ROUTES.plan, async (c) => {
    const body = await readSignedBody(c.req.raw, d.verifier, "plan", maxBody, d.intake);
    const pod = body.pods[0]?.pod;
    note(c, pod?.metadata.uid ?? "", body.token.payload.jti);
    const plan = await planBody(d, body);
    const workloads = plan.workloads ?? {};
    if (!plan.pod) return jsonWithWarnings({ ok: true, ...workloads }, 200, body.warnings);
    const r = plan.pod.plan;
    c.set("criCalls", r.criCalls);
    return jsonWithWarnings(
      {
        ok: true,
        pod: r.pod,
        actions: actionsJSON(plan.pod.spec, r.actions),
        status: statusJSON(r.status),
        ...workloads,
      },
      200,
      body.warnings,
    );
  });

  app.post(ROUTES.sync, async (c) => {
    const body = await readSignedBody(c.req.raw, d.verifier, "sync", maxBody, d.intake);
    const token = body.token;
    const bundle = body.pods[0];
    note(c, bundle?.pod.metadata.uid ?? "", token.payload.jti);
    // The body checked and its pod admitted (all but the node stage, which runs in the commit), then the workloads
    // stored: nothing is stored when anything is refused.
    const admitted = await admitSync(d, body);
    const workloads = admitted.workloads ? { workloads: admitted.workloads } : {};
    if (!bundle) return jsonWithWarnings({ ok: true, ...workloads }, 200, body.warnings);
    const { pod, objects } = bundle;
    const uid = pod.metadata.uid;
    // Admitted against the other desired pods and stored as one step on the node (kubelet admits one pod at a
    // time), before anything acts: the loop keeps it running from here on. An older token than the one that
    // last changed the pod is refused here (409 stale-generation), a store that cannot be written with 503.
    const mine = desiredEntry(pod, token, now(), objects);
    await checkSyncEntry(d, mine, body.warnings);
    // The commit: admitted against the other desired pods, the uid checked, stored (src/usecases/pods/sync.ts).
    const idCalls = await commitSync(d, admitted.node!, mine, (n) => c.set("criCalls", n));
    // The prober learns the pod first, so its results (liveness/startup failures) count in this sync.
    prober?.upsert(pod);
    // The pod's worker syncs it (kubelet's UpdatePod), after any work it is running; the loop leaves the pod to it.
    // Not synced if a later request changed or removed the pod before this work ran (it replaced this update while
    // it waited, or the store no longer holds this request's entry): that request's spec is the one applied.
    const o = await d.pods.sync({
      runtime: rt,
      entry: mine,
      pod,
      objects,
      probes: () => prober?.results(uid),
      admitted: true,
    });
    if (o.kind !== "done") {
      const left = !(await desired.get(uid));
      if (left) prober?.remove(uid);
      throw new StaleGenerationError(
        left
          ? `pod ${uid} left the desired state (a later PUT /v1/node/pods or DELETE) before this sync ran; nothing was done`
          : `pod ${uid} was changed in the desired state by a later request before this sync ran; that request's spec is the one applied, nothing was done for this one`,
      );
    }
    const r = o.value;
    c.set("criCalls", idCalls + r.criCalls);
    // A DELETE that dropped the pod while this sync ran may have run its delete before this sync's steps: the work
    // deleted again what they made (the loop acts only on the store), and the request is told why.
    if (r.left) {
      prober?.remove(uid);
      c.set("criCalls", idCalls + r.criCalls + r.left.criCalls);
      throw new StaleGenerationError(
        `pod ${uid} left the desired state (a later PUT /v1/node/pods or DELETE) while this sync ran; what it made was deleted again`,
      );
    }
    prober?.observe(uid, r.after);
    // 207: the request was fine and some steps ran, but not all succeeded; the body says which.
    // `status` is the v1.PodStatus read back after the steps; `runtime` the same read at CRI level.
    return jsonWithWarnings(
      {
        ok: r.ok,
        pod: r.pod,
        actions: actionsJSON(pod, r.actions),
        steps: r.steps,
        status: r.apiStatus,
        runtime: statusJSON(r.after),
        ...workloads,
      },
      r.ok ? 200 : 207,
      body.warnings,
    );
  });
}
