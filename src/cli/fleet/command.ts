// Package cli/fleet/ — `podsync fleet`: the fleet's owner commands (enroll, set, status) over the fleet routes.
// Imports the CLI's helpers (../) and the fleet protocol's shapes; never the Worker's or the node's internals.
//
// podsync fleet: the owner's side of pull mode (docs/fleet.md), against the Worker's /fleet routes.
//   fleet join-token [--labels k=v,...] [--ttl 15m] [--node NAME]   a single-use join token (signed here)
//   fleet nodes [-l SELECTOR] [-o wide|json]                       the registry
//   fleet label NODE k=v [k2=v2 ...] [k3-]                         set (or, with a trailing -, remove) labels
//   fleet revoke NODE                                              end the node's access, its connection too
// The fleet is at --url, $PODSYNC_URL or $PODSYNC_FLEET_URL. Each request is signed with the owner's key (a fleet
// token: aud the fleet's name, act the verb), or carries the token in --token FILE (podsync token --act VERB).
import { readFileSync } from "node:fs";
import { parseLabelPairs } from "../../http/fleet/protocol.js";
import type { FleetNode } from "../../http/fleet/node-view.js";
import { fail, usage } from "../args.js";
import type { Ctx } from "../client.js";
import type { Command } from "../command.js";
import { signToken } from "../keys.js";
import { table } from "../output.js";
import { ROLLOUT_SUBS, rolloutOptions, rolloutUsage, runRollout } from "./rollout.js";

const SUBS = ["join-token", "nodes", "label", "revoke"] as const;

/** The fleet's origin: --url, $PODSYNC_URL, else $PODSYNC_FLEET_URL. */
export function fleetUrl(ctx: Ctx, env: NodeJS.ProcessEnv = process.env): string {
  return String(ctx.o["url"] ?? env["PODSYNC_URL"] ?? env["PODSYNC_FLEET_URL"] ?? ctx.url).replace(/\/$/, "");
}

async function fleetFetch(ctx: Ctx, path: string, init?: RequestInit): Promise<Response> {
  const base = fleetUrl(ctx);
  try {
    return await fetch(`${base}${path}`, init);
  } catch (e) {
    return fail(
      `cannot reach the fleet at ${base}: ${(e as { cause?: Error }).cause?.message ?? (e as Error).message}`,
    );
  }
}

/** The fleet's name (GET /fleet), the audience of its tokens. */
export async function fleetName(ctx: Ctx): Promise<string> {
  if (ctx.o["aud"] !== undefined) return String(ctx.o["aud"]);
  const r = await fleetFetch(ctx, "/fleet");
  const j = (await r.json().catch(() => ({}))) as { fleet?: string };
  return j.fleet ?? fail(`${fleetUrl(ctx)}/fleet did not name a fleet (is it a podsync Worker with a FLEET binding?)`);
}

/** A fleet token for `act`: --token FILE as given, else signed here. */
async function bearer(ctx: Ctx, act: string): Promise<string> {
  if (ctx.o["token"] !== undefined) {
    try {
      return readFileSync(String(ctx.o["token"]), "utf8").trim();
    } catch (e) {
      return fail(`--token ${String(ctx.o["token"])}: ${(e as Error).message}`);
    }
  }
  return signToken(ctx.key().key, { act }, await fleetName(ctx), ctx.ttl, ctx.iss);
}

async function call<T>(ctx: Ctx, act: string, method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${await bearer(ctx, act)}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  return ctx.json<T>(
    await fleetFetch(ctx, path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }),
  );
}

const list = (items: unknown[]) => ({ apiVersion: "v1", kind: "List", metadata: {}, items });
const out = (ctx: Ctx, items: unknown[], text: () => string) =>
  console.log(ctx.o["output"] === "json" ? JSON.stringify(list(items), null, 2) : text());

function age(iso: string | null, now = Date.now()): string {
  if (!iso) return "<never>";
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}
const labelText = (l: Record<string, string>) =>
  Object.entries(l)
    .map(([k, v]) => `${k}=${v}`)
    .join(",") || "<none>";

async function joinToken(ctx: Ctx): Promise<void> {
  let labels: Record<string, string> = {};
  try {
    labels = parseLabelPairs(String(ctx.o["labels"] ?? ""));
  } catch (e) {
    usage(`--labels: ${(e as Error).message}`, ctx.command);
  }
  const ttl = ctx.o["ttl"] === undefined ? 15 * 60 : ctx.ttl;
  const node = ctx.o["node"] as string | undefined;
  const token = await signToken(
    ctx.key().key,
    { act: "enroll", labels, ...(node ? { node } : {}) },
    await fleetName(ctx),
    ttl,
    ctx.iss,
  );
  const expires = new Date(Date.now() + ttl * 1000).toISOString();
  out(
    ctx,
    [{ metadata: { name: node ?? "join-token", labels }, status: { token, expires, singleUse: true } }],
    () => token,
  );
  ctx.note(
    `single use, expires ${expires}: start the node with PODSYNC_FLEET_URL=${fleetUrl(ctx)} PODSYNC_FLEET_JOIN_TOKEN=<token>`,
  );
}

async function nodes(ctx: Ctx): Promise<void> {
  const sel = ctx.o["selector"] as string | undefined;
  const q = sel ? `?labelSelector=${encodeURIComponent(sel)}` : "";
  const { items } = await call<{ items: FleetNode[] }>(ctx, "read", "GET", `/fleet/nodes${q}`);
  const wide = ctx.o["output"] === "wide";
  out(ctx, items, () =>
    table([
      ["NAME", "STATUS", "LABELS", "VERSION", "LAST SEEN", ...(wide ? ["GENERATION", "DESIRED", "PODS", "ERROR"] : [])],
      ...items.map((n) => [
        n.metadata.name,
        n.status.revoked ? "NotReady,Revoked" : n.status.condition,
        labelText(n.metadata.labels),
        n.status.agentVersion || "<unknown>",
        age(n.status.lastSeen),
        ...(wide
          ? [
              String(n.status.generation),
              String(n.status.desiredGeneration),
              `${n.status.pods.filter((p) => p.ready).length}/${n.status.pods.length}`,
              n.status.error ?? "",
            ]
          : []),
      ]),
    ]),
  );
}

async function label(ctx: Ctx, node: string, pairs: string[]): Promise<void> {
  if (!pairs.length) usage("fleet label NODE k=v [k2-]: name at least one label", ctx.command);
  const set: Record<string, string | null> = {};
  for (const p of pairs) {
    if (p.endsWith("-") && !p.includes("=")) set[p.slice(0, -1)] = null;
    else
      try {
        Object.assign(set, parseLabelPairs(p));
      } catch (e) {
        usage((e as Error).message, ctx.command);
      }
  }
  const n = await call<FleetNode>(ctx, "label", "POST", `/fleet/nodes/${encodeURIComponent(node)}/labels`, {
    labels: set,
  });
  out(ctx, [n], () => `node/${node} labeled: ${labelText(n.metadata.labels)}`);
}

async function revoke(ctx: Ctx, node: string): Promise<void> {
  const r = await call<{ node: string; closed: number }>(
    ctx,
    "revoke",
    "POST",
    `/fleet/nodes/${encodeURIComponent(node)}/revoke`,
  );
  out(
    ctx,
    [{ metadata: { name: node, labels: {} }, status: { revoked: true, connectionsClosed: r.closed } }],
    () => `node/${node} revoked${r.closed ? " (its connection was closed)" : ""}`,
  );
}

const fleet: Command = {
  usage: [
    "fleet join-token [--labels k=v,...] [--ttl 15m] [--node NAME] [-o json]",
    "fleet nodes [-l SELECTOR] [-o wide|json]",
    "fleet label NODE k=v [k2=v2 ...] [k3-] [-o json]",
    "fleet revoke NODE [-o json]",
    ...rolloutUsage,
  ],
  help: [
    "The owner's side of pull mode (docs/fleet.md): node agents enroll once with a single-use join token, then",
    "connect out to the Worker and pull their signed desired state. The fleet is at --url, $PODSYNC_URL or",
    "$PODSYNC_FLEET_URL; each request is a fleet token (aud: the fleet's name, act: the verb) signed with your key,",
    "or --token FILE (one minted with podsync token --act VERB [--selector SEL], which may limit it to some nodes).",
  ].join("\n"),
  examples: [
    "podsync fleet join-token --labels site=north,tier=edge --ttl 15m",
    "podsync fleet nodes -l site=north -o wide",
    "podsync fleet label edge-7 tier=gold",
    "podsync fleet revoke edge-7",
    "podsync fleet rollout -f examples/deployment.yaml -l site=north --batch 10% --canary 1 --soak 30s --auto-rollback",
    "podsync fleet status web-12 -w",
  ],
  options: {
    labels: { type: "string", help: "join-token: the labels the node gets (k=v,...)" },
    node: { type: "string", help: "join-token: only this node name may use it" },
    selector: { type: "string", short: "l", help: "nodes: a label selector (k=v, k!=v, k in (a,b), k, !k)" },
    output: { type: "string", short: "o", help: "wide (nodes) or json (a v1.List of objects)" },
    token: { type: "string", help: "a fleet token file to act with, instead of signing one" },
    ...rolloutOptions,
  },
  async run(ctx) {
    const [sub, node, ...rest] = ctx.args;
    if (ROLLOUT_SUBS.includes(sub as (typeof ROLLOUT_SUBS)[number])) return runRollout(ctx, call, () => fleetName(ctx));
    if (!SUBS.includes(sub as (typeof SUBS)[number]))
      usage(`fleet ${sub ?? ""}: use one of ${SUBS.join(", ")}`.trim(), ctx.command);
    const o = ctx.o["output"];
    if (o !== undefined && o !== "json" && !(o === "wide" && sub === "nodes"))
      usage(`-o ${String(o)}: use json${sub === "nodes" ? " or wide" : ""}`, ctx.command);
    if ((sub === "label" || sub === "revoke") && !node) usage(`fleet ${sub} needs a node name`, ctx.command);
    if (sub === "join-token") return joinToken(ctx);
    if (sub === "nodes") return nodes(ctx);
    if (sub === "label") return label(ctx, node!, rest);
    return revoke(ctx, node!);
  },
};
export default fleet;
