// Package usecases/workloads — a body's workloads checked, planned, stored; the workload reads and delete; Services.
// Imports the controllers' store and plan, admission and the Services allocator; never a front or an entry.
//
// The workloads of a sync or plan body (POST /v1/pods/sync, /v1/pods/plan). A sync stores them beside the node's
// other workloads (a workload of the same kind, namespace and name is replaced; the others stay) once every
// template passed the checks a pod gets; the controllers make their pods at the loop's next pass. A plan only
// checks them and says what a sync would change: each workload created, updated or unchanged, and the pods the
// controllers would make and delete for them (src/controllers/plan.ts). Nothing is stored when anything is refused.
import type { NodePolicy } from "../../auth/policy.js";
import type { VerifiedToken } from "../../auth/verify.js";
import type { WorkloadItem } from "../../pod/workloads/intake.js";
import { canonicalJSON } from "../../util/canonical-json.js";
import { workloadKey, type StoredWorkload, type WorkloadStore } from "../../controllers/store.js";
import { planWorkloads, type WorkloadPlan } from "../../controllers/plan.js";
import type { DesiredPod } from "../../pleg/desired-state.js";
import type { NodeInfo } from "../../lifecycle/predicates.js";
import { ProblemError } from "../problems.js";
import { policyRefusal } from "../../auth/pod-security.js";
import { InvalidPodError } from "../../pod/validate.js";
import { workloadCountError, type WorkloadLimits } from "../../pod/workloads/bounds.js";
import { admitWorkloads } from "../admission/templates.js";
import type { Admission } from "../admission/admission.js";
import { workloadEntries } from "./entries.js";

export interface WorkloadSyncDeps {
  workloads?: WorkloadStore | undefined;
  /** The one admission pipeline, which each template goes through as a pod sent to the node would. */
  admission: Admission;
}

export interface WorkloadOutcome {
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  /** What the sync did (or, for a plan, would do) with it. */
  action: "created" | "updated" | "unchanged";
}

/** Refuse before anything acts: no store on this deployment, or a template the node would refuse as a pod. */
export function checkWorkloads(items: readonly WorkloadItem[], d: WorkloadSyncDeps): void {
  if (items.length === 0) return;
  if (!d.workloads)
    throw new ProblemError(
      "unsupported",
      "this deployment does not run workloads (Deployments, Jobs, ...) yet: send pods",
      { errors: [{ path: items[0]!.at || "kind", message: `a ${items[0]!.workload.kind}` }] },
    );
  admitWorkloads(items, d.admission);
}

/** PODSYNC_MAX_WORKLOADS: the workloads sent to the node (not those its controllers made) after this sync. */
export async function checkWorkloadCount(
  items: readonly WorkloadItem[],
  store: WorkloadStore | undefined,
  limits: WorkloadLimits | undefined,
): Promise<void> {
  if (!store || items.length === 0 || limits?.maxWorkloads === undefined) return;
  const kept = new Set((await store.list()).filter((s) => !s.owner).map((s) => workloadKey(s.workload)));
  const err = workloadCountError(
    kept,
    items.map((i) => ({ key: workloadKey(i.workload), at: i.at })),
    limits,
  );
  if (err) throw new InvalidPodError([err]);
}

/** What storing `items` changes (for a plan, and the sync's answer). */
export async function workloadOutcomes(
  items: readonly WorkloadItem[],
  store: WorkloadStore,
): Promise<WorkloadOutcome[]> {
  return outcomesAgainst(items, await store.list());
}

/** Each of `items` created, updated or unchanged against the stored workloads (pure). */
export function outcomesAgainst(
  items: readonly WorkloadItem[],
  storedList: readonly StoredWorkload[],
): WorkloadOutcome[] {
  const stored = new Map(storedList.map((s) => [workloadKey(s.workload), s]));
  return items.map(({ workload: w }) => {
    const prev = stored.get(workloadKey(w));
    const action = !prev ? "created" : canonicalJSON(prev.workload) === canonicalJSON(w) ? "unchanged" : "updated";
    return { kind: w.kind, namespace: w.metadata.namespace, name: w.metadata.name, uid: w.metadata.uid!, action };
  });
}

/** What the controllers would do with the body's workloads (src/controllers/plan.ts): the pods they would make and
 * delete, named as they would name them, on copies of the node's stores. `extra` is the body's own pod, if any. */
export async function planWorkloadPods(
  items: readonly WorkloadItem[],
  token: VerifiedToken,
  now: number,
  store: WorkloadStore,
  desired: readonly DesiredPod[],
  nodeName: string,
  node: NodeInfo,
  policy?: NodePolicy,
): Promise<WorkloadPlan> {
  const stored = await store.list();
  return planWorkloads({
    stored,
    incoming: workloadEntries(items, token, now, stored, true),
    desired,
    nodeName,
    node,
    now,
    ...(policy ? { admitTemplate: policyRefusal(policy) } : {}),
  });
}

/** Store the workloads of a sync (all at once), after checkWorkloads. */
export async function storeWorkloads(
  items: readonly WorkloadItem[],
  token: VerifiedToken,
  now: number,
  store: WorkloadStore,
): Promise<WorkloadOutcome[]> {
  const outcomes = await workloadOutcomes(items, store);
  await store.putAll(workloadEntries(items, token, now, await store.list(), true));
  return outcomes;
}
