// The delete use case (DELETE /v1/pods/{uid}): out of the desired state first, then the pod killed and removed
// with its node data in the pod's worker (src/podworkers/); or, asked not to wait, killed after the answer.
import type { DeleteResult } from "../../kubelet/pod-runtime.js";
import type { Pod } from "../../pod/schema.js";
import type { NodePorts } from "../ports.js";
import { ProblemError } from "../problems.js";

export interface DeleteRequest {
  uid: string;
  /** The token's issue time: a token issued before the one that last changed the pod is a rollback (409). */
  iat: number;
  gracePeriodSeconds?: number | undefined;
  /** ?wait=false (kubectl delete --wait=false): a desired pod is answered once it is out of the desired state. */
  wait: boolean;
}

export type DeleteOutcome =
  /** Out of the desired state; the kill runs after the answer (`kill`, for the runtime to keep alive). */
  | { accepted: true; pod: { namespace: string; name: string; uid: string }; kill: Promise<unknown> }
  | { accepted: false; result: Omit<DeleteResult, "criCalls"> & { desired: boolean }; criCalls: number };

/** The pod's kill and removal: in its pod worker (kubelet's UpdatePod with a kill), whatever the store says. */
async function kill(p: NodePorts, uid: string, gracePeriodSeconds: number | undefined, spec: Pod | undefined) {
  if (!p.pods) return p.runtime.delete(uid, gracePeriodSeconds, undefined, spec);
  const o = await p.pods.kill({ runtime: p.runtime, uid, gracePeriodSeconds, spec, always: true });
  if (o.kind === "done") return o.value;
  throw new Error(`the delete of pod ${uid} was ${o.kind} in its pod worker`);
}

export async function deletePod(p: NodePorts, req: DeleteRequest): Promise<DeleteOutcome> {
  const { uid } = req;
  // Out of the desired state first: once the pod is asked gone, nothing (the loop, a PUT) brings it back, and
  // a store that cannot be written refuses (503) before anything acts. A token issued before the one that
  // last changed the pod is a rollback (409 stale-generation). A pod only the runtime knows (an orphan) is
  // deleted all the same, and one only the store knew is just forgotten.
  // The iat check runs inside the store's write (remove's `iat`): a sync with a newer token stored while this
  // request waited is never removed by it. `known` is read first only to name the pod in the answer.
  const known = await p.desired.get(uid);
  const wasStored = await p.desired.remove(uid, { iat: req.iat });
  const stored = wasStored ? known : undefined;
  p.prober?.remove(uid);
  // A desired pod not waited for is killed after the answer (the same kill, in the pod's worker, so a later sync
  // waits for it). An orphan is still removed before the answer: only the kill can tell whether it exists (404).
  if (!req.wait && wasStored && known) {
    const m = known.pod.metadata;
    const killed = kill(p, uid, req.gracePeriodSeconds, known.pod).then(
      (r) =>
        r.ok ||
        console.error(
          JSON.stringify({
            time: new Date(p.now()).toISOString(),
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
            time: new Date(p.now()).toISOString(),
            event: "delete-after-answer",
            podUid: uid,
            error: e.message,
          }),
        ),
    );
    return { accepted: true, pod: { namespace: m.namespace, name: m.name, uid }, kill: killed };
  }
  // The stored spec (when there was one) gives the kill its preStop hooks and the sidecars' order.
  const r = await kill(p, uid, req.gracePeriodSeconds, known?.pod);
  // Nothing podsync made is there under this uid (another manager's objects do not count), and the desired
  // state did not hold it either (node data it left that could not be removed is a 207, not a 404).
  if (!r.deleted && !wasStored && r.ok)
    throw new ProblemError(
      "pod-not-found",
      `neither the desired state nor the runtime has anything of podsync's for pod uid ${uid}`,
    );
  const { criCalls, ...body } = r;
  const m = stored?.pod.metadata;
  if (m && !r.deleted) body.pod = { namespace: m.namespace, name: m.name, uid };
  return { accepted: false, result: { ...body, desired: wasStored }, criCalls };
}
