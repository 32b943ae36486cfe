// The pods hub's feed: after each relist of the reconcile loop, the desired pods as v1.Pods (the spec as
// stored, the status as kubelet's generateAPIPodStatus makes it from the relist's statuses and the prober's
// results). It makes no runtime call: a watch or a list costs the node nothing beyond the loop's own relist.
// A pod's object is rebuilt only when its runtime fingerprint, its stored spec or its probe results changed.
//
// Status from the relist differs from GET /v1/pods/{uid} in one way: termination messages read from files are
// not included (the relist reads no files).
import type { DesiredPod } from "../pleg/desired-state.js";
import {
  generateAPIPodStatus,
  toV1Pod,
  type PodEviction,
  type PodProbeResults,
  type V1Pod,
} from "../status/api-status.js";
import { apiTime } from "../status/api-status.js";
import type { PodStatus } from "../container/types.js";
import type { WatchHub } from "./watch-hub.js";
import type { Pod } from "../pod/schema.js";
import { fingerprintOf } from "../pleg/relist.js";
import type { EventRecorder } from "./events.js";
import { defaultPodSpec } from "./apiserver/defaults.js";

export interface RelistView {
  /** When its list calls went out (ms). */
  at?: number;
  pods: ReadonlyMap<string, { readonly status: PodStatus; fingerprint: string }>;
}

export interface PodFeedOptions {
  nodeName: string;
  hostIPs: readonly string[];
  /** CRI Version's runtimeName (container ids are <name>://<id>); "" until known. */
  runtimeName: () => string;
  now?: () => number;
  /** Where Unhealthy events go when a probe result turns to Failure. */
  recorder?: EventRecorder | undefined;
  /** The eviction manager's verdict on a pod (the runtime keeps it): Failed, reason Evicted, its condition. */
  eviction?: ((uid: string) => PodEviction | undefined) | undefined;
  /** A pod whose delete runs (the runtime keeps it): listed Terminating, with its deletionTimestamp, until
   * removed() says it is gone. */
  deletion?:
    | ((uid: string) => { deletionTimestamp: number; deletionGracePeriodSeconds: number } | undefined)
    | undefined;
}

const emptyStatus = (uid: string): PodStatus => ({
  id: uid,
  name: "",
  namespace: "",
  ips: [],
  sandboxStatuses: [],
  containerStatuses: [],
});

function probesKey(p: PodProbeResults | undefined): string {
  if (!p) return "";
  const m = (x: ReadonlyMap<string, unknown> | undefined) =>
    x ? [...x].map(([k, v]) => `${k}=${String(v)}`).join(",") : "";
  return `${m(p.liveness)}|${m(p.readiness)}|${m(p.startup)}|${m(p.changedAt)}`;
}

export interface PodFeed {
  /** Call with every relist's desired entries and view. */
  (
    entries: readonly DesiredPod[],
    view: RelistView | undefined,
    probes: (uid: string) => PodProbeResults | undefined,
  ): void;
  /** Build again from the last relist (after runtimeName became known). */
  again(): void;
  /** A sync through the front door (a request's or the loop's) read the pod back: its status now, in full. With
   * runtime events the relist is only a safety net minutes apart; this keeps the pods current between relists. */
  synced(pod: Pod, after: PodStatus, probes: PodProbeResults | undefined): void;
  /** The pod's delete was asked: it shows as Terminating now. */
  deleting(uid: string): void;
  /** The pod was deleted. */
  removed(uid: string): void;
}

/** The v1.Pod of a desired pod from its runtime status (generateAPIPodStatus), its spec as the API server
 * serves it. */
function feedPod(
  e: DesiredPod,
  listed: PodStatus,
  pr: PodProbeResults | undefined,
  eviction: PodEviction | undefined,
  o: PodFeedOptions,
  now: () => number,
  /** Told the status first (Unhealthy events). */
  check: (e: DesiredPod, status: PodStatus, pr: PodProbeResults | undefined) => void,
): V1Pod {
  // A running container's start time is in the relist only when its probes need it (or a loop sync read
  // it): otherwise its creation time stands in (CreateContainer and StartContainer are one step apart).
  const status = {
    ...listed,
    containerStatuses: listed.containerStatuses.map((c) =>
      c.state === "running" && !c.startedAt ? { ...c, startedAt: c.createdAt } : c,
    ),
  };
  check(e, status, pr);
  const apiStatus = generateAPIPodStatus({
    pod: e.pod,
    status,
    now: now(),
    runtimeName: o.runtimeName(),
    hostIPs: o.hostIPs,
    probes: pr,
    reasons: undefined,
    eviction,
  });
  const v1 = toV1Pod(e.pod, e.pod.metadata, apiStatus);
  return {
    ...v1,
    metadata: { ...v1.metadata, creationTimestamp: v1.metadata.creationTimestamp ?? apiTime(e.storedAt) },
    // The spec as the API server serves it: its SetDefaults_* applied (src/kubeapi/apiserver/defaults.ts).
    ...(v1.spec ? { spec: defaultPodSpec({ ...v1.spec, nodeName: o.nodeName }) as V1Pod["spec"] } : {}),
  };
}

/** Unhealthy events: each probe result that turns to Failure, once per turn. */
function unhealthyEvents(recorder: EventRecorder | undefined) {
  /** uid → "<probe>/<container id>" → last result, to see a result turn to Failure. */
  const lastResults = new Map<string, Map<string, string>>();
  // kubelet's prober records Unhealthy ("Liveness probe failed: <output>") on each failure; the prober here
  // keeps no output, so the event says which probe failed, once per turn to Failure.
  const check = (e: DesiredPod, status: PodStatus, pr: PodProbeResults | undefined) => {
    if (!recorder) return;
    const uid = e.pod.metadata.uid;
    const prev = lastResults.get(uid) ?? new Map<string, string>();
    const next = new Map<string, string>();
    for (const [kind, results] of [
      ["Liveness", pr?.liveness],
      ["Readiness", pr?.readiness],
      ["Startup", pr?.startup],
    ] as const)
      for (const [id, r] of results ?? []) {
        next.set(`${kind}/${id}`, r);
        if (r !== "Failure" || prev.get(`${kind}/${id}`) === "Failure") continue;
        const name = status.containerStatuses.find((c) => c.id === id)?.name;
        if (name)
          recorder.record(e.pod.metadata, {
            type: "Warning",
            reason: "Unhealthy",
            message: `${kind} probe failed`,
            fieldPath: `spec.containers{${name}}`,
          });
      }
    lastResults.set(uid, next);
  };
  return { check, forget: (uid: string) => void lastResults.delete(uid) };
}

/** The entry a sync's read-back builds from. A sync of the stored spec (the loop's resyncs) builds as the stored
 * entry does, so the relists and syncs of an idle pod reuse one object instead of rebuilding it in turn. */
function syncedEntry(pod: Pod, known: DesiredPod | undefined, now: () => number): DesiredPod {
  // A loop sync hands over the stored pod itself: no serialising then.
  if (known && known.pod === pod) return known;
  const json = JSON.stringify(pod);
  if (known && JSON.stringify(known.pod) === json) return known;
  return { pod, audit: { iss: "", kid: undefined, jti: `sync:${json}`, iat: 0 }, storedAt: known?.storedAt ?? now() };
}

export function createPodFeed(hub: WatchHub<V1Pod>, o: PodFeedOptions): PodFeed {
  const now = o.now ?? Date.now;
  const built = new Map<string, { key: string; pod: V1Pod }>();
  const unhealthy = unhealthyEvents(o.recorder);
  /** A sync's read-back, fuller than the relist's (start times, termination messages), by uid: used while the
   * relist still shows the same objects (fingerprint). */
  const fresh = new Map<string, { fingerprint: string; status: PodStatus; at: number }>();
  const entryOf = new Map<string, DesiredPod>();
  const build = (
    e: DesiredPod,
    pv: { readonly status: PodStatus; fingerprint: string } | undefined,
    pr: PodProbeResults | undefined,
    viewAt?: number,
  ): V1Pod => {
    const uid = e.pod.metadata.uid;
    const f = fresh.get(uid);
    // The read-back also wins over a relist whose list calls went out before it (a pod synced while the relist
    // ran): that view is older, and with runtime events the next relist is minutes away.
    const readBack = !!f && ((pv && f.fingerprint === pv.fingerprint) || (viewAt !== undefined && f.at >= viewAt));
    const current = readBack ? { status: f.status, fingerprint: f.fingerprint } : pv;
    const eviction = o.eviction?.(uid);
    // Where the status came from is in the key: a read-back is fuller than the relist's view of the same objects.
    const key = `${readBack ? "read" : "list"}:${current?.fingerprint ?? "-"}#${e.audit.jti}#${e.storedAt}#${probesKey(pr)}#${o.runtimeName()}#${eviction ? `${eviction.reason}@${eviction.at}` : ""}`;
    const had = built.get(uid);
    if (had?.key === key) return had.pod;
    const pod = feedPod(e, current?.status ?? emptyStatus(uid), pr, eviction, o, now, unhealthy.check);
    built.set(uid, { key, pod });
    return pod;
  };
  /** The pod as last built, with the deletion the runtime holds for it (printPod shows it Terminating). */
  const terminating = (uid: string): V1Pod | undefined => {
    const b = built.get(uid);
    const d = o.deletion?.(uid);
    if (!b || !d) return undefined;
    const { deletionTimestamp, deletionGracePeriodSeconds } = toV1Pod(
      undefined,
      b.pod.metadata,
      b.pod.status,
      d,
    ).metadata;
    return { ...b.pod, metadata: { ...b.pod.metadata, deletionTimestamp, deletionGracePeriodSeconds } };
  };
  let last: Parameters<PodFeed> | undefined;
  /** Pods synced since the last feed. The loop reads the desired entries before its relist's CRI calls, so a
   * pod stored and synced meanwhile is missing from the feed's entries though it is desired: it stays until the
   * next feed decides (a removal is told by removed(), never only by its absence). */
  const syncedSinceFeed = new Set<string>();
  /** `replay`: again() building from the last relist's entries; a pod synced since then keeps its object. */
  const apply = (
    entries: readonly DesiredPod[],
    view: RelistView | undefined,
    probes: (uid: string) => PodProbeResults | undefined,
    replay: boolean,
  ): void => {
    const out: V1Pod[] = [];
    const seen = new Set<string>();
    for (const e of entries) {
      const uid = e.pod.metadata.uid;
      if (replay && syncedSinceFeed.has(uid)) continue;
      seen.add(uid);
      entryOf.set(uid, e);
      const pv = view?.pods.get(uid);
      out.push(build(e, pv, probes(uid), view?.at));
    }
    for (const [uid, b] of [...built]) {
      if (seen.has(uid)) continue;
      // A replay's entries are no newer than the last feed's: it removes nothing (removed() does).
      if (replay || syncedSinceFeed.has(uid)) out.push(b.pod);
      // Out of the desired state, its delete still running: Terminating, as last seen, until removed().
      else if (terminating(uid)) out.push(terminating(uid)!);
      else forget(uid);
    }
    if (!replay) syncedSinceFeed.clear();
    hub.replaceAll(out);
  };
  const feed = (
    entries: readonly DesiredPod[],
    view: RelistView | undefined,
    probes: (uid: string) => PodProbeResults | undefined,
  ): void => {
    last = [entries, view, probes];
    apply(entries, view, probes, false);
  };
  const forget = (uid: string) => {
    built.delete(uid);
    unhealthy.forget(uid);
    fresh.delete(uid);
    entryOf.delete(uid);
  };
  return Object.assign(feed, {
    again: () => last && apply(...last, true),
    synced(pod: Pod, after: PodStatus, probes: PodProbeResults | undefined) {
      const uid = pod.metadata.uid;
      syncedSinceFeed.add(uid);
      const fingerprint = fingerprintOf(after);
      fresh.set(uid, { fingerprint, status: after, at: now() });
      // Built with the synced spec (a pod new since the last relist has no stored entry here yet; its store time
      // stands in as now); the next relist's build from the stored entry makes the same object. The spec's JSON is
      // in the build's key, so a converged sync of the same spec and status reuses the object built last time
      // (equal specs parsed alike serialise alike; one that does not only costs a rebuild).
      hub.upsert(build(syncedEntry(pod, entryOf.get(uid), now), { status: after, fingerprint }, probes));
    },
    deleting(uid: string) {
      const t = terminating(uid);
      if (t) hub.upsert(t);
    },
    removed(uid: string) {
      syncedSinceFeed.delete(uid);
      forget(uid);
      hub.remove(uid);
    },
  });
}
