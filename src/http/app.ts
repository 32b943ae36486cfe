// Package http/ — the Hono app: assembly (this file), route handlers (handlers/), auth, admission, the problem catalogue.
// Imports the agent and the engine's front door; never an entry point (node.ts, worker.ts, workers/, cli).
//
// The HTTP function: one Hono app, the same on Node and on Workers. A route authenticates, calls the
// engine's front door (which locks the pod) and renders; everything it touches comes in through
// createApp, so tests and both entry points wire their own runtime, keys and clock.
import { Hono } from "hono";
import type { Verifier } from "../auth/verify.js";
import { DEFAULT_POLICY_LEVEL, type NodePolicy } from "../auth/policy.js";
import { serialQueue } from "../util/serial.js";
import type { NodeInfo } from "../lifecycle/predicates.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import { ProblemError, toProblemError } from "../usecases/problems.js";
import { openApiDocument } from "./openapi.js";
import { pathUid, ROUTES } from "./routes.js";
import { registerLogsAndExec } from "./handlers/logs-exec.js";
import type { StreamBudget } from "../usecases/streams/budget.js";
import { registerMetrics, type MetricsRouteOptions } from "./handlers/metrics.js";
import { registerVolumes } from "./handlers/volumes.js";
import type { ProbeHandler } from "../pod/schema.js";
import type { PodProbeResults } from "../status/api-status.js";
import type { Prober } from "../prober/prober.js";
import { MemoryDesiredState, storeView, type DesiredPod, type DesiredState } from "../pleg/desired-state.js";
import { createPodDispatch, type PodDispatch } from "../podworkers/dispatch.js";
import { registerNodePods } from "./handlers/node-pods.js";
import type { AppEnv, PodRouteDeps } from "./context.js";
import { requestLog, type RequestLog } from "./request-log.js";
import { registerPodSync } from "./handlers/pods-sync.js";
import { registerPodReads } from "./handlers/pods-read.js";
import { registerPodDelete } from "./handlers/pod-delete.js";
import { registerWorkloads } from "./handlers/workloads.js";
import type { WorkloadStore } from "../controllers/store.js";
import type { ServiceAccountTokens } from "../pod/workloads/export.js";
import type { UnknownKinds } from "../pod/workloads/intake.js";
import { resultMemo } from "../util/memo.js";
import type { Body as IntakeBody } from "../pod/bundle.js";
import { AdmissionRefusedError, type RefusedPod } from "../usecases/admission/refusals.js";
import { createAdmission } from "../usecases/admission/admission.js";
import type { ServiceNetwork } from "../services/allocate.js";

export interface AppOptions {
  runtime: PodRuntime;
  verifier: Verifier;
  /** This node's name, reported by /healthz (tokens must be signed for it). */
  nodeName: string;
  /** The node owner's admission policy; every pod is held against it before any runtime call. */
  policy?: NodePolicy;
  /** The node as kubelet's admission sees it (labels, taints, allocatable); default: kubelet's default labels
   * for `nodeName`, no taints, resources unchecked. */
  nodeInfo?: NodeInfo;
  maxBodyBytes?: number;
  /** exec is off unless the node owner turns it on. */
  allowExec?: boolean;
  execMaxOutputBytes?: number;
  /** The node's cap on open streams (src/usecases/streams/budget.ts). */
  streams?: StreamBudget | undefined;
  /** The longest a followed log stream lasts. */
  logFollowMaxMs?: number;
  /** How often a followed log looks for more (default 250 ms; Workers: 1 s, each look is two subrequests). */
  logFollowPollMs?: number;
  log?: (rec: RequestLog) => void;
  now?: () => number;
  /** Runs the pods' probes; synced pods are handed to it and its results go into every sync and status. */
  prober?: Prober;
  /** Where the probes run elsewhere (the Workers node object's alarm): their results, for the GET routes. */
  probeResults?: (uids: string[]) => Promise<Map<string, PodProbeResults>>;
  /** GET /metrics (Node); absent: not served. */
  metrics?: MetricsRouteOptions;
  /** The node's desired state: every accepted sync is stored here before it acts, DELETE removes, PUT
   * /v1/node/pods replaces; GET reads specs from it; admission counts their requests and host ports. In
   * memory when not given. */
  desired?: DesiredState;
  /** Pods a PUT /v1/node/pods syncs (or deletes) at once (default 8). */
  applyConcurrency?: number;
  /** Probe handlers this deployment can run, and why the others cannot (Workers: exec only). */
  probeHandlers?: { allowed: readonly ProbeHandler[]; why: string };
  /** The node's workloads (Deployments, Jobs, ...), run by the node's controllers; absent: bodies holding
   * workloads are refused (501). */
  workloads?: WorkloadStore;
  /** PODSYNC_SERVICE_ACCOUNT_TOKENS: a named service account's token dropped with a warning, or the pod refused. */
  serviceAccountTokens?: ServiceAccountTokens;
  /** PODSYNC_UNKNOWN_KINDS: a custom resource skipped with a warning (default) or the body refused. */
  unknownKinds?: UnknownKinds;
  /** Pods sent to the node (sync, PUT; not a plan) that admission refused: kubelet's rejectPod records an event
   * on each, though a refused pod is never stored (Node: the Kubernetes API's events). */
  onAdmissionRefused?: (refused: readonly RefusedPod[]) => void;
  /** The pod workers requests dispatch to (Node: the loop's, ReconcileLoop.pods); default: the app's own. */
  pods?: PodDispatch<DesiredPod>;
  /** The node's service network (PODSYNC_SERVICE_CIDR, PODSYNC_NODEPORT_RANGE, PODSYNC_POLICY_NODEPORTS): Services
   * are taken with it (the node agent); absent, a body holding one is refused naming the node agent (Workers). */
  services?: ServiceNetwork;
  /** Why Services are refused on this node, when they are (no service network, or no data plane). */
  servicesRefusal?: string | undefined;
  /** PODSYNC_MAX_WORKLOADS: the workloads a node stores as sent to it. */
  maxWorkloads?: number;
}

export function createApp(o: AppOptions) {
  const app = new Hono<AppEnv>();
  const maxBody = o.maxBodyBytes ?? 1024 * 1024;
  const log = o.log ?? ((rec) => console.log(JSON.stringify(rec)));
  const now = o.now ?? Date.now;
  const rt = o.runtime;
  const policy = o.policy ?? { level: DEFAULT_POLICY_LEVEL, hostPathAllow: [] };
  const nodeInfo: NodeInfo = o.nodeInfo ?? {
    name: o.nodeName,
    labels: { "kubernetes.io/hostname": o.nodeName, "kubernetes.io/os": "linux" },
    taints: [],
    allocatable: {},
  };
  const desired = o.desired ?? new MemoryDesiredState();
  const admitting = serialQueue();
  const prober = o.prober;
  // The one admission pipeline (src/usecases/admission/): the policy, the probes this deployment can run (a probe
  // it cannot run is refused like any invalid field), the runtime's refusals, kubelet's node predicates.
  const admission = createAdmission({ policy, node: nodeInfo, runtime: rt, probeHandlers: o.probeHandlers });

  app.use(requestLog(log, now));

  registerBasics(app, o);

  const intake = {
    nodeName: nodeInfo.name,
    serviceAccountTokens: o.serviceAccountTokens ?? "drop",
    // PODSYNC_MAX_PODS bounds each workload's pods as it bounds the node's (src/pod/workloads/bounds.ts).
    ...(nodeInfo.allocatable.pods !== undefined
      ? { limits: { maxPods: nodeInfo.allocatable.pods, maxWorkloads: o.maxWorkloads } }
      : {}),
    unknownKinds: o.unknownKinds ?? "warn",
    bodies: resultMemo<IntakeBody>(),
  } as const;
  const deps: PodRouteDeps = {
    runtime: rt,
    verifier: o.verifier,
    desired,
    policy,
    nodeInfo,
    admitting,
    prober,
    probeResults: o.probeResults,
    maxBodyBytes: maxBody,
    now,
    admission,
    workloads: o.workloads,
    intake,
    // Without the node's pod workers (Workers, tests): a worker per call, the runtime's lock orders them.
    pods: o.pods ?? createPodDispatch(storeView(desired), false),
    services: o.services,
    servicesRefusal: o.servicesRefusal,
  };
  registerPodSync(app, deps);
  registerPodReads(app, deps);
  registerPodDelete(app, deps);

  registerNodePods(
    app,
    { nodePods: ROUTES.nodePods, pods: ROUTES.pods },
    {
      ...deps,
      concurrency: o.applyConcurrency ?? 8,
      note: (c, f) => {
        if (f.jti) c.set("jti", f.jti);
        if (f.criCalls !== undefined) c.set("criCalls", f.criCalls);
      },
    },
  );

  if (o.workloads)
    registerWorkloads(
      app,
      { list: ROUTES.workloads, one: ROUTES.workload },
      {
        workloads: o.workloads,
        verifier: o.verifier,
        note: (c, f) => f.jti && c.set("jti", f.jti),
      },
    );

  registerStreams(app, o, maxBody, now, log);

  registerVolumes(
    app,
    { list: ROUTES.nodeVolumes, one: ROUTES.nodeVolume },
    {
      runtime: rt,
      verifier: o.verifier,
      admitting,
      // A desired pod's claims are in use even while it has no container.
      ...(o.desired ? { desired: async () => (await o.desired!.list()).map((e) => e.pod) } : {}),
      note: (c, f) => {
        if (f.jti) c.set("jti", f.jti);
        if (f.criCalls !== undefined) c.set("criCalls", f.criCalls);
      },
    },
  );

  if (o.metrics) registerMetrics(app, ROUTES.metrics, o.verifier, o.metrics, (c, jti) => jti && c.set("jti", jti));

  registerMethodNotAllowed(app);
  return app;
}

/** The app's error and not-found answers, and the routes that need no signature: health, readiness, the API. */
function registerBasics(app: Hono<AppEnv>, o: AppOptions): void {
  app.onError((e, c) => {
    if (e instanceof AdmissionRefusedError && c.req.path !== ROUTES.plan && e.refused.length)
      o.onAdmissionRefused?.(e.refused);
    const p = toProblemError(e);
    // Only the log sees an unexpected error's stack; the caller gets the bare problem.
    c.set(
      "error",
      p.slug === "internal" && !(e instanceof ProblemError) ? String((e as Error)?.stack ?? e) : p.message,
    );
    return p.toResponse(c.req.path);
  });
  app.notFound((c) =>
    new ProblemError("not-found", `no route for ${c.req.method} ${c.req.path}`).toResponse(c.req.path),
  );

  app.get(ROUTES.healthz, (c) => c.json({ ok: true, node: o.nodeName }));

  app.get(ROUTES.readyz, async (c) => {
    const r = await o.runtime.ready();
    c.set("criCalls", r.criCalls);
    const body = { ok: r.ok, node: o.nodeName, runtime: r.runtime };
    if (r.ok) return c.json(body);
    return new ProblemError("runtime-not-ready", "the runtime reports RuntimeReady=false", {
      runtime: r.runtime,
    }).toResponse(c.req.path);
  });

  app.get(ROUTES.openapi, (c) => c.json(openApiDocument()));
}

/** Logs and exec, with the request log's fields and the stream errors only the server log hears of. */
function registerStreams(
  app: Hono<AppEnv>,
  o: AppOptions,
  maxBody: number,
  now: () => number,
  log: NonNullable<AppOptions["log"]>,
): void {
  registerLogsAndExec(
    app,
    { logs: ROUTES.logs, exec: ROUTES.exec },
    {
      runtime: o.runtime,
      verifier: o.verifier,
      maxBodyBytes: maxBody,
      allowExec: o.allowExec ?? false,
      execMaxOutputBytes: o.execMaxOutputBytes ?? 1024 * 1024,
      followMaxMs: o.logFollowMaxMs ?? 1_800_000,
      followPollMs: o.logFollowPollMs,
      streams: o.streams,
      now,
      note: (c, f) => {
        c.set("podUid", f.uid);
        if (f.jti) c.set("jti", f.jti);
        if (f.iss) c.set("iss", f.iss);
        if (f.commandSha256) c.set("commandSha256", f.commandSha256);
        if (f.criCalls !== undefined) c.set("criCalls", f.criCalls);
      },
      // Only the server log hears of a stream that broke after its first byte; never its content.
      onStreamError: (e) =>
        log({
          time: new Date(now()).toISOString(),
          method: "GET",
          route: ROUTES.logs,
          status: 200,
          durationMs: 0,
          criCalls: 0,
          error: `log stream ended early: ${(e as Error)?.message ?? e}`,
        }),
      pathUid,
    },
  );
}

/** A known path with a method it does not serve: 405 naming the ones it does. */
function registerMethodNotAllowed(app: Hono<AppEnv>): void {
  const allowed = new Map<string, string[]>();
  for (const r of app.routes) if (r.method !== "ALL") allowed.set(r.path, [...(allowed.get(r.path) ?? []), r.method]);
  for (const [path, methods] of allowed)
    app.all(path, (c) =>
      new ProblemError(
        "method-not-allowed",
        `${c.req.method} is not served at ${path}; use ${methods.join(", ")}`,
      ).toResponse(c.req.path, { allow: methods.join(", ") }),
    );
}
