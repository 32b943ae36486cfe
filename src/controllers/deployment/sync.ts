// Package controllers/deployment/ — the Deployment controller's pure step: rollouts, scaling, history (deployment/).
// Imports ../ (the controllers' types and pods) and pod/workloads/; never I/O, HTTP or the runtime.
//
// The Deployment controller's sync on one node (pkg/controller/deployment: sync.go getNewReplicaSet,
// cleanupDeployment, calculateStatus, syncRolloutStatus; rolling.go rolloutRolling, reconcileNewReplicaSet,
// reconcileOldReplicaSets, cleanupUnhealthyReplicas, scaleDownOldReplicaSetsForRollingUpdate; recreate.go
// rolloutRecreate; util/deployment_util.go NewRSNewReplicas, ResolveFenceposts, MaxUnavailable, MaxSurge,
// DeploymentComplete, DeploymentProgressing, DeploymentTimedOut). The ReplicaSets are `<name>-<pod-template-hash>`
// (hash.ts), the hash also a label on the ReplicaSet, its selector and its template; the ReplicaSet controller
// makes their pods. Counts are this node's: maxSurge and maxUnavailable bound the pods here.
//
// A scaling event (replicas changed mid-rollout) or a paused Deployment scales its ReplicaSets proportionally
// (scale.ts, sync.go scale). A rollback's ReplicaSet takes the next revision; the deprecated rollbackTo is left out.
import type { Deployment, ReplicaSet } from "../../pod/workloads/schema.js";
import { canonicalJSON } from "../../util/canonical-json.js";
import { computeHash } from "../hash.js";
import { replicaSetStatus, type ReplicaSetStatus } from "../replicaset/sync.js";
import { controllerRef, isTerminal, type ObservedPod } from "../pods.js";
import { maxUnavailable, resolveFenceposts } from "./fenceposts.js";
import { isScalingEvent, proportionalSizes, replicasAnnotations, type ScaledReplicaSet } from "./scale.js";
import { setCondition, type Condition, type ControllerContext, type ControllerResult } from "../types.js";

export const POD_TEMPLATE_HASH = "pod-template-hash";
export const REVISION_ANNOTATION = "deployment.kubernetes.io/revision";

export interface ReplicaSetView {
  rs: ReplicaSet;
  pods: ObservedPod[];
  /** When it was stored (its creationTimestamp). */
  createdAt: number;
}

export interface DeploymentStatus {
  replicas: number;
  updatedReplicas: number;
  readyReplicas: number;
  availableReplicas: number;
  unavailableReplicas: number;
  conditions: Condition[];
  collisionCount?: number;
  [k: string]: unknown;
}

/** The template without the pod-template-hash label (EqualIgnoreHash compares these). */
function withoutHash(t: ReplicaSet["spec"]["template"]): unknown {
  const labels = { ...(t.metadata.labels ?? {}) };
  delete labels[POD_TEMPLATE_HASH];
  return { ...t, metadata: { ...t.metadata, labels } };
}
const sameTemplate = (a: ReplicaSet["spec"]["template"], b: ReplicaSet["spec"]["template"]) =>
  canonicalJSON(withoutHash(a)) === canonicalJSON(withoutHash(b));

const revisionOf = (rs: ReplicaSet) => Number(rs.metadata.annotations?.[REVISION_ANNOTATION] ?? "0") || 0;

export function syncDeployment(
  d: Deployment,
  views: readonly ReplicaSetView[],
  prev: DeploymentStatus | undefined,
  ctx: ControllerContext,
): ControllerResult {
  const out: ControllerResult = { create: [], delete: [], status: {}, putChildren: [], removeChildren: [] };
  const newView = views.find((v) => sameTemplate(v.rs.spec.template, d.spec.template));
  const s: Step = {
    d,
    views,
    olds: views
      .filter((v) => v !== newView)
      .sort((a, b) => a.createdAt - b.createdAt || a.rs.metadata.name.localeCompare(b.rs.metadata.name)),
    newView,
    newRSCreated: false,
    collisionCount: prev?.collisionCount,
    hash: computeHash(d.spec.template, prev?.collisionCount),
    replicas: new Map(views.map((v) => [v.rs.metadata.name, v.rs.spec.replicas])),
    status: new Map(views.map((v) => [v.rs.metadata.name, replicaSetStatus(v.rs, v.pods, ctx.now)])),
    out,
    ctx,
  };
  newestRevision(s);
  const current = (v: ReplicaSetView) =>
    s.newView && v.rs.metadata.name === s.newView.rs.metadata.name ? s.newView : v;

  // syncDeployment: a paused Deployment, or one whose replicas changed since its active ReplicaSets were sized
  // (a scaling event), is scaled proportionally (sync); otherwise it rolls out by its strategy.
  const sized = (v: ReplicaSetView): ScaledReplicaSet => ({
    name: v.rs.metadata.name,
    replicas: s.replicas.get(v.rs.metadata.name)!,
    createdAt: v.createdAt,
    annotations: v.rs.metadata.annotations,
    availableReplicas: s.status.get(v.rs.metadata.name)!.availableReplicas,
  });
  if (d.spec.paused || isScalingEvent(d, s.newView && sized(s.newView), s.olds.map(sized))) {
    const sizes = proportionalSizes(d, s.newView && sized(s.newView), s.olds.map(sized), prev?.replicas ?? 0);
    for (const v of views) {
      const n = sizes.get(v.rs.metadata.name);
      if (n !== undefined) resize(s, current(v), n);
    }
    if (d.spec.paused) cleanup(s);
  } else if (d.spec.strategy.type === "Recreate") rolloutRecreate(s);
  else rolloutRolling(s);

  const { status, requeueAt } = rolloutStatus(s, prev);
  out.status = status;
  if (requeueAt !== undefined) out.requeueAt = requeueAt;
  return out;
}

/** One step's working state: what it changes (sizes, the new ReplicaSet), keyed by ReplicaSet name. */
interface Step {
  d: Deployment;
  views: readonly ReplicaSetView[];
  /** The ReplicaSets of other templates, oldest first. */
  olds: ReplicaSetView[];
  /** The ReplicaSet of the Deployment's template, once there is one. */
  newView: ReplicaSetView | undefined;
  newRSCreated: boolean;
  collisionCount: number | undefined;
  hash: string;
  replicas: Map<string, number>;
  status: Map<string, ReplicaSetStatus>;
  out: ControllerResult;
  ctx: ControllerContext;
}

/** getNewReplicaSet (SetNewReplicaSetAnnotations): a ReplicaSet whose template is the Deployment's again (a
 * rollback, `rollout undo`) becomes the newest revision, so history and the next undo see it as upstream's do. */
function newestRevision(s: Step): void {
  if (!s.newView) return;
  const top = Math.max(0, ...s.olds.map((v) => revisionOf(v.rs)));
  if (revisionOf(s.newView.rs) > top) return;
  const m = s.newView.rs.metadata;
  const rs: ReplicaSet = {
    ...s.newView.rs,
    metadata: { ...m, annotations: { ...(m.annotations ?? {}), [REVISION_ANNOTATION]: String(top + 1) } },
  };
  s.newView = { ...s.newView, rs };
  s.out.putChildren!.push(rs);
}

const sumReplicas = (s: Step, vs: readonly ReplicaSetView[]) =>
  vs.reduce((n, v) => n + s.replicas.get(v.rs.metadata.name)!, 0);
const sumAvailable = (s: Step, vs: readonly ReplicaSetView[]) =>
  vs.reduce((n, v) => n + s.status.get(v.rs.metadata.name)!.availableReplicas, 0);

/** scaleReplicaSet: the size, and the Deployment's replicas and max the ReplicaSet is sized for (annotations),
 * written when either changed. */
function resize(s: Step, v: ReplicaSetView, n: number): boolean {
  const annotations = { ...(v.rs.metadata.annotations ?? {}), ...replicasAnnotations(s.d) };
  const sizeChanged = s.replicas.get(v.rs.metadata.name) !== n;
  if (!sizeChanged && canonicalJSON(annotations) === canonicalJSON(v.rs.metadata.annotations ?? {})) return false;
  s.replicas.set(v.rs.metadata.name, n);
  const rs: ReplicaSet = {
    ...v.rs,
    metadata: { ...v.rs.metadata, annotations },
    spec: { ...v.rs.spec, replicas: n },
  };
  s.out.putChildren = [...s.out.putChildren!.filter((x) => x.metadata.name !== rs.metadata.name), rs];
  return sizeChanged;
}

/** scaleReplicaSetAndRecordEvent: nothing when the size is already right. */
const scale = (s: Step, v: ReplicaSetView, n: number) => s.replicas.get(v.rs.metadata.name) !== n && resize(s, v, n);

/** getNewReplicaSet with createIfNotExisted: the new ReplicaSet `<name>-<hash>` at `n` replicas. */
function createNew(s: Step, n: number): void {
  const { d, hash } = s;
  const name = `${d.metadata.name}-${hash}`;
  if (s.views.some((v) => v.rs.metadata.name === name)) {
    // A ReplicaSet of that name with another template: a hash collision; the next sync hashes with a new count.
    s.collisionCount = (s.collisionCount ?? 0) + 1;
    return;
  }
  const labels = { ...(d.spec.template.metadata.labels ?? {}), [POD_TEMPLATE_HASH]: hash };
  const revision = String(Math.max(0, ...s.views.map((v) => revisionOf(v.rs))) + 1);
  const rs: ReplicaSet = {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: {
      name,
      namespace: d.metadata.namespace,
      uid: undefined,
      labels,
      annotations: { ...(d.metadata.annotations ?? {}), [REVISION_ANNOTATION]: revision, ...replicasAnnotations(d) },
    },
    spec: {
      replicas: n,
      minReadySeconds: d.spec.minReadySeconds,
      selector: {
        ...d.spec.selector,
        matchLabels: { ...(d.spec.selector.matchLabels ?? {}), [POD_TEMPLATE_HASH]: hash },
      },
      template: {
        ...structuredClone(d.spec.template),
        metadata: { ...structuredClone(d.spec.template.metadata), labels },
      },
    },
    status: undefined,
  };
  s.out.putChildren!.push(rs);
  s.newView = { rs, pods: [], createdAt: s.ctx.now };
  s.replicas.set(name, n);
  s.status.set(name, { replicas: 0, fullyLabeledReplicas: 0, readyReplicas: 0, availableReplicas: 0 });
  s.newRSCreated = true;
}

/** rolloutRecreate: the old ReplicaSets to 0, and once their pods are gone, the new one to replicas. */
function rolloutRecreate(s: Step): void {
  let scaledDown = false;
  for (const v of s.olds) if (s.replicas.get(v.rs.metadata.name)! > 0) scaledDown = scale(s, v, 0) || scaledDown;
  if (scaledDown) return;
  // oldPodsRunning: wait until every old pod is gone or finished.
  if (s.olds.some((v) => v.pods.some((p) => !isTerminal(p)))) return;
  if (!s.newView) createNew(s, s.d.spec.replicas);
  else scale(s, s.newView, s.d.spec.replicas);
  if (complete(s)) cleanup(s);
}

function rolloutRolling(s: Step): void {
  if (!s.newView) {
    // NewRSNewReplicas for a ReplicaSet that does not exist yet (0 replicas).
    createNew(s, newReplicas(s, 0));
    return;
  }
  if (reconcileNew(s, s.newView)) return;
  if (reconcileOld(s, s.newView)) return;
  if (complete(s)) cleanup(s);
}

/** NewRSNewReplicas (RollingUpdate): up to replicas + maxSurge pods in all, never more than replicas new. */
function newReplicas(s: Step, current: number): number {
  const { d } = s;
  const maxTotal = d.spec.replicas + resolveFenceposts(d).surge;
  const all = sumReplicas(s, s.views);
  if (all >= maxTotal) return current;
  return current + Math.max(0, Math.min(maxTotal - all, d.spec.replicas - current));
}

function reconcileNew(s: Step, nv: ReplicaSetView): boolean {
  const n = s.replicas.get(nv.rs.metadata.name)!;
  if (n === s.d.spec.replicas) return false;
  if (n > s.d.spec.replicas) return scale(s, nv, s.d.spec.replicas);
  return scale(s, nv, newReplicas(s, n));
}

function reconcileOld(s: Step, nv: ReplicaSetView): boolean {
  const { olds, replicas, status } = s;
  const oldCount = sumReplicas(s, olds);
  if (oldCount === 0) return false;
  const all = sumReplicas(s, [...olds, nv]);
  const minAvailable = s.d.spec.replicas - maxUnavailable(s.d);
  const newUnavailable = replicas.get(nv.rs.metadata.name)! - status.get(nv.rs.metadata.name)!.availableReplicas;
  const maxScaledDown = all - minAvailable - newUnavailable;
  if (maxScaledDown <= 0) return false;
  // cleanupUnhealthyReplicas: old ReplicaSets' unavailable pods go first.
  let cleaned = 0;
  for (const v of olds) {
    if (cleaned >= maxScaledDown) break;
    const n = replicas.get(v.rs.metadata.name)!;
    const avail = status.get(v.rs.metadata.name)!.availableReplicas;
    if (n === 0 || avail === n) continue;
    const down = Math.min(maxScaledDown - cleaned, n - avail);
    scale(s, v, n - down);
    cleaned += down;
  }
  // scaleDownOldReplicaSetsForRollingUpdate: then available ones, oldest first, down to minAvailable.
  const available = sumAvailable(s, [...olds, nv]);
  let scaled = 0;
  if (available > minAvailable) {
    const total = available - minAvailable;
    for (const v of olds) {
      if (scaled >= total) break;
      const n = replicas.get(v.rs.metadata.name)!;
      if (n === 0) continue;
      const down = Math.min(n, total - scaled);
      scale(s, v, n - down);
      scaled += down;
    }
  }
  return cleaned + scaled > 0;
}

/** DeploymentComplete, on this step's counts. */
function complete(s: Step): boolean {
  const { d, newView, status } = s;
  if (!newView) return false;
  const st = status.get(newView.rs.metadata.name)!;
  const total = s.views.reduce((n, v) => n + status.get(v.rs.metadata.name)!.replicas, 0);
  return (
    s.replicas.get(newView.rs.metadata.name) === d.spec.replicas &&
    st.replicas === d.spec.replicas &&
    total === d.spec.replicas &&
    st.availableReplicas === d.spec.replicas
  );
}

/** cleanupDeployment: old ReplicaSets with no replicas and no pods, past revisionHistoryLimit, oldest first. */
function cleanup(s: Step): void {
  const idle = s.olds.filter((v) => s.replicas.get(v.rs.metadata.name) === 0 && v.pods.length === 0);
  const excess = idle.length - s.d.spec.revisionHistoryLimit;
  for (const v of idle.slice(0, Math.max(0, excess))) s.out.removeChildren!.push(v.rs);
}

/** calculateStatus + syncRolloutStatus: the counts, Available, and Progressing (with its deadline). */
function rolloutStatus(
  s: Step,
  prev: DeploymentStatus | undefined,
): { status: DeploymentStatus; requeueAt: number | undefined } {
  const { d, newView } = s;
  const nowIso = new Date(s.ctx.now).toISOString();
  const all = [...s.views, ...(s.newRSCreated && newView ? [newView] : [])];
  const st = (v: ReplicaSetView) => s.status.get(v.rs.metadata.name)!;
  const counts: RolloutCounts = {
    total: all.reduce((n, v) => n + st(v).replicas, 0),
    available: all.reduce((n, v) => n + st(v).availableReplicas, 0),
    ready: all.reduce((n, v) => n + st(v).readyReplicas, 0),
    updated: newView ? st(newView).replicas : 0,
  };
  const { total, available, ready, updated } = counts;
  let conditions = prev?.conditions ?? [];
  const minAvailable = d.spec.replicas - maxUnavailable(d);
  conditions =
    available >= minAvailable
      ? setCondition(
          conditions,
          {
            type: "Available",
            status: "True",
            reason: "MinimumReplicasAvailable",
            message: "Deployment has minimum availability.",
            lastUpdateTime: nowIso,
          },
          nowIso,
        )
      : setCondition(
          conditions,
          {
            type: "Available",
            status: "False",
            reason: "MinimumReplicasUnavailable",
            message: "Deployment does not have minimum availability.",
            lastUpdateTime: nowIso,
          },
          nowIso,
        );
  let requeueAt: number | undefined;
  if (!d.spec.paused) ({ conditions, requeueAt } = progressing(s, prev, counts, conditions));
  const status: DeploymentStatus = {
    replicas: total,
    updatedReplicas: updated,
    readyReplicas: ready,
    availableReplicas: available,
    unavailableReplicas: Math.max(0, d.spec.replicas - available),
    conditions: [...conditions].sort((a, b) => a.type.localeCompare(b.type)),
    ...(s.collisionCount !== undefined ? { collisionCount: s.collisionCount } : {}),
  };
  return { status, requeueAt };
}

interface RolloutCounts {
  total: number;
  available: number;
  ready: number;
  updated: number;
}

/** syncRolloutStatus's Progressing condition: complete, a new ReplicaSet, progress, or the deadline passed
 * (DeploymentProgressing, DeploymentTimedOut); `requeueAt` when the deadline is still ahead. */
function progressing(
  s: Step,
  prev: DeploymentStatus | undefined,
  { total, available, ready, updated }: RolloutCounts,
  conditions: Condition[],
): { conditions: Condition[]; requeueAt: number | undefined } {
  const { d, ctx } = s;
  const nowIso = new Date(ctx.now).toISOString();
  const rsName = s.newView?.rs.metadata.name ?? `${d.metadata.name}-${s.hash}`;
  const progressing = conditions.find((c) => c.type === "Progressing");
  const isComplete = updated === d.spec.replicas && total === d.spec.replicas && available === d.spec.replicas;
  let requeueAt: number | undefined;
  if (isComplete)
    conditions = setCondition(
      conditions,
      {
        type: "Progressing",
        status: "True",
        reason: "NewReplicaSetAvailable",
        message: `ReplicaSet "${rsName}" has successfully progressed.`,
        lastUpdateTime: nowIso,
      },
      nowIso,
    );
  else if (s.newRSCreated)
    conditions = setCondition(
      conditions,
      {
        type: "Progressing",
        status: "True",
        reason: "NewReplicaSetCreated",
        message: `Created new replica set "${rsName}"`,
        lastUpdateTime: nowIso,
      },
      nowIso,
    );
  else if (
    prev &&
    (updated > prev.updatedReplicas ||
      ready > prev.readyReplicas ||
      available > prev.availableReplicas ||
      total - updated < prev.replicas - prev.updatedReplicas)
  )
    // DeploymentProgressing: the rollout moved; the deadline starts again from now (lastUpdateTime).
    conditions = [
      ...conditions.filter((c) => c.type !== "Progressing"),
      {
        type: "Progressing",
        status: "True",
        reason: "ReplicaSetUpdated",
        message: `ReplicaSet "${rsName}" is progressing.`,
        lastTransitionTime: progressing?.status === "True" ? progressing.lastTransitionTime : nowIso,
        lastUpdateTime: nowIso,
      },
    ];
  else if (
    progressing &&
    progressing.reason !== "NewReplicaSetAvailable" &&
    progressing.reason !== "ProgressDeadlineExceeded"
  ) {
    // DeploymentTimedOut: no progress for progressDeadlineSeconds since the condition was last updated.
    const deadline =
      Date.parse(progressing.lastUpdateTime ?? progressing.lastTransitionTime) + d.spec.progressDeadlineSeconds * 1000;
    if (ctx.now > deadline)
      conditions = setCondition(
        conditions,
        {
          type: "Progressing",
          status: "False",
          reason: "ProgressDeadlineExceeded",
          message: `ReplicaSet "${rsName}" has timed out progressing.`,
          lastUpdateTime: nowIso,
        },
        nowIso,
      );
    else requeueAt = deadline + 1;
  } else if (!progressing)
    conditions = setCondition(
      conditions,
      {
        type: "Progressing",
        status: "True",
        reason: "ReplicaSetUpdated",
        message: `ReplicaSet "${rsName}" is progressing.`,
        lastUpdateTime: nowIso,
      },
      nowIso,
    );
  return { conditions, requeueAt };
}

/** The owner reference a Deployment's ReplicaSets carry. */
export const deploymentRef = (d: Deployment) => controllerRef(d);
