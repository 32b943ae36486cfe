// The ordered, timed step list a sync reports, and step failures that carry a kubelet error reason.
import { CriError, errorMessage } from "../cri/errors.js";
import type { StepErrorReason, SyncAction, SyncStep } from "./types.js";

/** Milliseconds since t0 (performance.now()), to 0.01 ms. */
export const elapsedMs = (t0: number) => Math.round((performance.now() - t0) * 100) / 100;

export class Steps {
  readonly steps: SyncStep[] = [];
  async run(
    action: SyncAction,
    target: string,
    fn: () => Promise<string | void>,
    errorReason: StepErrorReason,
  ): Promise<boolean> {
    const t0 = performance.now();
    const step: SyncStep = { action, target, ok: true, durationMs: 0 };
    this.steps.push(step);
    try {
      const msg = await fn();
      if (msg) step.message = msg;
    } catch (e) {
      fail(step, e, errorReason);
    }
    step.durationMs = elapsedMs(t0);
    return step.ok;
  }
}

/** A step failure with a kubelet error reason (CrashLoopBackOff, ErrImagePull, ...). */
export class StepError extends Error {
  constructor(
    readonly reason: StepErrorReason,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

function fail(step: SyncStep, e: unknown, reason: StepErrorReason) {
  step.ok = false;
  if (e instanceof StepError) {
    step.error = e.reason;
    step.message = e.message;
    if (e.cause instanceof CriError) step.grpcCode = e.cause.codeName;
  } else {
    step.error = reason;
    step.message = errorMessage(e);
    if (e instanceof CriError) step.grpcCode = e.codeName;
  }
}
