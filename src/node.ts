// Package node — the Node entry: `npm start` and `podsync serve` run startNode, which composes the node from one
// constructor per subsystem in src/node/, in order. The top layer: imports any package; nothing imports it but cli/.
//
// The embedded default: the function on Node, on localhost, talking to the node's runtime socket.
// `npm start` runs this. With no keys configured it makes a dev key on first run and prints how to use it.
import { realpathSync } from "node:fs";
import type { Server } from "node:net";
import { fileURLToPath } from "node:url";
import type { ServerType } from "@hono/node-server";
import { createVerifier } from "./auth/verify.js";
import { machineFacts } from "./host/node-facts.js";
import { loadSettings, SettingsError } from "./settings/node.js";
import { StateDirInUseError } from "./state/state-dir-lock.js";
import { startAgent } from "./node/agent.js";
import { createNodeApp } from "./node/app.js";
import { bannerLines } from "./node/banner.js";
import { loadKeys, verifierOptionsFor, withDevRoot } from "./node/config.js";
import { startNodeFleet } from "./node/fleet.js";
import { composeFront } from "./node/front.js";
import { addresses, listen, loopbackOrigin, servingTls } from "./node/listen.js";
import { connectRuntime } from "./node/runtime.js";
import { abandonWork, type NodeWork, SHUTDOWN_GRACE_MS, shutdown, stopWork } from "./node/shutdown.js";
import { openNodeState } from "./node/state.js";

export { DEV_ISSUER } from "./node/config.js";
export { SHUTDOWN_GRACE_MS } from "./node/shutdown.js";
export { DEFAULT_STATE_DIR } from "./node/state.js";

export interface Running {
  server: ServerType | Server;
  /** http://host:port; the same port answers https (when PODSYNC_TLS is on). */
  url: string;
  /** https://host:port and the serving certificate (PEM) a client should trust; absent with PODSYNC_TLS off. */
  tls?: { url: string; caCert: string; certFile?: string };
  close(): Promise<void>;
}

/** The node, composed in order: settings and keys, the runtime connection, the state dir's stores, the node's facts,
 * the Services data plane, the engine, the Kubernetes API's state, the prober, the workloads, the Service model, the
 * controllers, the loop, log rotation, the HTTP app, the fleet link, the front and its port; then the banner. */
export async function startNode(
  env: Record<string, string | undefined> = process.env,
  quiet = false,
): Promise<Running> {
  const settings = loadSettings(env);
  const keys = await loadKeys(settings);
  const s = withDevRoot(settings, env, keys);
  // Every CRI call is counted by method and gRPC code for /metrics (prom-client is loaded only if served).
  const metrics =
    s.PODSYNC_METRICS === "off" ? undefined : (await import("./host/metrics/metrics.js")).createPromMetrics();
  const conn = connectRuntime(s, metrics);
  const { cri } = conn;
  const st = await openNodeState(s, keys);
  const verifierOptions = verifierOptionsFor(s, keys);
  const verifier = createVerifier({ ...verifierOptions, replay: st.replay });
  const agent = await startAgent(s, conn, st, metrics, quiet);
  const { node, plane, kube, runtime, loop } = agent;
  const { app, appOptions, requestLog, streams } = createNodeApp(
    s,
    node,
    {
      runtime,
      prober: agent.prober,
      desired: st.desired,
      workloads: agent.workloads,
      verifier,
      metrics,
      recorder: kube.recorder,
      pods: loop.pods,
      servicesRefusal: plane.servicesRefusal,
    },
    quiet,
  );
  // Streams over the fleet link (kubectl through the Worker) take the very path the listener's requests take, once
  // the front exists (a stream before it is answered 503).
  let front: ((req: Request) => Response | Promise<Response>) | undefined;
  let local: string | undefined;
  const fleet = await startNodeFleet(
    s,
    {
      serve: (req) => front?.(req) ?? new Response("the node is starting", { status: 503 }),
      local: () => local,
      env,
      stateDir: st.stateDir,
      app: appOptions,
      verifier: verifierOptions,
      desired: st.desired,
      podsHub: kube.podsHub,
    },
    quiet,
  );
  const machine = machineFacts();
  const { drain, fetch, onUpgrade } = composeFront(s, agent, { verifier, cri, app, requestLog, streams, machine });
  front = (req) => fetch(req, {});
  const { tls, tlsWarning } = servingTls(s, node.hostIPs, machine, st.stateDir);
  const work: NodeWork = {
    services: agent.services,
    stopLogRotation: agent.stopLogRotation,
    fleet,
    loop,
    controllers: agent.controllers,
    dataplane: plane.dataplane?.dataplane,
    stores: [agent.probeStore, agent.workloadFiles],
  };
  const release = async () => {
    cri.close();
    await st.replay.close();
    await st.dirLock.release();
  };
  const listening = await listen(s, tls, fetch, onUpgrade).catch(async (e: unknown) => {
    // Not serving (the port is taken): nothing of this process may go on holding the state directory.
    await abandonWork(work);
    await st.replay.close();
    await st.dirLock.release();
    cri.close();
    throw e;
  });
  const { url, tlsInfo } = addresses(s, listening.server, tls);
  local = loopbackOrigin(url);
  if (!quiet)
    console.error(
      bannerLines(s, {
        url,
        tlsInfo,
        tlsWarning,
        stateDir: st.stateDir,
        keys,
        skipped: st.skipped,
        stateError: st.stateError,
        dataplaneLines: plane.dataplane?.lines,
        servicesRefusal: plane.servicesRefusal,
        probeStoreError: agent.probeStoreError,
        workloadsError: agent.workloadsError,
      }).join("\n"),
    );
  let closing: Promise<void> | undefined;
  return {
    server: listening.server,
    url,
    ...(tlsInfo ? { tls: tlsInfo } : {}),
    close: () =>
      (closing ??= shutdown({
        drain,
        stopListening: listening.stopListening,
        closeConnections: listening.closeConnections,
        markStopping: (deadline) => st.dirLock.markStopping(deadline),
        stopWork: () => stopWork(work),
        release,
      })),
  };
}

// Run as the program (`node dist/node.js`, `npm start`), not imported (tests, bench). Node resolves the main
// module's symlinks, so compare real paths; fileURLToPath also decodes %20 and the like.
function isMain(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}
/** The node as a program: started from the environment, stopped by SIGINT or SIGTERM; a settings error is one line
 * and exit code 1. `npm start` (this file as the main module) and `podsync serve` (an installed package) run it. */
export function runNode(): void {
  const started = startNode();
  // The signals are taken before start-up ends (the banner is printed just before): a stop asked for meanwhile
  // waits for the start, then closes cleanly and gives the state directory's lock up.
  const stop = () => {
    // Past the grace (and the lock's slack), the process goes whatever is left.
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS + 5_000).unref();
    void started
      .then((r) => r.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  started.catch((e: unknown) => {
    console.error(e instanceof SettingsError || e instanceof StateDirInUseError ? `podsync: ${e.message}` : e);
    process.exit(1);
  });
}

if (isMain()) runNode();
