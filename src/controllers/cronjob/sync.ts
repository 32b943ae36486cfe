// Package controllers/cronjob/ — the CronJob controller's pure step (cronjob_controllerv2.go).
// Imports ../ (the controllers' types and pods) and pod/workloads/; never I/O, HTTP or the runtime.
//
// The CronJob controller on the node's clock (pkg/controller/cronjob/cronjob_controllerv2.go syncCronJob; utils.go
// mostRecentScheduleTime, nextScheduleTime, getJobFromTemplate2, getTimeHashInMinutes): Jobs
// `<name>-<scheduled time in minutes since the epoch>`, made from the jobTemplate with a controller reference and the
// cronjob-scheduled-timestamp annotation. At most one Job per pass: the most recent schedule time not yet run, and
// only within startingDeadlineSeconds, so a node back after a restart or an outage runs the last missed time once,
// never a burst. concurrencyPolicy Allow, Forbid (skip while one runs) and Replace (the running ones go); suspend;
// the history limits (finished Jobs beyond them are removed, oldest first). lastScheduleTime is in the status the
// node stores.
import type { CronJob, Job } from "../../pod/workloads/schema.js";
import { derivedUid } from "../../pod/workloads/uid.js";
import { jobSelectorDefaults } from "../../pod/workloads/job-labels.js";
import { nextAfter, parseSchedule, type Schedule } from "../../pod/workloads/cron.js";
import type { ControllerContext, ControllerResult, Condition } from "../types.js";

export const SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp";

export interface CronJobStatus {
  active?: { apiVersion: string; kind: string; name: string; namespace: string; uid: string }[];
  lastScheduleTime?: string;
  lastSuccessfulTime?: string;
  [k: string]: unknown;
}

export interface ChildJob {
  job: Job;
  status: { conditions?: Condition[]; startTime?: string; completionTime?: string } | undefined;
  /** When it was stored. */
  createdAt: number;
}

export type MissedSchedules = "none" | "few" | "many";

/** utils.go mostRecentScheduleTime, as upstream computes it (including its approximation for irregular schedules):
 * the latest schedule time at or before `now` after the earliest time (the last schedule time, or the CronJob's
 * creation; with `includeStartingDeadline`, no earlier than startingDeadlineSeconds ago), and how many were
 * missed. Throws for a schedule that never fires (30 February). */
export function mostRecentScheduleTime(
  s: Schedule,
  o: { created: number; lastScheduleTime?: number | undefined; startingDeadlineSeconds?: number | undefined },
  now: number,
  includeStartingDeadline: boolean,
): { earliest: number; mostRecent: number | undefined; missed: MissedSchedules } {
  let earliest = o.lastScheduleTime ?? o.created;
  if (includeStartingDeadline && o.startingDeadlineSeconds !== undefined)
    earliest = Math.max(earliest, now - o.startingDeadlineSeconds * 1000);
  const t1 = nextAfter(s, earliest);
  const t2 = t1 === undefined ? undefined : nextAfter(s, t1);
  if (t1 === undefined || t2 === undefined)
    throw new Error("time difference between two schedules is less than 1 second");
  if (now < t1) return { earliest, mostRecent: undefined, missed: "none" };
  if (now < t2) return { earliest, mostRecent: t1, missed: "none" };
  const between = Math.round((t2 - t1) / 1000);
  const elapsed = Math.trunc((now - t1) / 1000);
  const missedCount = Math.trunc(elapsed / between) + 1;
  let mostRecent: number | undefined;
  for (let t = nextAfter(s, t1 + (missedCount - 2) * between * 1000); t !== undefined && t <= now; t = nextAfter(s, t))
    mostRecent = t;
  return { earliest, mostRecent, missed: missedCount > 100 ? "many" : missedCount > 0 ? "few" : "none" };
}

const finished = (c: ChildJob) =>
  c.status?.conditions?.find((x) => (x.type === "Complete" || x.type === "Failed") && x.status === "True");

/** The Job name for a schedule time (getJobName: minutes since the epoch). */
export const jobName = (cj: CronJob, scheduled: number) => `${cj.metadata.name}-${Math.floor(scheduled / 60_000)}`;

export function syncCronJob(
  cj: CronJob,
  children: readonly ChildJob[],
  prev: CronJobStatus | undefined,
  createdAt: number,
  ctx: ControllerContext,
): ControllerResult {
  const out: ControllerResult = { create: [], delete: [], status: {}, putChildren: [], removeChildren: [] };
  const status: CronJobStatus = { ...(prev ?? {}) };
  const running = children.filter((c) => !finished(c));
  for (const c of children) {
    const f = finished(c);
    if (
      f?.type === "Complete" &&
      c.status?.completionTime &&
      (!status.lastSuccessfulTime || c.status.completionTime > status.lastSuccessfulTime)
    )
      status.lastSuccessfulTime = c.status.completionTime;
  }
  // cleanupFinishedJobs: the history limits, oldest first.
  for (const [type, limit] of [
    ["Complete", cj.spec.successfulJobsHistoryLimit],
    ["Failed", cj.spec.failedJobsHistoryLimit],
  ] as const) {
    const done = children
      .filter((c) => finished(c)?.type === type)
      .sort(
        (a, b) => (a.status?.startTime ?? "").localeCompare(b.status?.startTime ?? "") || a.createdAt - b.createdAt,
      );
    for (const c of done.slice(0, Math.max(0, done.length - limit))) out.removeChildren!.push(c.job);
  }
  const activeRefs = (jobs: readonly Job[]) =>
    jobs.map((j) => ({
      apiVersion: "batch/v1",
      kind: "Job",
      name: j.metadata.name,
      namespace: j.metadata.namespace,
      uid: j.metadata.uid ?? "",
    }));
  let active = running.map((c) => c.job);
  const done = () => {
    const refs = activeRefs(active);
    const { active: _a, ...rest } = status;
    out.status = refs.length ? { ...rest, active: refs } : rest;
    return out;
  };
  if (cj.spec.suspend) return done();
  const sched = parseSchedule(cj.spec.schedule, cj.spec.timeZone);
  if (typeof sched === "string") throw new Error(`spec.schedule: ${sched}`);
  const { mostRecent } = mostRecentScheduleTime(
    sched,
    {
      created: createdAt,
      lastScheduleTime: status.lastScheduleTime ? Date.parse(status.lastScheduleTime) : undefined,
      startingDeadlineSeconds: cj.spec.startingDeadlineSeconds,
    },
    ctx.now,
    true,
  );
  const next = nextAfter(sched, ctx.now);
  if (next !== undefined) out.requeueAt = next;
  if (mostRecent === undefined) return done();
  const name = jobName(cj, mostRecent);
  // Already made for that time (its Job still there, or recorded as the last schedule time).
  if (
    children.some((c) => c.job.metadata.name === name) ||
    (status.lastScheduleTime && Date.parse(status.lastScheduleTime) === mostRecent)
  )
    return done();
  if (cj.spec.concurrencyPolicy === "Forbid" && running.length > 0) return done();
  if (cj.spec.concurrencyPolicy === "Replace") {
    for (const c of running) out.removeChildren!.push(c.job);
    active = [];
  }
  const uid = derivedUid(ctx.nodeName, cj.metadata.namespace, `Job/${name}`);
  const tmpl = cj.spec.jobTemplate;
  const job: Job = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name,
      namespace: cj.metadata.namespace,
      uid,
      ...(tmpl.metadata.labels ? { labels: { ...tmpl.metadata.labels } } : {}),
      annotations: {
        ...(tmpl.metadata.annotations ?? {}),
        [SCHEDULED_TIMESTAMP_ANNOTATION]: new Date(mostRecent).toISOString().replace(/\.000Z$/, "Z"),
      },
    },
    spec: structuredClone(tmpl.spec),
    status: undefined,
  };
  jobSelectorDefaults(job);
  out.putChildren!.push(job);
  active = [...active, job];
  status.lastScheduleTime = new Date(mostRecent).toISOString().replace(/\.000Z$/, "Z");
  return done();
}
