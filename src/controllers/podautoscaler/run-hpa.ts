// The HPAs' part of a controllers' pass: each HorizontalPodAutoscaler whose sync period is due
// (--horizontal-pod-autoscaler-sync-period, 15 s) reads its target's scale (the stored workload's spec.replicas)
// and pods (its selector's, as the scale subresource's status.selector selects them), the pods' usage from the
// runtime (one ListContainerStats for the pass: metrics.ts), runs reconcileHpa and, when it rescales, stores the
// target with the new replicas (the scale subresource's write, a new generation) before the target's own
// controller runs in the same pass. Recommendations and scale events live in memory, as in
// kube-controller-manager.
import { canonicalJSON } from "../../util/canonical-json.js";
import type { HorizontalPodAutoscaler, Workload } from "../../pod/workloads/schema.js";
import { selectorMatches, type LabelSelector } from "../../pod/workloads/selector.js";
import type { ObservedPod } from "../pods.js";
import { workloadKey, type StoredWorkload, type WorkloadStore } from "../store.js";
import { DEFAULT_CALCULATOR } from "./replica-calculator.js";
import {
  emptyMemory,
  reconcileHpa,
  type HpaMemory,
  type HpaOptions,
  type HpaStatus,
  type PodUsage,
} from "./horizontal.js";

export interface AutoscalerOptions extends HpaOptions {
  /** --horizontal-pod-autoscaler-sync-period (ms). */
  syncPeriodMs: number;
}

export const DEFAULT_AUTOSCALER: AutoscalerOptions = {
  ...DEFAULT_CALCULATOR,
  downscaleStabilisationWindowMs: 5 * 60_000,
  syncPeriodMs: 15_000,
};

type Scalable = Extract<Workload, { kind: "Deployment" | "ReplicaSet" | "ReplicationController" | "StatefulSet" }>;

/** The selector of a target's scale subresource. */
function scaleSelector(w: Scalable): LabelSelector {
  return w.kind === "ReplicationController" ? { matchLabels: w.spec.selector } : w.spec.selector;
}

export interface Autoscalers {
  /** Run the HPAs that are due; returns when the next one is due (ms), if any HPA is stored. */
  run(
    now: number,
    stored: Map<string, StoredWorkload>,
    allPods: () => ObservedPod[],
    store: WorkloadStore,
    usage: () => Promise<PodUsage>,
  ): Promise<number | undefined>;
}

export function createAutoscalers(o: Partial<AutoscalerOptions> = {}): Autoscalers {
  const opts: AutoscalerOptions = { ...DEFAULT_AUTOSCALER, ...o };
  const memory = new Map<string, HpaMemory>();
  const lastRun = new Map<string, number>();
  return {
    async run(now, stored, allPods, store, usage) {
      const hpas = [...stored.values()].filter((s) => s.workload.kind === "HorizontalPodAutoscaler");
      const live = new Set(hpas.map((h) => h.workload.metadata.uid));
      for (const uid of [...memory.keys()]) if (!live.has(uid)) memory.delete(uid);
      for (const uid of [...lastRun.keys()]) if (!live.has(uid)) lastRun.delete(uid);
      let next: number | undefined;
      let measured: PodUsage | undefined;
      for (const s of hpas) {
        const hpa = s.workload as HorizontalPodAutoscaler;
        const uid = hpa.metadata.uid!;
        const due = (lastRun.get(uid) ?? -Infinity) + opts.syncPeriodMs;
        if (due > now) {
          next = Math.min(next ?? Infinity, due);
          continue;
        }
        lastRun.set(uid, now);
        next = Math.min(next ?? Infinity, now + opts.syncPeriodMs);
        const ref = hpa.spec.scaleTargetRef;
        const key = workloadKey({ kind: ref.kind, metadata: { namespace: hpa.metadata.namespace, name: ref.name } });
        const target = stored.get(key);
        const scalable = target?.workload as Scalable | undefined;
        const sel = scalable ? scaleSelector(scalable) : undefined;
        const pods = sel
          ? allPods().filter(
              (p) => p.pod.metadata.namespace === hpa.metadata.namespace && selectorMatches(sel, p.pod.metadata.labels),
            )
          : [];
        measured ??= pods.length ? await usage() : new Map();
        if (!memory.has(uid)) memory.set(uid, emptyMemory());
        const r = reconcileHpa(
          {
            hpa,
            targetReplicas: scalable?.spec.replicas,
            pods,
            usage: measured,
            prev: s.status as HpaStatus | undefined,
            memory: memory.get(uid)!,
            now,
          },
          opts,
        );
        if (r.scaleTo !== undefined && target && scalable) {
          const scaled = { ...scalable, spec: { ...scalable.spec, replicas: r.scaleTo } } as Workload;
          const entry: StoredWorkload = { ...target, workload: scaled, generation: (target.generation ?? 1) + 1 };
          await store.put(entry);
          stored.set(key, entry);
        }
        const status = { observedGeneration: s.generation ?? 1, ...r.status };
        if (canonicalJSON(status) !== canonicalJSON(s.status ?? null)) {
          await store.setStatus(workloadKey(hpa), uid, status);
          stored.set(workloadKey(hpa), { ...s, status });
        }
      }
      return next;
    },
  };
}
