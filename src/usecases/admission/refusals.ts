// The refusals of the admission pipeline, each in the words and status the routes have always answered with:
// 403 `policy` (the node owner's policy), 422 (probes a deployment cannot run, fields the runtime cannot honour),
// 403 `admission` with kubelet's reason and its "Pod was rejected: ..." message (kubelet.rejectPod).
import { formatViolations, type NodePolicy, type Violation } from "../../auth/policy.js";
import type { PodRef } from "../../container/types.js";
import type { AdmissionFailure } from "../../lifecycle/predicates.js";
import { PodAdmissionError } from "../../lifecycle/node-admission.js";
import type { Pod } from "../../pod/schema.js";
import { InvalidPodError } from "../../pod/validate.js";
import { ProblemError, type Problem } from "../problems.js";

/** A pod kubelet's admission refused, with kubelet's reason and message (the event kubelet.rejectPod records). */
export interface RefusedPod {
  pod: PodRef;
  reason: string;
  message: string;
}

/** 403 admission: the node refused these pods (the problem names their fields; `refused` is for the events). */
export class AdmissionRefusedError extends ProblemError {
  constructor(
    detail: string,
    extra: Partial<Problem>,
    readonly refused: RefusedPod[],
  ) {
    super("admission", detail, extra);
  }
}

export const refOf = (pod: Pod): PodRef => ({
  uid: pod.metadata.uid,
  name: pod.metadata.name,
  namespace: pod.metadata.namespace,
});

/** 403 policy: the pod asks for more than the node owner's policy allows. */
export function policyError(policy: NodePolicy, violations: readonly Violation[], prefix: string): ProblemError {
  return new ProblemError("policy", formatViolations(policy.level, violations), {
    level: policy.level,
    errors: violations.map((v) => ({ path: prefix + v.path, message: `${v.rule}: ${v.message}` })),
  });
}

/** 403 admission for failed predicates (`failures`, the first one kubelet's reason), fields under `pathOf`. */
export function predicateError(
  first: { reason: string; message: string },
  failures: readonly { f: AdmissionFailure; path: string }[],
  refused: RefusedPod[],
): AdmissionRefusedError {
  return new AdmissionRefusedError(
    `Pod was rejected: ${first.message}`,
    { reason: first.reason, errors: failures.map(({ f, path }) => ({ path, message: `${f.reason}: ${f.message}` })) },
    refused,
  );
}

/** What the runtime's admit threw (kubelet's sysctl and AppArmor admit handlers, a deployment's missing node
 * filesystem), as the request's refusal with field paths under `prefix`; a template's refusal names no pod. */
export function runtimeRefusal(e: unknown, pod: Pod, prefix: string, template: boolean): unknown {
  if (e instanceof PodAdmissionError) {
    const first = e.failures[0]!;
    return new AdmissionRefusedError(
      `Pod was rejected: ${e.message}`,
      {
        reason: first.reason,
        errors: e.failures.map((f) => ({ path: prefix + f.path, message: `${f.reason}: ${f.message}` })),
      },
      template ? [] : [{ pod: refOf(pod), reason: first.reason, message: first.message }],
    );
  }
  if (e instanceof InvalidPodError) return new InvalidPodError(e.errors.map((x) => ({ ...x, path: prefix + x.path })));
  return e;
}
