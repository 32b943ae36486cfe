// One JSON line per request: who acted, on which pod, what it cost in CRI calls; never a body or a token.
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./context.js";

export interface RequestLog {
  time: string;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  podUid?: string;
  criCalls: number;
  jti?: string;
  /** exec only: who ran it, and the SHA-256 of its argv (never the argv or its output). */
  iss?: string;
  commandSha256?: string;
  /** port-forward only: the pod ports its streams asked for. */
  ports?: number[];
  error?: string;
}

export function requestLog(log: (rec: RequestLog) => void, now: () => number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const t0 = performance.now();
    c.set("criCalls", 0);
    await next();
    const rec: RequestLog = {
      time: new Date(now()).toISOString(),
      method: c.req.method,
      route: c.req.routePath,
      status: c.res.status,
      durationMs: Math.round((performance.now() - t0) * 100) / 100,
      criCalls: c.get("criCalls"),
    };
    const uid = c.get("podUid");
    if (uid) rec.podUid = uid;
    const jti = c.get("jti");
    if (jti) rec.jti = jti;
    const iss = c.get("iss");
    if (iss) rec.iss = iss;
    const cmd = c.get("commandSha256");
    if (cmd) rec.commandSha256 = cmd;
    const err = c.get("error");
    if (err) rec.error = err;
    log(rec);
  };
}
