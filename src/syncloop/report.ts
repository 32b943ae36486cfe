// The sync loop's error log: each distinct error once (and its recovery once), never on every tick.
import { errorMessage, isCriError } from "../cri/errors.js";

export type LoopLog = (rec: Record<string, unknown>) => void;

/** An error's identity (`same`: what failed, not the wording, which can carry addresses or times) and its text. */
export interface Failure {
  same: string;
  text: string;
}

export interface Reporter {
  /** Log an error for `key` only when its identity differs from the last one logged; log its recovery once. */
  report(key: string, uid: string | undefined, error: Failure | undefined, extra?: Record<string, unknown>): void;
  /** Forget the key's error (its pod left the desired state). */
  forget(key: string): void;
}

export function createReporter(log: LoopLog): Reporter {
  const errors = new Map<string, string>();
  return {
    report(key, uid, error, extra = {}) {
      const prev = errors.get(key);
      if (error?.same === prev) return;
      const what = key.startsWith("pod:") ? "sync" : key;
      if (error === undefined) {
        errors.delete(key);
        log({ event: "recovered", ...(uid ? { podUid: uid } : {}), what });
        return;
      }
      errors.set(key, error.same);
      log({ event: "error", ...(uid ? { podUid: uid } : {}), what, error: error.text.slice(0, 300), ...extra });
    },
    forget: (key) => void errors.delete(key),
  };
}

export const failure = (e: unknown): Failure => ({
  same: isCriError(e) ? e.codeName : errorMessage(e),
  text: isCriError(e) ? e.message : errorMessage(e),
});
