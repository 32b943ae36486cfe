// The node agent's HTTP face: the node-wide desired set.
//   PUT /v1/node/pods  a signed set of pods at a generation: every item is validated and admitted before
//                      anything changes; then the store is replaced (the commit), then every listed pod is
//                      synced and every pod the set dropped is deleted, through the engine's front door.
//   GET /v1/pods       the desired pods with their status as a v1.PodList (resourceVersion = generation), those
//                      being deleted (Terminating), and the orphans: pods podsync made that the store does not hold.
import type { Context, Env, Hono } from "hono";
import { slots } from "../../podworkers/dispatch.js";
import { listPods } from "../../usecases/pods/reads.js";
import { admitSet, commitSet, validateSet } from "../../usecases/pods/apply-set.js";
import { jsonWithWarnings } from "../warnings.js";
import { serialQueue } from "../../util/serial.js";
import { ProblemError, toProblemError } from "../../usecases/problems.js";
import { readNodeWideBearer, readSignedList } from "../signed-request.js";
import { actionsJSON } from "../serialize.js";
import type { PodRouteDeps } from "../context.js";
import type { DesiredPod } from "../../pleg/desired-state.js";
import type { Pod } from "../../pod/schema.js";
import type { PodObjects } from "../../pod/objects.js";

/** The pod routes' pieces, and PUT's own. */
export type NodePodsDeps = PodRouteDeps & {
  /** Pods synced (or deleted) at once by one PUT. */
  concurrency: number;
  note: (c: Context, f: { jti?: string | undefined; criCalls?: number }) => void;
};

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
    const set = validateSet(d, items, prefix, token.payload);
    const { pods, warnings } = set;
    // Every item admitted (all but the node stage, which runs in the commit) before anything changes.
    const node = await admitSet(d, set, generation);
    const now = d.now();
    const body = await serial(async () => {
      // The commit (src/usecases/pods/apply-set.ts): the set admitted against the node, the uids checked, the
      // store replaced and the workloads following, one step on the node. Nothing acts before it.
      const { own, removed, before, outcomes, removedWorkloads, idCalls } = await commitSet(
        d,
        set,
        node,
        { token, generation, now, prefix },
        (n) => d.note(c, { criCalls: n }),
      );
      // The prober learns the set's pods and forgets the dropped ones; every other pod keeps its workers as they
      // are. (Replacing the prober's whole set with the PUT's items dropped the workers of the pods the controllers
      // made, which the loop never re-added while their entries were unchanged: Ready False for good, issue #35.)
      for (const p of pods) d.prober?.upsert(p.pod);
      for (const uid of removed) d.prober?.remove(uid);
      let criCalls = idCalls;
      const count = (n: number) => void (criCalls += n);
      // Every pod's work goes to its worker at once (kubelet's HandlePodAdditions), so no loop pass syncs the set's
      // pods meanwhile; it runs at the PUT's concurrency, dropped pods first: they may hold what the new ones need
      // (host ports, names). Work still waiting for its turn is replaced by a later request's for the same pod.
      const slot = slots(d.concurrency);
      const removedResults = killDropped(d, removed, before, slot, count);
      const killed = removedResults.then(() => undefined);
      const afterKills = async () => {
        await killed;
        return slot();
      };
      const results = await syncListed(d, pods, own, afterKills, count);
      const removedDone = await removedResults;
      d.note(c, { criCalls });
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
    const r = await listPods(d);
    d.note(c, { criCalls: r.criCalls });
    return c.json(r.list);
  });
}

type PodRef = { namespace: string; name: string; uid: string };
type Slot = () => Promise<() => void>;

const failed = (ref: PodRef, e: unknown) => ({ ok: false, pod: ref, steps: [], error: toProblemError(e).toProblem() });

/** The set's dropped pods, each torn down by its worker (kubelet's kill update); `count` adds CRI calls. */
function killDropped(
  d: NodePodsDeps,
  removed: readonly string[],
  before: ReadonlyMap<string, DesiredPod>,
  slot: Slot,
  count: (n: number) => void,
) {
  return Promise.all(
    removed.map(async (uid) => {
      const m = before.get(uid)?.pod.metadata;
      const ref = { namespace: m?.namespace ?? "", name: m?.name ?? "", uid };
      try {
        // Torn down only if still out of the store when its work runs: a later sync that put it back meanwhile
        // is not undone.
        const o = await d.pods.kill({ runtime: d.runtime, uid, spec: before.get(uid)?.pod, slot });
        if (o.kind !== "done") return { ok: true, pod: ref, steps: [], deleted: false, superseded: SUPERSEDED_DELETE };
        count(o.value.criCalls);
        return { ok: o.value.ok, pod: ref, steps: o.value.steps, deleted: o.value.deleted };
      } catch (e) {
        return failed(ref, e);
      }
    }),
  );
}

/** The set's pods, each synced by its worker (kubelet's UpdatePod) once the dropped pods are down. */
function syncListed(
  d: NodePodsDeps,
  pods: readonly { pod: Pod; objects?: PodObjects | undefined }[],
  own: readonly DesiredPod[],
  slot: Slot,
  count: (n: number) => void,
) {
  return Promise.all(
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
          slot,
          admitted: true,
        });
        if (o.kind !== "done") return { ok: true, pod: ref, steps: [], superseded: SUPERSEDED_SYNC };
        const r = o.value;
        d.prober?.observe(uid, r.after);
        count(r.criCalls + (r.left?.criCalls ?? 0));
        return { ok: r.ok, pod: r.pod, actions: actionsJSON(pod, r.actions), steps: r.steps, status: r.apiStatus };
      } catch (e) {
        return failed(ref, e);
      }
    }),
  );
}
