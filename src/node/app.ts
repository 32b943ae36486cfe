// podsync's own HTTP routes (the signed sync, plan, reads, delete, logs, exec, volumes, /metrics) on the node's
// runtime view, with the request log and the node's one budget of open streams (shared with the Kubernetes API).
import type { PodDispatch } from "../podworkers/dispatch.js";
import type { DesiredPod } from "../pleg/desired-state.js";
import type { Verifier } from "../auth/verify.js";
import type { WorkloadStore } from "../controllers/store.js";
import type { PromMetrics } from "../host/metrics/metrics.js";
import { openFileLimit } from "../host/serving/fd-limit.js";
import { type AppOptions, createApp } from "../http/app.js";
import type { RequestLog } from "../http/request-log.js";
import { StreamBudget } from "../usecases/streams/budget.js";
import type { EventRecorder } from "../kubeapi/events.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { DesiredState } from "../pleg/desired-state.js";
import type { Prober } from "../prober/prober.js";
import type { Settings } from "../settings/node.js";
import { serviceNetworkFrom } from "../settings/services.js";
import type { NodeFacts } from "./facts.js";

export interface NodeAppDeps {
  /** The requests' runtime view (counted as the requests', recording events). */
  runtime: PodRuntime;
  prober: Prober;
  desired: DesiredState;
  workloads: WorkloadStore;
  verifier: Verifier;
  metrics: PromMetrics | undefined;
  recorder: EventRecorder;
  /** The loop's pod workers: requests dispatch their syncs and teardowns to them. */
  pods: PodDispatch<DesiredPod>;
  servicesRefusal: string | undefined;
}

export function createNodeApp(s: Settings, node: NodeFacts, d: NodeAppDeps, quiet: boolean) {
  // The request log (podsync's routes, the Kubernetes API's, exec): one write of the line as built (console.log
  // would format the string again on its way out).
  const requestLog = quiet
    ? () => undefined
    : (rec: RequestLog) => void process.stdout.write(`${JSON.stringify(rec)}\n`);
  // Open watches, exec sessions and log streams, on both fronts: one budget per node.
  const streams = new StreamBudget(
    StreamBudget.limitsFor(s.PODSYNC_MAX_STREAMS, s.PODSYNC_MAX_STREAMS_PER_TOKEN, openFileLimit()),
  );
  const { metrics, recorder } = d;
  const appOptions: AppOptions = {
    streams,
    runtime: d.runtime,
    prober: d.prober,
    desired: d.desired,
    workloads: d.workloads,
    serviceAccountTokens: s.PODSYNC_SERVICE_ACCOUNT_TOKENS,
    maxWorkloads: s.PODSYNC_MAX_WORKLOADS,
    unknownKinds: s.PODSYNC_UNKNOWN_KINDS,
    verifier: d.verifier,
    nodeName: s.PODSYNC_NODE_NAME,
    policy: node.policy,
    nodeInfo: node.nodeInfo,
    maxBodyBytes: s.PODSYNC_MAX_BODY_BYTES,
    allowExec: s.PODSYNC_ALLOW_EXEC,
    execMaxOutputBytes: s.PODSYNC_EXEC_MAX_OUTPUT_BYTES,
    logFollowMaxMs: s.PODSYNC_LOG_FOLLOW_MAX_S * 1000,
    ...(metrics
      ? {
          metrics: {
            mode: s.PODSYNC_METRICS,
            render: () => metrics.render(),
            contentType: metrics.contentType,
            // @hono/node-server hands the Node request in the context's env.
            peerAddress: (c: { env: unknown }) =>
              (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket
                ?.remoteAddress,
          },
        }
      : {}),
    log: requestLog,
    // kubelet's rejectPod: a Warning event on the pod as sent, with admission's reason and message.
    onAdmissionRefused: (refused) => {
      for (const r of refused) recorder.record(r.pod, { type: "Warning", reason: r.reason, message: r.message });
    },
    // Requests dispatch their syncs and teardowns to the loop's pod workers: one worker per pod for every source.
    pods: d.pods,
    ...(d.servicesRefusal ? { servicesRefusal: d.servicesRefusal } : { services: serviceNetworkFrom(s) }),
  };
  return { app: createApp(appOptions), appOptions, requestLog, streams };
}
