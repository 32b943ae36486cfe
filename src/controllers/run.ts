// The node's controllers, one pass: every stored workload's pure step (Deployment, ReplicaSet, Job, ...) over the
// pods it controls as the runtime last showed them, then the I/O the steps asked for: derived pods put into the
// desired state (the reconcile loop syncs them through the front door and its per-pod lock, like any pod) or taken
// out of it and deleted (through the front door too, only while still out of the store); the workloads a controller
// makes (a Deployment's ReplicaSets, a CronJob's Jobs) stored with their owner; each status recorded when it
// changed. Pods and workloads whose controller is gone (dropped from the set, deleted) are removed with it; claims
// stay. One workload's error never stops the others: it is logged once, and the pass goes on.
//
// Kinds run in dependency order (CronJob makes Jobs, Deployment makes ReplicaSets), so what one makes is run by the
// next in the same pass.
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { DesiredPod, DesiredState } from "../pleg/desired-state.js";
import type { V1PodStatus } from "../status/api-status.js";
import { canonicalJSON } from "../util/canonical-json.js";
import type { Pod } from "../pod/schema.js";
import type {
  CronJob,
  DaemonSet,
  Deployment,
  Job,
  PodDisruptionBudget,
  ReplicaSet,
  ReplicationController,
  StatefulSet,
  Workload,
  WorkloadKind,
} from "../pod/workloads/schema.js";
import { derivedUid } from "../pod/workloads/uid.js";
import { controllerOf, controllerRef, randomSuffix, type ObservedPod } from "./pods.js";
import { workloadKey, type StoredWorkload, type WorkloadStore } from "./store.js";
import { emptyResult, type Condition, type ControllerContext, type ControllerResult } from "./types.js";
import { pdbStatus, type PdbStatus, type ScaledController } from "./disruption/sync.js";
import { createAutoscalers, type AutoscalerOptions } from "./podautoscaler/run-hpa.js";
import type { PodUsageSource } from "./podautoscaler/metrics.js";
import { syncReplicaSet } from "./replicaset/sync.js";
import { syncReplicationController } from "./replication/sync.js";
import { syncDeployment, type DeploymentStatus } from "./deployment/sync.js";
import { syncJob, type JobOptions, type JobStatus } from "./job/sync.js";
import { syncCronJob, type ChildJob, type CronJobStatus } from "./cronjob/sync.js";
import { syncStatefulSet, type StatefulSetStatus } from "./statefulset/sync.js";
import { syncDaemonSet, type DaemonSetStatus } from "./daemon/sync.js";
import { admitPod, type NodeInfo } from "../lifecycle/predicates.js";
import type { WorkloadLimits } from "../pod/workloads/bounds.js";
import { createGate, nodeStateKey, type Failure, type Verdict } from "./gate.js";

export interface ControllersOptions {
  workloads: WorkloadStore;
  desired: DesiredState;
  runtime: Pick<PodRuntime, "delete">;
  nodeName: string;
  job?: JobOptions;
  /** The node as kubelet's admission sees it: a derived pod is admitted (resources, host ports, selectors, taints)
   * against the other desired pods before it is stored, as a request's pod is; the DaemonSet controller decides
   * with it too. */
  node?: NodeInfo;
  suffix?: () => string;
  log?: (rec: Record<string, unknown>) => void;
  /** The HPAs' settings (sync period, downscale stabilization, tolerance, ...; tests shorten them). */
  autoscaler?: Partial<AutoscalerOptions>;
  /** The pods' CPU and memory for the HPAs (Node: the runtime's ListContainerStats, podautoscaler/metrics.ts);
   * without it an HPA finds no metrics and does not scale (ScalingActive False). */
  podUsage?: PodUsageSource;
  /** A pod the node's admission refused (kubelet's rejectPod records an event on it): called when a workload's
   * refusal begins or changes, not on every pass that tries again. */
  onRefused?: (pod: Pod, reason: string, message: string) => void;
  /** The node owner's bounds: a stored workload past them is refused (no step, no pods) (gate.ts). */
  limits?: WorkloadLimits;
  /** The node owner's policy in force on each template, as on a pod sent directly: why it is refused, or
   * undefined (gate.ts). */
  admitTemplate?: (pod: Pod) => string | undefined;
  /** A workload refused (past a bound, its template against the policy): an event on it, once per change. */
  onWorkloadRefused?: (w: Workload, failure: Failure) => void;
}

export interface PassReport {
  /** Pods put into the desired state in this pass (the loop syncs them now). */
  created: string[];
  /** Pods taken out of the desired state (their deletes run in the background). */
  deleted: string[];
  /** The earliest time a controller asked to look again (ms), if any. */
  requeueAt: number | undefined;
}

export interface Controllers {
  /** Whether the last pass found workloads stored, or pods of theirs are being deleted. */
  watching(): boolean;
  /** Whether pods of theirs are being deleted. */
  deleting(): boolean;
  /** One pass; `observe` gives a pod's v1.PodStatus from the last relist (undefined: nothing of it yet). */
  pass(now: number, observe: (uid: string) => V1PodStatus | undefined): Promise<PassReport>;
  /** Deletes still running. */
  settle(): Promise<void>;
}

const OBSERVES_GENERATION = new Set<WorkloadKind>([
  "Deployment",
  "ReplicaSet",
  "ReplicationController",
  "StatefulSet",
  "DaemonSet",
  "HorizontalPodAutoscaler",
  "PodDisruptionBudget",
]);
const ORDER: WorkloadKind[] = [
  "CronJob",
  "Job",
  "Deployment",
  "ReplicaSet",
  "ReplicationController",
  "StatefulSet",
  "DaemonSet",
  "PodDisruptionBudget",
  "PersistentVolumeClaim",
];

/** What lives as long as the controllers: the options, the log, the gate, the pods being deleted. */
interface Shared {
  o: ControllersOptions;
  log: (rec: Record<string, unknown>) => void;
  gate: ReturnType<typeof createGate>;
  /** Each workload's error, logged once when it begins or changes, and its recovery. */
  report(key: string, err: string | undefined): void;
  /** Take a pod out of the desired state and delete it in the background (once). */
  deletePod(uid: string, entry: { pod: Pod; createdAt: number }, reason: string, deleted: string[]): Promise<void>;
}

/** A pod being deleted: still shown to its controller, as terminating. */
interface Terminating {
  pod: Pod;
  createdAt: number;
  done: Promise<void>;
}

/** One pass's view: the stored workloads, the pods each controls, what the pass made and deleted. */
interface PassView {
  now: number;
  ctx: ControllerContext;
  nodeKey: string;
  out: PassReport;
  stored: Map<string, StoredWorkload>;
  desired: DesiredPod[];
  /** The desired pods a controller made. */
  derived: DesiredPod[];
  /** What admission counts: every desired pod, and those this pass makes. */
  admitted: Pod[];
  add(owner: string, p: ObservedPod): void;
  podsOf(w: Workload): ObservedPod[];
  /** Every pod of the node as the controllers see it (a PodDisruptionBudget selects from all of them). */
  allPods(): ObservedPod[];
  requeue(t: number | undefined): void;
}

export function createControllers(o: ControllersOptions): Controllers {
  const log = o.log ?? (() => undefined);
  const autoscalers = createAutoscalers(o.autoscaler);
  const terminating = new Map<string, Terminating>();
  let watching = false;
  const sh: Shared = {
    o,
    log,
    gate: createGate({ limits: o.limits, admitTemplate: o.admitTemplate }),
    report: errorReporter(log),
    deletePod: podDeleter(o, log, terminating),
  };

  return {
    watching: () => watching || terminating.size > 0,
    deleting: () => terminating.size > 0,

    async settle() {
      await Promise.all([...terminating.values()].map((t) => t.done));
    },

    async pass(now, observe) {
      const p = await observePass(o, terminating, now, observe);
      // Workloads whose controller is gone go with it (a Deployment dropped from the set takes its ReplicaSets).
      const uids = () => new Set([...p.stored.values()].map((w) => w.workload.metadata.uid));
      for (const w of [...p.stored.values()])
        if (w.owner && !uids().has(w.owner.uid) && p.stored.has(workloadKey(w.workload)))
          await removeTree(sh, p, w, `its ${w.owner.kind} ${w.owner.name} is gone`);

      try {
        await refreshObjects(p.stored, p.derived, o);
        sh.report("objects", undefined);
      } catch (e) {
        sh.report("objects", String((e as Error)?.message ?? e));
      }
      // The HPAs first: a target they rescale is run by its own controller in this same pass.
      try {
        p.requeue(await autoscalers.run(now, p.stored, p.allPods, o.workloads, o.podUsage ?? (async () => new Map())));
        sh.report("HorizontalPodAutoscaler", undefined);
      } catch (e) {
        sh.report("HorizontalPodAutoscaler", String((e as Error)?.message ?? e));
      }

      for (const kind of ORDER)
        for (const w of [...p.stored.values()].filter((x) => x.workload.kind === kind)) await runOne(sh, p, w);

      watching = p.stored.size > 0;
      sh.gate.retain(new Set([...p.stored.values()].map((w) => w.workload.metadata.uid ?? "")));
      // Pods whose controller is gone (dropped from the set, deleted, retired): deleted. Claims stay.
      const live = uids();
      for (const e of p.derived) {
        const ref = controllerOf(e.pod.metadata)!;
        if (!live.has(ref.uid))
          void sh.deletePod(
            e.pod.metadata.uid,
            { pod: e.pod, createdAt: e.storedAt },
            `its ${ref.kind} ${ref.name} is gone`,
            p.out.deleted,
          );
      }
      return p.out;
    },
  };
}

function errorReporter(log: Shared["log"]): Shared["report"] {
  const errors = new Map<string, string>();
  return (key, err) => {
    const prev = errors.get(key);
    if (err === prev) return;
    if (err === undefined) {
      errors.delete(key);
      log({ event: "recovered", what: "controller", workload: key });
    } else {
      errors.set(key, err);
      log({ event: "error", what: "controller", workload: key, error: err.slice(0, 300) });
    }
  };
}

function podDeleter(
  o: ControllersOptions,
  log: Shared["log"],
  terminating: Map<string, Terminating>,
): Shared["deletePod"] {
  return (uid, entry, reason, deleted) => {
    if (terminating.has(uid)) return Promise.resolve();
    deleted.push(uid);
    const done = (async () => {
      try {
        if (!(await o.desired.remove(uid))) return;
        log({
          event: "delete",
          what: "controller",
          podUid: uid,
          pod: `${entry.pod.metadata.namespace}/${entry.pod.metadata.name}`,
          reason,
        });
        // With its spec: its preStop hooks run, and it shows as Terminating under its own name until it is gone.
        // Only while it is still out of the store (a request that put it back meanwhile is not undone).
        const current = async () => (await o.desired.get(uid)) === undefined;
        await o.runtime.delete(uid, undefined, { current }, entry.pod);
      } catch (e) {
        log({
          event: "error",
          what: "controller delete",
          podUid: uid,
          error: String((e as Error)?.message ?? e).slice(0, 300),
        });
      } finally {
        terminating.delete(uid);
      }
    })();
    terminating.set(uid, { ...entry, done });
    return done;
  };
}

/** The pass's view: the stored workloads, and the desired and terminating pods grouped by their controller. */
async function observePass(
  o: ControllersOptions,
  terminating: Map<string, Terminating>,
  now: number,
  observe: (uid: string) => V1PodStatus | undefined,
): Promise<PassView> {
  const out: PassReport = { created: [], deleted: [], requeueAt: undefined };
  const stored = new Map((await o.workloads.list()).map((w) => [workloadKey(w.workload), w]));
  const desired = await o.desired.list();
  const byOwner = new Map<string, ObservedPod[]>();
  const add = (owner: string, p: ObservedPod) => byOwner.set(owner, [...(byOwner.get(owner) ?? []), p]);
  const derived: DesiredPod[] = [];
  for (const e of desired) {
    const ref = controllerOf(e.pod.metadata);
    if (!ref) continue;
    derived.push(e);
    add(ref.uid, { pod: e.pod, status: observe(e.pod.metadata.uid), createdAt: e.storedAt });
  }
  for (const [uid, t] of terminating) {
    const ref = controllerOf(t.pod.metadata);
    if (ref) add(ref.uid, { pod: t.pod, status: observe(uid), createdAt: t.createdAt, terminating: true });
  }
  return {
    now,
    ctx: { now, nodeName: o.nodeName, suffix: o.suffix ?? (() => randomSuffix()) },
    nodeKey: nodeStateKey(desired),
    out,
    stored,
    desired,
    derived,
    admitted: desired.map((e) => e.pod),
    add,
    podsOf: (w) => byOwner.get(w.metadata.uid ?? "") ?? [],
    allPods: () => [
      ...[...byOwner.values()].flat(),
      ...desired
        .filter((e) => !controllerOf(e.pod.metadata))
        .map((e) => ({ pod: e.pod, status: observe(e.pod.metadata.uid), createdAt: e.storedAt })),
    ],
    requeue: (t) => {
      if (t !== undefined) out.requeueAt = Math.min(out.requeueAt ?? Infinity, t);
    },
  };
}

/** One workload's step under its gate's verdict, then its result applied; an error is reported, not thrown. */
async function runOne(sh: Shared, p: PassView, w: StoredWorkload): Promise<void> {
  const { o, gate } = sh;
  const key = workloadKey(w.workload);
  if (!p.stored.has(key)) return;
  try {
    const v = gate.verdict(w, p.nodeKey);
    // At most the room left on the node (plus one, for admission to refuse and say why); one pod when a
    // refusal of this template on this node state is remembered.
    // A template admission refuses as it is builds one pod (its refusal is then remembered), not the room.
    const room = Math.max(0, (o.node?.allocatable.pods ?? Infinity) - p.admitted.length) + 1;
    const tp = o.node && !v.skip && !v.refused && !v.admission ? gate.templatePod(w) : undefined;
    const first = tp && !admitPod(tp, o.node!, p.admitted).admit ? 1 : room;
    const r = v.skip
      ? { create: [], delete: [], status: { ...(w.status ?? {}) } }
      : step(w, p.stored, p.podsOf, { ...p.ctx, maxCreate: v.refused ? 0 : v.admission ? 1 : first }, o, p.allPods);
    if (r) await apply(sh, p, w, r, v);
    sh.report(key, undefined);
  } catch (e) {
    sh.report(key, String((e as Error)?.message ?? e));
  }
}

/** Remove a workload, the workloads it made and all their pods. */
async function removeTree(sh: Shared, p: PassView, w: StoredWorkload, reason: string): Promise<void> {
  const uid = w.workload.metadata.uid;
  for (const child of [...p.stored.values()].filter((c) => c.owner?.uid === uid))
    await removeTree(sh, p, child, reason);
  p.stored.delete(workloadKey(w.workload));
  await sh.o.workloads.remove(workloadKey(w.workload));
  for (const x of p.podsOf(w.workload))
    if (!x.terminating) void sh.deletePod(x.pod.metadata.uid, x, reason, p.out.deleted);
}

/** A pod the node's admission refused, for the workload's event. */
interface FirstRefusal {
  pod: Pod;
  reason: string;
  message: string;
}

/** A step's result: its pods made and deleted, its children stored and retired, its status written. */
async function apply(sh: Shared, p: PassView, w: StoredWorkload, r: ControllerResult, v: Verdict): Promise<void> {
  const gated = v.skip ?? v.refused;
  const { refused, first } = await createPods(sh, p, w, gated ? [] : r.create, v, gated?.message);
  for (const d of r.delete) {
    const x = p.podsOf(w.workload).find((y) => y.pod.metadata.uid === d.uid);
    if (x && !x.terminating) {
      void sh.deletePod(d.uid, x, d.reason, p.out.deleted);
      x.terminating = true;
    }
  }
  for (const child of r.putChildren ?? []) await putChild(sh, p, w, child);
  for (const child of r.removeChildren ?? []) {
    const c = p.stored.get(workloadKey(child));
    if (c)
      await removeTree(
        sh,
        p,
        c,
        `${w.workload.kind} ${w.workload.metadata.name} retired ${child.kind} ${child.metadata.name}`,
      );
  }
  if (r.removeSelf) {
    await removeTree(sh, p, w, `${w.workload.kind} ${w.workload.metadata.name} removed by its controller`);
    return;
  }
  await writeStatus(sh, p, w, r, gated, refused, first);
  p.requeue(r.requeueAt);
}

/** The step's pods, each through kubelet's admission and into the desired state. */
async function createPods(
  sh: Shared,
  p: PassView,
  w: StoredWorkload,
  create: Pod[],
  v: Verdict,
  gatedMessage: string | undefined,
): Promise<{ refused: string | undefined; first: FirstRefusal | undefined }> {
  const { o, gate } = sh;
  let refused = gatedMessage;
  let first: FirstRefusal | undefined;
  for (const pod of create) {
    // kubelet's admission, as for a request's pod: a pod the node cannot take is not made; the status says why
    // (the ReplicaSet controller's ReplicaFailure/FailedCreate), and the next pass tries again. The first
    // refusal stands for the rest of the workload's pods (one template, one node state): remembered (gate.ts).
    const a = v.admission
      ? { admit: false as const, ...v.admission }
      : o.node
        ? admitPod(pod, o.node, p.admitted)
        : { admit: true as const };
    if (!a.admit) {
      refused = `Pod was rejected: ${a.message}`;
      first = { pod, reason: a.reason, message: a.message };
      if (!v.admission) gate.admissionRefused(w, p.nodeKey, pod, a.reason, a.message);
      break;
    }
    gate.admitted(w);
    const entry: DesiredPod = {
      pod,
      audit: w.audit,
      storedAt: p.now,
      ...(w.objects ? { objects: w.objects } : {}),
    };
    // A put the store refuses (a late request's tombstone, a uid held by another pod) makes no pod: the status
    // below is still written from the pods that exist, with the refusal as its ReplicaFailure.
    try {
      await o.desired.put(entry);
    } catch (e) {
      refused ??= `Pod was not stored: ${String((e as Error)?.message ?? e)}`;
      continue;
    }
    p.admitted.push(pod);
    p.out.created.push(pod.metadata.uid);
    p.add(w.workload.metadata.uid!, { pod, status: undefined, createdAt: p.now });
  }
  return { refused, first };
}

/** A workload the step made (a Deployment's ReplicaSet, a CronJob's Job), stored with its owner. */
async function putChild(sh: Shared, p: PassView, w: StoredWorkload, child: Workload): Promise<void> {
  child.metadata.uid ??= derivedUid(sh.o.nodeName, child.metadata.namespace, `${child.kind}/${child.metadata.name}`);
  const key = workloadKey(child);
  const prev = p.stored.get(key);
  const generation = !prev
    ? 1
    : canonicalJSON((prev.workload as { spec?: unknown }).spec) === canonicalJSON((child as { spec?: unknown }).spec)
      ? (prev.generation ?? 1)
      : (prev.generation ?? 1) + 1;
  const entry: StoredWorkload = {
    workload: child,
    audit: w.audit,
    storedAt: prev?.storedAt ?? p.now,
    generation,
    owner: controllerRef(w.workload),
    ...(w.objects ? { objects: w.objects } : {}),
    ...(prev?.status ? { status: prev.status } : {}),
  };
  await sh.o.workloads.put(entry);
  p.stored.set(key, entry);
}

/** The step's status, with the refusal as its ReplicaFailure, recorded when it changed; the refusal's events. */
async function writeStatus(
  sh: Shared,
  p: PassView,
  w: StoredWorkload,
  r: ControllerResult,
  gated: Failure | undefined,
  refused: string | undefined,
  first: FirstRefusal | undefined,
): Promise<void> {
  const { o, log, gate } = sh;
  const prevFailure = ((w.status?.["conditions"] as Condition[] | undefined) ?? []).find(
    (c) => c.type === "ReplicaFailure",
  );
  const conditions = ((r.status["conditions"] as Condition[] | undefined) ?? []).filter(
    (c) => c.type !== "ReplicaFailure",
  );
  if (first && prevFailure?.message !== refused) o.onRefused?.(first.pod, first.reason, first.message);
  if (gate.news(w, gated)) {
    if (gated) {
      log({
        event: "refused",
        what: "workload",
        workload: workloadKey(w.workload),
        reason: gated.reason,
        message: gated.message.slice(0, 500),
      });
      o.onWorkloadRefused?.(w.workload, gated);
    } else log({ event: "admitted", what: "workload", workload: workloadKey(w.workload) });
  }
  if (refused)
    conditions.push({
      type: "ReplicaFailure",
      status: "True",
      reason: gated?.reason ?? "FailedCreate",
      message: refused,
      lastTransitionTime:
        prevFailure?.message === refused ? prevFailure.lastTransitionTime : new Date(p.now).toISOString(),
    });
  if (refused || r.status["conditions"]) r.status = { ...r.status, conditions };
  // The apps kinds say which generation of the spec their status is for (observedGeneration).
  if (OBSERVES_GENERATION.has(w.workload.kind)) r.status = { observedGeneration: w.generation ?? 1, ...r.status };
  if (canonicalJSON(r.status) !== canonicalJSON(w.status ?? null)) {
    await o.workloads.setStatus(workloadKey(w.workload), w.workload.metadata.uid!, r.status);
    const cur = p.stored.get(workloadKey(w.workload));
    if (cur) p.stored.set(workloadKey(w.workload), { ...cur, status: r.status });
  }
}

/** The ConfigMaps and Secrets a workload was last sent with reach what it made: the workloads it made (a
 * Deployment's ReplicaSets) and the pods of each. So a pod waiting for a Secret (CreateContainerConfigError,
 * FailedMount) starts once a later sync brings the Secret with its workload, as kubelet's pod starts when the
 * object appears in the API. The pod keeps its name and uid; only its objects (and audit) change. */
async function refreshObjects(
  stored: Map<string, StoredWorkload>,
  derived: DesiredPod[],
  o: ControllersOptions,
): Promise<void> {
  const same = (a: unknown, b: unknown) => canonicalJSON(a ?? null) === canonicalJSON(b ?? null);
  const byUid = new Map([...stored.values()].map((w) => [w.workload.metadata.uid, w]));
  // Owners first: a Deployment's objects reach its ReplicaSets, then their pods.
  for (const kind of ORDER)
    for (const w of [...stored.values()].filter((x) => x.workload.kind === kind && x.owner)) {
      const owner = byUid.get(w.owner!.uid);
      if (!owner || same(owner.objects, w.objects)) continue;
      const next: StoredWorkload = { ...w, objects: owner.objects, audit: owner.audit };
      await o.workloads.put(next);
      stored.set(workloadKey(w.workload), next);
      byUid.set(w.workload.metadata.uid, next);
    }
  for (const e of derived) {
    const owner = byUid.get(controllerOf(e.pod.metadata)!.uid);
    if (!owner || same(owner.objects, e.objects) || owner.audit.iat < e.audit.iat) continue;
    const { objects: _old, ...rest } = e;
    const next: DesiredPod = { ...rest, audit: owner.audit, ...(owner.objects ? { objects: owner.objects } : {}) };
    await o.desired.put(next);
    e.objects = next.objects;
  }
}

/** The stored workloads that have a scale, for the disruption controller's finders. */
function scaledControllers(stored: Map<string, StoredWorkload>): Map<string, ScaledController> {
  const out = new Map<string, ScaledController>();
  for (const s of stored.values()) {
    const w = s.workload;
    if (
      w.kind === "Deployment" ||
      w.kind === "ReplicaSet" ||
      w.kind === "ReplicationController" ||
      w.kind === "StatefulSet"
    )
      out.set(w.metadata.uid!, { uid: w.metadata.uid!, kind: w.kind, replicas: w.spec.replicas, owner: s.owner });
  }
  return out;
}

/** One workload's pure step, or undefined for a kind with nothing to run (a claim). */
function step(
  w: StoredWorkload,
  stored: Map<string, StoredWorkload>,
  podsOf: (w: Workload) => ObservedPod[],
  ctx: ControllerContext,
  o: ControllersOptions,
  allPods: () => ObservedPod[],
): ControllerResult | undefined {
  const wl = w.workload;
  switch (wl.kind) {
    case "PodDisruptionBudget":
      return emptyResult(
        pdbStatus(
          wl as PodDisruptionBudget,
          allPods(),
          scaledControllers(stored),
          w.status as PdbStatus | undefined,
          ctx,
        ),
      );
    case "ReplicaSet":
      return syncReplicaSet(wl as ReplicaSet, podsOf(wl), ctx);
    case "Deployment": {
      const views = [...stored.values()]
        .filter((c) => c.owner?.uid === wl.metadata.uid && c.workload.kind === "ReplicaSet")
        .map((c) => ({ rs: c.workload as ReplicaSet, pods: podsOf(c.workload), createdAt: c.storedAt }));
      return syncDeployment(wl as Deployment, views, w.status as DeploymentStatus | undefined, ctx);
    }
    case "CronJob": {
      const children: ChildJob[] = [...stored.values()]
        .filter((c) => c.owner?.uid === wl.metadata.uid && c.workload.kind === "Job")
        .map((c) => ({ job: c.workload as Job, status: c.status as ChildJob["status"], createdAt: c.storedAt }));
      return syncCronJob(wl as CronJob, children, w.status as CronJobStatus | undefined, w.storedAt, ctx);
    }
    case "ReplicationController":
      return syncReplicationController(wl as ReplicationController, podsOf(wl), ctx);
    case "StatefulSet":
      return syncStatefulSet(wl as StatefulSet, podsOf(wl), w.status as StatefulSetStatus | undefined, ctx);
    case "Job":
      return syncJob(wl as Job, podsOf(wl), w.status as JobStatus | undefined, ctx, o.job);
    case "DaemonSet":
      return syncDaemonSet(
        wl as DaemonSet,
        podsOf(wl),
        w.status as DaemonSetStatus | undefined,
        ctx,
        o.node ? { node: o.node } : undefined,
      );
    default:
      return undefined;
  }
}
