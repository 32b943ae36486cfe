// A failed CRI call keeps its gRPC status code so callers (and the HTTP layer) can map it.

/** gRPC status codes (grpc/doc/statuscodes.md). */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcCodeNumber = (typeof GrpcCode)[keyof typeof GrpcCode];

const CODE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(GrpcCode).map(([k, v]) => [v, k]));

export function grpcCodeName(code: number): string {
  return CODE_NAMES[code] ?? `CODE_${code}`;
}

export class CriError extends Error {
  override readonly name = "CriError";
  constructor(
    /** gRPC status code of the failed call. */
    readonly code: number,
    /** The runtime's own message (gRPC status details). */
    readonly details: string,
    /** CRI method, e.g. `RunPodSandbox`. */
    readonly method: string,
  ) {
    super(`${method}: ${grpcCodeName(code)}: ${details}`);
  }
  get codeName(): string {
    return grpcCodeName(this.code);
  }
}

export function isCriError(e: unknown, code?: number): e is CriError {
  return e instanceof CriError && (code === undefined || e.code === code);
}

/** The message to report for any error, without a stack. */
export function errorMessage(e: unknown): string {
  if (e instanceof CriError) return e.details;
  if (e instanceof Error) return e.message;
  return String(e);
}
