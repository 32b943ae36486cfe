// The exec use case of POST /v1/pods/{uid}/exec: a signed command's claims checked (an argv, bounded, not a
// script upload), then run with CRI ExecSync through the front door, its output bounded.
import { z } from "zod";
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import { fieldErrors } from "../../pod/validate.js";
import { ProblemError } from "../problems.js";
import { CONTAINER_NAME } from "./logs.js";

/** Limits on what an exec token may carry: a command is an argv, not a script upload. */
const MAX_ARGS = 256;
const MAX_COMMAND_BYTES = 64 * 1024;
export const ExecClaims = z.object({
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
export type ExecClaims = z.output<typeof ExecClaims>;

/** The owner's switch, checked before any token is spent. */
export function checkExecAllowed(allowExec: boolean): void {
  if (!allowExec)
    throw new ProblemError(
      "exec-disabled",
      "exec is off on this node (the node owner enables it with PODSYNC_ALLOW_EXEC=true)",
    );
}

/** The exec token's claims for the pod `uid` (400 naming the field when they are not an exec's). */
export function execClaims(uid: string, p: Record<string, unknown>): ExecClaims {
  if (p["uid"] !== uid)
    throw new ProblemError("bad-request", `the token's "uid" must be the pod uid in the path (${uid})`, {
      errors: [{ path: "uid", message: "does not match the path" }],
    });
  const r = ExecClaims.safeParse(p);
  if (!r.success) {
    const errors = fieldErrors(r.error);
    throw new ProblemError("bad-request", errors.map((e) => `${e.path}: ${e.message}`).join("; "), { errors });
  }
  return r.data;
}

/** Run the command (ExecSync, output cut at `maxOutputBytes`). */
export async function runExec(rt: Pick<PodRuntime, "exec">, uid: string, claims: ExecClaims, maxOutputBytes: number) {
  const r = await rt.exec(uid, {
    container: claims.container,
    command: claims.command,
    timeoutSeconds: claims.timeoutSeconds,
    maxOutputBytes,
  });
  const result = {
    pod: r.pod,
    container: r.container,
    containerId: r.containerId,
    exitCode: r.exitCode,
    stdout: r.stdout,
    stderr: r.stderr,
  };
  return { result, criCalls: r.criCalls };
}

/** What the request log records of a command: its SHA-256, never its arguments (they may hold secrets). */
export async function commandSha256(command: readonly string[]): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(command))));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}
