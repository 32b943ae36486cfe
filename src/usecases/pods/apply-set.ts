// The apply-set use case (PUT /v1/node/pods) up to its commit: every item validated and admitted before anything
// changes, then the commit (the set's node stage, the uid check, the store replaced, the workloads following),
// one step on the node. The syncs and teardowns the commit implies go to the pod workers (src/podworkers/), from
// the route.
import type { VerifiedToken } from "../../auth/verify.js";
import { controllerOf } from "../../controllers/pods.js";
import { workloadKey, type StoredWorkload } from "../../controllers/store.js";
import { checkReplace, type DesiredPod } from "../../pleg/desired-state.js";
import { bodyFromItems, setItems, type SetMember } from "../../pod/bundle.js";
import { InvalidPodError, type FieldError } from "../../pod/validate.js";
import { workloadCountError } from "../../pod/workloads/bounds.js";
import type { WorkloadItem } from "../../pod/workloads/intake.js";
import { ProblemError } from "../problems.js";
import type { NodePorts } from "../ports.js";
import { admitWorkloads } from "../admission/templates.js";
import type { NodeStage } from "../admission/admission.js";
import { workloadEntries } from "../workloads/entries.js";
import { allocateBodyServices } from "../workloads/services.js";
import { outcomesAgainst, type WorkloadOutcome } from "../workloads/sync.js";
import { desiredEntry } from "./entry.js";
import { checkUidsOnRuntime, uidConflictAt } from "./identity.js";

export interface PodSet {
  pods: SetMember[];
  workloads: WorkloadItem[];
  warnings: string[];
}

/** Validate every item (schema, the deployment's probe handlers: the admission pipeline's probes stage, the
 * references to the set's ConfigMaps and Secrets: src/pod/bundle.ts; workloads: src/pod/workloads/intake.ts), all
 * errors at once, each path under its item; then the set's own rule: one pod per uid and per namespace/name. */
export function validateSet(p: NodePorts, items: unknown[], prefix: string, payload: Record<string, unknown>): PodSet {
  const errors: FieldError[] = [];
  let body: PodSet = { pods: [], workloads: [], warnings: [] };
  try {
    body = bodyFromItems(setItems(items, prefix), payload, p.intake, p.admission.checkProbes);
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

/** The set checked before anything acts: workloads on a node that runs them, within its bound; each pod through the
 * admission pipeline (its probes were checked with the set's validation), then each template; the Services' addresses
 * among themselves; a generation the node is already at is refused first (replace checks again, atomically): a
 * stale PUT makes no runtime call. Returns the pods' node stage, for the commit. */
export async function admitSet(p: NodePorts, set: PodSet, generation: number): Promise<NodeStage> {
  const { pods, workloads } = set;
  if (workloads.length && !p.workloads)
    throw new ProblemError(
      "unsupported",
      "this deployment does not run workloads (Deployments, Jobs, ...) yet: send pods",
      { errors: [{ path: workloads[0]!.at, message: `a ${workloads[0]!.workload.kind}` }] },
    );
  const tooMany = workloadCountError(
    new Set(),
    workloads.map((w) => ({ key: workloadKey(w.workload), at: w.at })),
    p.intake.limits,
  );
  if (tooMany) throw new InvalidPodError([tooMany]);
  const node = p.admission.admit(
    pods.map(({ pod, at }) => ({ pod, prefix: `${at}.` })),
    { probesChecked: true },
  );
  admitWorkloads(workloads, p.admission);
  // The set's Services are all the node keeps: their addresses are given among themselves.
  await allocateBodyServices(workloads, p, "replace");
  checkReplace(await p.desired.generation(), generation);
  return node;
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

export interface SetCommit {
  /** The set's own entries, in the set's order. */
  own: DesiredPod[];
  /** The uids the commit dropped, and the store as it was before it (to name them). */
  removed: string[];
  before: Map<string, DesiredPod>;
  /** The set's workloads created, updated or unchanged, and those the node held that the set leaves out. */
  outcomes: WorkloadOutcome[];
  removedWorkloads: StoredWorkload[];
  idCalls: number;
}

/** The commit: refused (409 stale-generation, 503 state-unavailable) with nothing changed, so a refused PUT does
 * not use up its generation. Admission against the node and the commit are one step on the node (p.admitting,
 * shared with sync), so a set and a concurrent sync cannot each fit alone and be admitted together. `before` (to
 * name the dropped pods) is read in the same step: a sync stored just before the commit is one the commit may drop.
 * `onCalls`: the uid check's CRI calls, as soon as they are made. */
export async function commitSet(
  p: NodePorts,
  set: PodSet,
  node: NodeStage,
  commit: { token: VerifiedToken; generation: number; now: number; prefix: string },
  onCalls: (criCalls: number) => void,
): Promise<SetCommit> {
  const { pods, workloads } = set;
  const { token, generation, now } = commit;
  const own = pods.map(({ pod, objects }) => desiredEntry(pod, token, now, objects, generation));
  return p.admitting(async () => {
    const before = new Map((await p.desired.list()).map((e) => [e.pod.metadata.uid, e]));
    // The pods the node's controllers made for workloads the set keeps stay (the controllers roll them to the new
    // templates); those of dropped workloads go with the commit.
    const storedWorkloads = p.workloads ? await p.workloads.list() : [];
    const derived = keptDerived(workloads, storedWorkloads, before.values());
    // A set item that is a kept workload's pod (an export of it) stays that controller's, once.
    const ownedBy = new Map(derived.pods.map((e) => [e.pod.metadata.uid, e.pod.metadata.ownerReferences]));
    for (const e of own)
      if (ownedBy.has(e.pod.metadata.uid) && !controllerOf(e.pod.metadata))
        e.pod.metadata.ownerReferences = ownedBy.get(e.pod.metadata.uid);
    derived.pods = derived.pods.filter((e) => !own.some((o) => o.pod.metadata.uid === e.pod.metadata.uid));
    // What the commit does to the workloads, for the answer: each of the set's created, updated or unchanged, and
    // each one the node held (not made by a controller) that the set leaves out, deleted.
    const outcomes = outcomesAgainst(workloads, storedWorkloads);
    const keys = new Set(workloads.map((w) => workloadKey(w.workload)));
    const removedWorkloads = storedWorkloads.filter((s) => !s.owner && !keys.has(workloadKey(s.workload)));
    node.inOrder(new Set(before.keys()), commit.prefix);
    // One uid is one pod: an item whose uid belongs to another pod on the node refuses the whole set (409
    // uid-conflict naming the item) in the same step, before the commit.
    const idCalls = await checkUidsOnRuntime(p.runtime, pods, (uid) => before.get(uid));
    onCalls(idCalls);
    // Inside the store's write: a set signed before a per-pod change it would roll back (409 stale-generation), or
    // an item whose uid the store holds under another namespace/name (409 uid-conflict).
    const r = await p.desired
      .replace(generation, [...derived.pods, ...own], { iat: Number(token.payload.iat) })
      .catch((e: unknown) => {
        throw uidConflictAt(e, pods);
      });
    // The workloads follow the committed set (a failure here is a 503 with the pods' set in force; the controllers
    // keep the workloads as they were until the next PUT). (A set with none, on a node holding none, changes nothing
    // there: no write, no controller pass.)
    if (workloads.length || storedWorkloads.length)
      await p.workloads?.replace([...derived.workloads, ...workloadEntries(workloads, token, now, storedWorkloads)]);
    return { own, removed: r.removed, before, outcomes, removedWorkloads, idCalls };
  });
}
