// Errors on the Kubernetes paths are metav1.Status objects (apimachinery/pkg/apis/meta/v1/types.go), so kubectl
// prints `Error from server (<Reason>): <message>`. Reasons and messages follow apimachinery/pkg/api/errors.
import { AuthError } from "../auth/verify.js";
import { type ProblemError, toProblemError } from "../usecases/problems.js";

export type StatusReason =
  | "BadRequest"
  | "Unauthorized"
  | "Forbidden"
  | "NotFound"
  | "MethodNotAllowed"
  | "Conflict"
  | "Expired"
  | "Gone"
  | "RequestEntityTooLarge"
  | "UnsupportedMediaType"
  | "TooManyRequests"
  | "NotAcceptable"
  | "InternalError"
  | "ServiceUnavailable"
  | "Timeout";

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason?: string; message: string; field?: string }[];
  retryAfterSeconds?: number;
}

export interface KubeStatus {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure";
  message: string;
  reason: StatusReason;
  details?: StatusDetails;
  code: number;
}

export class KubeStatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }
  toStatus(): KubeStatus {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
  toResponse(): Response {
    return new Response(JSON.stringify(this.toStatus()), {
      status: this.code,
      headers: {
        "content-type": "application/json",
        ...(this.details?.retryAfterSeconds ? { "retry-after": String(this.details.retryAfterSeconds) } : {}),
      },
    });
  }
}

/** A resource as the API server names it in messages (`deployments.apps`) and in details (kind, group). */
const qualifiedName = (resource: string, group: string) => (group ? `${resource}.${group}` : resource);
const detailsOf = (resource: string, group: string, name: string): StatusDetails => ({
  ...(name ? { name } : {}),
  ...(group ? { group } : {}),
  kind: resource,
});

/** errors.NewNotFound: `pods "web" not found`, `deployments.apps "web" not found`. */
export const notFound = (resource: string, name: string, group = "") =>
  new KubeStatusError(
    404,
    "NotFound",
    `${qualifiedName(resource, group)} "${name}" not found`,
    detailsOf(resource, group, name),
  );
/** What the API server answers for a path it serves nothing at (an unknown resource, group or version). */
export const noSuchResource = () =>
  new KubeStatusError(404, "NotFound", "the server could not find the requested resource", {});
export const badRequest = (message: string) => new KubeStatusError(400, "BadRequest", message);
/** errors.NewForbidden: `pods "web" is forbidden: <why>`. */
export const forbidden = (resource: string, name: string, why: string, group = "") =>
  new KubeStatusError(
    403,
    "Forbidden",
    name
      ? `${qualifiedName(resource, group)} "${name}" is forbidden: ${why}`
      : `${qualifiedName(resource, group)} is forbidden: ${why}`,
    detailsOf(resource, group, name),
  );
/** errors.NewResourceExpired: a watch from a resourceVersion the server no longer holds (410). */
export const expired = (message: string) => new KubeStatusError(410, "Expired", message);

const REASONS: Record<number, StatusReason> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "Conflict",
  410: "Gone",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  429: "TooManyRequests",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** Any error → a Status: podsync's problems keep their status code and message (the problem's slug and, for
 * tokens, the failure are added to the message so nothing is lost); unknown errors are a bare 500. */
export function toKubeStatus(e: unknown): KubeStatusError {
  if (e instanceof KubeStatusError) return e;
  // 401 as the API server words it, with podsync's reason after it.
  if (e instanceof AuthError && e.status === 401)
    return new KubeStatusError(401, "Unauthorized", `Unauthorized: ${e.message} (${e.failure})`);
  const p: ProblemError = toProblemError(e);
  const reason = REASONS[p.status] ?? (p.status >= 500 ? "InternalError" : "BadRequest");
  const fields = Array.isArray(p.extra.errors) ? p.extra.errors : undefined;
  // errors.NewTooManyRequests: the wait goes in details.retryAfterSeconds.
  const retry =
    typeof p.extra["retryAfterSeconds"] === "number" ? { retryAfterSeconds: p.extra["retryAfterSeconds"] } : {};
  return new KubeStatusError(
    p.status,
    reason,
    p.message,
    fields
      ? { causes: fields.map((f) => ({ field: f.path, message: f.message })), ...retry }
      : p.status === 429
        ? retry
        : undefined,
  );
}
