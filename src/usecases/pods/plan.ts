// The plan use case (POST /v1/pods/plan): what a sync of the body would do, with nothing stored and no runtime
// write: the workloads' outcomes and the pods their controllers would make and delete, and the pod's actions
// (computePodActions on the status read now), after the same checks and admission as a sync.
import type { PlanResult } from "../../kubelet/pod-runtime.js";
import type { Pod } from "../../pod/schema.js";
import type { WorkloadPlan } from "../../controllers/plan.js";
import type { NodePorts } from "../ports.js";
import { planWorkloadPods, workloadOutcomes, type WorkloadOutcome } from "../workloads/sync.js";
import { checkBodyWorkloads, type PodBody } from "./body.js";
import { desiredEntry } from "./entry.js";

export interface BodyPlan {
  /** The body's workloads: what a sync would do with each, and the controllers' pods (none when it has none). */
  workloads?: { workloads: WorkloadOutcome[]; pods: WorkloadPlan["pods"]; refused?: WorkloadPlan["refused"] };
  /** The body's pod and the runtime's plan for it. */
  pod?: { spec: Pod; plan: PlanResult };
}

export async function planBody(p: NodePorts, body: PodBody): Promise<BodyPlan> {
  const pod = body.pods[0]?.pod;
  await checkBodyWorkloads(p, body);
  const out: BodyPlan = {};
  if (body.workloads.length) {
    const desiredNow = await p.desired.list();
    const mine = pod ? [desiredEntry(pod, body.token, p.now(), body.pods[0]!.objects)] : [];
    const plan = await planWorkloadPods(
      body.workloads,
      body.token,
      p.now(),
      p.workloads!,
      [...desiredNow.filter((e) => e.pod.metadata.uid !== pod?.metadata.uid), ...mine],
      p.intake.nodeName,
      p.nodeInfo,
      p.policy,
    );
    out.workloads = {
      workloads: await workloadOutcomes(body.workloads, p.workloads!),
      pods: plan.pods,
      ...(plan.refused.length ? { refused: plan.refused } : {}),
    };
  }
  if (!pod) return out;
  // Admitted once: the pipeline's own stages, then its node stage against the desired pods (a plan changes no
  // store, so it needs no store step); the runtime's plan does not admit again.
  p.admission.admit([{ pod }]).against((await p.desired.list()).map((e) => e.pod));
  const plan = await p.runtime.plan(pod, p.prober?.results(pod.metadata.uid), { admitted: true });
  return { ...out, pod: { spec: pod, plan } };
}
