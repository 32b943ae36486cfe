// The Worker's rollout routes (issue #39, docs/fleet.md "Rollouts"). Every write is an owner's fleet token with its
// own verb: rollout (create, pause, resume, abort), approve, rollback; a token's selector must cover every target.
//   POST /fleet/rollouts                       act rollout: {name, selector, strategy, revision, rollback?}
//   GET  /fleet/rollouts                       act read: the index (summaries)
//   GET  /fleet/rollouts/{name}[?nodes=1]      act read: phase and counts batch by batch (and each node)
//   GET  /fleet/rollouts/{name}/revision       act read: the revision as signed (the next rollout's rollback set)
//   GET  /fleet/rollouts/{name}/audit          act read: the hash-chained audit, with where the chain breaks
//   POST /fleet/rollouts/{name}/{verb}         pause|resume|abort (act rollout), approve, rollback (their own acts)
//   GET  /fleet/drift[?labelSelector=]         act read: nodes whose applied state differs from their desired set
import { decodeJwt } from "jose";
import type { FleetAct } from "../../../http/fleet/protocol.js";
import type { FleetNode } from "../../../http/fleet/node-view.js";
import { ProblemError, toProblemError } from "../../../usecases/problems.js";
import type { VerifiedToken } from "../../../auth/verify.js";
import { parseLabelSelector, type LabelSelector } from "../../../kubeapi/selectors.js";
import { DurableReplayStore } from "../../replay-store.js";
import { actorOf, allShards, checkedSet, type Fleet, inScope, owner, shardFetch } from "../routes.js";
import { driftOf } from "./drift.js";
import { type Expected, expectedOf } from "./health.js";
import { initialState, planBatches, Strategy } from "./model.js";
import { expectedOfStored, fleetOf } from "./registry.js";
import type { RolloutEnv } from "./settings.js";
import type { SignedSet } from "./store.js";
import { rolloutView, type FleetRolloutView } from "./view.js";
import { z } from "zod";

export const isRolloutPath = (p: string) =>
  p === "/fleet/rollouts" || p.startsWith("/fleet/rollouts/") || p === "/fleet/drift";

const VERBS: Record<string, FleetAct> = {
  pause: "rollout",
  resume: "rollout",
  abort: "rollout",
  approve: "approve",
  rollback: "rollback",
};

const Set_ = z.strictObject({
  contentType: z.string().max(100).default("application/json"),
  body: z.string().min(2),
  signature: z
    .string()
    .min(1)
    .max(1024 * 1024),
});
export const RolloutRequest = z.strictObject({
  name: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, "a rollout name: a DNS label (lowercase, '-', ≤ 63)"),
  selector: z.string().min(1).max(1024),
  strategy: Strategy.default(Strategy.parse({})),
  revision: Set_,
  rollback: Set_.optional(),
});
export type RolloutRequest = z.input<typeof RolloutRequest>;

export async function rolloutFetch(req: Request, env: RolloutEnv): Promise<Response> {
  const path = new URL(req.url).pathname;
  try {
    if (!env.ROLLOUTS)
      throw new ProblemError("misconfigured", "this Worker has no ROLLOUTS Durable Object binding (wrangler.toml)");
    return await route(fleetOf(env), env, req, path);
  } catch (e) {
    return toProblemError(e).toResponse(path);
  }
}

async function route(fl: Fleet, env: RolloutEnv, req: Request, path: string): Promise<Response> {
  if (path === "/fleet/drift" && req.method === "GET") return drift(fl, req);
  if (path === "/fleet/rollouts") {
    if (req.method === "POST") return create(fl, env, req);
    if (req.method === "GET") {
      await owner(fl, req, "read");
      return Response.json({ kind: "List", apiVersion: "v1", metadata: {}, items: await call(env, "index", "/list") });
    }
  }
  const m = /^\/fleet\/rollouts\/([a-z0-9-]{1,63})(?:\/([a-z]+))?$/.exec(path);
  if (!m) throw new ProblemError("not-found", `no fleet route for ${req.method} ${path}`);
  const name = m[1]!;
  const sub = m[2];
  const r = `r:${name}`;
  if (req.method === "GET" && sub === undefined) {
    await owner(fl, req, "read");
    const nodes = new URL(req.url).searchParams.get("nodes") === "1";
    return Response.json(stripSummary(await call<FleetRolloutView>(env, r, "/status", { nodes })));
  }
  if (req.method === "GET" && sub === "revision") {
    await owner(fl, req, "read");
    const spec = await call<{ revision: SignedSet }>(env, r, "/spec");
    return Response.json(spec.revision);
  }
  if (req.method === "GET" && sub === "audit") {
    await owner(fl, req, "read");
    return Response.json(await call(env, r, "/audit"));
  }
  const act = sub ? VERBS[sub] : undefined;
  if (req.method === "POST" && act) {
    const t = await owner(fl, req, act);
    const spec = await call<{ targets: string[] }>(env, r, "/spec");
    outOfScope(t, await registry(fl), spec.targets);
    return Response.json(stripSummary(await call(env, r, "/command", { verb: sub, actor: actorOf(t) })));
  }
  throw new ProblemError("not-found", `no fleet route for ${req.method} ${path}`);
}

const stripSummary = (v: unknown) => {
  const { summary: _s, ...rest } = v as FleetRolloutView;
  return rest;
};

/** A call to the coordinator named `name` (or the index); its problem is passed on as is. */
async function call<T = unknown>(env: RolloutEnv, name: string, op: string, arg: object = {}): Promise<T> {
  const ns = env.ROLLOUTS!;
  const r = await ns.get(ns.idFromName(name)).fetch(`https://rollout${op}`, {
    method: "POST",
    body: JSON.stringify(arg),
  });
  if (!r.ok) {
    const p = (await r.json().catch(() => ({}))) as { type?: string; detail?: string; [k: string]: unknown };
    const slug = String(p.type ?? "").replace(/^urn:podsync:problem:/, "");
    const known = ["not-found", "rollout-conflict", "bad-request", "replayed"] as const;
    const s = known.find((k) => k === slug) ?? "internal";
    throw new ProblemError(s, s === "not-found" && name.startsWith("r:") ? `no rollout "${name.slice(2)}"` : p.detail);
  }
  return (await r.json()) as T;
}

async function registry(fl: Fleet): Promise<Map<string, FleetNode>> {
  const lists = await Promise.all(allShards(fl).map((i) => shardFetch<FleetNode[]>(fl, i, "/list", { actor: "" })));
  return new Map(lists.flat().map((n) => [n.metadata.name, n]));
}

/** Every target inside the token's selector, or 403 naming those outside. */
function outOfScope(t: VerifiedToken, reg: Map<string, FleetNode>, targets: string[]): void {
  const out = targets.filter((n) => !inScope(t, reg.get(n)?.metadata.labels ?? {}));
  if (out.length)
    throw new ProblemError(
      "out-of-scope",
      `${out.length} target node(s) are outside the token's selector ${JSON.stringify(t.payload["selector"])}: ${out.slice(0, 5).join(", ")}`,
    );
}

function selector(text: string, field: string): LabelSelector {
  try {
    return parseLabelSelector(text);
  } catch (e) {
    throw new ProblemError("bad-request", `${field}: ${(e as Error).message}`, {
      errors: [{ path: field, message: (e as Error).message }],
    });
  }
}

/** A set as the nodes will check it, signed for every target (its aud lists them). */
async function signedFor(
  fl: Fleet,
  set: z.output<typeof Set_>,
  targets: string[],
  field: string,
): Promise<SignedSet & { expected: Expected }> {
  let aud: unknown;
  try {
    aud = decodeJwt(set.signature).aud;
  } catch {
    throw new ProblemError("bad-request", `${field}.signature: not a compact JWS`);
  }
  const auds = new Set(Array.isArray(aud) ? aud : [aud]);
  const missing = targets.filter((n) => !auds.has(n));
  if (missing.length)
    throw new ProblemError(
      "bad-request",
      `${field} is not signed for ${missing.length} target node(s) (its aud must list them): ${missing.slice(0, 5).join(", ")}`,
      { errors: [{ path: `${field}.signature`, message: "aud must list every target node" }] },
    );
  const req = new Request("https://fleet/v1/node/pods", {
    method: "PUT",
    headers: { "content-type": set.contentType, "podsync-signature": set.signature },
    body: set.body,
  });
  const { stored, items } = await checkedSet(fl, req, targets);
  return { ...stored, signature: set.signature, jti: String(stored.jti), expected: expectedOf(items) };
}

async function create(fl: Fleet, env: RolloutEnv, req: Request): Promise<Response> {
  const t = await owner(fl, req, "rollout");
  const parsed = RolloutRequest.safeParse(await req.json().catch(() => undefined));
  if (!parsed.success)
    throw new ProblemError("bad-request", "invalid rollout", {
      errors: parsed.error.issues.map((i) => ({ path: i.path.join(".") || "(root)", message: i.message })),
    });
  const b = parsed.data;
  const sel = selector(b.selector, "selector");
  const batchSel = (b.strategy.batchSelectors ?? []).map((s, i) => selector(s, `strategy.batchSelectors.${i}`));
  const reg = await registry(fl);
  const targets = [...reg.values()]
    .filter((n) => !n.status.revoked && sel.matches(n.metadata.labels))
    .map((n) => n.metadata.name)
    .sort();
  if (!targets.length) throw new ProblemError("bad-request", `no enrolled node matches the selector "${b.selector}"`);
  outOfScope(t, reg, targets);
  const revision = await signedFor(fl, b.revision, targets, "revision");
  const rollback = b.rollback && (await signedFor(fl, b.rollback, targets, "rollback"));
  if (rollback && rollback.generation <= revision.generation)
    throw new ProblemError("bad-request", "rollback: its generation must be above the revision's", {
      errors: [{ path: "rollback.signature", message: `generation ${rollback.generation} ≤ ${revision.generation}` }],
    });
  const plan = planBatches(targets, b.strategy, (i, n) => batchSel[i]!.matches(reg.get(n)?.metadata.labels ?? {}));
  const now = Date.now();
  const st = {
    ...initialState(plan, b.strategy, revision.generation, now),
    ...(rollback ? { rollbackGeneration: rollback.generation } : {}),
  };
  const spec = {
    name: b.name,
    selector: b.selector,
    strategy: b.strategy,
    targets,
    revision,
    ...(rollback ? { rollback } : {}),
    actor: actorOf(t),
    createdAt: now,
    expected: { revision: revision.expected, ...(rollback ? { rollback: rollback.expected } : {}) },
  };
  const summary = rolloutView(spec, st, undefined, undefined).summary;
  try {
    await call(env, "index", "/acquire", { summary, nodes: targets });
  } catch (e) {
    await refused(env, t, b.name, targets, toProblemError(e).message);
    throw e;
  }
  // The revision is single use: a replayed rollout (the same signed set again) is refused.
  const exp = Number(decodeJwt(revision.signature).exp ?? now / 1000 + 3600) * 1000;
  if (!(await new DurableReplayStore(fl.env.REPLAY, "fleet-rollout").claim(revision.jti, exp + 3_600_000))) {
    await call(env, "index", "/release", { name: b.name });
    await refused(env, t, b.name, targets, "replayed revision");
    throw new ProblemError("replayed", "this signed revision was rolled out already: sign it again for a new rollout");
  }
  const v = await call<FleetRolloutView>(env, `r:${b.name}`, "/init", { spec, state: st });
  return Response.json(stripSummary(v), { status: 201 });
}

async function refused(env: RolloutEnv, t: VerifiedToken, name: string, nodes: string[], why: string) {
  await call(env, "index", "/append", {
    entry: { at: Date.now(), actor: actorOf(t), action: "refused", rollout: name, nodes, detail: { why } },
  }).catch(() => undefined);
}

async function drift(fl: Fleet, req: Request): Promise<Response> {
  const t = await owner(fl, req, "read");
  const q = new URL(req.url).searchParams.get("labelSelector");
  const sel = q ? selector(q, "labelSelector") : undefined;
  const nodes = [...(await registry(fl)).values()].filter(
    (n) => (!sel || sel.matches(n.metadata.labels)) && inScope(t, n.metadata.labels) && !n.status.revoked,
  );
  // The pod set is compared only where the generations agree (otherwise that is the drift already).
  const expected = await expectedOfStored(
    fl,
    nodes
      .filter((n) => n.status.desiredGeneration > 0 && n.status.generation === n.status.desiredGeneration)
      .map((n) => n.metadata.name),
  );
  const items = nodes
    .map((n) => ({ n, reasons: driftOf(n, expected.get(n.metadata.name)) }))
    .filter((x) => x.reasons.length > 0)
    .sort((a, b) => a.n.metadata.name.localeCompare(b.n.metadata.name))
    .map(({ n, reasons }) => ({
      metadata: { name: n.metadata.name, labels: n.metadata.labels },
      status: {
        condition: n.status.condition,
        generation: n.status.generation,
        desiredGeneration: n.status.desiredGeneration,
        reasons,
      },
    }));
  return Response.json({ kind: "List", apiVersion: "v1", metadata: {}, items });
}
