// Errors as application/problem+json (RFC 9457): a stable `type`, the HTTP status, a title, a detail, and
// for validation errors every failing field. Never a stack trace.
import { CriError, GrpcCode } from "../cri/errors.js";
import { AuthError } from "../auth/verify.js";

export const PROBLEM_BASE = "urn:podsync:problem:";

export interface FieldError {
  path: string;
  message: string;
}

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
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    detail?: string,
    readonly extra: Partial<Problem> = {},
  ) {
    super(detail ?? title);
  }
  toProblem(instance?: string): Problem {
    return { type: PROBLEM_BASE + this.slug, title: this.title, status: this.status, detail: this.message, ...(instance ? { instance } : {}), ...this.extra };
  }
}

export const badRequest = (detail: string, errors?: FieldError[]) =>
  new ProblemError(400, errors ? "invalid-pod" : "bad-request", errors ? "The pod spec is invalid" : "Bad request", detail, errors ? { errors } : {});

const AUTH_TITLES: Record<number, [string, string]> = {
  401: ["unauthorized", "Missing or invalid signature"],
  403: ["wrong-node", "Signed for another node"],
  409: ["replayed", "Token already used"],
  503: ["keys-unavailable", "Trusted keys unavailable"],
};

/** Any error → a problem. Unknown errors become a bare 500 with no internals. */
export function toProblemError(e: unknown): ProblemError {
  if (e instanceof ProblemError) return e;
  if (e instanceof AuthError) {
    const [slug, title] = AUTH_TITLES[e.status]!;
    return new ProblemError(e.status, slug, title, e.message, { reason: e.failure });
  }
  if (e instanceof CriError) {
    const [status, slug, title] =
      e.code === GrpcCode.UNAVAILABLE
        ? [503, "runtime-unavailable", "Container runtime unavailable"]
        : e.code === GrpcCode.DEADLINE_EXCEEDED
          ? [504, "runtime-timeout", "Container runtime call timed out"]
          : [502, "runtime-error", "Container runtime error"];
    return new ProblemError(status, slug, title, `${e.method}: ${e.details}`, { grpcCode: e.codeName });
  }
  return new ProblemError(500, "internal", "Internal error", "the request failed inside podsync; see the server log");
}
