// Package controllers/daemon/ — the DaemonSet controller's pure step on this one node (daemon_controller.go).
// Imports ../ (the controllers' types and pods), lifecycle/ and pod/; never I/O, HTTP or the runtime.
//
// The DaemonSet controller on its one node (pkg/controller/daemon/daemon_controller.go: nodeShouldRunDaemonPod,
// manage, syncNodes; update.go rollingUpdate; util/daemonset_util.go AddOrUpdateDaemonPodTolerations): one pod
// `<name>-<5 chars>` when the node's labels and taints admit the template (nodeSelector and required node
// affinity, the NoSchedule/NoExecute taints against the tolerations with the ones every daemon pod gets), none
// otherwise, with the status saying why (podsync's condition: the DaemonSet API has no reason for a node it
// skips). Pods carry `controller-revision-hash` (ComputeHash of the template, hash.ts) and a controller reference.
// A template change replaces the pod (RollingUpdate: on one node maxUnavailable 1 means delete then create;
// OnDelete: only once the pod is gone).
import type { DaemonSet } from "../../pod/workloads/schema.js";
import type { Toleration } from "../../pod/scheduling.js";
import type { Pod } from "../../pod/schema.js";
import { derivedUid } from "../../pod/workloads/uid.js";
import { makePod } from "../../pod/workloads/template.js";
import {
  matchesNodeSelectorAndAffinity,
  NODE_AFFINITY,
  TAINT_TOLERATION,
  untoleratedTaint,
  type NodeInfo,
} from "../../lifecycle/predicates.js";
import { computeHash } from "../hash.js";
import {
  availableAt,
  controllerRef,
  generatedName,
  isActive,
  isAvailable,
  isReady,
  type ObservedPod,
} from "../pods.js";
import { setCondition, type Condition, type ControllerContext, type ControllerResult } from "../types.js";

export const CONTROLLER_REVISION_HASH = "controller-revision-hash";

export interface DaemonSetOptions {
  node: NodeInfo;
}

/** AddOrUpdateDaemonPodTolerations: what every daemon pod tolerates. */
const DAEMON_TOLERATIONS: Toleration[] = [
  { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute" },
  { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute" },
  { key: "node.kubernetes.io/disk-pressure", operator: "Exists", effect: "NoSchedule" },
  { key: "node.kubernetes.io/memory-pressure", operator: "Exists", effect: "NoSchedule" },
  { key: "node.kubernetes.io/pid-pressure", operator: "Exists", effect: "NoSchedule" },
  { key: "node.kubernetes.io/unschedulable", operator: "Exists", effect: "NoSchedule" },
];

/** Why the node runs no pod of the DaemonSet, or undefined when it should run one. */
export function whyNotHere(template: Pod, node: NodeInfo): { reason: string; message: string } | undefined {
  if (!matchesNodeSelectorAndAffinity(template, node)) return NODE_AFFINITY;
  const taint = untoleratedTaint(
    node.taints.filter((t) => t.effect !== "PreferNoSchedule"),
    [...(template.spec.tolerations ?? []), ...DAEMON_TOLERATIONS],
  );
  if (taint)
    return {
      ...TAINT_TOLERATION,
      message: `${TAINT_TOLERATION.message}: {${taint.key}${taint.value ? `=${taint.value}` : ""}:${taint.effect}}`,
    };
  return undefined;
}

export interface DaemonSetStatus {
  desiredNumberScheduled: number;
  currentNumberScheduled: number;
  updatedNumberScheduled: number;
  numberReady: number;
  numberAvailable: number;
  numberUnavailable: number;
  numberMisscheduled: number;
  conditions?: Condition[];
  [k: string]: unknown;
}

export function syncDaemonSet(
  ds: DaemonSet,
  pods: readonly ObservedPod[],
  prev: DaemonSetStatus | undefined,
  ctx: ControllerContext,
  o: DaemonSetOptions | undefined,
): ControllerResult {
  if (!o) throw new Error("the DaemonSet controller needs the node's labels and taints");
  const nowIso = new Date(ctx.now).toISOString();
  const hash = computeHash(ds.spec.template);
  const template = makePod(ds.spec.template, {
    name: ds.metadata.name,
    namespace: ds.metadata.namespace,
    uid: "template",
  });
  const why = whyNotHere(template, o.node);
  const active = pods.filter(isActive);
  const current = active.filter((p) => p.pod.metadata.labels?.[CONTROLLER_REVISION_HASH] === hash);
  const out: ControllerResult = { create: [], delete: [], status: {} };
  const del = (p: ObservedPod, reason: string) =>
    out.delete.push({ uid: p.pod.metadata.uid, name: p.pod.metadata.name, reason });
  if (why)
    for (const p of active)
      del(p, `DaemonSet ${ds.metadata.name}: this node no longer admits its pods (${why.reason})`);
  else {
    // One pod: extra ones go (newest first); an old revision goes under RollingUpdate; a missing one is made.
    const keep = current[0] ?? (ds.spec.updateStrategy.type === "OnDelete" ? active[0] : undefined);
    for (const p of active)
      if (p !== keep)
        del(
          p,
          p.pod.metadata.labels?.[CONTROLLER_REVISION_HASH] === hash
            ? `DaemonSet ${ds.metadata.name} runs one pod per node`
            : `DaemonSet ${ds.metadata.name} updated`,
        );
    if (!keep && active.length === 0 && !pods.some((p) => p.terminating)) {
      const taken = new Set(pods.map((p) => p.pod.metadata.name));
      let name: string;
      do name = generatedName(ds.metadata.name, ctx.suffix());
      while (taken.has(name));
      const t = structuredClone(ds.spec.template);
      t.spec["tolerations"] = [
        ...((t.spec["tolerations"] as Toleration[] | undefined) ?? []),
        ...DAEMON_TOLERATIONS.filter(
          (d) =>
            !((t.spec["tolerations"] as Toleration[] | undefined) ?? []).some(
              (x) => x.key === d.key && x.effect === d.effect,
            ),
        ),
      ];
      out.create.push(
        makePod(t, {
          name,
          namespace: ds.metadata.namespace,
          uid: derivedUid(ctx.nodeName, ds.metadata.namespace, name),
          labels: { [CONTROLLER_REVISION_HASH]: hash },
          ownerReferences: [controllerRef(ds)],
        }),
      );
    }
  }
  const running = active.filter((p) => !out.delete.some((d) => d.uid === p.pod.metadata.uid));
  const desired = why ? 0 : 1;
  const available = running.filter((p) => isAvailable(p, ds.spec.minReadySeconds, ctx.now)).length;
  const s: DaemonSetStatus = {
    desiredNumberScheduled: desired,
    currentNumberScheduled: why ? 0 : Math.min(1, running.length),
    updatedNumberScheduled: running.filter((p) => p.pod.metadata.labels?.[CONTROLLER_REVISION_HASH] === hash).length,
    numberReady: running.filter(isReady).length,
    numberAvailable: available,
    numberUnavailable: Math.max(0, desired - available),
    numberMisscheduled: why ? active.length : 0,
  };
  // podsync's condition: whether this node runs the DaemonSet's pod, and if not, kubelet's predicate that says why.
  s.conditions = why
    ? setCondition(
        prev?.conditions ?? [],
        { type: "NodeEligible", status: "False", reason: why.reason, message: why.message },
        nowIso,
      )
    : setCondition(
        prev?.conditions ?? [],
        {
          type: "NodeEligible",
          status: "True",
          reason: "NodeAdmitsPod",
          message: `node ${o.node.name} admits the DaemonSet's pods`,
        },
        nowIso,
      );
  out.status = s;
  const soon = running
    .map((p) => availableAt(p, ds.spec.minReadySeconds))
    .filter((t): t is number => t !== undefined && t > ctx.now);
  if (soon.length) out.requeueAt = Math.min(...soon);
  return out;
}
