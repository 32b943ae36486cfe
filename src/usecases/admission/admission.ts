// Package usecases/admission — the one admission pipeline, once per pod or template: policy, probes, runtime, node.
// Imports auth's policy checks, lifecycle/ and the front door's types; never a front (http/, kubeapi/) or an entry.
//
// The stages, in order: the node owner's policy (auth's pod security), the probes this deployment can run, the
// runtime's refusals (kubelet's sysctl and AppArmor admit handlers, what a deployment without the node filesystem
// cannot honour), and kubelet's node predicates against the other desired pods (lifecycle/). Token signatures and
// scopes stay in auth/: a request is verified before its objects are admitted.
import { evaluatePodSecurity } from "../../auth/pod-security.js";
import type { NodePolicy } from "../../auth/policy.js";
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import { admitInOrder, admitPod, type NodeInfo } from "../../lifecycle/predicates.js";
import { ALL_PROBE_HANDLERS, probeHandlerErrors } from "../../pod/probes.js";
import type { Pod, ProbeHandler } from "../../pod/schema.js";
import { InvalidPodError } from "../../pod/validate.js";
import type { ProblemError } from "../problems.js";
import { AdmissionRefusedError, policyError, predicateError, refOf, runtimeRefusal } from "./refusals.js";

/** The stages, in the order they run. The first three are the object's own; `node` needs the node's other desired
 * pods, so it runs in the node's store step (kubelet admits a pod against those admitted before it, under one lock:
 * HandlePodAdditions → canAdmitPod). */
export const ADMISSION_STAGES = ["policy", "probes", "runtime", "node"] as const;
export type AdmissionStage = (typeof ADMISSION_STAGES)[number];

/** One object to admit: a pod sent to the node, or a workload's template (`template`: its refusal names no pod and
 * it gets no node stage: the controllers' gate holds its pods to the node, src/controllers/gate.ts). */
export interface AdmissionObject {
  pod: Pod;
  /** Where its fields are in the request (`pods[0].`, a template's `items[2].spec.template.`). */
  prefix?: string;
  template?: boolean;
}

/** The pipeline's one result: admitted, or the first refusal with the stage that refused. */
export type AdmissionResult =
  | { admitted: true }
  | { admitted: false; stage: AdmissionStage; error: ProblemError | InvalidPodError };

/** The node stage of objects whose own stages passed, run in the node's store step. */
export interface NodeStage {
  /** Each pod against the other desired pods (`others`; a pod already among them is not refused for pressure). */
  against(others: readonly Pod[]): void;
  /** A whole node-wide set (PUT /v1/node/pods): each pod against the ones before it, as kubelet admits pods one at a
   * time; `onNode`: the uids already on the node; any refusal refuses the request, naming each refused pod's fields
   * under `<prefix>[<index>].`. */
  inOrder(onNode: ReadonlySet<string>, prefix: string): void;
}

export interface Admission {
  /** Run the objects' own stages, stage by stage across them (so a body's first policy refusal wins over a later
   * stage's, as the routes always answered), and hand back their node stage; throws the first refusal. */
  admit(objects: readonly AdmissionObject[], o?: { probesChecked?: boolean }): NodeStage;
  /** The same, without throwing: the pipeline's result. */
  check(objects: readonly AdmissionObject[], o?: { probesChecked?: boolean }): AdmissionResult;
  /** The probes stage alone (422 naming the fields), for validation that gathers every field error of a set at once
   * (src/pod/bundle.ts): that set's admit then passes `probesChecked`. */
  checkProbes(pod: Pod, prefix?: string): void;
}

export interface AdmissionOptions {
  /** The node owner's policy (auth/policy.ts). */
  policy: NodePolicy;
  /** The node as kubelet's admission sees it (labels, taints, allocatable, conditions); absent for a pipeline that
   * admits only templates (the controllers' gate), which has no node stage. */
  node?: NodeInfo | undefined;
  /** The front door's admit: what this node cannot honour, with no runtime call. */
  runtime: Pick<PodRuntime, "admit">;
  /** Probe handlers this deployment can run, and why the others cannot (Workers: exec only). */
  probeHandlers?: { allowed: readonly ProbeHandler[]; why: string } | undefined;
}

/** Refusals are thrown by each stage; `check` turns the first into the pipeline's result. */
class Refused extends Error {
  constructor(
    readonly stage: AdmissionStage,
    readonly error: ProblemError | InvalidPodError,
  ) {
    super(error.message);
  }
}

export function createAdmission(o: AdmissionOptions): Admission {
  const handlers = o.probeHandlers ?? { allowed: ALL_PROBE_HANDLERS, why: "" };
  const probeErrors = (pod: Pod, prefix: string) =>
    probeHandlerErrors(pod, handlers.allowed, handlers.why).map((e) => ({ ...e, path: prefix + e.path }));

  const stages: Record<Exclude<AdmissionStage, "node">, (x: AdmissionObject) => void> = {
    policy: ({ pod, prefix = "" }) => {
      const violations = evaluatePodSecurity(pod, o.policy);
      if (violations.length) throw new Refused("policy", policyError(o.policy, violations, prefix));
    },
    probes: ({ pod, prefix = "" }) => {
      const errors = probeErrors(pod, prefix);
      if (errors.length) throw new Refused("probes", new InvalidPodError(errors));
    },
    runtime: ({ pod, prefix = "", template = false }) => {
      try {
        o.runtime.admit(pod);
      } catch (e) {
        const r = runtimeRefusal(e, pod, prefix, template);
        if (r instanceof AdmissionRefusedError || r instanceof InvalidPodError) throw new Refused("runtime", r);
        throw r;
      }
    },
  };

  const nodeStage = (objects: readonly AdmissionObject[]): NodeStage => {
    const pods = objects.filter((x) => !x.template);
    const node = (): NodeInfo => {
      if (!o.node) throw new Error("admission: no node to admit pods against (a templates-only pipeline)");
      return o.node;
    };
    return {
      against(others) {
        for (const { pod, prefix = "" } of pods) {
          const r = admitPod(pod, node(), others);
          if (r.admit) continue;
          throw predicateError(
            r,
            r.failures.map((f) => ({ f, path: prefix + f.path })),
            [{ pod: refOf(pod), reason: r.reason, message: r.message }],
          );
        }
      },
      inOrder(onNode, prefix) {
        const list = pods.map((x) => x.pod);
        const refused = admitInOrder(list, node(), onNode);
        if (refused.length === 0) return;
        throw predicateError(
          refused[0]!.result,
          refused.flatMap(({ index, result }) =>
            result.failures.map((f) => ({ f, path: `${prefix}[${index}].${f.path}` })),
          ),
          refused.map(({ index, result }) => ({
            pod: refOf(list[index]!),
            reason: result.reason,
            message: result.message,
          })),
        );
      },
    };
  };

  const run = (objects: readonly AdmissionObject[], probesChecked: boolean): void => {
    for (const stage of ["policy", "probes", "runtime"] as const) {
      if (stage === "probes" && probesChecked) continue;
      for (const x of objects) stages[stage](x);
    }
  };

  return {
    admit(objects, opts) {
      try {
        run(objects, opts?.probesChecked === true);
      } catch (e) {
        throw e instanceof Refused ? e.error : e;
      }
      return nodeStage(objects);
    },
    check(objects, opts) {
      try {
        run(objects, opts?.probesChecked === true);
        return { admitted: true };
      } catch (e) {
        if (e instanceof Refused) return { admitted: false, stage: e.stage, error: e.error };
        throw e;
      }
    },
    checkProbes(pod, prefix = "") {
      const errors = probeErrors(pod, prefix);
      if (errors.length) throw new InvalidPodError(errors);
    },
  };
}
