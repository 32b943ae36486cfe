// The Worker's fleet settings (pull mode, docs/fleet.md), over its common ones (settings.ts). Parsed on their own so
// a Worker without a fleet is unchanged; each bad value is named.
import { z } from "zod";
import { ProblemError } from "../../usecases/problems.js";
import { formatIssues } from "../../settings/common.js";
import type { DONamespace } from "../durable-object.js";
import type { Env } from "../settings.js";

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
export const FleetSettings = z.object({
  /** The fleet's name: the `aud` of the owner's fleet tokens and of the nodes' connection tokens. */
  PODSYNC_FLEET_NAME: z.string().min(1).max(253).default("podsync-fleet"),
  /** Registry shards (Durable Objects): fixed for the fleet's life (a node's shard is its name's hash mod this). */
  PODSYNC_FLEET_SHARDS: int(1, 1024).default(16),
  /** The largest message a node may send (a status report). */
  PODSYNC_FLEET_MAX_MESSAGE_BYTES: int(1024, 1024 * 1024).default(64 * 1024),
  /** The largest desired set stored for a node (one SQLite row holds at most 2 MB). */
  PODSYNC_FLEET_MAX_DESIRED_BYTES: int(1024, 1_900_000).default(1024 * 1024),
  /** The longest join token the owner may mint (its exp - iat). */
  PODSYNC_FLEET_JOIN_TTL_MAX_S: int(60, 7 * 86_400).default(86_400),
  /** Clock skew allowed between a node and the Worker on a connection token (issue #38: ±5 min must work). */
  PODSYNC_FLEET_NODE_CLOCK_SKEW_S: int(0, 3600).default(600),
  /** A connected node's lastSeen is written at most this often (read from the heartbeat in between). */
  PODSYNC_FLEET_LAST_SEEN_WRITE_S: int(60, 86_400).default(300),
  /** How often the shard looks for silent connections while it holds any (one alarm per shard, not per node). */
  PODSYNC_FLEET_SWEEP_S: int(5, 3600).default(60),
  /** The shards keep their counts across hibernation (stats.ts): for the bench, off in production. */
  PODSYNC_FLEET_STATS: z.enum(["on", "off"]).default("off"),
});
export type FleetConfig = z.output<typeof FleetSettings>;

/** The Worker's env with the fleet's binding. */
export interface FleetEnv extends Env {
  FLEET?: FleetNamespace;
}
/** A Durable Object namespace whose stub takes a whole Request (the WebSocket upgrade is forwarded as is). */
export interface FleetNamespace extends DONamespace {
  get(id: unknown): { fetch(input: Request | string, init?: RequestInit): Promise<Response> };
}

let cache: { key: string; s: FleetConfig } | undefined;
export function fleetSettingsOf(env: Env): FleetConfig {
  const key = JSON.stringify(
    Object.entries(env).filter(([k, v]) => k.startsWith("PODSYNC_FLEET_") && typeof v === "string"),
  );
  if (cache?.key === key) return cache.s;
  const r = FleetSettings.safeParse(env);
  if (!r.success) throw new ProblemError("misconfigured", `invalid fleet settings:\n${formatIssues(r.error)}`);
  cache = { key, s: r.data };
  return r.data;
}
