// Package usecases/ — what the node does for a request (plan, sync, apply-set, delete, reads, logs, exec, admission).
// Imports the agent, the engine's front door and auth/; never a front (http/, kubeapi/) or an entry point.
//
// The fronts (src/http/ handlers, src/kubeapi/, the Worker's app and the CLI's server, which run the same Hono app)
// call these and only parse, authorise and render. This file: the ports the use cases run over, as interfaces the
// entry points fill in.
import type { NodePolicy } from "../auth/policy.js";
import type { WorkloadStore } from "../controllers/store.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { NodeInfo } from "../lifecycle/predicates.js";
import type { DesiredPod, DesiredState } from "../pleg/desired-state.js";
import type { PodDispatch } from "../podworkers/dispatch.js";
import type { Prober } from "../prober/prober.js";
import type { ServiceNetwork } from "../services/allocate.js";
import type { PodProbeResults } from "../status/api-status.js";
import type { IntakeOptions } from "../pod/workloads/intake.js";
import type { Serial } from "../util/serial.js";
import type { Admission } from "./admission/admission.js";

/** One JSON line per request (src/http/request-log.ts writes it; the Kubernetes API's streams too): who acted,
 * on which pod, what it cost in CRI calls; never a body or a token. */
export interface RequestLog {
  time: string;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  podUid?: string;
  criCalls: number;
  jti?: string;
  /** exec only: who ran it, and the SHA-256 of its argv (never the argv or its output). */
  iss?: string;
  commandSha256?: string;
  /** port-forward only: the pod ports its streams asked for. */
  ports?: number[];
  error?: string;
}

/** The node's pieces the pod use cases run over, as the entry point resolved them (defaults applied). */
export interface NodePorts {
  runtime: PodRuntime;
  /** The pod workers (src/podworkers/): a DELETE's kill runs in the pod's worker; absent: through the front door. */
  pods?: PodDispatch<DesiredPod> | undefined;
  desired: DesiredState;
  policy: NodePolicy;
  nodeInfo: NodeInfo;
  /** The one admission pipeline (./admission/admission.ts), built from the policy, the node and the runtime. */
  admission: Admission;
  /** The node's one admission step (admission + store write), shared by sync, PUT /v1/node/pods and volumes. */
  admitting: Serial;
  prober: Prober | undefined;
  /** Probe results kept elsewhere (the Workers node object), for the reads. */
  probeResults?: ((uids: string[]) => Promise<Map<string, PodProbeResults>>) | undefined;
  now: () => number;
  /** The node's workloads; absent: a body holding workloads is refused (501). */
  workloads?: WorkloadStore | undefined;
  /** The node's name for uid-less pods, and what to do with a named service account's token. */
  intake: IntakeOptions;
  /** The node's service network (ClusterIP range, NodePorts, policy); absent: Services are refused (Workers). */
  services?: ServiceNetwork | undefined;
  /** Why Services are refused here (default: WORKER_SERVICES_REFUSAL, a Worker's). */
  servicesRefusal?: string | undefined;
}
