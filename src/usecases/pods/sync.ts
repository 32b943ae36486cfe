// Package usecases/pods — the pod use cases: plan, sync and apply-set up to their commit, delete, the reads.
// Imports the front door, the desired-state port, admission and the workload use cases; never a front or an entry.
//
// The sync use case's steps before the runtime acts (POST /v1/pods/sync): the body checked and its pod admitted,
// the workloads stored, the pod's stored owner kept, a stale token refused, and the commit (the node stage of
// admission, the uid check and the store write, as one step on the node). The sync itself, under the pod's
// worker, stays with the route until the pod workers own it (issue #36 item 1).
import { controllerOf } from "../../controllers/pods.js";
import type { DesiredPod } from "../../pleg/desired-state.js";
import { checkPut } from "../../pleg/tombstones.js";
import type { NodeStage } from "../admission/admission.js";
import type { NodePorts } from "../ports.js";
import { storeWorkloads, type WorkloadOutcome } from "../workloads/sync.js";
import { admitBodyPod, checkBodyWorkloads, type PodBody } from "./body.js";
import { checkUidsOnRuntime } from "./identity.js";

/** Everything in the body checked and the pod admitted (but for its node stage), then the workloads stored: the
 * controllers make their pods. Nothing is stored when anything is refused. */
export async function admitSync(
  p: NodePorts,
  body: PodBody,
): Promise<{ node: NodeStage | undefined; workloads?: WorkloadOutcome[] }> {
  await checkBodyWorkloads(p, body);
  const node = admitBodyPod(p, body);
  // The workloads are stored once everything in the body passed; the controllers make their pods.
  if (!body.workloads.length) return { node };
  return { node, workloads: await storeWorkloads(body.workloads, body.token, p.now(), p.workloads!) };
}

/** The stored entry's checks before the commit. An older token than the stored entry or the pod's tombstone (a
 * DELETE or a PUT removed it after this token was signed), or a uid stored under another namespace/name, is
 * refused first (put checks again, atomically, in the same step as its write): a stale request makes no runtime
 * call. A pod the node's controller owns stays its controller's: an export re-synced (`kubectl get pod db-0 -o
 * yaml`, whose ownerReferences intake drops as a cluster's) keeps the stored owner, never silently orphaned. */
export async function checkSyncEntry(p: NodePorts, mine: DesiredPod, warnings: string[]): Promise<void> {
  const pod = mine.pod;
  const [stored, tomb] = await Promise.all([p.desired.get(pod.metadata.uid), p.desired.tombstone(pod.metadata.uid)]);
  const owner = stored && controllerOf(stored.pod.metadata);
  if (owner && !controllerOf(pod.metadata)) {
    pod.metadata.ownerReferences = stored.pod.metadata.ownerReferences;
    warnings.push(
      `metadata.ownerReferences: pod ${pod.metadata.namespace}/${pod.metadata.name} stays owned by this node's ${owner.kind} ${owner.name}`,
    );
  }
  checkPut(stored, mine, tomb);
}

/** The commit, one step on the node (kubelet admits one pod at a time): the pod admitted against the other desired
 * pods, then one uid is one pod (409 uid-conflict, checked against the runtime before it is stored, so the refusal
 * changes nothing; the store refuses a uid it holds under another namespace/name inside its write), then stored.
 * `onCalls`: the CRI calls the uid check made, as soon as they are made. */
export async function commitSync(
  p: NodePorts,
  node: NodeStage,
  mine: DesiredPod,
  onCalls: (criCalls: number) => void,
): Promise<number> {
  let idCalls = 0;
  await p.admitting(async () => {
    node.against((await p.desired.list()).map((e) => e.pod));
    idCalls = await checkUidsOnRuntime(p.runtime, [{ pod: mine.pod }], (u) => p.desired.get(u));
    onCalls(idCalls);
    await p.desired.put(mine);
  });
  return idCalls;
}
