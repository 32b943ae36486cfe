// What the node is doing while a sync or an apply runs, from kubelet's events as the node records them (Pulling
// as a pull starts, then Pulled, Created, Started, Killing, BackOff, ...): the CLI follows the events watch and
// shows each pod's newest event as its line under the heading (pod-progress.ts). Where the node serves no watch it
// shows nothing, and the heading's elapsed time stands alone.
import type { Ctx } from "./client.js";
import { podProgress } from "./print/pod-progress.js";
import { watchEvents } from "./watch.js";

interface V1EventLike {
  involvedObject?: { kind?: string; name?: string; namespace?: string };
  reason?: string;
  message?: string;
  lastTimestamp?: string | null;
}

/** Shows `heading(seconds)` every second and, under it, each pod's newest event from `since` (ms) on: one pod's
 * (`pod` given) or the whole node's, until stop(). Nothing with -q. */
export function showProgress(
  ctx: Ctx,
  since: number,
  heading: (seconds: number) => string,
  pod?: { namespace: string; name: string },
): { stop(): void } {
  if (ctx.quiet) return { stop: () => undefined };
  const p = podProgress(ctx);
  const tick = () => p.heading(heading(Math.floor((Date.now() - since) / 1000)));
  tick();
  const timer = setInterval(tick, 1000);
  timer.unref();
  const abort = new AbortController();
  const path = pod
    ? `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${pod.name}`)}`
    : "/api/v1/events";
  // Events carry seconds: one from the second the command started counts (an older one is the last run's).
  const from = Math.floor(since / 1000) * 1000;
  watchEvents(
    ctx,
    path,
    (e) => {
      const ev = e.object as unknown as V1EventLike;
      if (e.type === "DELETED" || Date.parse(ev.lastTimestamp ?? "") < from) return;
      const o = ev.involvedObject;
      // kubelet's messages say what happened on their own ("Pulling image ...", "Started container main").
      const ns = o?.namespace && o.namespace !== ctx.namespace ? ` (${o.namespace})` : "";
      p.set(`${(o?.kind ?? "").toLowerCase()}/${o?.name ?? ""}${ns}`, ev.message || ev.reason || "");
    },
    abort.signal,
  ).catch(() => undefined); // no watch (an older node, a Workers node without it): the heading alone
  return {
    stop: () => {
      clearInterval(timer);
      abort.abort();
      p.done();
    },
  };
}
