// What the node is doing while a sync or an apply runs, from kubelet's events as the node records them (Pulling
// as a pull starts, then Pulled, Created, Started, Killing, BackOff, ...): the CLI follows the events watch and
// shows each pod's newest event as its line under the heading (pod-progress.ts). Where the node serves no watch it
// shows nothing, and the heading's elapsed time stands alone. The node answers the request as soon as its work is
// done, possibly before the watch has carried its last events (or has even started): stop() lists them once more
// and shows each pod's newest, so a quick sync still ends on the pod's last event.
import type { Ctx } from "./client.js";
import { podProgress } from "./print/pod-progress.js";
import { READ_ACT } from "../auth/read-token.js";
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
): { stop(): Promise<void> } {
  if (ctx.quiet) return { stop: async () => undefined };
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
  const show = (ev: V1EventLike) => {
    if (Date.parse(ev.lastTimestamp ?? "") < from) return;
    const o = ev.involvedObject;
    // kubelet's messages say what happened on their own ("Pulling image ...", "Started container main").
    const ns = o?.namespace && o.namespace !== ctx.namespace ? ` (${o.namespace})` : "";
    p.set(`${(o?.kind ?? "").toLowerCase()}/${o?.name ?? ""}${ns}`, ev.message || ev.reason || "");
  };
  watchEvents(
    ctx,
    path,
    (e) => {
      if (e.type !== "DELETED") show(e.object as unknown as V1EventLike);
    },
    abort.signal,
  ).catch(() => undefined); // no watch (an older node, a Workers node without it): the heading alone
  /** The events as the node holds them now, each pod's newest last (the list is in the order they were recorded). */
  const catchUp = async () => {
    const r = await ctx.fetch(path, {
      headers: { authorization: `Bearer ${await ctx.sign({ act: READ_ACT })}`, accept: "application/json" },
    });
    if (!r.ok) return void (await r.body?.cancel());
    const newest = new Map<string, V1EventLike>();
    for (const ev of ((await r.json()) as { items?: V1EventLike[] }).items ?? [])
      newest.set(`${ev.involvedObject?.kind}/${ev.involvedObject?.namespace}/${ev.involvedObject?.name}`, ev);
    for (const ev of newest.values()) show(ev);
  };
  return {
    stop: async () => {
      clearInterval(timer);
      abort.abort();
      await catchUp().catch(() => undefined); // no events list: what the watch showed stands
      p.done();
    },
  };
}
