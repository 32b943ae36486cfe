// podsync fleet rollout | rollouts | status | pause | resume | abort | approve | rollback | drift (issue #39,
// docs/fleet.md "Rollouts"). The revision is the file's bytes, signed here once for every target node (its aud
// lists them, its generation above each one's stored set); the rollback set is the last Completed rollout's
// revision for the same selector (its signature checked against your own key), or the empty set, re-signed at
// the next generation.
import { createHash } from "node:crypto";
import { basename } from "node:path";
import { decodeJwt, importJWK, jwtVerify, type JWK } from "jose";
import type { FleetNode } from "../../http/fleet/node-view.js";
import { fail, usage } from "../args.js";
import type { Ctx } from "../client.js";
import { signToken } from "../keys.js";
import { table } from "../output.js";
import { readBytes } from "../pod-files.js";
import { parseDuration } from "../progress.js";

// The wire shapes this CLI reads (GET /fleet/rollouts[/NAME]), as the Worker's workers/fleet/rollout/view.ts and
// index-table.ts write them: the CLI may not import the Worker's modules (docs/architecture.md), so only the fields
// it reads are named here.
interface RolloutSummary {
  name: string;
  selector: string;
  phase: string;
  pauseReason?: string;
  batch: number;
  batches: number;
  targets: number;
  healthy: number;
  failed: number;
  unreachable: number;
}
interface FleetRolloutView {
  metadata: { name: string };
  status: {
    phase: string;
    pauseReason?: string;
    message?: string;
    batch: number;
    batches: { batch: number; size: number; counts: Record<string, number> }[];
  };
  summary?: unknown;
}

export type FleetCall = <T>(ctx: Ctx, act: string, method: string, path: string, body?: unknown) => Promise<T>;
export const ROLLOUT_SUBS = [
  "rollout",
  "rollouts",
  "status",
  "pause",
  "resume",
  "abort",
  "approve",
  "rollback",
  "drift",
] as const;
const VERB_ACT: Record<string, string> = {
  pause: "rollout",
  resume: "rollout",
  abort: "rollout",
  approve: "approve",
  rollback: "rollback",
};

export const rolloutOptions = {
  filename: { type: "string", short: "f", help: "rollout: the revision's file (YAML documents, or a JSON v1.List)" },
  name: { type: "string", help: "rollout: the rollout's name (default: the file's name and the generation)" },
  batch: { type: "string", help: "rollout: nodes per batch, N or P% (default 100%; percentages round up)" },
  canary: { type: "string", help: "rollout: a first batch of N nodes" },
  soak: { type: "string", help: "rollout: how long each batch stays healthy before the next (30s, 5m)" },
  "progress-deadline": { type: "string", help: "rollout: each batch's gate must pass within this (default 5m)" },
  "max-failures": { type: "string", help: "rollout: failed nodes tolerated, N or P% (default 0)" },
  "max-unavailable": { type: "string", help: "rollout: nodes unreachable past their deadline tolerated (25%)" },
  "unreachable-deadline": { type: "string", help: "rollout: how long a node may be unreachable (default 5m)" },
  "auto-rollback": { type: "boolean", help: "rollout: on a failed gate, roll back every node that took it" },
  "approve-after-canary": { type: "boolean", help: "rollout: wait for fleet approve after the canary" },
  watch: { type: "boolean", short: "w", help: "status: follow until the rollout ends" },
} as const;

export const rolloutUsage = [
  "fleet rollout -f FILE -l SELECTOR [--batch 10%|N] [--canary N] [--soak 30s] [--progress-deadline 5m] [--max-failures N] [--auto-rollback] [--approve-after-canary] [-o json]",
  "fleet rollouts [-o json]",
  "fleet status ROLLOUT [-w] [-o json]",
  "fleet pause|resume|abort|approve|rollback ROLLOUT [-o json]",
  "fleet drift [-l SELECTOR] [-o json]",
];

const list = (items: unknown[]) => ({ apiVersion: "v1", kind: "List", metadata: {}, items });
const json = (ctx: Ctx) => ctx.o["output"] === "json";
const sha = (b: Uint8Array | string) => createHash("sha256").update(b).digest("base64url");
const EMPTY = JSON.stringify({ apiVersion: "v1", kind: "List", items: [] });

function duration(ctx: Ctx, flag: string): number | undefined {
  const v = ctx.o[flag];
  if (v === undefined) return undefined;
  const ms = parseDuration(String(v));
  if (ms === undefined) usage(`--${flag} ${String(v)}: write a duration (30s, 5m, 1h)`, ctx.command);
  return ms;
}
function countOrPercent(ctx: Ctx, flag: string): number | string | undefined {
  const v = ctx.o[flag];
  if (v === undefined) return undefined;
  if (/^\d{1,3}%$/.test(String(v))) return String(v);
  if (/^\d+$/.test(String(v))) return Number(v);
  return usage(`--${flag} ${String(v)}: write a count (3) or a percentage (10%)`, ctx.command);
}

/** The strategy from the flags (the Worker fills in the rest with its defaults). */
export function strategyOf(ctx: Ctx): Record<string, unknown> {
  const s: Record<string, unknown> = {};
  const put = (k: string, v: unknown) => {
    if (v !== undefined) s[k] = v;
  };
  put("batch", countOrPercent(ctx, "batch"));
  if (ctx.o["canary"] !== undefined) {
    const n = Number(ctx.o["canary"]);
    if (!Number.isSafeInteger(n) || n < 0) usage(`--canary ${String(ctx.o["canary"])}: a count of nodes`, ctx.command);
    s["canary"] = n;
  }
  put("soakMs", duration(ctx, "soak"));
  put("progressDeadlineMs", duration(ctx, "progress-deadline"));
  put("unreachableDeadlineMs", duration(ctx, "unreachable-deadline"));
  put("maxFailures", countOrPercent(ctx, "max-failures"));
  put("maxUnavailable", countOrPercent(ctx, "max-unavailable"));
  if (ctx.o["auto-rollback"]) s["autoRollback"] = true;
  if (ctx.o["approve-after-canary"]) {
    if (!s["canary"]) usage("--approve-after-canary needs --canary N", ctx.command);
    s["approveAfterCanary"] = true;
  }
  return s;
}

/** The last good revision for `selector`: the newest Completed rollout's, checked against your own key. */
async function lastGood(ctx: Ctx, call: FleetCall, selector: string): Promise<{ body: string; contentType: string }> {
  const { items } = await call<{ items: RolloutSummary[] }>(ctx, "read", "GET", "/fleet/rollouts");
  const done = items.filter((r) => r.phase === "Completed" && r.selector === selector).at(-1);
  if (!done) return { body: EMPTY, contentType: "application/json" };
  const rev = await call<{ body: string; contentType: string; signature: string }>(
    ctx,
    "read",
    "GET",
    `/fleet/rollouts/${encodeURIComponent(done.name)}/revision`,
  );
  const { d: _d, ...pub } = ctx.key().key as JWK;
  try {
    const iat = Number(decodeJwt(rev.signature).iat ?? 0);
    const { payload } = await jwtVerify(rev.signature, await importJWK(pub, pub.alg), {
      currentDate: new Date(iat * 1000),
    });
    if (payload["body_sha256"] !== sha(rev.body)) throw new Error("its body does not match its signature");
  } catch (e) {
    fail(`the last good revision (rollout ${done.name}) does not verify against your key: ${(e as Error).message}`);
  }
  return { body: rev.body, contentType: rev.contentType };
}

async function create(ctx: Ctx, call: FleetCall, fleet: string): Promise<void> {
  const file = ctx.o["filename"] as string | undefined;
  const selector = ctx.o["selector"] as string | undefined;
  if (!file || !selector) usage("fleet rollout needs -f FILE and -l SELECTOR", ctx.command);
  const strategy = strategyOf(ctx);
  const bytes = readBytes(file);
  const text = bytes.toString("utf8");
  const contentType =
    file.endsWith(".json") || text.trimStart().startsWith("{") ? "application/json" : "application/yaml";
  const { items } = await call<{ items: FleetNode[] }>(
    ctx,
    "read",
    "GET",
    `/fleet/nodes?labelSelector=${encodeURIComponent(selector)}`,
  );
  const nodes = items.filter((n) => !n.status.revoked);
  if (!nodes.length) fail(`no enrolled node matches -l ${selector}`);
  const targets = nodes.map((n) => n.metadata.name);
  const generation = Math.max(...nodes.map((n) => Math.max(n.status.desiredGeneration, n.status.generation))) + 1;
  const prev = await lastGood(ctx, call, selector);
  const sign = (g: number, body: Uint8Array | string) =>
    signToken(ctx.key().key, { act: "apply", generation: g, body_sha256: sha(body) }, targets, ctx.ttl, ctx.iss);
  const name =
    (ctx.o["name"] as string | undefined) ??
    `${
      basename(file)
        .replace(/\.[^.]*$/, "")
        .toLowerCase()
        .replace(/[^a-z0-9-]+/g, "-")
        .replace(/^-+|-+$/g, "")
        .slice(0, 40) || "rollout"
    }-${generation}`;
  const v = await call<FleetRolloutView>(ctx, "rollout", "POST", "/fleet/rollouts", {
    name,
    selector,
    strategy,
    revision: { contentType, body: text, signature: await sign(generation, bytes) },
    rollback: { contentType: prev.contentType, body: prev.body, signature: await sign(generation + 1, prev.body) },
  });
  if (json(ctx)) return console.log(JSON.stringify(list([v]), null, 2));
  console.log(
    `rollout/${name} created: generation ${generation} to ${targets.length} node(s) of ${fleet} in ${v.status.batches.length} batch(es)`,
  );
}

const STATES = ["Pending", "Dispatched", "Healthy", "Failed", "Unreachable", "RolledBack"] as const;
export function statusText(v: Omit<FleetRolloutView, "summary">): string {
  const s = v.status;
  const head = `rollout/${v.metadata.name}: ${s.phase}${s.pauseReason ? ` (${s.pauseReason})` : ""}, batch ${s.batch} of ${s.batches.length}${s.message ? `: ${s.message}` : ""}`;
  return `${head}\n${table([
    ["BATCH", "SIZE", ...STATES.map((x) => x.toUpperCase())],
    ...s.batches.map((b) => [String(b.batch), String(b.size), ...STATES.map((x) => String(b.counts[x]))]),
  ])}`;
}

/** kubectl rollout status's exit code: 0 Completed (or still going, unwatched), 1 a failure of any kind. */
export const failedPhase = (v: Omit<FleetRolloutView, "summary">) =>
  ["Failed", "Aborted", "RolledBack"].includes(v.status.phase) ||
  (v.status.phase === "Paused" && v.status.pauseReason === "GateFailed");

async function status(ctx: Ctx, call: FleetCall, name: string): Promise<void> {
  const path = `/fleet/rollouts/${encodeURIComponent(name)}`;
  let last = "";
  for (;;) {
    const v = await call<Omit<FleetRolloutView, "summary">>(ctx, "read", "GET", path);
    const text = json(ctx) ? JSON.stringify(list([v]), null, 2) : statusText(v);
    if (text !== last) console.log(text);
    last = text;
    const final = v.status.phase === "Completed" || failedPhase(v) || v.status.phase === "Paused";
    if (!ctx.o["watch"] || final) {
      if (failedPhase(v)) fail(`rollout ${name} ${v.status.phase}${v.status.message ? `: ${v.status.message}` : ""}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function rollouts(ctx: Ctx, call: FleetCall): Promise<void> {
  const { items } = await call<{ items: RolloutSummary[] }>(ctx, "read", "GET", "/fleet/rollouts");
  if (json(ctx))
    return console.log(
      JSON.stringify(
        list(items.map((r) => ({ metadata: { name: r.name, labels: {} }, spec: { selector: r.selector }, status: r }))),
        null,
        2,
      ),
    );
  console.log(
    table([
      ["NAME", "PHASE", "BATCH", "TARGETS", "HEALTHY", "FAILED", "UNREACHABLE", "SELECTOR"],
      ...items.map((r) => [
        r.name,
        r.pauseReason ? `${r.phase}(${r.pauseReason})` : r.phase,
        `${r.batch}/${r.batches}`,
        String(r.targets),
        String(r.healthy),
        String(r.failed),
        String(r.unreachable),
        r.selector,
      ]),
    ]),
  );
}

interface DriftItem {
  metadata: { name: string; labels: Record<string, string> };
  status: { condition: string; generation: number; desiredGeneration: number; reasons: string[] };
}
async function drift(ctx: Ctx, call: FleetCall): Promise<void> {
  const sel = ctx.o["selector"] as string | undefined;
  const q = sel ? `?labelSelector=${encodeURIComponent(sel)}` : "";
  const { items } = await call<{ items: DriftItem[] }>(ctx, "read", "GET", `/fleet/drift${q}`);
  if (json(ctx)) return console.log(JSON.stringify(list(items), null, 2));
  if (!items.length) return console.log("no drift");
  console.log(
    table([
      ["NAME", "STATUS", "GENERATION", "DESIRED", "DRIFT"],
      ...items.map((d) => [
        d.metadata.name,
        d.status.condition,
        String(d.status.generation),
        String(d.status.desiredGeneration),
        d.status.reasons.join("; "),
      ]),
    ]),
  );
}

export async function runRollout(ctx: Ctx, call: FleetCall, fleet: () => Promise<string>): Promise<void> {
  const [sub, name] = ctx.args;
  if (ctx.o["output"] !== undefined && ctx.o["output"] !== "json")
    usage(`-o ${String(ctx.o["output"])}: use json`, ctx.command);
  if (sub === "rollout") return create(ctx, call, await fleet());
  if (sub === "rollouts") return rollouts(ctx, call);
  if (sub === "drift") return drift(ctx, call);
  if (!name) usage(`fleet ${sub} needs a rollout name`, ctx.command);
  if (sub === "status") return status(ctx, call, name);
  const v = await call<Omit<FleetRolloutView, "summary">>(
    ctx,
    VERB_ACT[sub!]!,
    "POST",
    `/fleet/rollouts/${encodeURIComponent(name)}/${sub}`,
  );
  if (json(ctx)) return console.log(JSON.stringify(list([v]), null, 2));
  console.log(`rollout/${name} ${sub}: ${v.status.phase}${v.status.message ? ` (${v.status.message})` : ""}`);
}
