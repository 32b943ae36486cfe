// What the node is doing while a sync or an apply runs, from kubelet's events as the node records them (Pulling
// as a pull starts, then Pulled, Created, Started, Killing, BackOff, ...): the CLI follows the events watch and
// shows the newest as its progress line. Where the node serves no watch it shows nothing, and the caller's
// elapsed time stands alone.
import type { Ctx } from "./client.js";
import { watchEvents } from "./watch.js";

interface V1EventLike {
  involvedObject?: { kind?: string; name?: string; namespace?: string };
  reason?: string;
  message?: string;
  lastTimestamp?: string | null;
}

export interface EventProgress {
  /** The newest event's line, e.g. `pod/web: Pulling image "nginx:1.27"`; "" before any. */
  latest(): string;
  stop(): void;
}

/** Follows the events of one pod (`pod` given) or of the whole node, from `since` (ms) on. */
export function followEvents(ctx: Ctx, since: number, pod?: { namespace: string; name: string }): EventProgress {
  let latest = "";
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
      latest = `${(o?.kind ?? "").toLowerCase()}/${o?.name ?? ""}: ${ev.message || ev.reason || ""}`;
    },
    abort.signal,
  ).catch(() => undefined); // no watch (an older node, a Workers node without it): progress is the elapsed time alone
  return { latest: () => latest, stop: () => abort.abort() };
}
