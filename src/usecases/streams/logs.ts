// Package usecases/streams — logs, exec and the node's stream budget, and the stream plumbing both fronts share.
// Imports the front door and the problem catalogue; never a front (http/, kubeapi/) or an entry.
//
// The logs use case, one for both fronts (GET /v1/pods/{uid}/logs and the Kubernetes API's pods/log): kubectl's
// PodLogOptions parsed once, the container's log resolved through the front door, and the read it streams.
import { z } from "zod";
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import { fieldErrors, type FieldError } from "../../pod/validate.js";

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, "must be a non-negative integer")
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
export const CONTAINER_NAME = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a container name")
  .max(63);

/** kubectl's PodLogOptions as query parameters, with the API server's bounds. */
export const LogQuery = z
  .strictObject({
    container: CONTAINER_NAME.optional(),
    previous: bool.optional(),
    follow: bool.optional(),
    timestamps: bool.optional(),
    tailLines: int(0, 10_000_000).optional(),
    limitBytes: int(1, 2 ** 40).optional(),
    sinceSeconds: int(1, 10 * 365 * 86_400).optional(),
    sinceTime: z.iso.datetime({ offset: true, error: "must be an RFC 3339 time" }).optional(),
  })
  .refine((q) => q.sinceSeconds === undefined || q.sinceTime === undefined, {
    path: ["sinceTime"],
    message: "at most one of sinceTime or sinceSeconds may be specified",
  });
export type LogQuery = z.output<typeof LogQuery>;

/** A log's response headers. Streamed as it comes: never compressed on the way (a gzip layer buffers the text;
 * Workers compress text/plain for a client sending Accept-Encoding: gzip unless told not to). */
export const LOG_HEADERS = {
  "content-type": "text/plain; charset=utf-8",
  "content-encoding": "identity",
  "cache-control": "no-transform",
  "x-content-type-options": "nosniff",
} as const;

/** The query parsed, or its errors under `query.` (each front renders them its own way). */
export function parseLogQuery(query: Record<string, string>): { query: LogQuery } | { errors: FieldError[] } {
  const parsed = LogQuery.safeParse(query);
  return parsed.success ? { query: parsed.data } : { errors: fieldErrors(parsed.error, "query") };
}

export interface LogReadOptions {
  now: () => number;
  /** The longest a followed log stream lasts. */
  followMaxMs: number;
  /** How often a follow looks for more at the end of the file. */
  followPollMs?: number | undefined;
  /** The names a missing `container` may default to (the spec's app containers, when known). */
  defaultContainers?: string[] | undefined;
}

/** The pod's container log resolved (the container picked, the instance, its file) and the read to stream:
 * `read(write, signal)` resolves when the log is done (or the follow ends, on the signal or after followMaxMs). */
export async function openLog(
  rt: Pick<PodRuntime, "logs">,
  uid: string,
  q: LogQuery,
  o: LogReadOptions,
): Promise<{
  container: string;
  read: (write: (b: Uint8Array) => Promise<void>, signal: AbortSignal) => Promise<void>;
}> {
  const log = await rt.logs(uid, {
    container: q.container,
    previous: q.previous,
    ...(o.defaultContainers ? { defaultContainers: o.defaultContainers } : {}),
  });
  const sinceMs =
    q.sinceTime !== undefined
      ? Date.parse(q.sinceTime)
      : q.sinceSeconds !== undefined
        ? o.now() - q.sinceSeconds * 1000
        : undefined;
  const options = {
    tailLines: q.tailLines,
    limitBytes: q.limitBytes,
    sinceMs,
    timestamps: q.timestamps,
    follow: q.follow,
  };
  return {
    container: log.container,
    read: (write, signal) =>
      log.read(
        options,
        write,
        q.follow ? { signal, maxMs: o.followMaxMs, ...(o.followPollMs ? { pollMs: o.followPollMs } : {}) } : undefined,
      ),
  };
}
