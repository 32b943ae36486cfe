// kubectl rollout's decisions, pure (the node's objects in, a message or an edited object out):
//   status  polymorphichelpers/rollout_status.go (DeploymentStatusViewer, DaemonSetStatusViewer,
//           StatefulSetStatusViewer): the same tests in the same order, the same messages;
//   history polymorphichelpers/history.go (DeploymentHistoryViewer): the Deployment's ReplicaSets by their
//           deployment.kubernetes.io/revision, with kubernetes.io/change-cause;
//   undo    polymorphichelpers/rollback.go (DeploymentRollbacker, deploymentRevision, equalIgnoreHash): the
//           template of the ReplicaSet of a revision, without its pod-template-hash label, and its annotations.
// StatefulSets and DaemonSets keep their history in ControllerRevisions, which a node does not keep: history and
// undo are the Deployment's here.
import { canonicalJSON } from "../../util/canonical-json.js";
import type { Obj } from "./edit.js";

export const REVISION = "deployment.kubernetes.io/revision";
export const CHANGE_CAUSE = "kubernetes.io/change-cause";
export const RESTARTED_AT = "kubectl.kubernetes.io/restartedAt";
const HASH_LABEL = "pod-template-hash";

type Status = { message: string; done: boolean } | { error: string };

const num = (v: unknown) => (typeof v === "number" ? v : 0);
const rec = (v: unknown) => (typeof v === "object" && v !== null ? (v as Obj) : {});

/** rollout status of one object: its message, and whether the rollout is done; or kubectl's error. */
export function rolloutStatus(w: Obj): Status {
  const meta = rec(w["metadata"]);
  const spec = rec(w["spec"]);
  const st = rec(w["status"]);
  const name = String(meta["name"]);
  const generation = num(meta["generation"]);
  const observed = num(st["observedGeneration"]);
  switch (w["kind"]) {
    case "Deployment": {
      if (generation > observed)
        return { message: "Waiting for deployment spec update to be observed...", done: false };
      const progressing = ((st["conditions"] as Obj[] | undefined) ?? []).find((c) => c["type"] === "Progressing");
      if (progressing?.["reason"] === "ProgressDeadlineExceeded")
        return { error: `deployment "${name}" exceeded its progress deadline` };
      const replicas = num(spec["replicas"]);
      const updated = num(st["updatedReplicas"]);
      const wait = (m: string) => ({
        message: `Waiting for deployment "${name}" rollout to finish: ${m}`,
        done: false,
      });
      if (updated < replicas) return wait(`${updated} out of ${replicas} new replicas have been updated...`);
      if (num(st["replicas"]) > updated)
        return wait(`${num(st["replicas"]) - updated} old replicas are pending termination...`);
      if (num(st["availableReplicas"]) < updated)
        return wait(`${num(st["availableReplicas"])} of ${updated} updated replicas are available...`);
      return { message: `deployment "${name}" successfully rolled out`, done: true };
    }
    case "DaemonSet": {
      if (rec(spec["updateStrategy"])["type"] !== "RollingUpdate")
        return { error: "rollout status is only available for RollingUpdate strategy type" };
      if (generation > observed)
        return { message: "Waiting for daemon set spec update to be observed...", done: false };
      const desired = num(st["desiredNumberScheduled"]);
      const wait = (m: string) => ({
        message: `Waiting for daemon set "${name}" rollout to finish: ${m}`,
        done: false,
      });
      if (num(st["updatedNumberScheduled"]) < desired)
        return wait(`${num(st["updatedNumberScheduled"])} out of ${desired} new pods have been updated...`);
      if (num(st["numberAvailable"]) < desired)
        return wait(`${num(st["numberAvailable"])} of ${desired} updated pods are available...`);
      return { message: `daemon set "${name}" successfully rolled out`, done: true };
    }
    case "StatefulSet": {
      const strategy = rec(spec["updateStrategy"]);
      if (strategy["type"] !== "RollingUpdate")
        return { error: "rollout status is only available for RollingUpdate strategy type" };
      if (observed === 0 || generation > observed)
        return { message: "Waiting for statefulset spec update to be observed...", done: false };
      const replicas = num(spec["replicas"]);
      if (num(st["readyReplicas"]) < replicas)
        return { message: `Waiting for ${replicas - num(st["readyReplicas"])} pods to be ready...`, done: false };
      const rolling = strategy["rollingUpdate"] as Obj | undefined;
      if (rolling) {
        const partition = rolling["partition"];
        if (typeof partition === "number" && num(st["updatedReplicas"]) < replicas - partition)
          return {
            message: `Waiting for partitioned roll out to finish: ${num(st["updatedReplicas"])} out of ${replicas - partition} new pods have been updated...`,
            done: false,
          };
        return {
          message: `partitioned roll out complete: ${num(st["updatedReplicas"])} new pods have been updated...`,
          done: true,
        };
      }
      if (st["updateRevision"] !== st["currentRevision"])
        return {
          message: `waiting for statefulset rolling update to complete ${num(st["updatedReplicas"])} pods at revision ${String(st["updateRevision"])}...`,
          done: false,
        };
      return {
        message: `statefulset rolling update complete ${num(st["currentReplicas"])} pods at revision ${String(st["currentRevision"])}...`,
        done: true,
      };
    }
    default:
      return { error: `no status viewer has been implemented for ${String(w["kind"])}` };
  }
}

const annotationsOf = (o: Obj) => (rec(o["metadata"])["annotations"] ?? {}) as Record<string, string>;
const revisionOf = (rs: Obj) => {
  const r = Number(annotationsOf(rs)[REVISION]);
  return Number.isInteger(r) && r > 0 ? r : undefined;
};

/** The ReplicaSets a Deployment owns (by its uid), with their revisions. */
export function revisions(deploymentUid: string, replicaSets: readonly Obj[]): { revision: number; rs: Obj }[] {
  return replicaSets
    .filter((rs) =>
      ((rec(rs["metadata"])["ownerReferences"] as { uid?: string }[] | undefined) ?? []).some(
        (r) => r.uid === deploymentUid,
      ),
    )
    .flatMap((rs) => {
      const revision = revisionOf(rs);
      return revision === undefined ? [] : [{ revision, rs }];
    })
    .sort((a, b) => a.revision - b.revision);
}

/** rollout history's table (tabwriter: minwidth 0, padding 2), or kubectl's "No rollout history found.". */
export function historyTable(revs: readonly { revision: number; rs: Obj }[]): string {
  if (!revs.length) return "No rollout history found.";
  const rows = [
    ["REVISION", "CHANGE-CAUSE"],
    ...revs.map((r) => [String(r.revision), annotationsOf(r.rs)[CHANGE_CAUSE] || "<none>"]),
  ];
  const w = Math.max(...rows.map((r) => r[0]!.length)) + 2;
  return `${rows.map((r) => `${r[0]!.padEnd(w)}${r[1]}`).join("\n")}\n`;
}

const withoutHash = (t: unknown) => {
  const c = structuredClone(rec(t));
  const m = { ...rec(c["metadata"]) };
  const labels = { ...rec(m["labels"]) };
  delete labels[HASH_LABEL];
  return { ...c, metadata: { ...m, labels } };
};

/** kubectl's annotationsToSkip: kept from the Deployment, never copied from the ReplicaSet. */
const SKIP = new Set([
  "kubectl.kubernetes.io/last-applied-configuration",
  REVISION,
  "deployment.kubernetes.io/revision-history",
  "deployment.kubernetes.io/desired-replicas",
  "deployment.kubernetes.io/max-replicas",
  "deprecated.deployment.rollback.to",
]);

/** rollout undo: the Deployment with the template (and annotations) of revision `to` (0: the one before the
 * latest), or a message when nothing changes, or kubectl's error. */
export function rollback(
  d: Obj,
  revs: readonly { revision: number; rs: Obj }[],
  to: number,
): { deployment: Obj } | { skipped: string } | { error: string } {
  const name = String(rec(d["metadata"])["name"]);
  let target: { revision: number; rs: Obj } | undefined;
  if (to > 0) {
    target = revs.find((r) => r.revision === to);
    if (!target) return { error: `unable to find specified revision ${to} in history` };
  } else {
    target = revs.length >= 2 ? revs[revs.length - 2] : undefined;
    if (!target) return { error: `no rollout history found for deployment "${name}"` };
  }
  const spec = rec(d["spec"]);
  if (spec["paused"] === true)
    return {
      error: `you cannot rollback a paused deployment; resume it first with 'podsync rollout resume deployment/${name}' and try again`,
    };
  const template = withoutHash(rec(target.rs["spec"])["template"]);
  if (canonicalJSON(template) === canonicalJSON(withoutHash(spec["template"])))
    return { skipped: `skipped rollback (current template already matches revision ${target.revision})` };
  const annotations: Record<string, string> = {};
  const current = annotationsOf(d);
  for (const k of SKIP) if (current[k] !== undefined) annotations[k] = current[k]!;
  for (const [k, v] of Object.entries(annotationsOf(target.rs))) if (!SKIP.has(k)) annotations[k] = v;
  const meta = { ...rec(d["metadata"]) };
  if (Object.keys(annotations).length) meta["annotations"] = annotations;
  else delete meta["annotations"];
  return { deployment: { ...d, metadata: meta, spec: { ...spec, template } } };
}
