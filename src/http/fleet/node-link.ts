// Pull mode on the Node agent: with PODSYNC_FLEET_URL set, the node links to its fleet (link.ts) and every desired
// set it pulls goes through the node's own PUT /v1/node/pods, in process, as a set the owner PUT to it directly:
// the same validation, admission, store commit, generation order and syncs. The one difference is the clock: the
// signature is checked against the node's own keys as of the set's signing (auth/signed-at.ts), since a set
// reaches an offline node late; a generation at or below the node's is never applied.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { createSignedAtVerifier } from "../../auth/signed-at.js";
import { MemoryReplayStore } from "../../auth/replay.js";
import type { VerifierOptions } from "../../auth/verify.js";
import { createApp, type AppOptions } from "../app.js";
import { SIGNATURE_HEADER } from "../signed-request.js";
import { ROUTES } from "../routes.js";
import type { DesiredState } from "../../pleg/desired-state.js";
import type { V1Pod } from "../../status/api-status.js";
import { FleetIdentity } from "./identity.js";
import { startLink, type FleetLink } from "./link.js";
import type { DesiredMessage, PodSummary } from "./protocol.js";

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
export const NodeFleetSettings = z.object({
  PODSYNC_FLEET_URL: z.url({ protocol: /^https?$/, error: "must be the Worker's http(s) origin" }).optional(),
  PODSYNC_FLEET_JOIN_TOKEN: z.string().optional(),
  PODSYNC_FLEET_JOIN_TOKEN_FILE: z.string().optional(),
  /** The longest wait between reconnects (exponential back-off with full jitter from 1 s). */
  PODSYNC_FLEET_BACKOFF_MAX_MS: int(100, 3_600_000).default(60_000),
  /** The heartbeat; a connection silent for three of them is dropped. */
  PODSYNC_FLEET_HEARTBEAT_MS: int(100, 20_000).default(15_000),
  /** After the Worker closed the link cleanly (a restart or deploy), the node reconnects at once, after a random
   * wait of at most this (the fleet does not come back in one step). */
  PODSYNC_FLEET_RECONNECT_JITTER_MS: int(0, 60_000).default(1000),
});

export interface NodeFleetDeps {
  env: Record<string, string | undefined>;
  nodeName: string;
  stateDir: string;
  version: string;
  capacity: Record<string, string>;
  /** The node's routes' options: the fleet's sets take the very same path, with the signed-at verifier. */
  app: AppOptions;
  /** The node's verifier options (its keys, issuers, names), for the signed-at verifier. */
  verifier: Omit<VerifierOptions, "now" | "replay">;
  desired: DesiredState;
  pods: () => V1Pod[];
  log: (rec: Record<string, unknown>) => void;
  /** The node's own API, exactly as its HTTP listener serves it: streams over the link (kubectl's reads,
   * `logs -f`) go through it, so they run the node's own handlers and token checks. */
  serve?: (req: Request) => Promise<Response>;
  /** The node's own listener as `ws://host:port` on loopback: kubectl exec over the link is dialled to it. */
  local?: () => string | undefined;
}

/** A fleet setting that does not parse, each named (the node entry reports it as a settings error). */
export class FleetSettingsError extends Error {}

/** Undefined without PODSYNC_FLEET_URL; throws FleetSettingsError naming the bad setting. */
export async function startFleetLink(d: NodeFleetDeps): Promise<FleetLink | undefined> {
  const r = NodeFleetSettings.safeParse(
    Object.fromEntries(Object.entries(d.env).filter(([, v]) => v !== undefined && v !== "")),
  );
  if (!r.success)
    throw new FleetSettingsError(
      `invalid fleet settings:\n${r.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`).join("\n")}`,
    );
  const s = r.data;
  if (!s.PODSYNC_FLEET_URL) return undefined;
  let joinToken = s.PODSYNC_FLEET_JOIN_TOKEN;
  if (joinToken === undefined && s.PODSYNC_FLEET_JOIN_TOKEN_FILE)
    try {
      joinToken = readFileSync(s.PODSYNC_FLEET_JOIN_TOKEN_FILE, "utf8").trim();
    } catch (e) {
      throw new FleetSettingsError(
        `PODSYNC_FLEET_JOIN_TOKEN_FILE: cannot read ${s.PODSYNC_FLEET_JOIN_TOKEN_FILE}: ${(e as Error).message}`,
      );
    }
  const identity = await FleetIdentity.load(d.stateDir);
  if (!identity.enrollment() && !joinToken)
    throw new FleetSettingsError(
      `PODSYNC_FLEET_URL is set but this node is not enrolled yet (no ${identity.dir}/enrollment.json): give it a join token once, PODSYNC_FLEET_JOIN_TOKEN or PODSYNC_FLEET_JOIN_TOKEN_FILE (podsync fleet join-token)`,
    );
  const app = createApp({
    ...d.app,
    verifier: createSignedAtVerifier({ ...d.verifier, replay: new MemoryReplayStore() }),
  });
  const apply = async (m: DesiredMessage): Promise<string | undefined> => {
    const headers: Record<string, string> = { "content-type": m.contentType };
    if (m.signature) headers[SIGNATURE_HEADER] = m.signature;
    const res = await app.fetch(
      new Request(`http://fleet.local${ROUTES.nodePods}`, { method: "PUT", headers, body: m.body }),
    );
    if (res.ok) return undefined;
    const p = (await res.json().catch(() => ({}))) as { detail?: string };
    return `generation ${m.generation} refused (${res.status}): ${p.detail ?? "no detail"}`;
  };
  return startLink({
    url: s.PODSYNC_FLEET_URL,
    node: d.nodeName,
    identity,
    joinToken,
    version: d.version,
    capacity: d.capacity,
    apply,
    generation: () => d.desired.generation(),
    // The node's own pods: those its desired state holds (other pods on the runtime are not its to report).
    pods: async () => {
      const mine = new Set((await d.desired.list()).map((e) => e.pod.metadata.uid));
      return d
        .pods()
        .filter((p) => mine.has(p.metadata.uid))
        .map(podSummary)
        .sort((a, b) => a.uid.localeCompare(b.uid));
    },
    log: (rec) => d.log({ loop: "fleet", ...rec }),
    heartbeatMs: s.PODSYNC_FLEET_HEARTBEAT_MS,
    deadMs: s.PODSYNC_FLEET_HEARTBEAT_MS * 3,
    backoff: { baseMs: Math.min(1000, s.PODSYNC_FLEET_BACKOFF_MAX_MS), maxMs: s.PODSYNC_FLEET_BACKOFF_MAX_MS },
    reconnectJitterMs: s.PODSYNC_FLEET_RECONNECT_JITTER_MS,
    serve: d.serve,
    local: d.local,
  });
}

/** The compact status the registry holds for a pod. */
export function podSummary(p: V1Pod): PodSummary {
  const st = p.status;
  return {
    namespace: p.metadata.namespace ?? "default",
    name: p.metadata.name,
    uid: p.metadata.uid,
    phase: st?.phase ?? "Unknown",
    ready: st?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    restarts: (st?.containerStatuses ?? []).reduce((n, c) => n + (c.restartCount ?? 0), 0),
  };
}
