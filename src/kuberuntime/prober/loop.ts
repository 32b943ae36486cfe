// A small self-driving loop for the prober until the node agent's reconcile loop drives it (issue 11):
// wake when the next probe is due, refresh those pods' status from the runtime, tick, and sync any pod whose
// liveness or startup probe failed (computePodActions then kills and restarts the container with kubelet's
// "Container <name> failed liveness probe, will be restarted"). The sync goes through the engine's front
// door and so takes the pod's lock like any request. At merge, the agent's loop calls the same four methods
// (observe, tick, needsSync/results, sync) from its relist and this file goes.
import type { PodRuntime } from "../runtime.js";
import type { Prober } from "./prober.js";

export interface ProbeLoopOptions {
  /** The longest the loop sleeps (ms): also how soon it notices pods added since. */
  maxSleepMs?: number;
  now?: () => number;
  onError?: (e: unknown, uid?: string) => void;
}

export interface ProbeLoop {
  stop(): Promise<void>;
  /** Run an iteration now (e.g. after a pod was added). */
  kick(): void;
}

export function startProbeLoop(prober: Prober, runtime: PodRuntime, o: ProbeLoopOptions = {}): ProbeLoop {
  const now = o.now ?? Date.now;
  const maxSleep = o.maxSleepMs ?? 1000;
  const onError = o.onError ?? (() => undefined);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  async function iteration() {
    const t = now();
    await Promise.all(
      prober.due(t).map(async (uid) => {
        try {
          const r = await runtime.status(uid);
          if (r) prober.observe(uid, r.status);
        } catch (e) {
          onError(e, uid);
        }
      }),
    );
    const r = await prober.tick(t);
    await Promise.all(
      r.needsSync.map(async (uid) => {
        const spec = prober.spec(uid);
        if (!spec) return;
        try {
          const s = await runtime.sync(spec, prober.results(uid));
          prober.observe(uid, s.after);
        } catch (e) {
          onError(e, uid);
        }
      }),
    );
  }

  function schedule(delay: number) {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      running = iteration()
        .catch((e) => onError(e))
        .finally(() => {
          running = undefined;
          const next = prober.nextDue();
          schedule(next === undefined ? maxSleep : Math.min(maxSleep, Math.max(20, next - now())));
        });
    }, delay);
    // Never keep the process alive for probes alone.
    (timer as { unref?: () => void }).unref?.();
  }
  schedule(0);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
    kick() {
      if (!running) schedule(0);
    },
  };
}
