// The node's Kubernetes API read side on Workers: the same app Node serves (src/kubeapi/routes.ts), held by the
// node's Durable Object (NodeDesiredState), since isolates share no memory and a watch needs one place where the
// changes arrive. Guarantees: the pods are fed by the object's alarm (the reconcile loop's relist, as on Node) and
// by every sync and delete, the loop's and the Worker routes' (reported to the object, report()), so a watch costs
// no CRI call of its own; the events of what those syncs did are kept in the object's bounded ring.
//
// What lives in the object's memory (the hubs, the event ring, the resourceVersion clock) starts over when the
// runtime evicts the object: the clock restarts at the new instance's start time, so a watch resuming from an
// older resourceVersion gets 410 and lists again, as from a compacted API server.
import pkg from "../../package.json" with { type: "json" };
import type { PodStatus } from "../container/types.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import {
  deleteEvents,
  EventRecorder,
  recordingEvents,
  syncEvents,
  type EventSpec,
  type PodRef,
} from "../kubeapi/events.js";
import { nodeObject, type V1Node } from "../kubeapi/node-object.js";
import { createPodFeed, type RelistView } from "../kubeapi/pod-feed.js";
import { createKubeApi } from "../kubeapi/routes.js";
import { createWorkloadFeed } from "../kubeapi/kinds/workload-feed.js";
import type { WorkloadStore } from "../controllers/store.js";
import { RvClock, WatchHub } from "../kubeapi/watch-hub.js";
import type { DesiredPod } from "../pleg/desired-state.js";
import type { Pod } from "../pod/schema.js";
import { nodeInfoFrom, withNodeOverrides } from "../settings/node-info.js";
import type { PodProbeResults, V1Pod } from "../status/api-status.js";
import type { Verifier } from "../auth/verify.js";
import type { WorkerConfig } from "./settings.js";

/** What a Worker route's sync or delete tells the node object: the pod as read back, and kubelet's events. */
export type KubeReport =
  | { synced: { pod: Pod; after: PodStatus }; events: EventSpec[] }
  | { deleted: { uid: string; pod: PodRef }; events: EventSpec[] };

// A report crosses to the object as JSON; the runtime's sandbox statuses carry bigint times (nanoseconds).
const BIG = "$bigint";
/** The report as JSON-able data (bigints tagged). */
export const reportJSON = (r: KubeReport): unknown =>
  JSON.parse(JSON.stringify(r, (_k, v: unknown) => (typeof v === "bigint" ? { [BIG]: v.toString() } : v)));
/** The report again from reportJSON's data. */
export const reportFrom = (j: unknown): KubeReport =>
  JSON.parse(JSON.stringify(j), (_k, v: unknown) =>
    v !== null &&
    typeof v === "object" &&
    typeof (v as Record<string, unknown>)[BIG] === "string" &&
    Object.keys(v).length === 1
      ? BigInt((v as Record<string, string>)[BIG]!)
      : v,
  ) as KubeReport;

/** Why `kubectl exec` is refused through the Worker (a 403 Status, to a token and node that allow exec). */
export const WORKERS_EXEC =
  "kubectl exec is not served by the Worker: it reaches the node only through cri-proxy's gRPC-Web, which carries no stream to the runtime's streaming server; use podsync exec (one command, its output at the end) or kubectl against the node's own podsync";

export interface NodeKube {
  /** A Kubernetes API request (/version, /api/..., /apis/...), the path relative to the node. */
  fetch(req: Request): Promise<Response>;
  /** The loop's front door: its syncs and deletes update the pods and record their events. */
  recording(rt: PodRuntime): PodRuntime;
  /** The loop's relist, fed to the pods. */
  onRelist(entries: readonly DesiredPod[], view: RelistView | undefined): void;
  /** A Worker route's sync or delete. */
  report(r: KubeReport): void;
}

export interface NodeKubeOptions {
  node: string;
  settings: WorkerConfig;
  verifier: Verifier;
  /** The node's engine (readiness for the Node object, logs). */
  runtime: PodRuntime;
  /** The alarm's prober's results. */
  probes: (uid: string) => PodProbeResults | undefined;
  /** One reconcile pass now (relist and feed): the first answer about pods after the object (re)starts. */
  pass: () => Promise<void>;
  /** The node's workloads: served read-only (kubectl get deploy), brought up to the store at each list and relist. */
  workloads?: WorkloadStore | undefined;
  log: (rec: Record<string, unknown>) => void;
}

export function nodeKube(o: NodeKubeOptions): NodeKube {
  const s = o.settings;
  const startedAt = Date.now();
  const clock = new RvClock(startedAt);
  const pods = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
  const recorder = new EventRecorder(clock, o.node);
  const nodeHub = new WatchHub<V1Node>(clock, { key: (n) => n.metadata.name });
  let runtimeName = "";
  // A Worker does not know the node's addresses: pods carry no hostIP, the Node object only its name.
  const feed = createPodFeed(pods, { nodeName: o.node, hostIPs: [], runtimeName: () => runtimeName, recorder });
  const info = nodeInfoFrom(withNodeOverrides(s, s.PODSYNC_NODES[o.node]!), o.node, {});
  const refreshNode = async () => {
    const r = await o.runtime.ready().catch(() => undefined);
    if (r && r.runtime.name !== runtimeName) {
      runtimeName = r.runtime.name;
      feed.again();
    }
    const milli = info.allocatable.milliCPU;
    nodeHub.replaceAll([
      nodeObject(
        {
          info,
          cpus: milli !== undefined ? milli / 1000 : undefined,
          memoryBytes: info.allocatable.memory,
          hostIPs: [],
          startedAt,
        },
        r,
        Date.now(),
      ),
    ]);
  };
  const workloads = o.workloads ? createWorkloadFeed(clock, o.workloads) : undefined;
  const kube = createKubeApi({
    verifier: o.verifier,
    pods,
    workloads,
    events: recorder,
    node: { hub: nodeHub, refresh: refreshNode },
    // Before the first answer about pods: the runtime's name, and a pass (an object just started has not relisted).
    prepare: async () => {
      await refreshNode();
      await o.pass().catch((e: unknown) =>
        o.log({
          event: "error",
          what: "first relist for the Kubernetes API",
          error: String((e as Error)?.message ?? e).slice(0, 300),
        }),
      );
    },
    firstFeedWaitMs: 0,
    runtime: o.runtime,
    podsyncVersion: pkg.version,
    arch: info.labels["kubernetes.io/arch"] ?? "",
    followMaxMs: s.PODSYNC_LOG_FOLLOW_MAX_S * 1000,
    // Each look at a followed log is a read and a stat through the node's cri-proxy (billed subrequests).
    followPollMs: 1000,
    allowExec: s.PODSYNC_ALLOW_EXEC,
    execUnavailable: WORKERS_EXEC,
    log: (rec) => console.log(JSON.stringify({ ...rec, node: o.node })),
  });
  const synced = (pod: Pod, after: PodStatus) => feed.synced(pod, after, o.probes(pod.metadata.uid));
  return {
    fetch: async (req) => kube.fetch(req),
    recording: (rt) =>
      recordingEvents(rt, recorder, { synced: (pod, r) => synced(pod, r.after), deleted: (uid) => feed.removed(uid) }),
    onRelist: (entries, view) => {
      feed(entries, view, o.probes);
      // The controllers ran in the same pass: their statuses and the workloads they made reach a watch now.
      workloads?.load().catch((e: unknown) => o.log({ event: "error", what: "workload feed", error: String(e) }));
    },
    report(r) {
      if ("synced" in r) {
        synced(r.synced.pod, r.synced.after);
        for (const e of r.events) recorder.record(r.synced.pod.metadata, e);
      } else {
        feed.removed(r.deleted.uid);
        for (const e of r.events) recorder.record(r.deleted.pod, e);
      }
    },
  };
}

/** A Worker route's front door: each sync and delete is reported to the node object (report()), so the Kubernetes
 * API sees it at once, as on Node. A report that fails costs the API its freshness until the next relist, never the
 * sync. */
export function reportingToNode(
  rt: PodRuntime,
  send: (r: KubeReport) => Promise<unknown>,
  log: (e: unknown) => void,
): PodRuntime {
  return {
    ...rt,
    sync: async (pod, probes, objects, guard) => {
      const r = await rt.sync(pod, probes, objects, guard);
      await send({ synced: { pod, after: r.after }, events: syncEvents(pod, r) }).catch(log);
      return r;
    },
    delete: async (uid, grace, guard) => {
      const r = await rt.delete(uid, grace, guard);
      await send({ deleted: { uid, pod: r.pod }, events: deleteEvents(r) }).catch(log);
      return r;
    },
  };
}
