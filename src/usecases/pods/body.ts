// The checks of a sync or plan body before anything is stored or acts, in the order the routes have always run
// them: the workloads (no store here, the templates through admission, the node's workload bound), the Services'
// addresses, then the pod through the admission pipeline. Its node stage is left for the node's store step.
import type { VerifiedToken } from "../../auth/verify.js";
import type { SetMember } from "../../pod/bundle.js";
import type { WorkloadItem } from "../../pod/workloads/intake.js";
import type { NodeStage } from "../admission/admission.js";
import type { NodePorts } from "../ports.js";
import { allocateBodyServices } from "../workloads/services.js";
import { checkWorkloadCount, checkWorkloads } from "../workloads/sync.js";

/** A verified sync or plan body: at most one pod (with its objects), workloads, the token. */
export interface PodBody {
  pods: readonly SetMember[];
  workloads: WorkloadItem[];
  token: VerifiedToken;
}

/** The body's workloads checked (nothing stored), their Services given addresses against the node's others. */
export async function checkBodyWorkloads(p: NodePorts, body: PodBody): Promise<void> {
  checkWorkloads(body.workloads, p);
  await checkWorkloadCount(body.workloads, p.workloads, p.intake.limits);
  // Services get their addresses against the node's others now; nothing is stored if one is refused.
  await allocateBodyServices(body.workloads, p, "add");
}

/** The body's pod, if any, through the admission pipeline's own stages; its node stage, for the store step. */
export function admitBodyPod(p: NodePorts, body: PodBody): NodeStage | undefined {
  const pod = body.pods[0]?.pod;
  return pod ? p.admission.admit([{ pod }]) : undefined;
}
