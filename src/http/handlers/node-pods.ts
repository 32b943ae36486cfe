// The node agent's HTTP face: the node-wide desired set.
//   PUT /v1/node/pods  a signed set of pods at a generation: every item is validated and admitted before
//                      anything changes; then the store is replaced (the commit), then every listed pod is
//                      synced and every pod the set dropped is deleted, through the engine's front door.
//   GET /v1/pods       the desired pods with their status as a v1.PodList (resourceVersion = generation), those
//                      being deleted (Terminating), and the orphans: pods podsync made that the store does not hold.
import type { Context, Env, Hono } from "hono";
import type { VerifiedToken } from "../../auth/verify.js";
import { checkReplace, type DesiredPod } from "../../pleg/desired-state.js";
import { slots } from "../../podworkers/dispatch.js";
import { toV1Pod } from "../../status/api-status.js";
import type { Pod } from "../../pod/schema.js";
import { InvalidPodError, type FieldError } from "../../pod/validate.js";
import { storedObjects, type PodObjects } from "../../pod/objects.js";
import { bodyFromItems, setItems } from "../../pod/bundle.js";
import type { IntakeOptions, WorkloadItem } from "../../pod/workloads/intake.js";
import { controllerOf } from "../../controllers/pods.js";
import { workloadKey, type StoredWorkload } from "../../controllers/store.js";
import { admitWorkloads, workloadEntries } from "./workloads.js";
import { allocateBodyServices } from "./services.js";
import { workloadCountError } from "../../pod/workloads/bounds.js";
import { outcomesAgainst, type WorkloadOutcome } from "./sync-workloads.js";
import { jsonWithWarnings } from "../warnings.js";
import { admit, admitOnRuntime, admitSetOnNode, checkUidsOnRuntime, uidConflictAt } from "../admission.js";
import { serialQueue } from "../../util/serial.js";
import { ProblemError, toProblemError } from "../problems.js";
import { readNodeWideBearer, readSignedList } from "../signed-request.js";
import { actionsJSON } from "../serialize.js";
import type { PodRouteDeps } from "../context.js";

/** The pod routes' pieces, and PUT's own. */
export type NodePodsDeps = PodRouteDeps & {
  /** Pods synced (or deleted) at once by one PUT. */
  concurrency: number;
  note: (c: Context, f: { jti?: string | undefined; criCalls?: number }) => void;
};

/** The desired-state record of a verified token, with the ConfigMaps and Secrets signed with the pod (the
 * store keeps Secrets sealed: src/state/sealed-desired-state.ts). */
export function desiredEntry(
  pod: Pod,
  token: VerifiedToken,
  now: number,
  objects?: PodObjects,
  generation?: number,
): DesiredPod {
  const p = token.payload;
  const stored = objects && storedObjects(objects);
  return {
    pod,
    audit: {
      iss: String(p.iss),
      kid: token.kid,
      jti: p.jti,
      iat: Number(p.iat),
      ...(generation !== undefined ? { generation } : {}),
    },
    storedAt: now,
    ...(stored ? { objects: stored } : {}),
  };
}

/** The `generation` claim: a whole number from 1 (the node starts at 0). Checked before the jti is spent. */
function generationClaim(p: Record<string, unknown>): Error | undefined {
  const g = p["generation"];
  if (Number.isSafeInteger(g) && (g as number) >= 1) return undefined;
  const message = "must be a whole number from 1 (above the node's current generation)";
  return new ProblemError("bad-request", `the token's generation ${message}`, {
    errors: [{ path: "generation", message }],
  });
}

const SUPERSEDED_SYNC =
  "not synced by this PUT: a later request changed the pod in the desired state while this PUT ran, and that request's spec is the one applied";
const SUPERSEDED_DELETE =
  "not deleted by this PUT: a later request put the pod back in the desired state while this PUT ran";

/** Validate every item (schema, the deployment's probe handlers, the references to the set's ConfigMaps and
 * Secrets: src/pod/bundle.ts; workloads: src/pod/workloads/intake.ts), all errors at once, each path under its
 * item; then the set's own rule: one pod per uid and per namespace/name. */
function validateSet(
  items: unknown[],
  prefix: string,
  payload: Record<string, unknown>,
  checkProbes: (pod: Pod) => void,
  intake: IntakeOptions,
): { pods: { pod: Pod; objects: PodObjects; at: string }[]; workloads: WorkloadItem[]; warnings: string[] } {
  const errors: FieldError[] = [];
  let body: { pods: { pod: Pod; objects: PodObjects; at: string }[]; workloads: WorkloadItem[]; warnings: string[] } = {
    pods: [],
    workloads: [],
    warnings: [],
  };
  try {
    body = bodyFromItems(setItems(items, prefix), payload, intake, checkProbes);
  } catch (e) {
    if (!(e instanceof InvalidPodError)) throw e;
    errors.push(...e.errors);
  }
  const uids = new Map<string, string>();
  const names = new Map<string, string>();
  for (const { pod, at } of body.pods) {
    const { uid, namespace, name } = pod.metadata;
    const u = uids.get(uid);
    if (u)
      errors.push({
        path: `${at}.metadata.uid`,
        message: `duplicate uid "${uid}" (also ${u}): a set holds each pod once`,
      });
    else uids.set(uid, at);
    const n = names.get(`${namespace}/${name}`);
    if (n)
      errors.push({
        path: `${at}.metadata.name`,
        message: `duplicate pod ${namespace}/${name} (also ${n}): a set holds each pod once`,
      });
    else names.set(`${namespace}/${name}`, at);
  }
  if (errors.length) throw new InvalidPodError(errors);
  return body;
}

/** What a new set keeps of what the node's controllers made: the workloads they made for a workload still in the
 * set (a Deployment's ReplicaSets) and the pods of every kept workload. */
function keptDerived(
  workloads: readonly WorkloadItem[],
  stored: readonly StoredWorkload[],
  before: Iterable<DesiredPod>,
): { workloads: StoredWorkload[]; pods: DesiredPod[] } {
  const top = new Set(workloads.map((w) => w.workload.metadata.uid));
  const kept = stored.filter((s) => s.owner && top.has(s.owner.uid));
  const owners = new Set([...top, ...kept.map((s) => s.workload.metadata.uid)]);
  const pods = [...before].filter((e) => {
    const ref = controllerOf(e.pod.metadata);
    return ref !== undefined && owners.has(ref.uid);
  });
  return { workloads: kept, pods };
}

export function registerNodePods<E extends Env>(
  app: Hono<E>,
  routes: { nodePods: string; pods: string },
  d: NodePodsDeps,
): void {
  // One PUT at a time on this node: its commit and its syncs and deletes are not interleaved with another
  // set's, so a set that was replaced never has its pods brought back by the set it replaced.
  const serial = serialQueue();

  app.put(routes.nodePods, async (c) => {
    const { items, prefix, token } = await readSignedList(
      c.req.raw,
      d.verifier,
      "apply",
      d.maxBodyBytes,
      generationClaim,
    );
    d.note(c, { jti: token.payload.jti });
    const generation = token.payload["generation"] as number;
    const { pods, workloads, warnings } = validateSet(items, prefix, token.payload, d.checkProbes, d.intake);
    if (workloads.length && !d.workloads)
      throw new ProblemError(
        "unsupported",
        "this deployment does not run workloads (Deployments, Jobs, ...) yet: send pods",
        { errors: [{ path: workloads[0]!.at, message: `a ${workloads[0]!.workload.kind}` }] },
      );
    const tooMany = workloadCountError(
      new Set(),
      workloads.map((w) => ({ key: workloadKey(w.workload), at: w.at })),
      d.intake.limits,
    );
    if (tooMany) throw new InvalidPodError([tooMany]);
    for (const { pod, at } of pods) admit(pod, d.policy, `${at}.`);
    for (const { pod, at } of pods) admitOnRuntime(d.runtime, pod, `${at}.`);
    admitWorkloads(workloads, d.policy, d.runtime, d.checkProbes);
    // The set's Services are all the node keeps: their addresses are given among themselves.
    await allocateBodyServices(workloads, d, "replace");
    // A generation the node is already at is refused first (replace checks again, atomically): a stale PUT
    // makes no runtime call.
    checkReplace(await d.desired.generation(), generation);
    const now = d.now();
    const body = await serial(async () => {
      // The commit: refused (409 stale-generation, 503 state-unavailable) with nothing changed, so a refused
      // PUT does not use up its generation. Nothing acts before it.
      // Admission against the node and the commit are one step on the node (d.admitting, shared with sync),
      // so a set and a concurrent sync cannot each fit alone and be admitted together.
      // `before` (to name the dropped pods) is read in the same step: a sync stored just before the commit is
      // one the commit may drop.
      const own = pods.map(({ pod, objects }) => desiredEntry(pod, token, now, objects, generation));
      let entries = own;
      // One uid is one pod: an item whose uid belongs to another pod on the node refuses the whole set (409
      // uid-conflict naming the item) in the same step, before the commit.
      let idCalls = 0;
      let outcomes: WorkloadOutcome[] = [];
      let removedWorkloads: StoredWorkload[] = [];
      const { removed, before } = await d.admitting(async () => {
        const before = new Map((await d.desired.list()).map((e) => [e.pod.metadata.uid, e]));
        // The pods the node's controllers made for workloads the set keeps stay (the controllers roll them to
        // the new templates); those of dropped workloads go with the commit.
        const storedWorkloads = d.workloads ? await d.workloads.list() : [];
        const derived = keptDerived(workloads, storedWorkloads, before.values());
        // A set item that is a kept workload's pod (an export of it) stays that controller's, once.
        const ownedBy = new Map(derived.pods.map((e) => [e.pod.metadata.uid, e.pod.metadata.ownerReferences]));
        for (const e of own)
          if (ownedBy.has(e.pod.metadata.uid) && !controllerOf(e.pod.metadata))
            e.pod.metadata.ownerReferences = ownedBy.get(e.pod.metadata.uid);
        derived.pods = derived.pods.filter((e) => !own.some((o) => o.pod.metadata.uid === e.pod.metadata.uid));
        // What the commit does to the workloads, for the answer: each of the set's created, updated or unchanged,
        // and each one the node held (not made by a controller) that the set leaves out, deleted.
        outcomes = outcomesAgainst(workloads, storedWorkloads);
        const keys = new Set(workloads.map((w) => workloadKey(w.workload)));
        removedWorkloads = storedWorkloads.filter((s) => !s.owner && !keys.has(workloadKey(s.workload)));
        entries = [...derived.pods, ...own];
        admitSetOnNode(
          pods.map((p) => p.pod),
          d.nodeInfo,
          prefix,
          new Set(before.keys()),
        );
        idCalls = await checkUidsOnRuntime(d.runtime, pods, (uid) => before.get(uid));
        d.note(c, { criCalls: idCalls });
        // Inside the store's write: a set signed before a per-pod change it would roll back (409
        // stale-generation), or an item whose uid the store holds under another namespace/name (409 uid-conflict).
        const r = await d.desired
          .replace(generation, entries, { iat: Number(token.payload.iat) })
          .catch((e: unknown) => {
            throw uidConflictAt(e, pods);
          });
        // The workloads follow the committed set (a failure here is a 503 with the pods' set in force; the
        // controllers keep the workloads as they were until the next PUT).
        // (A set with none, on a node holding none, changes nothing there: no write, no controller pass.)
        if (workloads.length || storedWorkloads.length)
          await d.workloads?.replace([
            ...derived.workloads,
            ...workloadEntries(workloads, token, now, storedWorkloads),
          ]);
        return { ...r, before };
      });
      // The prober learns the set's pods and forgets the dropped ones; every other pod keeps its workers as they
      // are. (Replacing the prober's whole set with the PUT's items dropped the workers of the pods the controllers
      // made, which the loop never re-added while their entries were unchanged: Ready False for good, issue #35.)
      for (const p of pods) d.prober?.upsert(p.pod);
      for (const uid of removed) d.prober?.remove(uid);
      let criCalls = idCalls;
      const failed = (ref: { namespace: string; name: string; uid: string }, e: unknown) => ({
        ok: false,
        pod: ref,
        steps: [],
        error: toProblemError(e).toProblem(),
      });
      // Every pod's work goes to its worker at once (kubelet's HandlePodAdditions), so no loop pass syncs the set's
      // pods meanwhile; it runs at the PUT's concurrency, dropped pods first: they may hold what the new ones need
      // (host ports, names). Work still waiting for its turn is replaced by a later request's for the same pod.
      const slot = slots(d.concurrency);
      const removedResults = Promise.all(
        removed.map(async (uid) => {
          const m = before.get(uid)?.pod.metadata;
          const ref = { namespace: m?.namespace ?? "", name: m?.name ?? "", uid };
          try {
            // Torn down only if still out of the store when its work runs: a later sync that put it back meanwhile
            // is not undone.
            const o = await d.pods.kill({ runtime: d.runtime, uid, spec: before.get(uid)?.pod, slot });
            if (o.kind !== "done")
              return { ok: true, pod: ref, steps: [], deleted: false, superseded: SUPERSEDED_DELETE };
            criCalls += o.value.criCalls;
            return { ok: o.value.ok, pod: ref, steps: o.value.steps, deleted: o.value.deleted };
          } catch (e) {
            return failed(ref, e);
          }
        }),
      );
      const killed = removedResults.then(() => undefined);
      const afterKills = async () => {
        await killed;
        return slot();
      };
      const results = await Promise.all(
        pods.map(async ({ pod, objects }, i) => {
          const uid = pod.metadata.uid;
          const ref = { namespace: pod.metadata.namespace, name: pod.metadata.name, uid };
          try {
            // Synced only if this PUT's entry (or the same spec) is still stored when its work runs: a later sync
            // (or PUT, or DELETE) that changed the pod meanwhile has acted or will, and this older spec must not
            // roll it back.
            const o = await d.pods.sync({
              runtime: d.runtime,
              entry: own[i]!,
              pod,
              objects,
              probes: () => d.prober?.results(uid),
              slot: afterKills,
            });
            if (o.kind !== "done") return { ok: true, pod: ref, steps: [], superseded: SUPERSEDED_SYNC };
            const r = o.value;
            d.prober?.observe(uid, r.after);
            criCalls += r.criCalls + (r.left?.criCalls ?? 0);
            return { ok: r.ok, pod: r.pod, actions: actionsJSON(pod, r.actions), steps: r.steps, status: r.apiStatus };
          } catch (e) {
            return failed(ref, e);
          }
        }),
      );
      d.note(c, { criCalls });
      const removedDone = await removedResults;
      const ok = results.every((r) => r.ok) && removedDone.every((r) => r.ok);
      const gone = removedWorkloads.map(({ workload: w }) => ({
        kind: w.kind,
        namespace: w.metadata.namespace,
        name: w.metadata.name,
        uid: w.metadata.uid,
      }));
      return {
        ok,
        generation,
        pods: results,
        removed: removedDone,
        ...(outcomes.length ? { workloads: outcomes } : {}),
        ...(gone.length ? { removedWorkloads: gone } : {}),
      };
    });
    // 207 as for a sync: the set is stored (the loop keeps at it), some pods' steps failed; the body says which.
    return jsonWithWarnings(body, body.ok ? 200 : 207, warnings);
  });

  app.get(routes.pods, async (c) => {
    // A token scoped to one pod (`uid`) may not read the node's whole set.
    const token = await readNodeWideBearer(c.req.raw, d.verifier, "pod list");
    d.note(c, { jti: token.payload.jti });
    const [entries, generation] = await Promise.all([d.desired.list(), d.desired.generation()]);
    entries.sort(
      (a, b) =>
        a.pod.metadata.namespace.localeCompare(b.pod.metadata.namespace) ||
        a.pod.metadata.name.localeCompare(b.pod.metadata.name),
    );
    const remote =
      d.probeResults && entries.length ? await d.probeResults(entries.map((e) => e.pod.metadata.uid)) : undefined;
    const r = await d.runtime.list(
      entries.map((e) => e.pod),
      (uid) => d.prober?.results(uid) ?? remote?.get(uid),
    );
    for (const p of r.pods) d.prober?.observe(p.pod.uid, p.status);
    d.note(c, { criCalls: r.criCalls });
    // A pod whose delete runs is listed as a cluster lists it, Terminating (with its deletionTimestamp), until
    // it is gone: not among the orphans.
    const terminating = r.orphans.filter((p) => p.deletion);
    return c.json({
      apiVersion: "v1",
      kind: "PodList",
      metadata: { resourceVersion: String(generation) },
      items: [
        ...r.pods.map((p) => toV1Pod(p.spec, p.pod, p.apiStatus)),
        ...terminating.map((p) => toV1Pod(p.spec, p.pod, p.apiStatus, p.deletion)),
      ],
      // Not in v1.PodList: pods podsync made that this node's store does not hold (status for a stand-in).
      orphans: r.orphans.filter((p) => !p.deletion).map((p) => toV1Pod(undefined, p.pod, p.apiStatus)),
    });
  });
}
