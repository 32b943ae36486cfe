// What stands between a stored workload and the pods its controller makes, decided once per template and node
// state instead of once per missing replica per pass:
// - the node owner's bounds (src/pod/workloads/bounds.ts): a workload stored before a bound was lowered (the node
//   restarted with a smaller PODSYNC_MAX_PODS) is refused here: no step runs for it, it makes no pods;
// - the node owner's policy in force (Pod Security), on its template as on a pod sent directly: a template that
//   no longer passes (the node restarted at a stricter level) makes no new pods (a CronJob no new Jobs);
// - kubelet's admission of the pods it makes (lifecycle/predicates.ts): a refusal is remembered with the template
//   (the workload's generation) and the node's desired pods it was decided against, so while neither changes the
//   next passes build one pod at most and ask nothing again; when one changes, the template is admitted as a pod
//   first, and a template refused as it is builds one pod (upstream's ReplicaSet controller builds and sends each
//   missing replica on every sync; here a refused replica costs nothing). That first look only lowers how many
//   pods a step builds: each pod's own admission decides (a DaemonSet's pods carry tolerations its template lacks).
// Each workload's refusal is logged and told (an event on the workload) once per change, also after a restart.
import type { DesiredPod } from "../pleg/desired-state.js";
import type { Pod } from "../pod/schema.js";
import { workloadBoundErrors, type WorkloadLimits } from "../pod/workloads/bounds.js";
import { templateOf, type Workload } from "../pod/workloads/schema.js";
import { templatePod } from "../pod/workloads/template.js";
import type { StoredWorkload } from "./store.js";

/** Why a workload's pods are not made: a ReplicaFailure condition's reason and message. */
export interface Failure {
  reason: string;
  message: string;
}

export interface GateOptions {
  limits?: WorkloadLimits | undefined;
  /** The node owner's policy on a pod: why it is refused (`violates PodSecurity "baseline:latest": ...`), or
   * undefined when it passes. */
  admitTemplate?: ((pod: Pod) => string | undefined) | undefined;
}

export interface Verdict {
  /** The workload's step does not run (past a bound; a CronJob whose Jobs' pods the policy refuses). */
  skip?: Failure;
  /** Its template is refused: the step runs, but makes no pod. */
  refused?: Failure;
  /** kubelet's admission refused this template against this node state before: the refusal, reused. */
  admission?: { pod: Pod; reason: string; message: string };
}

/** FNV-1a 32 over the desired pods' uids and store times: the node state admission decided against. */
export function nodeStateKey(desired: readonly DesiredPod[]): string {
  let h = 0x811c9dc5;
  for (const e of desired) {
    const s = `${e.pod.metadata.uid}@${e.storedAt};`;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  }
  return `${desired.length}:${(h >>> 0).toString(16)}`;
}

export interface Gate {
  verdict(w: StoredWorkload, nodeKey: string): Verdict;
  /** kubelet's admission refused a pod of `w` against `nodeKey`: remembered until either changes. */
  admissionRefused(w: StoredWorkload, nodeKey: string, pod: Pod, reason: string, message: string): void;
  /** A pod of `w` was admitted: nothing to remember. */
  admitted(w: StoredWorkload): void;
  /** Whether `failure` is news for `w` (not yet logged and told since start-up); records it. */
  news(w: StoredWorkload, failure: Failure | undefined): boolean;
  /** Its template as a pod (cached per template), for a first look at admission before any pod is built. */
  templatePod(w: StoredWorkload): Pod | undefined;
  /** Forget workloads no longer stored. */
  retain(uids: ReadonlySet<string>): void;
}

const idOf = (w: StoredWorkload) => `${w.workload.metadata.uid}/${w.generation ?? 1}`;

export function createGate(o: GateOptions): Gate {
  const checked = new Map<string, { id: string; skip?: Failure | undefined; refused?: Failure | undefined }>();
  const admission = new Map<string, { key: string; pod: Pod; reason: string; message: string }>();
  const told = new Map<string, string>();
  const templates = new Map<string, { id: string; pod: Pod | undefined }>();

  const check = (w: StoredWorkload) => {
    const uid = w.workload.metadata.uid!;
    const prev = checked.get(uid);
    if (prev?.id === idOf(w)) return prev;
    const r: { id: string; skip?: Failure; refused?: Failure } = { id: idOf(w) };
    const bounds = o.limits ? workloadBoundErrors(w.workload, o.limits) : [];
    if (bounds.length)
      r.skip = { reason: "ExceedsNodeLimits", message: bounds.map((e) => `${e.path}: ${e.message}`).join("; ") };
    else {
      const why = policyRefusal(w.workload, o.admitTemplate);
      if (why) {
        const f = { reason: "FailedCreate", message: why };
        if (w.workload.kind === "CronJob") r.skip = f;
        else r.refused = f;
      }
    }
    checked.set(uid, r);
    return r;
  };

  return {
    verdict(w, nodeKey) {
      const { skip, refused } = check(w);
      if (skip) return { skip };
      if (refused) return { refused };
      const a = admission.get(w.workload.metadata.uid!);
      return a && a.key === `${idOf(w)}|${nodeKey}` ? { admission: a } : {};
    },
    admissionRefused(w, nodeKey, pod, reason, message) {
      admission.set(w.workload.metadata.uid!, { key: `${idOf(w)}|${nodeKey}`, pod, reason, message });
    },
    admitted(w) {
      admission.delete(w.workload.metadata.uid!);
    },
    news(w, failure) {
      const uid = w.workload.metadata.uid!;
      const msg = failure ? `${failure.reason}: ${failure.message}` : undefined;
      if (told.get(uid) === msg) return false;
      if (msg === undefined) told.delete(uid);
      else told.set(uid, msg);
      return true;
    },
    templatePod(w) {
      const uid = w.workload.metadata.uid!;
      const prev = templates.get(uid);
      if (prev?.id === idOf(w)) return prev.pod;
      const t = templateOf(w.workload);
      const tp = t ? templatePod(t, w.workload.metadata.namespace, "spec.template") : undefined;
      const pod = tp?.ok ? tp.pod : undefined;
      templates.set(uid, { id: idOf(w), pod });
      return pod;
    },
    retain(uids) {
      for (const m of [checked, admission, told, templates]) for (const k of m.keys()) if (!uids.has(k)) m.delete(k);
    },
  };
}

/** The policy's verdict on a workload's template, as on a pod sent directly (the template made a pod). */
function policyRefusal(w: Workload, admitTemplate: GateOptions["admitTemplate"]): string | undefined {
  const t = templateOf(w);
  if (!t || !admitTemplate) return undefined;
  const tp = templatePod(t, w.metadata.namespace, "spec.template");
  // A template that is no valid pod any more passed intake once; its pods fail where they are made.
  if (!tp.ok) return undefined;
  const why = admitTemplate(tp.pod);
  return why === undefined
    ? undefined
    : `pods of ${w.kind} ${w.metadata.namespace}/${w.metadata.name} are forbidden: ${why}`;
}
