// Indexed Jobs' per-index bookkeeping (pkg/controller/job/indexed_job_utils.go: calculateFailedIndexes,
// isIndexFailed, getNewIndexFailureCounts, the failure-count annotations, parseIndexesFromString and
// orderedIntervals' String; backoff_utils.go getRemainingTimePerIndex; success_policy.go matchSuccessPolicy).
// Sets of indexes are intervals (intervals.ts), as upstream keeps them: nothing is allocated per completion.
import type { Job } from "../../pod/workloads/schema.js";
import { JOB_COMPLETION_INDEX_ANNOTATION } from "../../pod/workloads/job-labels.js";
import { phaseOf, type ObservedPod } from "../pods.js";
import {
  formatIntervals,
  intervalsHas,
  intervalsOf,
  intervalsSize,
  mergeIntervals,
  parseIntervals,
  type Intervals,
} from "./intervals.js";

export const JOB_INDEX_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-failure-count";
export const JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-ignored-failure-count";

type PolicyMatch = (job: Job, p: ObservedPod) => { action: string } | undefined;

/** The pod's completion index (Indexed Jobs), from its annotation. */
export const indexOf = (p: ObservedPod): number | undefined => {
  const v = p.pod.metadata.annotations?.[JOB_COMPLETION_INDEX_ANNOTATION];
  return v !== undefined && /^[0-9]+$/.test(v) ? Number(v) : undefined;
};

const countAnnotation = (p: ObservedPod, key: string) => {
  const v = p.pod.metadata.annotations?.[key];
  return v !== undefined && /^[0-9]+$/.test(v) ? Number(v) : 0;
};
/** getIndexFailureCount: the failures of the pod's index before it (its annotation). */
export const indexFailureCount = (p: ObservedPod) => countAnnotation(p, JOB_INDEX_FAILURE_COUNT_ANNOTATION);
/** getIndexAbsoluteFailureCount: counted and ignored failures before it. */
export const indexAbsoluteFailureCount = (p: ObservedPod) =>
  indexFailureCount(p) + countAnnotation(p, JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION);

/** orderedIntervals.String of some indexes: "1,3-5". */
export const formatIndexes = (xs: Iterable<number>): string => formatIntervals(intervalsOf(xs));

/** isIndexFailed: a failed pod whose index is lost for good: a FailIndex rule matched, or (counted) its index had
 * failed backoffLimitPerIndex times before it. */
export function isIndexFailed(job: Job, p: ObservedPod, match: PolicyMatch): boolean {
  if (phaseOf(p) !== "Failed") return false;
  let counted = true;
  if (job.spec.podFailurePolicy) {
    const m = match(job, p);
    if (m?.action === "FailIndex") return true;
    counted = m?.action !== "Ignore";
  }
  return counted && indexFailureCount(p) >= job.spec.backoffLimitPerIndex!;
}

/** calculateFailedIndexes: the indexes failed before (status.failedIndexes, within completions) and those whose
 * failed pod says so now. */
export function failedIndexes(
  job: Job,
  pods: readonly ObservedPod[],
  prev: string | undefined,
  match: PolicyMatch,
): Intervals {
  const completions = job.spec.completions!;
  const now: number[] = [];
  for (const p of pods) {
    const ix = indexOf(p);
    if (ix !== undefined && ix < completions && isIndexFailed(job, p, match)) now.push(ix);
  }
  return mergeIntervals(parseIntervals(prev, completions), intervalsOf(now));
}

/** The last failed pod of each index (getPodsWithDelayedDeletionPerIndex's choice: the highest failure count, then
 * the latest to finish): the pod a new pod of the index replaces. */
export function lastFailedPerIndex(
  pods: readonly ObservedPod[],
  finishedAt: (p: ObservedPod) => number,
): Map<number, ObservedPod> {
  const out = new Map<number, ObservedPod>();
  for (const p of pods) {
    const ix = indexOf(p);
    if (ix === undefined || phaseOf(p) !== "Failed") continue;
    const cur = out.get(ix);
    if (
      !cur ||
      indexFailureCount(p) > indexFailureCount(cur) ||
      (indexFailureCount(p) === indexFailureCount(cur) && finishedAt(p) > finishedAt(cur))
    )
      out.set(ix, p);
  }
  return out;
}

/** getNewIndexFailureCounts: a new pod's counts from the failed pod it replaces (an Ignore rule's failure counts
 * as ignored). */
export function newIndexFailureCounts(
  job: Job,
  replaced: ObservedPod | undefined,
  match: PolicyMatch,
): { failures: number; ignored: number } {
  if (!replaced) return { failures: 0, ignored: 0 };
  let failures = indexFailureCount(replaced);
  let ignored = countAnnotation(replaced, JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION);
  if (job.spec.podFailurePolicy && match(job, replaced)?.action === "Ignore") ignored++;
  else failures++;
  return { failures, ignored };
}

/** matchSuccessPolicy: the first rule the succeeded indexes meet, as its message. */
export function matchSuccessPolicy(job: Job, succeeded: readonly number[]): string | undefined {
  const rules = job.spec.successPolicy?.rules;
  if (!rules || succeeded.length === 0) return undefined;
  const done = new Set(succeeded);
  for (const [i, r] of rules.entries()) {
    if (r.succeededIndexes !== undefined) {
      const required = parseIntervals(r.succeededIndexes, job.spec.completions!);
      const size = intervalsSize(required);
      if (size === 0) continue;
      // matchSucceededIndexesRule: all of the rule's indexes, or succeededCount of them.
      let contains = 0;
      for (const x of done) if (intervalsHas(required, x)) contains++;
      if (contains === size || (r.succeededCount !== undefined && contains >= r.succeededCount))
        return `Matched rules at index ${i}`;
    } else if (r.succeededCount !== undefined && done.size >= r.succeededCount) return `Matched rules at index ${i}`;
  }
  return undefined;
}
