// Pull mode (PODSYNC_FLEET_URL): the fleet's desired sets come in through the node's own PUT (docs/fleet.md).
// Undefined without the setting; a bad fleet setting is a settings error, said in one line. The link (its WebSocket
// client, ws, and a second app; 1 MiB of heap) is loaded only where a PODSYNC_FLEET_ setting is given.
import { cpus, totalmem } from "node:os";
import type { VerifierOptions } from "../auth/verify.js";
import type { AppOptions } from "../http/app.js";
import type { WatchHub } from "../kubeapi/watch-hub.js";
import type { DesiredState } from "../pleg/desired-state.js";
import { SettingsError, type Settings } from "../settings/node.js";
import type { V1Pod } from "../status/api-status.js";
import { jsonLog, podsyncVersion } from "./config.js";

export interface NodeFleetDeps {
  env: Record<string, string | undefined>;
  stateDir: string;
  app: AppOptions;
  verifier: Omit<VerifierOptions, "replay">;
  desired: DesiredState;
  podsHub: WatchHub<V1Pod>;
  /** Streams over the link (kubectl through the Worker): answered as the node's listener answers a request. */
  serve: (req: Request) => Response | Promise<Response>;
  /** The node's own listener (`ws://host:port`, loopback) once it listens: exec over the link is dialled to it. */
  local: () => string | undefined;
}

export async function startNodeFleet(s: Settings, d: NodeFleetDeps, quiet: boolean) {
  // With none set there is no link, and nothing to check: startFleetLink's settings are all optional.
  if (!Object.entries(d.env).some(([k, v]) => k.startsWith("PODSYNC_FLEET_") && v !== undefined && v !== ""))
    return undefined;
  const { FleetSettingsError, startFleetLink } = await import("../http/fleet/node-link.js");
  return startFleetLink({
    env: d.env,
    nodeName: s.PODSYNC_NODE_NAME,
    stateDir: d.stateDir,
    version: podsyncVersion(),
    capacity: { cpu: String(cpus().length), memory: String(totalmem()), arch: process.arch },
    app: d.app,
    verifier: d.verifier,
    desired: d.desired,
    pods: () => d.podsHub.list(),
    log: jsonLog(quiet),
    serve: async (req) => d.serve(req),
    local: d.local,
  }).catch((e: unknown) => {
    throw e instanceof FleetSettingsError ? new SettingsError(e.message) : e;
  });
}
