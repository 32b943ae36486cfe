// The API's paths in one place (the app registers them and /openapi.json documents them), and the check of
// the pod uid they carry.
import { ProblemError } from "../usecases/problems.js";

export const ROUTES = {
  healthz: "/healthz",
  readyz: "/readyz",
  openapi: "/openapi.json",
  /** Prometheus text format; Node only (see metrics.ts). */
  metrics: "/metrics",
  sync: "/v1/pods/sync",
  plan: "/v1/pods/plan",
  /** The CRI-level view (debugging). */
  runtime: "/v1/pods/:uid/runtime",
  /** The old name of `runtime`, kept as an alias (same handler, same body). */
  status: "/v1/pods/:uid/status",
  logs: "/v1/pods/:uid/logs",
  exec: "/v1/pods/:uid/exec",
  pod: "/v1/pods/:uid",
  /** The node agent: the desired pods with their status (GET), the node-wide set (PUT). */
  pods: "/v1/pods",
  nodePods: "/v1/node/pods",
  /** The node's persistentVolumeClaim directories. */
  nodeVolumes: "/v1/node/volumes",
  nodeVolume: "/v1/node/volumes/:name",
  /** The node's workloads with their status (GET, a v1.List); one workload, forgotten with its pods (DELETE). */
  workloads: "/v1/workloads",
  workload: "/v1/workloads/:uid",
} as const;

const UID_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** A pod uid taken from a path, checked before it reaches the runtime or the store. */
export function pathUid(uid: string): string {
  if (!UID_PATH.test(uid))
    throw new ProblemError(
      "bad-request",
      "the pod uid in the path must be alphanumerics, '-', '_' or '.', at most 128 characters",
      { errors: [{ path: "uid", message: "invalid pod uid" }] },
    );
  return uid;
}
