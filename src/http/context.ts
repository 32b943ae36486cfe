// What the app's routes share: the request's context variables (for the request log) and the node's pieces
// every pod route is handed by createApp.
import type { Context } from "hono";
import type { NodePolicy } from "../auth/policy.js";
import type { Verifier } from "../auth/verify.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { NodeInfo } from "../lifecycle/predicates.js";
import type { DesiredPod, DesiredState } from "../pleg/desired-state.js";
import type { PodDispatch } from "../podworkers/dispatch.js";
import type { Pod } from "../pod/schema.js";
import type { Prober } from "../prober/prober.js";
import type { PodProbeResults } from "../status/api-status.js";
import type { Serial } from "../util/serial.js";
import type { WorkloadStore } from "../controllers/store.js";
import type { IntakeOptions } from "../pod/workloads/intake.js";
import type { ServiceNetwork } from "../services/allocate.js";

export type AppEnv = {
  Variables: { podUid?: string; criCalls: number; jti?: string; iss?: string; commandSha256?: string; error?: string };
};

/** Record who acted, for the request log. */
export const note = (c: Context<AppEnv>, uid: string, jti: string | undefined) => {
  c.set("podUid", uid);
  if (jti) c.set("jti", jti);
};

/** The node's pieces the pod routes use, as createApp resolved them (defaults applied). */
export interface PodRouteDeps {
  runtime: PodRuntime;
  verifier: Verifier;
  desired: DesiredState;
  policy: NodePolicy;
  nodeInfo: NodeInfo;
  /** The node's one admission step (admission + store write), shared with PUT /v1/node/pods and volumes. */
  admitting: Serial;
  prober: Prober | undefined;
  /** Probe results kept elsewhere (the Workers node object), for the GET routes. */
  probeResults?: ((uids: string[]) => Promise<Map<string, PodProbeResults>>) | undefined;
  maxBodyBytes: number;
  now: () => number;
  /** A probe this deployment cannot run is refused like any invalid field, before any runtime call. */
  checkProbes: (pod: Pod, prefix?: string) => void;
  /** The node's workloads; absent: a body holding workloads is refused (501). */
  workloads?: WorkloadStore | undefined;
  /** The node's name for uid-less pods, and what to do with a named service account's token. */
  intake: IntakeOptions;
  /** The pod workers (src/podworkers/): a request's sync and a PUT's teardowns run in the pod's worker. */
  pods: PodDispatch<DesiredPod>;
  /** The node's service network (ClusterIP range, NodePorts, policy); absent: Services are refused (Workers). */
  services?: ServiceNetwork | undefined;
  /** Why Services are refused here (default: WORKER_SERVICES_REFUSAL, a Worker's). */
  servicesRefusal?: string | undefined;
}
