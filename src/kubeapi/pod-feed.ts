// The pods hub's feed: after each relist of the reconcile loop, the desired pods as v1.Pods (the spec as
// stored, the status as kubelet's generateAPIPodStatus makes it from the relist's statuses and the prober's
// results). It makes no runtime call: a watch or a list costs the node nothing beyond the loop's own relist.
// A pod's object is rebuilt only when its runtime fingerprint, its stored spec or its probe results changed.
//
// Status from the relist differs from GET /v1/pods/{uid} in one way: termination messages read from files are
// not included (the relist reads no files).
import type { DesiredPod } from "../pleg/desired-state.js";
import { generateAPIPodStatus, toV1Pod, type PodProbeResults, type V1Pod } from "../status/api-status.js";
import { apiTime } from "../status/api-status.js";
import type { PodStatus } from "../container/types.js";
import type { WatchHub } from "./watch-hub.js";
import type { EventRecorder } from "./events.js";

export interface RelistView {
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
}

const emptyStatus = (uid: string): PodStatus => ({ id: uid, name: "", namespace: "", ips: [], sandboxStatuses: [], containerStatuses: [] });

function probesKey(p: PodProbeResults | undefined): string {
  if (!p) return "";
  const m = (x: ReadonlyMap<string, unknown> | undefined) => (x ? [...x].map(([k, v]) => `${k}=${String(v)}`).join(",") : "");
  return `${m(p.liveness)}|${m(p.readiness)}|${m(p.startup)}|${m(p.changedAt)}`;
}

export interface PodFeed {
  /** Call with every relist's desired entries and view. */
  (entries: readonly DesiredPod[], view: RelistView | undefined, probes: (uid: string) => PodProbeResults | undefined): void;
  /** Build again from the last relist (after runtimeName became known). */
  again(): void;
}

export function createPodFeed(hub: WatchHub<V1Pod>, o: PodFeedOptions): PodFeed {
  const now = o.now ?? Date.now;
  const built = new Map<string, { key: string; pod: V1Pod }>();
  /** uid → "<probe>/<container id>" → last result, to see a result turn to Failure. */
  const lastResults = new Map<string, Map<string, string>>();
  // kubelet's prober records Unhealthy ("Liveness probe failed: <output>") on each failure; the prober here
  // keeps no output, so the event says which probe failed, once per turn to Failure.
  const unhealthy = (e: DesiredPod, status: PodStatus, pr: PodProbeResults | undefined) => {
    if (!o.recorder) return;
    const uid = e.pod.metadata.uid;
    const prev = lastResults.get(uid) ?? new Map<string, string>();
    const next = new Map<string, string>();
    for (const [kind, results] of [["Liveness", pr?.liveness], ["Readiness", pr?.readiness], ["Startup", pr?.startup]] as const)
      for (const [id, r] of results ?? []) {
        next.set(`${kind}/${id}`, r);
        if (r !== "Failure" || prev.get(`${kind}/${id}`) === "Failure") continue;
        const name = status.containerStatuses.find((c) => c.id === id)?.name;
        if (name) o.recorder.record(e.pod.metadata, { type: "Warning", reason: "Unhealthy", message: `${kind} probe failed`, fieldPath: `spec.containers{${name}}` });
      }
    lastResults.set(uid, next);
  };
  let last: Parameters<PodFeed> | undefined;
  const feed = (entries: readonly DesiredPod[], view: RelistView | undefined, probes: (uid: string) => PodProbeResults | undefined): void => {
    last = [entries, view, probes];
    const out: V1Pod[] = [];
    const seen = new Set<string>();
    for (const e of entries) {
      const uid = e.pod.metadata.uid;
      seen.add(uid);
      const pv = view?.pods.get(uid);
      const pr = probes(uid);
      const key = `${pv?.fingerprint ?? "-"}#${e.audit.jti}#${e.storedAt}#${probesKey(pr)}#${o.runtimeName()}`;
      const had = built.get(uid);
      if (had?.key === key) {
        out.push(had.pod);
        continue;
      }
      // A running container's start time is in the relist only when its probes need it (or a loop sync read
      // it): otherwise its creation time stands in (CreateContainer and StartContainer are one step apart).
      const listed = pv?.status ?? emptyStatus(uid);
      const status = { ...listed, containerStatuses: listed.containerStatuses.map((c) => (c.state === "running" && !c.startedAt ? { ...c, startedAt: c.createdAt } : c)) };
      unhealthy(e, status, pr);
      const apiStatus = generateAPIPodStatus({ pod: e.pod, status, now: now(), runtimeName: o.runtimeName(), hostIPs: o.hostIPs, probes: pr, reasons: undefined });
      const v1 = toV1Pod(e.pod, e.pod.metadata, apiStatus);
      const pod: V1Pod = {
        ...v1,
        metadata: { ...v1.metadata, creationTimestamp: v1.metadata.creationTimestamp ?? apiTime(e.storedAt) },
        ...(v1.spec ? { spec: { ...v1.spec, nodeName: o.nodeName } as V1Pod["spec"] } : {}),
      };
      built.set(uid, { key, pod });
      out.push(pod);
    }
    for (const uid of [...built.keys()])
      if (!seen.has(uid)) {
        built.delete(uid);
        lastResults.delete(uid);
      }
    hub.replaceAll(out);
  };
  return Object.assign(feed, { again: () => last && feed(...last) });
}
