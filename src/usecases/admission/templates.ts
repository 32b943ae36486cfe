// Workload templates through the admission pipeline: a body's templates (each as a pod sent to the node would be,
// its fields named under the workload's path), and the controllers' gate's verdict on a template in words.
import type { NodePolicy } from "../../auth/policy.js";
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import type { Pod } from "../../pod/schema.js";
import type { WorkloadItem } from "../../pod/workloads/intake.js";
import { type Admission, createAdmission } from "./admission.js";

/** The checks a pod gets, on each workload's template: the policy, the probe handlers, the runtime's refusals. */
export function admitWorkloads(items: readonly WorkloadItem[], admission: Admission): void {
  admission.admit(
    items.flatMap((w) => (w.template ? [{ pod: w.template.pod, prefix: `${w.template.at}.`, template: true }] : [])),
  );
}

/** What the controllers hold each template to, as a pod sent directly is held (src/controllers/gate.ts): the node
 * owner's policy, then the runtime's refusals (kubelet's sysctl and AppArmor admit handlers). Why it is refused, in
 * the words a request would get, or undefined. */
export function templateRefusal(policy: NodePolicy, rt: Pick<PodRuntime, "admit">): (pod: Pod) => string | undefined {
  const admission = createAdmission({ policy, runtime: rt });
  return (pod) => {
    const r = admission.check([{ pod, template: true }], { probesChecked: true });
    return r.admitted ? undefined : r.error.message;
  };
}
