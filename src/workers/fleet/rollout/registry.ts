// The coordinator's I/O with the node registry (FleetShard): observations are the nodes' compact status summaries
// as their shards hold them; dispatch stores a set for nodes through the same /desired-many path a signed
// PUT /fleet/v1/node/pods takes (stored, audited, pushed to a connected node, kept for one that is not).
import { shardOf } from "../../../http/fleet/protocol.js";
import type { FleetNode } from "../../../http/fleet/node-view.js";
import { toProblemError } from "../../../usecases/problems.js";
import { settingsOf } from "../../settings.js";
import { type Fleet, shardFetch } from "../routes.js";
import { fleetSettingsOf, type FleetEnv } from "../settings.js";
import type { StoredDesired } from "../table.js";
import { desiredItems } from "./drift.js";
import { type Expected, expectedOf, type Observation } from "./health.js";
import type { SignedSet } from "./store.js";

export function fleetOf(env: FleetEnv): Fleet {
  if (!env.FLEET) throw new Error("this Worker has no FLEET Durable Object binding (wrangler.toml)");
  return { env, ns: env.FLEET, s: settingsOf(env), f: fleetSettingsOf(env) };
}

const byShard = (fl: Fleet, nodes: string[]) => {
  const m = new Map<number, string[]>();
  for (const n of nodes) {
    const i = shardOf(n, fl.f.PODSYNC_FLEET_SHARDS);
    m.set(i, [...(m.get(i) ?? []), n]);
  }
  return m;
};

export const observation = (n: FleetNode): Observation => ({
  reachable: n.status.condition === "Ready" && !n.status.revoked,
  generation: n.status.generation,
  pods: n.status.pods,
  ...(n.status.error ? { error: n.status.error } : {}),
});

/** The registry's view of `nodes` (one call per shard that holds any). */
export async function observe(fl: Fleet, nodes: string[]): Promise<Map<string, FleetNode>> {
  const want = new Set(nodes);
  const lists = await Promise.all(
    [...byShard(fl, nodes).keys()].map((i) => shardFetch<FleetNode[]>(fl, i, "/list", { actor: "" })),
  );
  const out = new Map<string, FleetNode>();
  for (const n of lists.flat()) if (want.has(n.metadata.name)) out.set(n.metadata.name, n);
  return out;
}

export interface Dispatched {
  stored: number;
  delivered: number;
  /** Nodes that hold this generation already (a re-run after a restart): not sent again. */
  already: number;
  refused: { node: string; reason: string }[];
}

/** Store `set` for `nodes` in their shards. A node whose stored generation is at or above the set's refuses it as
 * stale: that is a dispatch already made, so a re-run sends nothing twice. */
export async function dispatch(fl: Fleet, set: SignedSet, nodes: string[], actor: string): Promise<Dispatched> {
  const out: Dispatched = { stored: 0, delivered: 0, already: 0, refused: [] };
  const results = await Promise.all(
    [...byShard(fl, nodes)].map(([i, part]) =>
      shardFetch<Omit<Dispatched, "already">>(fl, i, "/desired-many", {
        nodes: part,
        generation: set.generation,
        contentType: set.contentType,
        body: set.body,
        signature: set.signature,
        actor,
        jti: set.jti,
      }).catch((e) => ({
        stored: 0,
        delivered: 0,
        refused: part.map((node) => ({ node, reason: toProblemError(e).message })),
      })),
    ),
  );
  for (const r of results) {
    out.stored += r.stored;
    out.delivered += r.delivered;
    for (const f of r.refused)
      if (/is not above the stored/.test(f.reason)) out.already++;
      else out.refused.push(f);
  }
  return out;
}

/** What each of `nodes` should run, from its stored set (one call per shard; each distinct set parsed once). A set
 * that does not parse is left out: its node's apply error says why. */
export async function expectedOfStored(fl: Fleet, nodes: string[]): Promise<Map<string, Expected>> {
  const out = new Map<string, Expected>();
  await Promise.all(
    [...byShard(fl, nodes)].map(async ([i, part]) => {
      const r = await shardFetch<{ sets: StoredDesired[]; of: Record<string, number> }>(fl, i, "/desired-of", {
        nodes: part,
        actor: "",
      });
      const sets = await Promise.all(r.sets.map((d) => desiredItems(d).then(expectedOf, () => undefined)));
      for (const [n, k] of Object.entries(r.of)) if (sets[k]) out.set(n, sets[k]);
    }),
  );
  return out;
}
