// GET /v1/pods/{uid}/logs (kubectl's parameters, text/plain, streamed) and POST /v1/pods/{uid}/exec
// (a signed command run with CRI ExecSync, output bounded). Both sit on the engine's front door.
import type { Context, Env, Hono } from "hono";
import { z } from "zod";
import type { Verifier } from "../../auth/verify.js";
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import { fieldErrors } from "../../pod/validate.js";
import { ProblemError } from "../problems.js";
import { readBearer, readSignedToken } from "../signed-request.js";
import { streamFrom } from "../stream.js";
import { releasing, type StreamBudget } from "../stream-budget.js";

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, "must be a non-negative integer")
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
const CONTAINER_NAME = z
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

/** Limits on what an exec token may carry: a command is an argv, not a script upload. */
const MAX_ARGS = 256;
const MAX_COMMAND_BYTES = 64 * 1024;
const ExecClaims = z.object({
  container: CONTAINER_NAME.optional(),
  command: z
    .array(z.string().max(MAX_COMMAND_BYTES))
    .min(1, "must name a command")
    .max(MAX_ARGS, `at most ${MAX_ARGS} arguments`)
    .refine(
      (a) => a.reduce((n, s) => n + new TextEncoder().encode(s).length, 0) <= MAX_COMMAND_BYTES,
      `the command may be at most ${MAX_COMMAND_BYTES} bytes`,
    ),
  timeoutSeconds: z
    .number()
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(600, "must be at most 600")
    .default(60),
});

export interface LogsExecOptions {
  runtime: PodRuntime;
  verifier: Verifier;
  maxBodyBytes: number;
  allowExec: boolean;
  execMaxOutputBytes: number;
  followMaxMs: number;
  /** How often a follow looks for more at the end of the file (each look reads and stats the file). */
  followPollMs?: number | undefined;
  now: () => number;
  /** Record for the request log (never the output). */
  note(
    c: Context,
    fields: {
      uid: string;
      jti?: string | undefined;
      iss?: string | undefined;
      commandSha256?: string;
      criCalls?: number;
    },
  ): void;
  onStreamError(e: unknown): void;
  pathUid(raw: string): string;
  /** The node's cap on open log streams (src/http/stream-budget.ts); none when unset. */
  streams?: StreamBudget | undefined;
}

/** A log's response headers. Streamed as it comes: never compressed on the way (a gzip layer buffers the text;
 * Workers compress text/plain for a client sending Accept-Encoding: gzip unless told not to). */
export const LOG_HEADERS = {
  "content-type": "text/plain; charset=utf-8",
  "content-encoding": "identity",
  "cache-control": "no-transform",
  "x-content-type-options": "nosniff",
} as const;

export function registerLogsAndExec<E extends Env>(
  app: Hono<E>,
  paths: { logs: string; exec: string },
  o: LogsExecOptions,
): void {
  app.get(paths.logs, async (c) => {
    const uid = o.pathUid(c.req.param("uid")!);
    const token = await readBearer(c.req.raw, o.verifier, "logs", uid, false);
    o.note(c, { uid, jti: token.payload.jti });
    const parsed = LogQuery.safeParse(c.req.query());
    if (!parsed.success) {
      const errors = fieldErrors(parsed.error, "query");
      throw new ProblemError("bad-request", errors.map((e) => `${e.path}: ${e.message}`).join("; "), { errors });
    }
    const q = parsed.data;
    const log = await o.runtime.logs(uid, { container: q.container, previous: q.previous });
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
    const release = o.streams?.take(`${token.payload.iss}\0${token.payload.jti}`, "log") ?? (() => undefined);
    // A follow ends when the client goes: the body's cancel (Node), or the request's signal (workerd, where an idle
    // follow writes nothing that could fail and its body is not cancelled: it would poll the node for minutes).
    const body = streamFrom(
      (write, signal) =>
        log.read(
          options,
          write,
          q.follow
            ? { signal, maxMs: o.followMaxMs, ...(o.followPollMs ? { pollMs: o.followPollMs } : {}) }
            : undefined,
        ),
      o.onStreamError,
      c.req.raw.signal,
    );
    return c.body(releasing(body, release), 200, { ...LOG_HEADERS, "podsync-container": log.container });
  });

  app.post(paths.exec, async (c) => {
    const uid = o.pathUid(c.req.param("uid")!);
    // The owner's switch comes first: a disabled node spends no token on it.
    if (!o.allowExec)
      throw new ProblemError(
        "exec-disabled",
        "exec is off on this node (the node owner enables it with PODSYNC_ALLOW_EXEC=true)",
      );
    let claims!: z.output<typeof ExecClaims>;
    const token = await readSignedToken(c.req.raw, o.verifier, "exec", o.maxBodyBytes, (p) => {
      if (p["uid"] !== uid)
        throw new ProblemError("bad-request", `the token's "uid" must be the pod uid in the path (${uid})`, {
          errors: [{ path: "uid", message: "does not match the path" }],
        });
      const r = ExecClaims.safeParse(p);
      if (!r.success) {
        const errors = fieldErrors(r.error);
        throw new ProblemError("bad-request", errors.map((e) => `${e.path}: ${e.message}`).join("; "), { errors });
      }
      claims = r.data;
    });
    // The log gets who ran what, as a hash: never the command's arguments (they may hold secrets) or output.
    const commandSha256 = await sha256hex(JSON.stringify(claims.command));
    o.note(c, { uid, jti: token.payload.jti, iss: token.payload.iss, commandSha256 });
    const r = await o.runtime.exec(uid, {
      container: claims.container,
      command: claims.command,
      timeoutSeconds: claims.timeoutSeconds,
      maxOutputBytes: o.execMaxOutputBytes,
    });
    o.note(c, { uid, criCalls: r.criCalls });
    return c.json({
      pod: r.pod,
      container: r.container,
      containerId: r.containerId,
      exitCode: r.exitCode,
      stdout: r.stdout,
      stderr: r.stderr,
    });
  });
}

async function sha256hex(s: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}
