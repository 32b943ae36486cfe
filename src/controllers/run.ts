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
import type { PodRuntime } from "../kuberuntime/runtime.js";
import { whileAbsent, type DesiredPod, type DesiredState } from "../pleg/desired-state.js";
import type { V1PodStatus } from "../status/api-status.js";
import { canonicalJSON } from "../container/hash.js";
import type { Pod } from "../pod/schema.js";
import type {
  CronJob,
  DaemonSet,
  Deployment,
  Job,
  ReplicaSet,
  StatefulSet,
  Workload,
  WorkloadKind,
} from "../pod/workloads/schema.js";
import { derivedUid } from "../pod/workloads/uid.js";
import { controllerOf, controllerRef, randomSuffix, type ObservedPod } from "./pods.js";
import { workloadKey, type StoredWorkload, type WorkloadStore } from "./store.js";
import type { Condition, ControllerContext, ControllerResult } from "./types.js";
import { syncReplicaSet } from "./replicaset/sync.js";
import { syncDeployment, type DeploymentStatus } from "./deployment/sync.js";
import { syncJob, type JobOptions, type JobStatus } from "./job/sync.js";
import { syncCronJob, type ChildJob, type CronJobStatus } from "./cronjob/sync.js";
import { syncStatefulSet, type StatefulSetStatus } from "./statefulset/sync.js";
import { syncDaemonSet, type DaemonSetStatus } from "./daemon/sync.js";
import { admitPod, type NodeInfo } from "../lifecycle/predicates.js";

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
  /** A pod the node's admission refused (kubelet's rejectPod records an event on it): called when a workload's
   * refusal begins or changes, not on every pass that tries again. */
  onRefused?: (pod: Pod, reason: string, message: string) => void;
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
  /** Whether the last pass found workloads stored. */
  watching(): boolean;
  /** One pass; `observe` gives a pod's v1.PodStatus from the last relist (undefined: nothing of it yet). */
  pass(now: number, observe: (uid: string) => V1PodStatus | undefined): Promise<PassReport>;
  /** Deletes still running. */
  settle(): Promise<void>;
}

const OBSERVES_GENERATION = new Set<WorkloadKind>(["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"]);
const ORDER: WorkloadKind[] = [
  "CronJob",
  "Job",
  "Deployment",
  "ReplicaSet",
  "StatefulSet",
  "DaemonSet",
  "PersistentVolumeClaim",
];

export function createControllers(o: ControllersOptions): Controllers {
  const log = o.log ?? (() => undefined);
  const errors = new Map<string, string>();
  /** Pods being deleted: still shown to their controller, as terminating. */
  const terminating = new Map<string, { pod: Pod; createdAt: number; done: Promise<void> }>();
  let watching = false;

  const report = (key: string, err: string | undefined) => {
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

  function deletePod(uid: string, entry: { pod: Pod; createdAt: number }, reason: string, deleted: string[]) {
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
        await o.runtime.delete(uid, undefined, whileAbsent(o.desired, uid), entry.pod);
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
  }

  return {
    watching: () => watching || terminating.size > 0,

    async settle() {
      await Promise.all([...terminating.values()].map((t) => t.done));
    },

    async pass(now, observe) {
      const out: PassReport = { created: [], deleted: [], requeueAt: undefined };
      const ctx: ControllerContext = { now, nodeName: o.nodeName, suffix: o.suffix ?? (() => randomSuffix()) };
      const stored = new Map((await o.workloads.list()).map((w) => [workloadKey(w.workload), w]));
      const desired = await o.desired.list();
      /** What admission counts: every desired pod, and those this pass makes. */
      const admitted = desired.map((e) => e.pod);
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
      const podsOf = (w: Workload) => byOwner.get(w.metadata.uid ?? "") ?? [];
      const requeue = (t: number | undefined) => {
        if (t !== undefined) out.requeueAt = Math.min(out.requeueAt ?? Infinity, t);
      };

      /** Remove a workload, the workloads it made and all their pods. */
      const removeTree = async (w: StoredWorkload, reason: string) => {
        const uid = w.workload.metadata.uid;
        for (const child of [...stored.values()].filter((c) => c.owner?.uid === uid)) await removeTree(child, reason);
        stored.delete(workloadKey(w.workload));
        await o.workloads.remove(workloadKey(w.workload));
        for (const p of podsOf(w.workload))
          if (!p.terminating) void deletePod(p.pod.metadata.uid, p, reason, out.deleted);
      };

      const apply = async (w: StoredWorkload, r: ControllerResult) => {
        let refused: string | undefined;
        let first: { pod: Pod; reason: string; message: string } | undefined;
        for (const pod of r.create) {
          // kubelet's admission, as for a request's pod: a pod the node cannot take is not made; the status says why
          // (the ReplicaSet controller's ReplicaFailure/FailedCreate), and the next pass tries again.
          const a = o.node ? admitPod(pod, o.node, admitted) : { admit: true as const };
          if (!a.admit) {
            refused ??= `Pod was rejected: ${a.message}`;
            first ??= { pod, reason: a.reason, message: a.message };
            continue;
          }
          const entry: DesiredPod = {
            pod,
            audit: w.audit,
            storedAt: now,
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
          admitted.push(pod);
          out.created.push(pod.metadata.uid);
          add(w.workload.metadata.uid!, { pod, status: undefined, createdAt: now });
        }
        for (const d of r.delete) {
          const p = podsOf(w.workload).find((x) => x.pod.metadata.uid === d.uid);
          if (p && !p.terminating) {
            void deletePod(d.uid, p, d.reason, out.deleted);
            p.terminating = true;
          }
        }
        for (const child of r.putChildren ?? []) {
          child.metadata.uid ??= derivedUid(
            o.nodeName,
            child.metadata.namespace,
            `${child.kind}/${child.metadata.name}`,
          );
          const key = workloadKey(child);
          const prev = stored.get(key);
          const generation = !prev
            ? 1
            : canonicalJSON((prev.workload as { spec?: unknown }).spec) ===
                canonicalJSON((child as { spec?: unknown }).spec)
              ? (prev.generation ?? 1)
              : (prev.generation ?? 1) + 1;
          const entry: StoredWorkload = {
            workload: child,
            audit: w.audit,
            storedAt: prev?.storedAt ?? now,
            generation,
            owner: controllerRef(w.workload),
            ...(w.objects ? { objects: w.objects } : {}),
            ...(prev?.status ? { status: prev.status } : {}),
          };
          await o.workloads.put(entry);
          stored.set(key, entry);
        }
        for (const child of r.removeChildren ?? []) {
          const c = stored.get(workloadKey(child));
          if (c)
            await removeTree(
              c,
              `${w.workload.kind} ${w.workload.metadata.name} retired ${child.kind} ${child.metadata.name}`,
            );
        }
        if (r.removeSelf) {
          await removeTree(w, `${w.workload.kind} ${w.workload.metadata.name} removed by its controller`);
          return;
        }
        const prevFailure = ((w.status?.["conditions"] as Condition[] | undefined) ?? []).find(
          (c) => c.type === "ReplicaFailure",
        );
        const conditions = ((r.status["conditions"] as Condition[] | undefined) ?? []).filter(
          (c) => c.type !== "ReplicaFailure",
        );
        if (first && prevFailure?.message !== refused) o.onRefused?.(first.pod, first.reason, first.message);
        if (refused)
          conditions.push({
            type: "ReplicaFailure",
            status: "True",
            reason: "FailedCreate",
            message: refused,
            lastTransitionTime:
              prevFailure?.message === refused ? prevFailure.lastTransitionTime : new Date(now).toISOString(),
          });
        if (refused || r.status["conditions"]) r.status = { ...r.status, conditions };
        // The apps kinds say which generation of the spec their status is for (observedGeneration).
        if (OBSERVES_GENERATION.has(w.workload.kind)) r.status = { observedGeneration: w.generation ?? 1, ...r.status };
        if (canonicalJSON(r.status) !== canonicalJSON(w.status ?? null)) {
          await o.workloads.setStatus(workloadKey(w.workload), w.workload.metadata.uid!, r.status);
          const cur = stored.get(workloadKey(w.workload));
          if (cur) stored.set(workloadKey(w.workload), { ...cur, status: r.status });
        }
        requeue(r.requeueAt);
      };

      // Workloads whose controller is gone go with it (a Deployment dropped from the set takes its ReplicaSets).
      const uids = () => new Set([...stored.values()].map((w) => w.workload.metadata.uid));
      for (const w of [...stored.values()])
        if (w.owner && !uids().has(w.owner.uid) && stored.has(workloadKey(w.workload)))
          await removeTree(w, `its ${w.owner.kind} ${w.owner.name} is gone`);

      for (const kind of ORDER) {
        for (const w of [...stored.values()].filter((x) => x.workload.kind === kind)) {
          const key = workloadKey(w.workload);
          if (!stored.has(key)) continue;
          try {
            const r = step(w, stored, podsOf, ctx, o);
            if (r) await apply(w, r);
            report(key, undefined);
          } catch (e) {
            report(key, String((e as Error)?.message ?? e));
          }
        }
      }

      watching = stored.size > 0;
      // Pods whose controller is gone (dropped from the set, deleted, retired): deleted. Claims stay.
      const live = uids();
      for (const e of derived) {
        const ref = controllerOf(e.pod.metadata)!;
        if (!live.has(ref.uid))
          void deletePod(
            e.pod.metadata.uid,
            { pod: e.pod, createdAt: e.storedAt },
            `its ${ref.kind} ${ref.name} is gone`,
            out.deleted,
          );
      }
      return out;
    },
  };
}

/** One workload's pure step, or undefined for a kind with nothing to run (a claim). */
function step(
  w: StoredWorkload,
  stored: Map<string, StoredWorkload>,
  podsOf: (w: Workload) => ObservedPod[],
  ctx: ControllerContext,
  o: ControllersOptions,
): ControllerResult | undefined {
  const wl = w.workload;
  switch (wl.kind) {
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
