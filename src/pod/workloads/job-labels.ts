// The labels and selector the API server gives a Job (pkg/registry/batch/job/strategy.go, generateSelector),
// unless spec.manualSelector is true: the job-name and controller-uid labels on the template, and a selector on
// batch.kubernetes.io/controller-uid.
import type { JobSpec } from "./schema.js";

export const JOB_NAME_LABEL = "batch.kubernetes.io/job-name";
export const LEGACY_JOB_NAME_LABEL = "job-name";
export const CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid";
export const LEGACY_CONTROLLER_UID_LABEL = "controller-uid";
export const JOB_COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index";
export const JOB_INDEX_LABEL = "batch.kubernetes.io/job-completion-index";

/** generateSelector, in place. */
export function jobSelectorDefaults(job: {
  metadata: { name: string; uid?: string | undefined };
  spec: JobSpec;
}): void {
  if (job.spec.manualSelector === true) return;
  const uid = job.metadata.uid ?? "";
  const labels = (job.spec.template.metadata.labels ??= {});
  for (const k of [LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL]) labels[k] ??= job.metadata.name;
  for (const k of [LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL]) labels[k] ??= uid;
  const sel = (job.spec.selector ??= {});
  const ml = (sel.matchLabels ??= {});
  ml[CONTROLLER_UID_LABEL] ??= uid;
}
