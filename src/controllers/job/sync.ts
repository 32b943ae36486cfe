// Package controllers/job/ — the Job controller's pure step: completions, parallelism, indexes, back-off (job/).
// Imports ../ (the controllers' types and pods) and pod/workloads/; never I/O, HTTP or the runtime.
//
// The Job controller's sync on one node (pkg/controller/job/job_controller.go: syncJob, manageJob,
// pastBackoffLimitOnFailure, pastActiveDeadline, getNewFinishedPods; backoff_utils.go: the exponential
// back-off between failed pods; pod_failure_policy.go: matchPodFailurePolicy; indexed_job_utils.go: pod names
// `<job>-<index>-<5 chars>`, the completion index annotation, label and JOB_COMPLETION_INDEX, the hostname).
// Pods are `<job>-<5 chars>` with the job-name and controller-uid labels (the template's, from
// src/pod/workloads/job-labels.ts) and a controller reference. Finished pods stay (as in a cluster) until the Job
// goes, so the counts are the pods': succeeded, failed (those a podFailurePolicy Ignore rule matches left out).
//
// Indexed Jobs also have backoffLimitPerIndex, maxFailedIndexes (FailedIndexes, MaxFailedIndexesExceeded) and
// successPolicy (indexes.ts). Differences, deliberately: the Complete and Failed conditions are set in the same step
// as SuccessCriteriaMet and FailureTarget (upstream waits for the terminating pods first).
import type { Job } from "../../pod/workloads/schema.js";
import { derivedUid } from "../../pod/workloads/uid.js";
import { makePod } from "../../pod/workloads/template.js";
import { JOB_COMPLETION_INDEX_ANNOTATION, JOB_INDEX_LABEL } from "../../pod/workloads/job-labels.js";
import {
  failedIndexes,
  formatIndexes,
  indexAbsoluteFailureCount,
  indexOf,
  JOB_INDEX_FAILURE_COUNT_ANNOTATION,
  JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
  lastFailedPerIndex,
  matchSuccessPolicy,
  newIndexFailureCounts,
} from "./indexes.js";
import {
  firstPendingIndexes,
  formatIntervals,
  intervalsOf,
  intervalsSize,
  mergeIntervals,
  type Intervals,
} from "./intervals.js";
import { controllerRef, generatedName, isActive, isReady, phaseOf, type ObservedPod } from "../pods.js";
import { creatable, setCondition, type Condition, type ControllerContext, type ControllerResult } from "../types.js";

/** DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff (pkg/controller/job/job_controller.go). */
export const DEFAULT_POD_FAILURE_BACKOFF_MS = 10_000;
export const MAX_POD_FAILURE_BACKOFF_MS = 10 * 60_000;

export interface JobStatus {
  active: number;
  succeeded: number;
  failed: number;
  ready: number;
  startTime?: string;
  completionTime?: string;
  completedIndexes?: string;
  /** Indexed Jobs with backoffLimitPerIndex: the indexes failed for good ("" when none). */
  failedIndexes?: string;
  conditions: Condition[];
  [k: string]: unknown;
}

export interface JobOptions {
  /** The first back-off after a failed pod (doubles per failure since the last success). */
  podFailureBackOffMs?: number;
}

const finishedCondition = (s: JobStatus | undefined) =>
  s?.conditions.find((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");

/** When the pod's last container finished (ms), for the back-off. */
function finishedAt(p: ObservedPod): number {
  let t = 0;
  for (const c of p.status?.containerStatuses ?? []) {
    const f = c.state.terminated?.finishedAt;
    if (f) t = Math.max(t, Date.parse(f));
  }
  return t;
}

/** getRemainingTimeForFailuresCount: base * 2^(failures-1), capped, less the time since the last failure. */
export function backOffRemaining(failures: number, lastFailure: number, now: number, baseMs: number): number {
  if (failures === 0) return 0;
  let d = baseMs;
  for (let i = 1; i < failures; i++) {
    d *= 2;
    if (d >= MAX_POD_FAILURE_BACKOFF_MS) {
      d = MAX_POD_FAILURE_BACKOFF_MS;
      break;
    }
  }
  const since = now - lastFailure;
  return d < since ? 0 : d - since;
}

type PolicyAction = "FailJob" | "Ignore" | "Count" | "FailIndex";

/** matchPodFailurePolicy: the first rule that matches a failed pod, with the message FailJob gives. */
export function matchPodFailurePolicy(job: Job, p: ObservedPod): { action: PolicyAction; message: string } | undefined {
  const rules = job.spec.podFailurePolicy?.rules ?? [];
  for (const [i, r] of rules.entries()) {
    if (r.onExitCodes) {
      const ec = r.onExitCodes;
      for (const c of p.status?.containerStatuses ?? []) {
        if (ec.containerName && ec.containerName !== c.name) continue;
        const code = c.state.terminated?.exitCode;
        if (code === undefined || code === 0) continue;
        const hit = ec.operator === "In" ? ec.values.includes(code) : !ec.values.includes(code);
        if (hit)
          return {
            action: r.action,
            message: `Container ${c.name} for pod ${p.pod.metadata.namespace}/${p.pod.metadata.name} failed with exit code ${code} matching ${r.action} rule at index ${i}`,
          };
      }
    }
    if (r.onPodConditions)
      for (const pc of r.onPodConditions)
        if (
          (p.status?.conditions as { type: string; status: string }[] | undefined)?.some(
            (c) => c.type === pc.type && c.status === pc.status,
          )
        )
          return {
            action: r.action,
            message: `Pod ${p.pod.metadata.namespace}/${p.pod.metadata.name} has condition ${pc.type} matching ${r.action} rule at index ${i}`,
          };
  }
  return undefined;
}

export function syncJob(
  job: Job,
  pods: readonly ObservedPod[],
  prev: JobStatus | undefined,
  ctx: ControllerContext,
  o: JobOptions = {},
): ControllerResult {
  const nowIso = new Date(ctx.now).toISOString();
  const out: ControllerResult = { create: [], delete: [], status: {} };
  const c = countJobPods(job, pods, prev);
  const { active, succeededIndexes, succeeded, base, indexed, completions } = c;
  let failJob = c.policyFailure;
  const del = (p: ObservedPod, reason: string) =>
    out.delete.push({ uid: p.pod.metadata.uid, name: p.pod.metadata.name, reason });
  let conditions = prev?.conditions ?? [];

  // A finished Job: its remaining pods go, and it goes itself ttlSecondsAfterFinished after it finished.
  const done = finishedCondition(prev);
  if (done) {
    for (const p of active) del(p, `Job ${job.metadata.name} finished`);
    out.status = {
      ...base,
      active: 0,
      ready: 0,
      ...(prev?.completionTime ? { completionTime: prev.completionTime } : {}),
    };
    if (job.spec.ttlSecondsAfterFinished !== undefined) {
      const at = Date.parse(done.lastTransitionTime) + job.spec.ttlSecondsAfterFinished * 1000;
      if (ctx.now >= at) out.removeSelf = true;
      else out.requeueAt = at;
    }
    return out;
  }

  // Suspended: no pods; the start time is forgotten (it starts again on resume, with it the deadline).
  if (job.spec.suspend) {
    for (const p of active) del(p, `Job ${job.metadata.name} suspended`);
    conditions = setCondition(
      conditions,
      { type: "Suspended", status: "True", reason: "JobSuspended", message: "Job suspended" },
      nowIso,
    );
    const { startTime: _s, ...rest } = base;
    out.status = { ...rest, active: 0, ready: 0, conditions };
    return out;
  }
  if (conditions.some((c) => c.type === "Suspended" && c.status === "True"))
    conditions = setCondition(
      conditions,
      { type: "Suspended", status: "False", reason: "JobResumed", message: "Job resumed" },
      nowIso,
    );
  const startTime = prev?.startTime ?? nowIso;
  const start = Date.parse(startTime);

  // Failure: the pod failure policy, the back-off limit (failed pods, or restarts under OnFailure), the deadline.
  const deadline =
    job.spec.activeDeadlineSeconds !== undefined ? start + job.spec.activeDeadlineSeconds * 1000 : undefined;
  failJob ??= pastLimits(job, c, deadline, ctx.now);
  if (failJob) {
    for (const p of active) del(p, `Job ${job.metadata.name} failed: ${failJob.reason}`);
    conditions = setCondition(
      conditions,
      { type: "FailureTarget", status: "True", reason: failJob.reason, message: failJob.message },
      nowIso,
    );
    conditions = setCondition(
      conditions,
      { type: "Failed", status: "True", reason: failJob.reason, message: failJob.message },
      nowIso,
    );
    out.status = { ...base, startTime, active: 0, ready: 0, conditions };
    if (job.spec.ttlSecondsAfterFinished !== undefined)
      out.requeueAt = ctx.now + job.spec.ttlSecondsAfterFinished * 1000;
    return out;
  }

  // Success: completions reached (or, without completions, one pod succeeded and none is left running), or an
  // Indexed Job's successPolicy met (its remaining pods go).
  const policyMet = indexed ? matchSuccessPolicy(job, succeededIndexes) : undefined;
  const complete =
    policyMet !== undefined ||
    (completions === undefined ? succeeded > 0 && active.length === 0 : succeeded >= completions);
  if (complete) {
    const why =
      policyMet !== undefined
        ? { reason: "SuccessPolicy", message: policyMet }
        : { reason: "CompletionsReached", message: "Reached expected number of succeeded pods" };
    for (const p of active) del(p, `Job ${job.metadata.name} completed`);
    conditions = setCondition(conditions, { type: "SuccessCriteriaMet", status: "True", ...why }, nowIso);
    conditions = setCondition(conditions, { type: "Complete", status: "True", ...why }, nowIso);
    out.status = { ...base, startTime, active: 0, ready: 0, completionTime: nowIso, conditions };
    if (job.spec.ttlSecondsAfterFinished !== undefined)
      out.requeueAt = ctx.now + job.spec.ttlSecondsAfterFinished * 1000;
    return out;
  }

  manageJob(job, pods, c, ctx, o, out);
  if (deadline !== undefined) out.requeueAt = Math.min(out.requeueAt ?? Infinity, deadline);
  // As upstream, active counts the pods just asked for and not the ones just asked gone.
  out.status = { ...base, active: active.length + out.create.length - out.delete.length, startTime, conditions };
  return out;
}

type JobFailure = { reason: string; message: string };

/** The Job's pods counted (getNewFinishedPods): active, succeeded (per index when Indexed), failed, and the
 * status they give before this step's changes. */
interface JobCounts {
  indexed: boolean;
  completions: number | undefined;
  active: ObservedPod[];
  succeededPods: ObservedPod[];
  succeededIndexes: number[];
  failed: number;
  succeeded: number;
  /** backoffLimitPerIndex is set: the indexes failed for good, and how many. */
  perIndex: boolean;
  failedIdx: Intervals;
  failedCount: number;
  /** The first failed pod a podFailurePolicy FailJob rule matches. */
  policyFailure: JobFailure | undefined;
  base: JobStatus;
}

function countJobPods(job: Job, pods: readonly ObservedPod[], prev: JobStatus | undefined): JobCounts {
  const active = pods.filter(isActive);
  const indexed = job.spec.completionMode === "Indexed";
  const completions = job.spec.completions;
  const succeededPods = pods.filter(
    (p) => phaseOf(p) === "Succeeded" && (!indexed || (indexOf(p) ?? -1) < completions!),
  );
  const succeededIndexes = indexed ? [...new Set(succeededPods.map((p) => indexOf(p)!))] : [];
  let policyFailure: JobFailure | undefined;
  let failed = 0;
  for (const p of pods.filter((x) => phaseOf(x) === "Failed")) {
    const m = job.spec.podFailurePolicy ? matchPodFailurePolicy(job, p) : undefined;
    if (m?.action === "Ignore") continue;
    failed++;
    if (m?.action === "FailJob" && !policyFailure) policyFailure = { reason: "PodFailurePolicy", message: m.message };
  }
  const succeeded = indexed ? succeededIndexes.length : succeededPods.length;
  // backoffLimitPerIndex: each index has its own back-off limit; an index past it (or matched by a FailIndex rule)
  // is failed for good and not made again.
  const perIndex = indexed && job.spec.backoffLimitPerIndex !== undefined;
  const failedIdx: Intervals = perIndex ? failedIndexes(job, pods, prev?.failedIndexes, matchPodFailurePolicy) : [];
  const base: JobStatus = {
    active: active.length,
    succeeded,
    failed,
    ready: active.filter(isReady).length,
    conditions: prev?.conditions ?? [],
    ...(prev?.startTime ? { startTime: prev.startTime } : {}),
    ...(indexed && succeededIndexes.length ? { completedIndexes: formatIndexes(succeededIndexes) } : {}),
    ...(perIndex ? { failedIndexes: formatIntervals(failedIdx) } : {}),
  };
  return {
    indexed,
    completions,
    active,
    succeededPods,
    succeededIndexes,
    failed,
    succeeded,
    perIndex,
    failedIdx,
    failedCount: intervalsSize(failedIdx),
    policyFailure,
    base,
  };
}

/** The back-off limit (failed pods, or restarts under OnFailure: pastBackoffLimitOnFailure), the active deadline
 * (pastActiveDeadline), and an Indexed Job's failed indexes: the first one the Job is past, if any. */
function pastLimits(job: Job, c: JobCounts, deadline: number | undefined, now: number): JobFailure | undefined {
  const restarts = c.active.reduce(
    (n, p) => n + (p.status?.containerStatuses ?? []).reduce((m, s) => m + s.restartCount, 0),
    0,
  );
  const pastBackoffOnFailure =
    job.spec.template.spec["restartPolicy"] === "OnFailure" &&
    (job.spec.backoffLimit === 0 ? restarts > 0 : restarts >= job.spec.backoffLimit);
  if (c.failed > job.spec.backoffLimit || pastBackoffOnFailure)
    return { reason: "BackoffLimitExceeded", message: "Job has reached the specified backoff limit" };
  if (deadline !== undefined && now >= deadline)
    return { reason: "DeadlineExceeded", message: "Job was active longer than specified deadline" };
  if (c.perIndex) {
    if (job.spec.maxFailedIndexes !== undefined && c.failedCount > job.spec.maxFailedIndexes)
      return {
        reason: "MaxFailedIndexesExceeded",
        message: "Job has exceeded the specified maximal number of failed indexes",
      };
    if (c.failedCount > 0 && c.failedCount + c.succeededIndexes.length >= c.completions!)
      return { reason: "FailedIndexes", message: "Job has failed indexes" };
  }
  return undefined;
}

/** manageJob: as many active pods as wanted, new ones only once the back-off since the last failure is over. */
function manageJob(
  job: Job,
  pods: readonly ObservedPod[],
  c: JobCounts,
  ctx: ControllerContext,
  o: JobOptions,
  out: ControllerResult,
): void {
  const { active, succeeded, succeededPods, succeededIndexes, completions, failedIdx, perIndex, indexed } = c;
  const del = (p: ObservedPod, reason: string) =>
    out.delete.push({ uid: p.pod.metadata.uid, name: p.pod.metadata.name, reason });
  const parallelism = job.spec.parallelism;
  let want: number;
  if (completions === undefined) want = succeeded > 0 ? active.length : parallelism;
  else want = Math.max(0, Math.min(completions - succeeded, parallelism));
  if (active.length > want) {
    const extra = [...active]
      .sort((a, b) => (isReady(a) === isReady(b) ? b.createdAt - a.createdAt : isReady(a) ? 1 : -1))
      .slice(0, active.length - want);
    for (const p of extra) del(p, `Job ${job.metadata.name} has more active pods than parallelism ${parallelism}`);
  } else if (active.length < want) {
    const backOffMs = o.podFailureBackOffMs ?? DEFAULT_POD_FAILURE_BACKOFF_MS;
    // firstPendingIndexes (indexed_job_utils.go): the lowest indexes neither succeeded, active nor failed, found
    // by walking the gaps between those intervals, so a Job of 2^31-1 completions costs what its pods cost.
    const taken = new Set(pods.map((p) => p.pod.metadata.name));
    const busy = mergeIntervals(
      intervalsOf([...active.map(indexOf), ...succeededIndexes].filter((i): i is number => i !== undefined)),
      failedIdx,
    );
    if (perIndex) {
      // Without the failed ones, each after its own back-off (getRemainingTimePerIndex: the failures of the index
      // before its last failed pod, plus that one), each new pod counting its index's failures.
      const lastFailed = lastFailedPerIndex(pods, finishedAt);
      const ready = (i: number) => {
        const replaced = lastFailed.get(i);
        const remaining = replaced
          ? backOffRemaining(indexAbsoluteFailureCount(replaced) + 1, finishedAt(replaced), ctx.now, backOffMs)
          : 0;
        if (remaining > 0) out.requeueAt = Math.min(out.requeueAt ?? Infinity, ctx.now + remaining);
        return remaining === 0;
      };
      for (const i of firstPendingIndexes(busy, creatable(want - active.length, ctx), completions!, ready))
        out.create.push(
          newPod(job, i, taken, ctx, newIndexFailureCounts(job, lastFailed.get(i), matchPodFailurePolicy)),
        );
    } else {
      const lastSuccess = Math.max(0, ...succeededPods.map(finishedAt));
      const failures = pods.filter((p) => phaseOf(p) === "Failed" && finishedAt(p) > lastSuccess);
      const remaining = backOffRemaining(failures.length, Math.max(0, ...failures.map(finishedAt)), ctx.now, backOffMs);
      if (remaining > 0) out.requeueAt = ctx.now + remaining;
      else if (indexed)
        for (const i of firstPendingIndexes(busy, creatable(want - active.length, ctx), completions!))
          out.create.push(newPod(job, i, taken, ctx));
      else
        for (let i = 0; i < creatable(want - active.length, ctx); i++)
          out.create.push(newPod(job, undefined, taken, ctx));
    }
  }
}

function newPod(
  job: Job,
  index: number | undefined,
  taken: Set<string>,
  ctx: ControllerContext,
  counts?: { failures: number; ignored: number },
) {
  const base = index === undefined ? job.metadata.name : `${job.metadata.name}-${index}`;
  let name: string;
  do name = generatedName(base, ctx.suffix());
  while (taken.has(name));
  taken.add(name);
  const t = structuredClone(job.spec.template);
  if (index !== undefined) {
    // addCompletionIndexEnvVariables and the pod's hostname (indexed_job_utils.go).
    const env = {
      name: "JOB_COMPLETION_INDEX",
      valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${JOB_COMPLETION_INDEX_ANNOTATION}']` } },
    };
    for (const kind of ["initContainers", "containers"])
      for (const c of (t.spec[kind] as { env?: unknown[] }[] | undefined) ?? [])
        if (!(c.env ?? []).some((e) => (e as { name?: string }).name === "JOB_COMPLETION_INDEX"))
          c.env = [...(c.env ?? []), env];
    if (t.spec["hostname"] === undefined && base.length <= 63) t.spec["hostname"] = base;
  }
  return makePod(t, {
    name,
    namespace: job.metadata.namespace,
    uid: derivedUid(ctx.nodeName, job.metadata.namespace, name),
    ...(index !== undefined
      ? {
          labels: { [JOB_INDEX_LABEL]: String(index) },
          annotations: {
            [JOB_COMPLETION_INDEX_ANNOTATION]: String(index),
            // backoffLimitPerIndex: the index's failures so far (addIndexFailureCountAnnotation).
            ...(counts ? { [JOB_INDEX_FAILURE_COUNT_ANNOTATION]: String(counts.failures) } : {}),
            ...(counts && counts.ignored > 0
              ? { [JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION]: String(counts.ignored) }
              : {}),
          },
        }
      : {}),
    ownerReferences: [controllerRef(job)],
  });
}
