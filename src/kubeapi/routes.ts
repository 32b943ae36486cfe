// The Kubernetes API's read side as one Hono app: /version, discovery, pods (get, list, watch; Table form;
// selectors; limit/continue), pods/log, events, this node, and the node's workloads (apps/v1, batch/v1,
// claims) the same way. Nothing is answered without a read token
// (src/auth/read-token.ts); every write answers 403 naming podsync's signed way; every error is a Status.
// The entry points route /version, /api and /apis here (isKubePath) and everything else to the podsync app.
import { Hono, type Context } from "hono";
import type { Verifier } from "../auth/verify.js";
import { verifyReadToken, type ReadScope } from "../auth/read-token.js";
import { checkExec, checkPortForward, EXEC_PATH, PORT_FORWARD_PATH } from "./exec-check.js";
import type { V1Pod } from "../status/api-status.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import { LOG_HEADERS, openLog, parseLogQuery } from "../usecases/streams/logs.js";
import { streamFrom } from "../usecases/streams/stream.js";
import { releasing, type StreamBudget } from "../usecases/streams/budget.js";
import type { RequestLog } from "../usecases/ports.js";
import {
  aggregatedDiscovery,
  AGGREGATED_TYPE,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  reviewable,
  served,
  versionInfo,
  wantsAggregated,
} from "./discovery.js";
import { badRequest, forbidden, KubeStatusError, noSuchResource, notFound, toKubeStatus } from "./status.js";
import { parseFieldSelector, parseLabelSelector, SelectorError } from "./selectors.js";
import {
  EVENT_COLUMNS,
  eventCells,
  NODE_COLUMNS,
  nodeCells,
  POD_COLUMNS,
  podCells,
  podRowConditions,
  table,
  wantsTable,
  type IncludeObject,
  type TableColumn,
  type TableRow,
} from "./table.js";
import { RvClock, WatchHub, type Change, type KubeObject } from "./watch-hub.js";
import { watchStream } from "./watch-stream.js";
import type { EventRecorder, V1Event } from "./events.js";
import type { V1Node } from "./node-object.js";
import type { V1Workload, WorkloadFeed } from "./kinds/workload-feed.js";
import { WORKLOAD_COLUMNS, workloadCells } from "./kinds/workload-table.js";
import type { WorkloadKind } from "../pod/workloads/schema.js";
import {
  ENDPOINT_SLICE_COLUMNS,
  ENDPOINTS_COLUMNS,
  endpointSliceCells,
  endpointsCells,
} from "./kinds/service-table.js";
import type { EndpointsFeed, V1EndpointSliceObject, V1EndpointsObject } from "./kinds/endpoints-feed.js";
import { normalizeRequest } from "./apiserver/query.js";
import { registerReviews } from "./authorization/reviews.js";
import { registerOpenApi } from "./apiserver/openapi.js";
import { registerMetrics, type MetricsSource } from "./metrics/metrics.js";
import { createNamespaceFeed, NAMESPACE_COLUMNS, namespaceCells, type V1Namespace } from "./apiserver/namespaces.js";

export interface KubeApiOptions {
  verifier: Verifier;
  /** The node's pods, kept by the reconcile loop's relist (src/kubeapi/pod-feed.ts). */
  pods: WatchHub<V1Pod>;
  events: EventRecorder;
  /** This node, read fresh (CRI Version and Status) into its hub. */
  node: { hub: WatchHub<V1Node>; refresh: () => Promise<void> };
  runtime: PodRuntime;
  podsyncVersion: string;
  arch: string;
  /** The node owner's PODSYNC_ALLOW_EXEC (exec itself is the upgrade handler of exec-stream.ts). */
  allowExec: boolean;
  /** The node owner's PODSYNC_ALLOW_PORT_FORWARD (port-forward itself is the upgrade handler of portforward/). */
  allowPortForward?: boolean | undefined;
  /** Where exec's WebSocket cannot be served (Workers): why, answered as a 403 Status to an exec allowed otherwise. */
  execUnavailable?: string;
  followMaxMs: number;
  /** How often a followed log looks for more (default 250 ms; Workers: 1 s, each look is two subrequests). */
  followPollMs?: number;
  now?: () => number;
  log?: (rec: RequestLog) => void;
  onStreamError?: (e: unknown) => void;
  watch?: { bookmarkEveryMs?: number; maxQueueBytes?: number; maxMs?: number };
  /** Run once before the first answer about pods (Node: learn the runtime's name, for container ids). */
  prepare?: () => Promise<void>;
  /** How long a list waits for the pods' first feed (the loop's first relist) before answering with none. */
  firstFeedWaitMs?: number;
  /** The node's workloads (src/kubeapi/kinds/workload-feed.ts), read-only: apps/v1, batch/v1 and claims are served
   * only with them (the Workers entry runs none). */
  workloads?: Pick<WorkloadFeed, "hubs" | "load"> | undefined;
  /** The Services' EndpointSlices and Endpoints (src/kubeapi/kinds/endpoints-feed.ts); served with the workloads, empty
   * where the node has no service source (Workers: Services are refused there). */
  endpoints?: EndpointsFeed | undefined;
  /** The resource sampler behind metrics.k8s.io (kubectl top); without it the Metrics API answers 503. */
  metrics?: MetricsSource | undefined;
  /** The node's cap on open watches and log streams (src/usecases/streams/budget.ts); none when unset. */
  streams?: StreamBudget | undefined;
}

export { isKubePath } from "./paths.js";

type Env = { Variables: { jti?: string; error?: string; scope: ReadScope } };

interface Kind<T extends KubeObject> {
  resource: string;
  /** "" for the core group. */
  group: string;
  /** The group's version served (default v1: autoscaling is v2). */
  version?: string;
  kind: string;
  hub: WatchHub<T>;
  fields: Readonly<Record<string, (obj: T) => string>>;
  columns: TableColumn[];
  cells: (obj: T, now: number) => (string | number)[];
  conditions?: (obj: T) => TableRow["conditions"];
  /** Brought up to date before a list or get. */
  load: () => Promise<void>;
}

const POD_FIELDS: Record<string, (p: V1Pod) => string> = {
  "metadata.name": (p) => p.metadata.name,
  "metadata.namespace": (p) => p.metadata.namespace,
  "spec.nodeName": (p) => (p.spec as { nodeName?: string } | undefined)?.nodeName ?? "",
  "spec.restartPolicy": (p) => p.spec?.restartPolicy ?? "",
  "spec.hostNetwork": (p) => String(p.spec?.hostNetwork ?? false),
  "status.phase": (p) => p.status.phase,
  "status.podIP": (p) => p.status.podIP ?? "",
};

const EVENT_FIELDS: Record<string, (e: V1Event) => string> = {
  "metadata.name": (e) => e.metadata.name,
  "metadata.namespace": (e) => e.metadata.namespace,
  "involvedObject.kind": (e) => e.involvedObject.kind,
  "involvedObject.namespace": (e) => e.involvedObject.namespace ?? "",
  "involvedObject.name": (e) => e.involvedObject.name,
  "involvedObject.uid": (e) => e.involvedObject.uid,
  "involvedObject.apiVersion": (e) => e.involvedObject.apiVersion,
  "involvedObject.resourceVersion": () => "",
  "involvedObject.fieldPath": (e) => e.involvedObject.fieldPath ?? "",
  reason: (e) => e.reason,
  reportingComponent: (e) => e.reportingComponent,
  source: (e) => e.source.component,
  type: (e) => e.type,
};

const NODE_FIELDS: Record<string, (n: V1Node) => string> = {
  "metadata.name": (n) => n.metadata.name,
  "spec.unschedulable": (n) => String(n.spec.unschedulable ?? false),
};

const NAMESPACE_FIELDS: Record<string, (n: V1Namespace) => string> = {
  "metadata.name": (n) => n.metadata.name,
  "status.phase": (n) => n.status.phase,
};

const META_FIELDS: Record<string, (w: V1Workload) => string> = {
  "metadata.name": (w) => w.metadata.name,
  "metadata.namespace": (w) => w.metadata.namespace ?? "",
};
const OBJECT_FIELDS: Record<string, (o: KubeObject) => string> = {
  "metadata.name": (o) => o.metadata.name,
  "metadata.namespace": (o) => o.metadata.namespace ?? "",
};
/** The fields the API server indexes beyond metadata (pkg/registry/batch/job, apps/replicaset strategy). */
const WORKLOAD_FIELDS: Partial<Record<WorkloadKind, Record<string, (w: V1Workload) => string>>> = {
  Job: { ...META_FIELDS, "status.successful": (w) => String(w.status["succeeded"] ?? 0) },
  ReplicaSet: { ...META_FIELDS, "status.replicas": (w) => String(w.status["replicas"] ?? 0) },
};
const WORKLOAD_KIND_OF: Record<string, WorkloadKind> = {
  deployments: "Deployment",
  replicasets: "ReplicaSet",
  statefulsets: "StatefulSet",
  daemonsets: "DaemonSet",
  jobs: "Job",
  cronjobs: "CronJob",
  persistentvolumeclaims: "PersistentVolumeClaim",
  services: "Service",
  replicationcontrollers: "ReplicationController",
  horizontalpodautoscalers: "HorizontalPodAutoscaler",
  poddisruptionbudgets: "PodDisruptionBudget",
};
/** The resource as the API server names it in messages: `deployments.apps`, `pods`. */
const qualified = (k: { resource: string; group: string }) => (k.group ? `${k.resource}.${k.group}` : k.resource);
const apiVersionOf = (k: { group: string; version?: string }) =>
  k.group ? `${k.group}/${k.version ?? "v1"}` : (k.version ?? "v1");

/** A change as a watch event in the plain form: the same text for every watcher, so made once per change (the
 * hub hands each watcher the same Change). */
const encoded = new WeakMap<object, string>();
function eventJSON(ch: Change<KubeObject>): string {
  let text = encoded.get(ch);
  if (text === undefined) encoded.set(ch, (text = JSON.stringify({ type: ch.type, object: ch.object })));
  return text;
}

const truthy = (v: string | undefined) => v === "true" || v === "1";
const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** The watch's starting point: unset or "0" is "now, with the current objects first". */
function sinceOf(rv: string | undefined): number | undefined {
  if (rv === undefined || rv === "" || rv === "0") return undefined;
  if (!/^\d+$/.test(rv)) throw badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
  return Number(rv);
}

function includeObjectOf(v: string | undefined): IncludeObject {
  if (v === undefined || v === "") return "Metadata";
  if (v === "None" || v === "Metadata" || v === "Object") return v;
  throw badRequest(
    `includeObject: Unsupported value: ${JSON.stringify(v)}: supported values: "Metadata", "None", "Object"`,
  );
}

const b64 = (s: string) => btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const unb64 = (s: string) => atob(s.replace(/-/g, "+").replace(/_/g, "/"));

export function createKubeApi(o: KubeApiOptions) {
  const app = new Hono<Env>();
  const now = o.now ?? Date.now;
  const r: Reads = {
    now,
    bookmarkEveryMs: o.watch?.bookmarkEveryMs ?? 60_000,
    maxQueueBytes: o.watch?.maxQueueBytes ?? 1024 * 1024,
    watchMaxMs: o.watch?.maxMs ?? 30 * 60_000,
    // A slot in the stream budget for this request's token (a 429 when it has none left).
    takeStream: (c, kind) => {
      const t = c.get("scope").token.payload;
      return o.streams?.take(`${t.iss}\0${t.jti}`, kind) ?? (() => undefined);
    },
  };
  registerGates(app, o, now);
  const api = served(o.workloads !== undefined);
  registerDiscovery(app, o, api);
  const pods = registerCore(app, r, o);
  if (o.workloads) {
    registerWorkloadKinds(app, r, o.workloads, api);
    registerEndpoints(app, r, o.endpoints);
  }
  registerNamespaces(app, r, o, pods);
  registerPodLog(app, r, o, pods);

  if (o.execUnavailable)
    app.get("/api/v1/namespaces/:ns/pods/:name/exec", (c) => {
      checkExec(c.get("scope"), o.allowExec, c.req.param("name"));
      throw forbidden("pods", c.req.param("name"), o.execUnavailable!);
    });

  // OpenAPI v2 and v3: upstream's documents, pruned to what the node serves (src/kubeapi/apiserver/openapi.ts).
  registerOpenApi(app);
  // metrics.k8s.io for kubectl top (src/kubeapi/metrics/metrics.ts).
  registerMetrics(app, {
    source: o.metrics,
    pods: o.pods,
    node: o.node.hub,
    load: () => pods.load(),
    // The Node as last read (the metrics carry its labels); read once if it never was.
    loadNode: async () => {
      if (o.node.hub.list().length === 0) await o.node.refresh();
    },
    now: r.now,
  });

  // Any other path under /api or /apis: a resource or group this node does not serve.
  app.get("*", () => {
    throw noSuchResource();
  });

  // Paths and query parameters as the API server reads them (trailing slashes, legacy watch paths, booleans,
  // ignored parameters), before routing.
  const routed = app.fetch;
  app.fetch = (req, ...rest) => routed(normalizeRequest(req), ...rest);
  return app;
}

/** What the list, get and watch handlers share: the clock, the watch's bounds, the stream budget. */
interface Reads {
  now: () => number;
  bookmarkEveryMs: number;
  maxQueueBytes: number;
  watchMaxMs: number;
  takeStream: (c: Context<Env>, kind: "watch" | "log") => () => void;
}

/** The request log, errors as Status, the read token every answer needs, the reviews, and the write refusals. */
function registerGates(app: Hono<Env>, o: KubeApiOptions, now: () => number): void {
  app.use(async (c, next) => {
    const t0 = performance.now();
    await next();
    o.log?.({
      time: new Date(now()).toISOString(),
      method: c.req.method,
      route: c.req.routePath,
      status: c.res.status,
      durationMs: Math.round((performance.now() - t0) * 100) / 100,
      criCalls: 0,
      ...(c.get("jti") ? { jti: c.get("jti") } : {}),
      ...(c.get("error") ? { error: c.get("error") } : {}),
    });
  });
  app.onError((e, c) => {
    const s = toKubeStatus(e);
    c.set("error", s.code >= 500 && !(e instanceof KubeStatusError) ? String((e as Error)?.stack ?? e) : s.message);
    return s.toResponse();
  });
  app.notFound(() => noSuchResource().toResponse());

  // Nothing without a read token: no data, no discovery, not even the version.
  app.use(async (c, next) => {
    const scope = await verifyReadToken(o.verifier, c.req.header("authorization"));
    c.set("jti", scope.token.payload.jti);
    c.set("scope", scope);
    await next();
  });

  // The reviews kubectl auth can-i sends (POSTs that write nothing): before the write refusals.
  registerReviews(app, {
    served: reviewable(served(o.workloads !== undefined)),
    allowExec: o.allowExec,
    allowPortForward: o.allowPortForward,
  });

  // Writes: never through this API. The Status names the signed way.
  app.on(["POST", "PUT", "PATCH", "DELETE"], "*", (c) => {
    // Exec and port-forward are upgrades (the Node server's upgrade handler); a POST that reaches the routes is
    // not one (or comes through a Worker, which has no upgrade handler): the gates first, then why not.
    const exec = EXEC_PATH.exec(c.req.path);
    if (exec && c.req.method === "POST") {
      checkExec(c.get("scope"), o.allowExec, exec[2]!);
      if (o.execUnavailable) throw forbidden("pods", exec[2]!, o.execUnavailable);
      throw badRequest("exec needs an upgrade to SPDY/3.1 or WebSocket");
    }
    const pf = PORT_FORWARD_PATH.exec(c.req.path);
    if (pf && c.req.method === "POST") {
      checkPortForward(c.get("scope"), o.allowPortForward ?? false, pf[2]!);
      if (o.execUnavailable) throw forbidden("pods", pf[2]!, "port-forward is not served through a Worker");
      throw badRequest("port-forward needs an upgrade to SPDY/3.1 or WebSocket");
    }
    const m = /^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)\/(?:namespaces\/([^/]+)\/)?([^/]+)(?:\/([^/]+))?/.exec(c.req.path);
    const resource = m?.[3] ?? "resources";
    const group = m?.[1] ?? "";
    const name = m?.[4] ?? "";
    const ns = m?.[2] && m[2] !== "default" ? ` -n ${m[2]}` : "";
    const target = name ? `${resource}/${name}${ns}` : "TYPE/NAME";
    const how =
      c.req.method === "DELETE"
        ? `delete it with a signed request: podsync delete ${target} (or leave it out of the next podsync apply)`
        : "change the node with a signed spec: podsync apply FILE (the node's whole set) or podsync sync FILE (one pod)";
    throw forbidden(resource, name, `this node's Kubernetes API is read-only; ${how}`, group);
  });
}

/** /version and discovery (/api, /apis, each group and version). */
function registerDiscovery(app: Hono<Env>, o: KubeApiOptions, api: ReturnType<typeof served>): void {
  app.get("/version", (c) => c.json(versionInfo(o.podsyncVersion, o.arch)));
  const aggregated = (c: Context<Env>, gvs: Parameters<typeof aggregatedDiscovery>[0]) =>
    c.body(JSON.stringify(aggregatedDiscovery(gvs)), 200, { "content-type": AGGREGATED_TYPE });
  app.get("/api", (c) =>
    wantsAggregated(c.req.header("accept")) ? aggregated(c, [api.core]) : c.json(apiVersions(new URL(c.req.url).host)),
  );
  app.get("/apis", (c) =>
    wantsAggregated(c.req.header("accept")) ? aggregated(c, api.groups) : c.json(apiGroupList(api.groups)),
  );
  app.get("/api/v1", (c) => c.json(apiResourceList(api.core)));
  for (const gv of api.groups) {
    app.get(`/apis/${gv.group}`, (c) => c.json(apiGroup(gv)));
    app.get(`/apis/${gv.group}/${gv.version}`, (c) => c.json(apiResourceList(gv)));
  }
}

/** Pods, events and this node (core v1); the pods' Kind, which the namespaces and logs load through. */
function registerCore(app: Hono<Env>, r: Reads, o: KubeApiOptions): Kind<V1Pod> {
  let prepared: Promise<void> | undefined;
  const pods: Kind<V1Pod> = {
    resource: "pods",
    group: "",
    kind: "Pod",
    hub: o.pods,
    fields: POD_FIELDS,
    columns: POD_COLUMNS,
    cells: podCells,
    conditions: podRowConditions,
    load: async () => {
      await (prepared ??= o.prepare?.() ?? Promise.resolve());
      await o.pods.ready(o.firstFeedWaitMs ?? 10_000);
    },
  };
  const events: Kind<V1Event> = {
    resource: "events",
    group: "",
    kind: "Event",
    hub: o.events.hub,
    fields: EVENT_FIELDS,
    columns: EVENT_COLUMNS,
    cells: eventCells,
    load: async () => undefined,
  };
  const nodes: Kind<V1Node> = {
    resource: "nodes",
    group: "",
    kind: "Node",
    hub: o.node.hub,
    fields: NODE_FIELDS,
    columns: NODE_COLUMNS,
    cells: nodeCells,
    load: o.node.refresh,
  };

  app.get("/api/v1/pods", (c) => list(r, c, pods, undefined));
  app.get("/api/v1/namespaces/:ns/pods", (c) => list(r, c, pods, c.req.param("ns")));
  app.get("/api/v1/namespaces/:ns/pods/:name", (c) => getOne(r, c, pods, c.req.param("ns"), c.req.param("name")));
  app.get("/api/v1/events", (c) => list(r, c, events, undefined));
  app.get("/api/v1/namespaces/:ns/events", (c) => list(r, c, events, c.req.param("ns")));
  app.get("/api/v1/namespaces/:ns/events/:name", (c) => getOne(r, c, events, c.req.param("ns"), c.req.param("name")));
  app.get("/api/v1/nodes", (c) => list(r, c, nodes, undefined));
  app.get("/api/v1/nodes/:name", (c) => getOne(r, c, nodes, undefined, c.req.param("name")));
  return pods;
}

/** The workload kinds, read-only: each at its group's path, cluster-wide and per namespace. */
function registerWorkloadKinds(
  app: Hono<Env>,
  r: Reads,
  w: NonNullable<KubeApiOptions["workloads"]>,
  api: ReturnType<typeof served>,
): void {
  for (const gv of [api.core, ...api.groups])
    for (const res of gv.resources) {
      const kind = WORKLOAD_KIND_OF[res.name];
      if (!kind) continue;
      const k: Kind<V1Workload> = {
        resource: res.name,
        group: gv.group,
        version: gv.version,
        kind,
        hub: w.hubs[kind],
        fields: WORKLOAD_FIELDS[kind] ?? META_FIELDS,
        columns: WORKLOAD_COLUMNS[kind],
        cells: workloadCells,
        load: w.load,
      };
      const base = gv.group ? `/apis/${gv.group}/${gv.version}` : "/api/v1";
      app.get(`${base}/${res.name}`, (c) => list(r, c, k, undefined));
      app.get(`${base}/namespaces/:ns/${res.name}`, (c) => list(r, c, k, c.req.param("ns")));
      app.get(`${base}/namespaces/:ns/${res.name}/:name`, (c) =>
        getOne(r, c, k, c.req.param("ns"), c.req.param("name")),
      );
    }
}

/** EndpointSlices (discovery.k8s.io/v1) and Endpoints (v1), computed from the Services and the pods. */
function registerEndpoints(app: Hono<Env>, r: Reads, endpointsFeed: KubeApiOptions["endpoints"]): void {
  const feed = endpointsFeed ?? {
    slices: new WatchHub<V1EndpointSliceObject>(new RvClock(), {
      key: (x) => `${x.metadata.namespace}/${x.metadata.name}`,
    }),
    endpoints: new WatchHub<V1EndpointsObject>(new RvClock(), {
      key: (x) => `${x.metadata.namespace}/${x.metadata.name}`,
    }),
    load: async () => undefined,
  };
  const slices: Kind<V1EndpointSliceObject> = {
    resource: "endpointslices",
    group: "discovery.k8s.io",
    kind: "EndpointSlice",
    hub: feed.slices,
    fields: OBJECT_FIELDS,
    columns: ENDPOINT_SLICE_COLUMNS,
    cells: endpointSliceCells,
    load: feed.load,
  };
  const endpoints: Kind<V1EndpointsObject> = {
    resource: "endpoints",
    group: "",
    kind: "Endpoints",
    hub: feed.endpoints,
    fields: OBJECT_FIELDS,
    columns: ENDPOINTS_COLUMNS,
    cells: endpointsCells,
    load: feed.load,
  };
  const serve = <T extends KubeObject>(base: string, k: Kind<T>) => {
    app.get(`${base}/${k.resource}`, (c) => list(r, c, k, undefined));
    app.get(`${base}/namespaces/:ns/${k.resource}`, (c) => list(r, c, k, c.req.param("ns")));
    app.get(`${base}/namespaces/:ns/${k.resource}/:name`, (c) =>
      getOne(r, c, k, c.req.param("ns"), c.req.param("name")),
    );
  };
  serve("/apis/discovery.k8s.io/v1", slices);
  serve("/api/v1", endpoints);
}

/** Namespaces, read-only. */
function registerNamespaces(app: Hono<Env>, r: Reads, o: KubeApiOptions, pods: Kind<V1Pod>): void {
  // Namespaces, read-only: those the node's objects use (src/kubeapi/apiserver/namespaces.ts). kubectl also asks
  // for one after a NotFound, to say whether the namespace is missing.
  const nsFeed = createNamespaceFeed(o.pods.clock, () => [
    o.pods,
    o.events.hub,
    ...Object.values(o.workloads?.hubs ?? {}),
  ]);
  const namespaces: Kind<V1Namespace> = {
    resource: "namespaces",
    group: "",
    kind: "Namespace",
    hub: nsFeed.hub,
    fields: NAMESPACE_FIELDS,
    columns: NAMESPACE_COLUMNS,
    cells: namespaceCells,
    load: async () => {
      await pods.load();
      await o.workloads?.load();
      await nsFeed.load();
    },
  };
  app.get("/api/v1/namespaces", (c) => list(r, c, namespaces, undefined));
  app.get("/api/v1/namespaces/:name", (c) => getOne(r, c, namespaces, undefined, c.req.param("name")));
}

/** pods/log. */
function registerPodLog(app: Hono<Env>, r: Reads, o: KubeApiOptions, pods: Kind<V1Pod>): void {
  // pods/log with kubectl's PodLogOptions (the logs route's reader and rules).
  app.get("/api/v1/namespaces/:ns/pods/:name/log", async (c) => {
    const ns = c.req.param("ns");
    const name = c.req.param("name");
    await pods.load();
    const pod = o.pods.list().find((p) => p.metadata.namespace === ns && p.metadata.name === name);
    if (!pod) throw notFound("pods", name);
    const { insecureSkipTLSVerifyBackend: _, ...query } = c.req.query();
    const parsed = parseLogQuery(query);
    if ("errors" in parsed) {
      const { errors } = parsed;
      throw new KubeStatusError(400, "BadRequest", errors.map((e) => `${e.path}: ${e.message}`).join("; "), {
        causes: errors.map((e) => ({ field: e.path, message: e.message })),
      });
    }
    const log = await openLog(o.runtime, pod.metadata.uid, parsed.query, {
      now: r.now,
      followMaxMs: o.followMaxMs,
      followPollMs: o.followPollMs,
      defaultContainers: pod.spec?.containers.map((x) => x.name),
    });
    const release = r.takeStream(c, "log");
    const body = streamFrom(log.read, o.onStreamError ?? (() => undefined), c.req.raw.signal);
    return c.body(releasing(body, release), 200, LOG_HEADERS);
  });
}

function selectors<T extends KubeObject>(c: Context<Env>, k: Kind<T>, ns: string | undefined) {
  try {
    const label = parseLabelSelector(c.req.query("labelSelector"));
    const field = parseFieldSelector(c.req.query("fieldSelector"), k.fields, qualified(k));
    return (obj: T) =>
      (ns === undefined || obj.metadata.namespace === ns) &&
      label.matches((obj.metadata as { labels?: Record<string, string> }).labels) &&
      field.matches(obj);
  } catch (e) {
    if (e instanceof SelectorError) throw badRequest(e.message);
    throw e;
  }
}

const keyOf = (obj: KubeObject) => `${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;

function asTable<T extends KubeObject>(
  r: Reads,
  c: Context<Env>,
  k: Kind<T>,
  items: readonly T[],
  meta: { resourceVersion?: string; continue?: string },
  headers = true,
) {
  const t = r.now();
  return table(
    headers ? k.columns : undefined,
    items,
    (x) => k.cells(x, t),
    includeObjectOf(c.req.query("includeObject")),
    meta,
    k.conditions,
  );
}

async function list<T extends KubeObject>(
  r: Reads,
  c: Context<Env>,
  k: Kind<T>,
  ns: string | undefined,
): Promise<Response> {
  const filter = selectors(c, k, ns);
  const q = c.req.query();
  // A watch with no resourceVersion starts with the current objects: bring them up to date first.
  await k.load();
  if (truthy(q["watch"])) return watch(r, c, k, filter);
  const items = k.hub
    .list()
    .filter(filter)
    .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  const limit = q["limit"] ? Number(q["limit"]) : 0;
  if (!Number.isSafeInteger(limit) || limit < 0)
    throw badRequest(`limit: Invalid value: ${JSON.stringify(q["limit"])}: must be a non-negative integer`);
  let start = 0;
  if (q["continue"]) {
    let after: string;
    try {
      after = (JSON.parse(unb64(q["continue"])) as { after: string }).after;
      if (typeof after !== "string") throw new Error();
    } catch {
      throw badRequest("continue key is not valid: it was not made by this server");
    }
    start = items.findIndex((x) => keyOf(x) > after);
    if (start < 0) start = items.length;
  }
  const page = limit > 0 ? items.slice(start, start + limit) : items.slice(start);
  const rest = items.length - start - page.length;
  const meta: { resourceVersion: string; continue?: string; remainingItemCount?: number } = {
    resourceVersion: String(k.hub.resourceVersion),
  };
  if (rest > 0) {
    meta.continue = b64(JSON.stringify({ after: keyOf(page[page.length - 1]!) }));
    meta.remainingItemCount = rest;
  }
  if (wantsTable(c.req.header("accept"))) return json(asTable(r, c, k, page, meta));
  return json({ kind: `${k.kind}List`, apiVersion: apiVersionOf(k), metadata: meta, items: page });
}

function watch<T extends KubeObject>(r: Reads, c: Context<Env>, k: Kind<T>, filter: (obj: T) => boolean): Response {
  const q = c.req.query();
  const initial = truthy(q["sendInitialEvents"]);
  const since = initial ? undefined : sinceOf(q["resourceVersion"]);
  const timeoutS = q["timeoutSeconds"] ? Number(q["timeoutSeconds"]) : undefined;
  if (timeoutS !== undefined && (!Number.isSafeInteger(timeoutS) || timeoutS < 0))
    throw badRequest(`timeoutSeconds: Invalid value: ${JSON.stringify(q["timeoutSeconds"])}`);
  const tableForm = wantsTable(c.req.header("accept"));
  const include = includeObjectOf(q["includeObject"]);
  const encode = (ch: Change<T>, first: boolean) => {
    if (!tableForm) return eventJSON(ch);
    const object = table(
      first ? k.columns : undefined,
      [ch.object],
      (x) => k.cells(x, r.now()),
      include,
      { resourceVersion: String(ch.rv) },
      k.conditions,
    );
    return JSON.stringify({ type: ch.type, object });
  };
  const release = r.takeStream(c, "watch");
  let stream: ReadableStream<Uint8Array>;
  try {
    stream = watchStream({
      hub: k.hub,
      since,
      filter,
      encode,
      bookmark:
        truthy(q["allowWatchBookmarks"]) || initial
          ? {
              everyMs: r.bookmarkEveryMs,
              kind: tableForm ? "Table" : k.kind,
              apiVersion: tableForm ? "meta.k8s.io/v1" : apiVersionOf(k),
            }
          : undefined,
      initialEventsEnd: initial,
      maxMs: Math.min(r.watchMaxMs, timeoutS !== undefined && timeoutS > 0 ? timeoutS * 1000 : r.watchMaxMs),
      maxQueueBytes: r.maxQueueBytes,
    });
  } catch (e) {
    release();
    throw e;
  }
  const body = releasing(stream, release);
  // Never compressed on the way (Workers gzip JSON for a client that accepts it, as Go's does, and a gzip layer
  // holds small events back).
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "application/json",
      "content-encoding": "identity",
      "cache-control": "no-cache, private, no-transform",
    },
  });
}

async function getOne<T extends KubeObject>(
  r: Reads,
  c: Context<Env>,
  k: Kind<T>,
  ns: string | undefined,
  name: string,
): Promise<Response> {
  await k.load();
  const obj = k.hub.list().find((x) => x.metadata.name === name && (ns === undefined || x.metadata.namespace === ns));
  if (!obj) throw notFound(k.resource, name, k.group);
  if (wantsTable(c.req.header("accept")))
    return json(asTable(r, c, k, [obj], { resourceVersion: obj.metadata.resourceVersion ?? "" }));
  return json(obj);
}
