// Every HTTP error is application/problem+json (RFC 9457) from this one catalogue: a stable `type`
// (urn:podsync:problem:<slug>), its status and title. Routes throw ProblemError (or an error of a lower
// layer that toProblemError maps); the Node app, the Worker and /openapi.json all read this table.
import { CriError, GrpcCode } from "../cri/errors.js";
import { ExecOutputTooLargeError } from "../kuberuntime/exec.js";
import { AuthError } from "../auth/verify.js";
import { InvalidPodError, type FieldError } from "../pod/validate.js";
import { PodBusyError } from "../kuberuntime/pod-lock.js";
import { PodNotFoundError, SupersededError, UnsupportedError } from "../kubelet/pod-runtime.js";
import { UidConflictError } from "../kuberuntime/pod-identity.js";
import { ContainerChoiceError } from "../container/container-choice.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";
import { PodAdmissionError } from "../lifecycle/node-admission.js";
import { ClaimInUseError, ClaimNotFoundError } from "../volumemanager/claims.js";
import { StaleGenerationError } from "../pleg/desired-state.js";
import { ExecCommandNotFoundError } from "../kuberuntime/exec.js";

export const PROBLEM_BASE = "urn:podsync:problem:";

export const PROBLEMS = {
  "bad-request": { status: 400, title: "Bad request" },
  "bad-json": { status: 400, title: "Malformed JSON" },
  "bad-yaml": { status: 400, title: "Malformed YAML" },
  "invalid-pod": { status: 400, title: "The pod spec is invalid" },
  unauthorized: { status: 401, title: "Missing or invalid signature" },
  "wrong-node": { status: 403, title: "Signed for another node" },
  policy: { status: 403, title: "Refused by the node's policy" },
  admission: { status: 403, title: "Refused by the node's admission" },
  "exec-disabled": { status: 403, title: "Exec is disabled on this node" },
  "out-of-scope": { status: 403, title: "Outside the token's scope" },
  "node-revoked": { status: 403, title: "The node's enrollment is revoked" },
  "not-found": { status: 404, title: "Not found" },
  "pod-not-found": { status: 404, title: "Pod not found" },
  "container-not-found": { status: 404, title: "Container not found" },
  "command-not-found": { status: 404, title: "Command not found in the container" },
  "volume-not-found": { status: 404, title: "Volume not found" },
  "method-not-allowed": { status: 405, title: "Method not allowed" },
  replayed: { status: 409, title: "Token already used" },
  "pod-busy": { status: 409, title: "Pod is busy" },
  "volume-in-use": { status: 409, title: "Volume is in use" },
  "stale-generation": { status: 409, title: "Older than the node's desired state" },
  "uid-conflict": { status: 409, title: "The uid belongs to another pod" },
  "already-enrolled": { status: 409, title: "The node is enrolled with another key" },
  "rollout-conflict": { status: 409, title: "Conflicts with a rollout" },
  "body-too-large": { status: 413, title: "Request body too large" },
  "unsupported-media-type": { status: 415, title: "Unsupported content type" },
  "too-many-streams": { status: 429, title: "Too many open streams" },
  internal: { status: 500, title: "Internal error" },
  unsupported: { status: 501, title: "Not available on this deployment" },
  misconfigured: { status: 500, title: "Server misconfigured" },
  "runtime-error": { status: 502, title: "Container runtime error" },
  "exec-output-too-large": { status: 502, title: "Exec output over the runtime's message limit" },
  "runtime-unavailable": { status: 503, title: "Container runtime unavailable" },
  "runtime-not-ready": { status: 503, title: "Container runtime not ready" },
  "keys-unavailable": { status: 503, title: "Trusted keys unavailable" },
  "state-unavailable": { status: 503, title: "Node state unavailable" },
  "shutting-down": { status: 503, title: "The node is shutting down" },
  "node-not-connected": { status: 503, title: "The node is not connected to the fleet" },
  "runtime-timeout": { status: 504, title: "Container runtime call timed out" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemSlug = keyof typeof PROBLEMS;

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  errors?: FieldError[];
  grpcCode?: string;
  [extra: string]: unknown;
}

export class ProblemError extends Error {
  readonly status: number;
  readonly title: string;
  /** The request body was left unread (too large, or the client went away mid-body): answer with
   * `Connection: close`, so the socket is not kept alive with half a body still in it. */
  closeConnection = false;
  constructor(
    readonly slug: ProblemSlug,
    detail?: string,
    readonly extra: Partial<Problem> = {},
  ) {
    super(detail ?? PROBLEMS[slug].title);
    this.status = PROBLEMS[slug].status;
    this.title = PROBLEMS[slug].title;
  }
  toProblem(instance?: string): Problem {
    return {
      type: PROBLEM_BASE + this.slug,
      title: this.title,
      status: this.status,
      detail: this.message,
      ...(instance ? { instance } : {}),
      ...this.extra,
    };
  }
  /** The problem as a response, with the content type every error carries. */
  toResponse(instance?: string, headers: Record<string, string> = {}): Response {
    const close: Record<string, string> = this.closeConnection ? { connection: "close" } : {};
    return new Response(JSON.stringify(this.toProblem(instance)), {
      status: this.status,
      headers: { ...headers, ...close, "content-type": "application/problem+json" },
    });
  }
}

const AUTH_SLUGS: Record<AuthError["status"], ProblemSlug> = {
  401: "unauthorized",
  403: "wrong-node",
  409: "replayed",
  503: "keys-unavailable",
};

/** Any error → a problem. Unknown errors become a bare 500 with no internals. */
export function toProblemError(e: unknown): ProblemError {
  if (e instanceof ProblemError) return e;
  if (e instanceof InvalidPodError) return new ProblemError("invalid-pod", e.message, { errors: e.errors });
  if (e instanceof AuthError) return new ProblemError(AUTH_SLUGS[e.status], e.message, { reason: e.failure });
  if (e instanceof PodBusyError) return new ProblemError("pod-busy", e.message);
  if (e instanceof UidConflictError) return new ProblemError("uid-conflict", e.message, { holder: e.holder });
  if (e instanceof PodNotFoundError) return new ProblemError("pod-not-found", e.message);
  if (e instanceof UnsupportedError) return new ProblemError("unsupported", e.message);
  if (e instanceof ContainerChoiceError)
    return new ProblemError(
      e.kind === "not-found" ? "container-not-found" : "bad-request",
      e.message,
      e.containers.length ? { containers: e.containers } : {},
    );
  if (e instanceof SupersededError) return new ProblemError("stale-generation", e.message);
  if (e instanceof StaleGenerationError)
    return new ProblemError("stale-generation", e.message, e.current === undefined ? {} : { current: e.current });
  if (e instanceof StateUnavailableError) return new ProblemError("state-unavailable", e.message);
  // kubelet's admit handlers (rejectPod's "Pod was rejected: ..."): the reason is theirs (SysctlForbidden,
  // AppArmor), one entry per field.
  if (e instanceof PodAdmissionError)
    return new ProblemError("admission", `Pod was rejected: ${e.message}`, {
      reason: e.failures[0]!.reason,
      errors: e.failures.map((f) => ({ path: f.path, message: `${f.reason}: ${f.message}` })),
    });
  if (e instanceof ExecCommandNotFoundError) return new ProblemError("command-not-found", e.message);
  if (e instanceof ClaimInUseError) return new ProblemError("volume-in-use", e.message, { usedBy: e.usedBy });
  if (e instanceof ClaimNotFoundError) return new ProblemError("volume-not-found", e.message);
  if (e instanceof ExecOutputTooLargeError)
    return new ProblemError("exec-output-too-large", e.message, {
      limitBytes: e.limitBytes,
      ...(e.sizeBytes ? { sizeBytes: e.sizeBytes } : {}),
    });
  if (e instanceof CriError) {
    const slug =
      e.code === GrpcCode.UNAVAILABLE
        ? "runtime-unavailable"
        : e.code === GrpcCode.DEADLINE_EXCEEDED
          ? "runtime-timeout"
          : "runtime-error";
    return new ProblemError(slug, `${e.method}: ${e.details}`, { grpcCode: e.codeName });
  }
  return new ProblemError("internal", "the request failed inside podsync; see the server log");
}
