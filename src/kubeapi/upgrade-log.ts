// The request log line of a streaming upgrade (exec, port-forward): one record filled in as the upgrade is
// checked and joined, written once, when the session ends or is refused, with its status and length.
import type { RequestLog } from "../usecases/ports.js";

export interface UpgradeLog {
  rec: RequestLog;
  /** Writes the line (the first call only): the session's status, its length so far, why it ended if it failed. */
  done(status: number, error?: string): void;
}

export function upgradeLog(
  log: ((rec: RequestLog) => void) | undefined,
  now: () => number,
  method: string,
  route: string,
): UpgradeLog {
  const t0 = performance.now();
  const rec: RequestLog = {
    time: new Date(now()).toISOString(),
    method,
    route,
    status: 101,
    durationMs: 0,
    criCalls: 0,
  };
  let logged = false;
  return {
    rec,
    done(status, error) {
      if (logged) return;
      logged = true;
      log?.({
        ...rec,
        status,
        durationMs: Math.round((performance.now() - t0) * 100) / 100,
        ...(error ? { error } : {}),
      });
    },
  };
}
