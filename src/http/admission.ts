// Admission against the node owner's policy, after the signature and the schema and before any runtime
// call: a signer cannot ask for more than the node allows.
import type { Pod } from "../pod/schema.js";
import { evaluatePodSecurity, policyRefusal } from "../auth/pod-security.js";
import { formatViolations, type NodePolicy } from "../auth/policy.js";
import { ProblemError, type Problem } from "./problems.js";
import type { PodRef } from "../container/types.js";
import { admitInOrder, admitPod, type NodeInfo } from "../lifecycle/predicates.js";
import type { DesiredPod, DesiredState } from "../pleg/desired-state.js";
import { UidConflictError } from "../kuberuntime/pod-identity.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import { PodAdmissionError } from "../lifecycle/node-admission.js";
import { InvalidPodError } from "../pod/validate.js";

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

const refOf = (pod: Pod): PodRef => ({
  uid: pod.metadata.uid,
  name: pod.metadata.name,
  namespace: pod.metadata.namespace,
});

export function admit(pod: Pod, policy: NodePolicy, prefix = ""): void {
  const violations = evaluatePodSecurity(pod, policy);
  if (violations.length === 0) return;
  throw new ProblemError("policy", formatViolations(policy.level, violations), {
    level: policy.level,
    errors: violations.map((v) => ({ path: prefix + v.path, message: `${v.rule}: ${v.message}` })),
  });
}

/** kubelet's admission against the node itself (name, labels, taints, allocatable, host ports of the other
 * desired pods): a refusal carries kubelet's reason and its "Pod was rejected: ..." message (kubelet.rejectPod). */
export async function admitOnNode(
  pod: Pod,
  node: NodeInfo,
  desired: DesiredState | undefined,
  prefix = "",
): Promise<void> {
  const others = desired ? (await desired.list()).map((e) => e.pod) : [];
  const r = admitPod(pod, node, others);
  if (r.admit) return;
  throw new AdmissionRefusedError(
    `Pod was rejected: ${r.message}`,
    {
      reason: r.reason,
      errors: r.failures.map((f) => ({ path: prefix + f.path, message: `${f.reason}: ${f.message}` })),
    },
    [{ pod: refOf(pod), reason: r.reason, message: r.message }],
  );
}

/** A whole node-wide set (PUT /v1/node/pods): each pod against the ones before it, as kubelet admits pods one at a
 * time; any refusal refuses the request, naming each refused pod's fields under `<prefix><index>.`. */
export function admitSetOnNode(
  pods: readonly Pod[],
  node: NodeInfo,
  prefix = "pods",
  onNode: ReadonlySet<string> = new Set(),
): void {
  const refused = admitInOrder(pods, node, onNode);
  if (refused.length === 0) return;
  const first = refused[0]!;
  throw new AdmissionRefusedError(
    `Pod was rejected: ${first.result.message}`,
    {
      reason: first.result.reason,
      errors: refused.flatMap(({ index, result }) =>
        result.failures.map((f) => ({ path: `${prefix}[${index}].${f.path}`, message: `${f.reason}: ${f.message}` })),
      ),
    },
    refused.map(({ index, result }) => ({ pod: refOf(pods[index]!), reason: result.reason, message: result.message })),
  );
}

/** What the engine refuses before any runtime call (kubelet's sysctl and AppArmor admit handlers; subPath and
 * volumes a deployment without the node filesystem cannot honour), checked before a pod is stored, so a pod
 * the node cannot run never enters the desired state. Field paths under `prefix`. A workload's template is no
 * pod sent to the node (`template`): its refusal names no pod. */
export function admitOnRuntime(rt: Pick<PodRuntime, "admit">, pod: Pod, prefix = "", template = false): void {
  try {
    rt.admit(pod);
  } catch (e) {
    if (e instanceof PodAdmissionError) {
      const first = e.failures[0]!;
      throw new AdmissionRefusedError(
        `Pod was rejected: ${e.message}`,
        {
          reason: first.reason,
          errors: e.failures.map((f) => ({ path: prefix + f.path, message: `${f.reason}: ${f.message}` })),
        },
        template ? [] : [{ pod: refOf(pod), reason: first.reason, message: first.message }],
      );
    }
    if (e instanceof InvalidPodError) throw new InvalidPodError(e.errors.map((x) => ({ ...x, path: prefix + x.path })));
    throw e;
  }
}

/** What the controllers hold each template to, as a pod sent directly is held (src/controllers/gate.ts): the node
 * owner's policy, then the runtime's refusals (kubelet's sysctl and AppArmor admit handlers). Why it is refused, in
 * the words a request would get, or undefined. */
export function templateRefusal(policy: NodePolicy, rt: Pick<PodRuntime, "admit">): (pod: Pod) => string | undefined {
  const pss = policyRefusal(policy);
  return (pod) => {
    const why = pss(pod);
    if (why !== undefined) return why;
    try {
      admitOnRuntime(rt, pod, "", true);
      return undefined;
    } catch (e) {
      if (e instanceof ProblemError || e instanceof InvalidPodError) return e.message;
      throw e;
    }
  };
}

/** One uid is one pod (kuberuntime/pod-identity.ts), checked against the runtime before the store changes, so
 * a refusal (409 uid-conflict, naming the item when there is a path) leaves the node as it was. A pod the store
 * already holds under its uid with the same namespace/name passed this check when it was stored: no call for
 * it (a converged re-sync costs nothing more); sync checks again under the pod's lock. Returns the CRI calls. */
export async function checkUidsOnRuntime(
  rt: Pick<PodRuntime, "checkUids">,
  items: readonly { pod: Pod; at?: string }[],
  stored: (uid: string) => Promise<DesiredPod | undefined> | DesiredPod | undefined,
): Promise<number> {
  const unchecked: { pod: Pod; at?: string }[] = [];
  for (const it of items) {
    const m = (await stored(it.pod.metadata.uid))?.pod.metadata;
    if (!m || m.name !== it.pod.metadata.name || m.namespace !== it.pod.metadata.namespace) unchecked.push(it);
  }
  if (unchecked.length === 0) return 0;
  try {
    return (await rt.checkUids(unchecked.map((it) => it.pod))).criCalls;
  } catch (e) {
    throw uidConflictAt(e, unchecked);
  }
}

/** A UidConflictError as 409 uid-conflict naming the item (`<at>.metadata.uid`) of the pod it refused; any other
 * error as it is. */
export function uidConflictAt(e: unknown, items: readonly { pod: Pod; at?: string }[]): unknown {
  if (!(e instanceof UidConflictError)) return e;
  const at = items.find((it) => it.pod.metadata.uid === e.pod.uid)?.at;
  if (at === undefined) return e;
  const path = `${at}.metadata.uid`;
  return new ProblemError("uid-conflict", `${path}: ${e.message}`, {
    holder: e.holder,
    errors: [{ path, message: e.message }],
  });
}
