// The node agent's HTTP face: the node-wide desired set.
//   PUT /v1/node/pods  a signed set of pods at a generation: every item is validated and admitted before
//                      anything changes; then the store is replaced (the commit), then every listed pod is
//                      synced and every pod the set dropped is deleted, through the engine's front door.
//   GET /v1/pods       the desired pods with their status as a v1.PodList (resourceVersion = generation), those
//                      being deleted (Terminating), and the orphans: pods podsync made that the store does not hold.
import type { Context, Env, Hono } from "hono";
import { whileAbsent, whileStored } from "../../pleg/desired-state.js";
import { SupersededError } from "../../kubelet/pod-runtime.js";
import { listPods } from "../../usecases/pods/reads.js";
import { admitSet, commitSet, mapBounded, validateSet } from "../../usecases/pods/apply-set.js";
import { jsonWithWarnings } from "../warnings.js";
import { serialQueue } from "../../util/serial.js";
import { ProblemError, toProblemError } from "../../usecases/problems.js";
import { readNodeWideBearer, readSignedList } from "../signed-request.js";
import { actionsJSON } from "../serialize.js";
import type { PodRouteDeps } from "../context.js";

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
    // No loop pass syncs the set's pods from the commit until this PUT's own syncs are done: the PUT starts them
    // at its concurrency, and no other sync of them waits on their locks.
    const release = d.holdLoop(pods.map((p) => p.pod.metadata.uid));
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
      const failed = (ref: { namespace: string; name: string; uid: string }, e: unknown) => ({
        ok: false,
        pod: ref,
        steps: [],
        error: toProblemError(e).toProblem(),
      });
      // Dropped pods go first: they may hold what the new ones need (host ports, names).
      const removedResults = await mapBounded(removed, d.concurrency, async (uid) => {
        const m = before.get(uid)?.pod.metadata;
        const ref = { namespace: m?.namespace ?? "", name: m?.name ?? "", uid };
        try {
          // Deleted only if still out of the store once the pod's lock is held: a later sync that put it back
          // meanwhile is not undone.
          const r = await d.runtime.delete(uid, undefined, whileAbsent(d.desired, uid), before.get(uid)?.pod);
          criCalls += r.criCalls;
          return { ok: r.ok, pod: ref, steps: r.steps, deleted: r.deleted };
        } catch (e) {
          if (e instanceof SupersededError)
            return { ok: true, pod: ref, steps: [], deleted: false, superseded: SUPERSEDED_DELETE };
          return failed(ref, e);
        }
      });
      const results = await mapBounded(pods, d.concurrency, async ({ pod, objects }, i) => {
        const uid = pod.metadata.uid;
        const mine = own[i]!;
        try {
          // Synced only if this PUT's entry (or the same spec) is still stored once the pod's lock is held: a later sync
          // (or PUT, or DELETE) that changed the pod meanwhile has acted or will, and this older spec must not
          // roll it back.
          const r = await d.runtime.sync(pod, d.prober?.results(uid), objects, {
            ...whileStored(d.desired, mine),
            admitted: true,
          });
          d.prober?.observe(uid, r.after);
          criCalls += r.criCalls;
          return { ok: r.ok, pod: r.pod, actions: actionsJSON(pod, r.actions), steps: r.steps, status: r.apiStatus };
        } catch (e) {
          if (e instanceof SupersededError)
            return {
              ok: true,
              pod: { namespace: pod.metadata.namespace, name: pod.metadata.name, uid },
              steps: [],
              superseded: SUPERSEDED_SYNC,
            };
          return failed({ namespace: pod.metadata.namespace, name: pod.metadata.name, uid }, e);
        }
      });
      d.note(c, { criCalls });
      const ok = results.every((r) => r.ok) && removedResults.every((r) => r.ok);
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
        removed: removedResults,
        ...(outcomes.length ? { workloads: outcomes } : {}),
        ...(gone.length ? { removedWorkloads: gone } : {}),
      };
    }).finally(release);
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
