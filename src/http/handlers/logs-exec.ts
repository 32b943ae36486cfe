// GET /v1/pods/{uid}/logs (kubectl's parameters, text/plain, streamed) and POST /v1/pods/{uid}/exec
// (a signed command run with CRI ExecSync, output bounded). Both sit on the engine's front door.
import type { Context, Env, Hono } from "hono";
import type { Verifier } from "../../auth/verify.js";
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import { ProblemError } from "../../usecases/problems.js";
import { readBearer, readSignedToken } from "../signed-request.js";
import { streamFrom } from "../../usecases/streams/stream.js";
import { releasing, type StreamBudget } from "../../usecases/streams/budget.js";
import { LOG_HEADERS, openLog, parseLogQuery } from "../../usecases/streams/logs.js";
import { checkExecAllowed, commandSha256, execClaims, runExec, type ExecClaims } from "../../usecases/streams/exec.js";

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
  /** The node's cap on open log streams (src/usecases/streams/budget.ts); none when unset. */
  streams?: StreamBudget | undefined;
}

export { LOG_HEADERS, LogQuery } from "../../usecases/streams/logs.js";

export function registerLogsAndExec<E extends Env>(
  app: Hono<E>,
  paths: { logs: string; exec: string },
  o: LogsExecOptions,
): void {
  app.get(paths.logs, async (c) => {
    const uid = o.pathUid(c.req.param("uid")!);
    const token = await readBearer(c.req.raw, o.verifier, "logs", uid, false);
    o.note(c, { uid, jti: token.payload.jti });
    const parsed = parseLogQuery(c.req.query());
    if ("errors" in parsed) {
      const { errors } = parsed;
      throw new ProblemError("bad-request", errors.map((e) => `${e.path}: ${e.message}`).join("; "), { errors });
    }
    const log = await openLog(o.runtime, uid, parsed.query, {
      now: o.now,
      followMaxMs: o.followMaxMs,
      followPollMs: o.followPollMs,
    });
    const release = o.streams?.take(`${token.payload.iss}\0${token.payload.jti}`, "log") ?? (() => undefined);
    // A follow ends when the client goes: the body's cancel (Node), or the request's signal (workerd, where an idle
    // follow writes nothing that could fail and its body is not cancelled: it would poll the node for minutes).
    const body = streamFrom(log.read, o.onStreamError, c.req.raw.signal);
    return c.body(releasing(body, release), 200, { ...LOG_HEADERS, "podsync-container": log.container });
  });

  app.post(paths.exec, async (c) => {
    const uid = o.pathUid(c.req.param("uid")!);
    // The owner's switch comes first: a disabled node spends no token on it.
    checkExecAllowed(o.allowExec);
    let claims!: ExecClaims;
    const token = await readSignedToken(c.req.raw, o.verifier, "exec", o.maxBodyBytes, (p) => {
      claims = execClaims(uid, p);
    });
    // The log gets who ran what, as a hash: never the command's arguments (they may hold secrets) or output.
    const sha = await commandSha256(claims.command);
    o.note(c, { uid, jti: token.payload.jti, iss: token.payload.iss, commandSha256: sha });
    const r = await runExec(o.runtime, uid, claims, o.execMaxOutputBytes);
    o.note(c, { uid, criCalls: r.criCalls });
    return c.json(r.result);
  });
}
