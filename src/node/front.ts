// The node's one request handler: the Kubernetes paths (/version, /api, /apis) go to the Kubernetes API, the rest
// to podsync's own routes; kubectl exec's WebSocket upgrade; and the drain a stop waits on (requests in flight, then
// 503 shutting-down for what still arrives on an open connection).
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Verifier } from "../auth/verify.js";
import type { CriClient } from "../cri/client.js";
import type { machineFacts } from "../host/node-facts.js";
import type { RequestLog } from "../http/request-log.js";
import type { StreamBudget } from "../usecases/streams/budget.js";
import { isKubePath } from "../kubeapi/paths.js";
import type { WatchHub } from "../kubeapi/watch-hub.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { Settings } from "../settings/node.js";
import type { V1Pod } from "../status/api-status.js";
import type { Agent } from "./agent.js";
import { lazyKubeApi, nodeRefresher } from "./kube.js";
import { type Drain, shuttingDown } from "./shutdown.js";

type Fetch = (req: Request, env: object) => Response | Promise<Response>;
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** Requests being answered (until their response starts), so a stop can wait for them. */
export function nodeFetch(app: { fetch: Fetch }, kubeFetch: Fetch) {
  const drain: Drain = { stopping: false, inFlight: 0, idle: undefined };
  const route = (req: Request, env: object) =>
    isKubePath(new URL(req.url).pathname) ? kubeFetch(req, env) : app.fetch(req, env);
  const fetch = async (req: Request, env: object): Promise<Response> => {
    if (drain.stopping) return shuttingDown(new URL(req.url).pathname);
    drain.inFlight++;
    try {
      return await route(req, env);
    } finally {
      if (--drain.inFlight === 0) drain.idle?.();
    }
  };
  return { drain, fetch };
}

export interface ExecUpgradeDeps {
  verifier: Verifier;
  podsHub: WatchHub<V1Pod>;
  runtime: PodRuntime;
  requestLog: (rec: RequestLog) => void;
  streams: StreamBudget;
  drain: Drain;
}

/** kubectl exec and port-forward: a WebSocket or SPDY upgrade, joined to the runtime's streaming server, its handler
 * loaded at the first upgrade. The socket buffers what the client sends while the handler loads (an upgraded socket has no data
 * listener until ws binds one). */
export function execUpgrades(s: Settings, d: ExecUpgradeDeps): UpgradeHandler {
  let upgrade: Promise<UpgradeHandler> | undefined;
  return (req, socket, head) => {
    if (d.drain.stopping) return void socket.destroy();
    upgrade ??= import("../kubeapi/portforward/stream-upgrade.js").then((m) =>
      m.streamUpgrade({
        verifier: d.verifier,
        pods: d.podsHub,
        runtime: d.runtime,
        allowExec: s.PODSYNC_ALLOW_EXEC,
        allowPortForward: s.PODSYNC_ALLOW_PORT_FORWARD,
        log: d.requestLog,
        streams: d.streams,
        bufferBytes: s.PODSYNC_STREAM_BUFFER_BYTES,
      }),
    );
    // Until ws has the socket, an error on it (the client gone) ends it rather than reach the process unhandled.
    const ended = () => socket.destroy();
    socket.on("error", ended);
    upgrade.then(
      (handle) => (socket.off("error", ended), handle(req, socket, head)),
      () => socket.destroy(),
    );
  };
}

export interface FrontDeps {
  verifier: Verifier;
  cri: CriClient;
  app: { fetch: Fetch };
  requestLog: (rec: RequestLog) => void;
  streams: StreamBudget;
  machine: ReturnType<typeof machineFacts>;
}

/** The front on the agent: the Node object (read again when DiskPressure changes), the Kubernetes API loaded at its
 * first request, the one fetch and the exec upgrade. */
export function composeFront(s: Settings, agent: Agent, d: FrontDeps) {
  const { node, kube, runtime } = agent;
  const refreshNode = nodeRefresher(s, kube, {
    node,
    machine: d.machine,
    runtime,
    feedPods: agent.feedPods,
    disk: agent.disk,
  });
  agent.onNodeChanged(() => void refreshNode().catch(() => undefined));
  const kubeFetch = lazyKubeApi(
    s,
    kube,
    {
      verifier: d.verifier,
      cri: d.cri,
      runtime,
      refreshNode,
      requestLog: d.requestLog,
      streams: d.streams,
      arch: node.nodeInfo.labels["kubernetes.io/arch"] ?? process.arch,
      workloads: agent.workloadFeed,
      endpoints: agent.endpointsFeed,
    },
    agent.quiet,
  );
  const { drain, fetch } = nodeFetch(d.app, kubeFetch);
  const onUpgrade = execUpgrades(s, {
    verifier: d.verifier,
    podsHub: kube.podsHub,
    runtime,
    requestLog: d.requestLog,
    streams: d.streams,
    drain,
  });
  return { drain, fetch, onUpgrade };
}
