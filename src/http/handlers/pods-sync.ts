// POST /v1/pods/plan and POST /v1/pods/sync: a signed pod, verified, validated and admitted before any runtime
// call; sync stores it in the node's desired state and acts through the front door. The body may also hold
// workloads (Deployments, Jobs, ...; src/http/sync-workloads.ts), checked with the pod before anything is stored,
// and skip or drop things a node has no use for: those are the response's warnings (Warning headers too).
import type { Hono } from "hono";
import { StaleGenerationError } from "../../pleg/desired-state.js";
import { checkPut } from "../../pleg/tombstones.js";
import { controllerOf } from "../../controllers/pods.js";
import { admit, admitOnNode, admitOnRuntime, checkUidsOnRuntime } from "../admission.js";
import { note, type AppEnv, type PodRouteDeps } from "../context.js";
import { desiredEntry } from "./node-pods.js";
import { ROUTES } from "../routes.js";
import { actionsJSON, statusJSON } from "../serialize.js";
import { readSignedBody } from "../signed-request.js";
import { jsonWithWarnings } from "../warnings.js";
import {
  checkWorkloadCount,
  checkWorkloads,
  planWorkloadPods,
  storeWorkloads,
  workloadOutcomes,
} from "./sync-workloads.js";
import { allocateBodyServices } from "./services.js";

export function registerPodSync(app: Hono<AppEnv>, d: PodRouteDeps): void {
  const { runtime: rt, desired, policy, nodeInfo, admitting, prober, maxBodyBytes: maxBody, now, checkProbes } = d;
  app.post(ROUTES.plan, async (c) => {
    const body = await readSignedBody(c.req.raw, d.verifier, "plan", maxBody, d.intake);
    const pod = body.pods[0]?.pod;
    note(c, pod?.metadata.uid ?? "", body.token.payload.jti);
    checkWorkloads(body.workloads, d);
    await checkWorkloadCount(body.workloads, d.workloads, d.intake.limits);
    await allocateBodyServices(body.workloads, d, "add");
    let workloads = {};
    if (body.workloads.length) {
      const desiredNow = await desired.list();
      const mine = pod ? [desiredEntry(pod, body.token, now(), body.pods[0]!.objects)] : [];
      const plan = await planWorkloadPods(
        body.workloads,
        body.token,
        now(),
        d.workloads!,
        [...desiredNow.filter((e) => e.pod.metadata.uid !== pod?.metadata.uid), ...mine],
        d.intake.nodeName,
        nodeInfo,
        policy,
      );
      workloads = {
        workloads: await workloadOutcomes(body.workloads, d.workloads!),
        pods: plan.pods,
        ...(plan.refused.length ? { refused: plan.refused } : {}),
      };
    }
    if (!pod) return jsonWithWarnings({ ok: true, ...workloads }, 200, body.warnings);
    admit(pod, policy);
    await admitOnNode(pod, nodeInfo, desired);
    checkProbes(pod);
    const r = await rt.plan(pod, prober?.results(pod.metadata.uid));
    c.set("criCalls", r.criCalls);
    return jsonWithWarnings(
      { ok: true, pod: r.pod, actions: actionsJSON(pod, r.actions), status: statusJSON(r.status), ...workloads },
      200,
      body.warnings,
    );
  });

  app.post(ROUTES.sync, async (c) => {
    const body = await readSignedBody(c.req.raw, d.verifier, "sync", maxBody, d.intake);
    const token = body.token;
    const bundle = body.pods[0];
    note(c, bundle?.pod.metadata.uid ?? "", token.payload.jti);
    checkWorkloads(body.workloads, d);
    await checkWorkloadCount(body.workloads, d.workloads, d.intake.limits);
    // Services get their addresses against the node's others now; nothing is stored if one is refused.
    await allocateBodyServices(body.workloads, d, "add");
    if (bundle) {
      admit(bundle.pod, policy);
      checkProbes(bundle.pod);
      admitOnRuntime(rt, bundle.pod);
    }
    // The workloads are stored once everything in the body passed; the controllers make their pods.
    const workloads = body.workloads.length
      ? { workloads: await storeWorkloads(body.workloads, token, now(), d.workloads!) }
      : {};
    if (!bundle) return jsonWithWarnings({ ok: true, ...workloads }, 200, body.warnings);
    const { pod, objects } = bundle;
    const uid = pod.metadata.uid;
    // Admitted against the other desired pods and stored as one step on the node (kubelet admits one pod at a
    // time), before anything acts: the loop keeps it running from here on. An older token than the one that
    // last changed the pod is refused here (409 stale-generation), a store that cannot be written with 503.
    const mine = desiredEntry(pod, token, now(), objects);
    // An older token than the stored entry or the pod's tombstone (a DELETE or a PUT removed it after this token
    // was signed), or a uid stored under another namespace/name, is refused first (put checks again, atomically,
    // in the same step as its write): a stale request makes no runtime call.
    const [stored, tomb] = await Promise.all([desired.get(uid), desired.tombstone(uid)]);
    // A pod the node's controller owns stays its controller's: an export re-synced (`kubectl get pod db-0 -o yaml`,
    // whose ownerReferences intake drops as a cluster's) keeps the stored owner, never silently orphaned.
    const owner = stored && controllerOf(stored.pod.metadata);
    if (owner && !controllerOf(pod.metadata)) {
      pod.metadata.ownerReferences = stored.pod.metadata.ownerReferences;
      body.warnings.push(
        `metadata.ownerReferences: pod ${pod.metadata.namespace}/${pod.metadata.name} stays owned by this node's ${owner.kind} ${owner.name}`,
      );
    }
    checkPut(stored, mine, tomb);
    // One uid is one pod: a pod whose uid belongs to another pod on the node is refused (409 uid-conflict) in
    // the same step, before it is stored, so the refusal changes nothing. The store refuses a uid it holds under
    // another namespace/name inside its write (a pod whose sandbox is not made yet is not seen by the runtime
    // check).
    let idCalls = 0;
    await admitting(async () => {
      await admitOnNode(pod, nodeInfo, desired);
      idCalls = await checkUidsOnRuntime(rt, [{ pod }], (u) => desired.get(u));
      c.set("criCalls", idCalls);
      await desired.put(mine);
    });
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
