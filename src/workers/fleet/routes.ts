// The Worker's fleet routes (pull mode, docs/fleet.md). Every write is signed: the owner's fleet tokens
// (aud = PODSYNC_FLEET_NAME, act = the verb, optionally a `selector` claim that limits the nodes they act on), the
// owner's join tokens (act enroll, single use), the owner's desired sets (a PUT /v1/node/pods signed for the node),
// and the nodes' own connection tokens (checked by the node's shard against its enrolled key).
//   GET  /fleet                                the fleet's name (public: the CLI's token audience)
//   POST /fleet/enroll                         a node's first contact: join token + its public key
//   GET  /fleet/connect                        the node's WebSocket (Authorization: Bearer <node JWS>)
//   GET  /fleet/nodes[?labelSelector=]         act read: the registry, a v1.List of FleetNode
//   POST /fleet/nodes/{node}/labels            act label: {"labels": {"k": "v" | null}}
//   POST /fleet/nodes/{node}/revoke            act revoke
//   PUT  /fleet/nodes/{node}/v1/node/pods      the node's next desired set, as PUT /v1/node/pods takes it
//   PUT  /fleet/v1/node/pods                   one set for every node its `aud` names (a list of node names)
//   GET  /fleet/audit[?node=]                  act read: enrollments, revocations, label changes, forged reports
//   GET  /fleet/{version,api,apis}/...         kubectl: the registry as v1 Nodes (kube.ts)
//   GET  /fleet/nodes/{node}/{api,apis,...}    kubectl: the node's own API over its link, as streams (kube.ts)
import { decodeJwt } from "jose";
import { createVerifier, type Algorithm, type Verifier, type VerifiedToken } from "../../auth/verify.js";
import { MemoryReplayStore } from "../../auth/replay.js";
import { FLEET_PATHS, type FleetAct, EnrollRequest, Labels, NodeName, shardOf } from "../../http/fleet/protocol.js";
import type { FleetNode } from "../../http/fleet/node-view.js";
import { ProblemError, toProblemError } from "../../usecases/problems.js";
import { readSignedList } from "../../http/signed-request.js";
import { parseLabelSelector, SelectorError, type LabelSelector } from "../../kubeapi/selectors.js";
import { DurableReplayStore } from "../replay-store.js";
import { fleetSettingsOf, type FleetConfig, type FleetEnv, type FleetNamespace } from "./settings.js";
import { settingsOf, type WorkerConfig } from "../settings.js";
import { fleetKubePath, serveFleetKube, type FleetKubeDeps } from "./kube.js";
import { SESSION_HEADER, type StreamArg } from "./shard.js";

export const isFleetPath = (path: string) => path === "/fleet" || path.startsWith("/fleet/");

export interface Fleet {
  env: FleetEnv;
  ns: FleetNamespace;
  s: WorkerConfig;
  f: FleetConfig;
}

export async function fleetFetch(req: Request, env: FleetEnv): Promise<Response> {
  const path = new URL(req.url).pathname;
  try {
    if (!env.FLEET)
      throw new ProblemError("misconfigured", "this Worker has no FLEET Durable Object binding (wrangler.toml)");
    const fl: Fleet = { env, ns: env.FLEET, s: settingsOf(env), f: fleetSettingsOf(env) };
    return await route(fl, req, path);
  } catch (e) {
    return toProblemError(e).toResponse(path);
  }
}

async function route(fl: Fleet, req: Request, path: string): Promise<Response> {
  const m = /^\/fleet\/nodes\/([^/]+)(\/.*)?$/.exec(path);
  const node = m ? NodeName.safeParse(decodeURIComponent(m[1]!)) : undefined;
  if (node && !node.success)
    throw new ProblemError("bad-request", `the node name in the path: ${node.error.issues[0]?.message}`);
  const name = node?.data;
  const rest = m?.[2] ?? "";
  const kubePath = fleetKubePath(path, name, rest);
  if (kubePath) return serveFleetKube(kubeDeps(fl), req, kubePath, name);
  const verb = `${req.method} ${name ? `/fleet/nodes/{node}${rest}` : path}`;
  switch (verb) {
    case "GET /fleet":
      // Public: the fleet's name (the CLI's token audience) and shape.
      return Response.json({ fleet: fl.f.PODSYNC_FLEET_NAME, shards: fl.f.PODSYNC_FLEET_SHARDS });
    case `POST ${FLEET_PATHS.enroll}`:
      return enroll(fl, req);
    case `GET ${FLEET_PATHS.connect}`:
      return connect(fl, req);
    case `GET ${FLEET_PATHS.nodes}`:
      return listNodes(fl, req);
    case "GET /fleet/nodes/{node}": {
      const t = await owner(fl, req, "read");
      const one = (await shardCall<FleetNode[]>(fl, name!, "/list", { actor: "" })).find(
        (n) => n.metadata.name === name,
      );
      if (!one || !inScope(t, one.metadata.labels))
        throw new ProblemError("not-found", `node "${name}" is not enrolled in this fleet`);
      return Response.json(one);
    }
    case "POST /fleet/nodes/{node}/labels":
      return label(fl, req, name!);
    case "POST /fleet/nodes/{node}/revoke": {
      const t = await owner(fl, req, "revoke", name);
      await scopedNode(fl, t, name!);
      return Response.json(await shardCall(fl, name!, "/revoke", { node: name, actor: actorOf(t) }));
    }
    case "PUT /fleet/nodes/{node}/v1/node/pods":
      return putDesired(fl, req, name!);
    case "PUT /fleet/v1/node/pods":
      return putDesiredMany(fl, req);
    case `GET ${FLEET_PATHS.audit}`: {
      const t = await owner(fl, req, "read");
      const n = new URL(req.url).searchParams.get("node") ?? undefined;
      const shards = n ? [shardOf(n, fl.f.PODSYNC_FLEET_SHARDS)] : allShards(fl);
      const rows = await Promise.all(
        shards.map((i) => shardFetch<unknown[]>(fl, i, "/audit", { actor: actorOf(t), node: n, limit: 500 })),
      );
      return Response.json({ kind: "List", apiVersion: "v1", items: rows.flat() });
    }
    case "GET /fleet/stats": {
      await owner(fl, req, "read");
      return Response.json(await Promise.all(allShards(fl).map((i) => shardFetch(fl, i, "/stats", { actor: "" }))));
    }
    default:
      throw new ProblemError("not-found", `no fleet route for ${req.method} ${path}`);
  }
}

export const allShards = (fl: Fleet) => Array.from({ length: fl.f.PODSYNC_FLEET_SHARDS }, (_, i) => i);
const stub = (fl: Fleet, i: number) => fl.ns.get(fl.ns.idFromName(`shard-${i}`));

export async function shardFetch<T>(fl: Fleet, i: number, op: string, arg: object): Promise<T> {
  const r = await stub(fl, i).fetch(`https://fleet-shard${op}`, { method: "POST", body: JSON.stringify(arg) });
  if (!r.ok) {
    const p = (await r.json().catch(() => ({}))) as { type?: string; detail?: string };
    const slug = String(p.type ?? "").replace(/^urn:podsync:problem:/, "");
    throw new ProblemError(
      (slug in PROBLEM_SLUGS ? slug : "internal") as ConstructorParameters<typeof ProblemError>[0],
      p.detail ?? `the registry shard answered ${r.status}`,
    );
  }
  return (await r.json()) as T;
}
const PROBLEM_SLUGS = {
  "not-found": 1,
  "node-revoked": 1,
  "already-enrolled": 1,
  "stale-generation": 1,
  "bad-request": 1,
  "node-not-connected": 1,
  "too-many-streams": 1,
  "runtime-timeout": 1,
  "runtime-unavailable": 1,
};
const shardCall = <T>(fl: Fleet, node: string, op: string, arg: object) =>
  shardFetch<T>(fl, shardOf(node, fl.f.PODSYNC_FLEET_SHARDS), op, arg);

/** The owner's verifier for fleet tokens (aud = the fleet), join tokens (longer-lived) or a node's desired set. */
function verifier(
  fl: Fleet,
  audience: string | string[],
  o: { maxLifetimeS?: number; replay: string | false },
): Verifier {
  return createVerifier({
    keys: fl.s.PODSYNC_JWKS ? { jwks: JSON.parse(fl.s.PODSYNC_JWKS) } : { url: fl.s.PODSYNC_JWKS_URL! },
    issuers: fl.s.PODSYNC_ISSUERS,
    audience: Array.isArray(audience) ? audience : [audience],
    algorithms: fl.s.PODSYNC_ALGORITHMS as Algorithm[],
    maxLifetimeSeconds: o.maxLifetimeS ?? fl.s.PODSYNC_MAX_TOKEN_LIFETIME_S,
    clockSkewSeconds: fl.s.PODSYNC_CLOCK_SKEW_S,
    replay: o.replay ? new DurableReplayStore(fl.env.REPLAY, o.replay) : new MemoryReplayStore(),
  });
}

/** The owner's fleet token for `act`: reads may reuse theirs, writes spend theirs. */
export async function owner(fl: Fleet, req: Request, act: FleetAct, _node?: string): Promise<VerifiedToken> {
  const m = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
  if (!m)
    throw new ProblemError(
      "unauthorized",
      `send Authorization: Bearer <a fleet token with act "${act}"> (podsync token --act ${act})`,
    );
  return verifier(fl, fl.f.PODSYNC_FLEET_NAME, { replay: act === "read" ? false : "fleet-owner" }).verify(m[1]!, {
    consume: act !== "read",
    check: (p) => {
      if (p["act"] !== act)
        return new ProblemError(
          "out-of-scope",
          `this route needs a fleet token with act "${act}" (got ${JSON.stringify(p["act"] ?? null)})`,
        );
      if (p["selector"] !== undefined) {
        if (typeof p["selector"] !== "string")
          return new ProblemError("bad-request", 'the token\'s "selector" must be a label selector string');
        try {
          parseLabelSelector(p["selector"]);
        } catch (e) {
          return new ProblemError("bad-request", `the token's selector: ${(e as Error).message}`);
        }
      }
      return undefined;
    },
  });
}

const tokenSelector = (t: VerifiedToken): LabelSelector | undefined =>
  typeof t.payload["selector"] === "string" ? parseLabelSelector(t.payload["selector"]) : undefined;
export const inScope = (t: VerifiedToken, labels: Record<string, string>) => {
  const sel = tokenSelector(t);
  return !sel || sel.matches(labels);
};
export const actorOf = (t: VerifiedToken) =>
  `${String(t.payload.iss)}${t.payload.sub ? `/${t.payload.sub}` : ""} (jti ${t.payload.jti})`;

/** The node, which the token's selector must cover. */
async function scopedNode(fl: Fleet, t: VerifiedToken, name: string): Promise<FleetNode> {
  const one = (await shardCall<FleetNode[]>(fl, name, "/list", { actor: "" })).find((n) => n.metadata.name === name);
  if (!one) throw new ProblemError("not-found", `node "${name}" is not enrolled in this fleet`);
  if (!inScope(t, one.metadata.labels))
    throw new ProblemError(
      "out-of-scope",
      `node "${name}" is outside the token's selector ${JSON.stringify(t.payload["selector"])}`,
    );
  return one;
}

/** What the Kubernetes side (kube.ts) needs of the fleet's routes. */
const kubeDeps = (fl: Fleet): FleetKubeDeps => ({
  fleetReader: (req) => owner(fl, req, "read"),
  nodeReader: (req, node) => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
    if (!m)
      throw new ProblemError(
        "unauthorized",
        `send Authorization: Bearer <a read token for node "${node}"> (kubectl sends it only over https)`,
      );
    return verifier(fl, node, { replay: false }).verify(m[1]!, {
      consume: false,
      check: (p) =>
        p["act"] === "read"
          ? undefined
          : new ProblemError(
              "out-of-scope",
              `a node's API needs a read token (got act ${JSON.stringify(p["act"] ?? null)})`,
            ),
    });
  },
  nodes: async (t) =>
    (await Promise.all(allShards(fl).map((i) => shardFetch<FleetNode[]>(fl, i, "/list", { actor: "" }))))
      .flat()
      .filter((n) => inScope(t, n.metadata.labels))
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)),
  session: async (node, req, open) => {
    const r = await stub(fl, shardOf(node, fl.f.PODSYNC_FLEET_SHARDS)).fetch("https://fleet-shard/session", {
      headers: {
        upgrade: "websocket",
        [SESSION_HEADER]: JSON.stringify({ actor: "", node, method: "GET", ...open } satisfies StreamArg),
      },
      signal: req.signal,
    });
    return shardAnswer(r);
  },
  stream: async (node, open) =>
    shardAnswer(
      await stub(fl, shardOf(node, fl.f.PODSYNC_FLEET_SHARDS)).fetch("https://fleet-shard/stream", {
        method: "POST",
        body: JSON.stringify({ actor: "", node, ...open }),
      }),
    ),
});

/** The shard's answer for a node's API: its own problem (no node, too many streams) thrown as one, else the node's. */
async function shardAnswer(r: Response): Promise<Response> {
  if (r.headers.get("content-type") !== "application/problem+json") return r;
  const p = (await r.json()) as { detail?: string; type?: string };
  const slug = String(p.type ?? "").replace(/^urn:podsync:problem:/, "");
  throw new ProblemError(
    (slug in PROBLEM_SLUGS ? slug : "internal") as ConstructorParameters<typeof ProblemError>[0],
    p.detail ?? `the registry shard answered ${r.status}`,
  );
}

async function listNodes(fl: Fleet, req: Request): Promise<Response> {
  const t = await owner(fl, req, "read");
  let sel: LabelSelector | undefined;
  try {
    sel = parseLabelSelector(new URL(req.url).searchParams.get("labelSelector") ?? undefined);
  } catch (e) {
    if (e instanceof SelectorError) throw new ProblemError("bad-request", `labelSelector: ${e.message}`);
    throw e;
  }
  const shards = await Promise.all(allShards(fl).map((i) => shardFetch<FleetNode[]>(fl, i, "/list", { actor: "" })));
  const items = shards
    .flat()
    .filter((n) => (!sel || sel.matches(n.metadata.labels)) && inScope(t, n.metadata.labels))
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  return Response.json({ kind: "List", apiVersion: "v1", metadata: {}, items });
}

async function label(fl: Fleet, req: Request, name: string): Promise<Response> {
  const t = await owner(fl, req, "label", name);
  const body = (await req.json().catch(() => undefined)) as { labels?: unknown } | undefined;
  const set = body?.labels;
  if (typeof set !== "object" || set === null || Array.isArray(set))
    throw new ProblemError("bad-request", 'send {"labels": {"key": "value" | null}}', {
      errors: [{ path: "labels", message: "required" }],
    });
  const values = Object.fromEntries(Object.entries(set).filter(([, v]) => v !== null));
  const ok = Labels.safeParse(values);
  if (!ok.success)
    throw new ProblemError("bad-request", "invalid labels", {
      errors: ok.error.issues.map((i) => ({ path: `labels.${i.path.join(".")}`, message: i.message })),
    });
  await scopedNode(fl, t, name);
  return Response.json(await shardCall(fl, name, "/label", { node: name, set, actor: actorOf(t) }));
}

/** The join token's one use: its signature (the owner's key, act enroll, aud the fleet), its jti spent, then the
 * node's row written with the labels the token carries. */
async function enroll(fl: Fleet, req: Request): Promise<Response> {
  const parsed = EnrollRequest.safeParse(await req.json().catch(() => undefined));
  if (!parsed.success)
    throw new ProblemError("bad-request", "invalid enrollment", {
      errors: parsed.error.issues.map((i) => ({ path: i.path.join(".") || "(root)", message: i.message })),
    });
  const e = parsed.data;
  const t = await verifier(fl, fl.f.PODSYNC_FLEET_NAME, {
    maxLifetimeS: fl.f.PODSYNC_FLEET_JOIN_TTL_MAX_S,
    replay: "fleet-join",
  }).verify(e.token, {
    check: (p) => {
      if (p["act"] !== "enroll")
        return new ProblemError(
          "out-of-scope",
          `a join token has act "enroll" (got ${JSON.stringify(p["act"] ?? null)}); mint one with podsync fleet join-token`,
        );
      if (p["node"] !== undefined && p["node"] !== e.node)
        return new ProblemError(
          "out-of-scope",
          `this join token is for node ${JSON.stringify(p["node"])}, not "${e.node}"`,
        );
      if (p["labels"] !== undefined && !Labels.safeParse(p["labels"]).success)
        return new ProblemError("bad-request", 'the join token\'s "labels" are not valid labels');
      return undefined;
    },
  });
  const labels = (t.payload["labels"] as Record<string, string> | undefined) ?? {};
  await shardCall(fl, e.node, "/enroll", {
    name: e.node,
    jwk: { kty: e.jwk.kty, crv: e.jwk.crv, x: e.jwk.x, y: e.jwk.y },
    labels,
    capacity: e.capacity,
    version: e.version,
    actor: actorOf(t),
    jti: t.payload.jti,
  });
  return Response.json({ node: e.node, fleet: fl.f.PODSYNC_FLEET_NAME, labels }, { status: 201 });
}

/** The node's WebSocket: forwarded as is to its shard, which checks the connection token against the enrolled key. */
async function connect(fl: Fleet, req: Request): Promise<Response> {
  const m = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
  let sub: unknown;
  try {
    sub = m && decodeJwt(m[1]!).sub;
  } catch {
    sub = undefined;
  }
  if (typeof sub !== "string" || !NodeName.safeParse(sub).success)
    throw new ProblemError(
      "unauthorized",
      'send Authorization: Bearer <a JWS signed by the node\'s enrolled key, "sub" the node>',
    );
  const i = shardOf(sub, fl.f.PODSYNC_FLEET_SHARDS);
  return stub(fl, i).fetch(new Request("https://fleet-shard/connect", req));
}

/** The owner's next desired set for a node: checked here as the node will check it (the owner's key, aud the node,
 * act apply, the body's hash, a generation), stored in the node's shard, pushed if the node is connected. The node
 * verifies it again against its own keys: the Worker is not trusted with what runs. */
async function putDesired(fl: Fleet, req: Request, name: string): Promise<Response> {
  const { stored } = await checkedSet(fl, req, [name]);
  return Response.json(await shardCall(fl, name, "/desired", { node: name, ...stored }), { status: 202 });
}

/** One signed set for many nodes: its `aud` is the list of their names, each of which verifies it as its own. The
 * Worker checks the signature once and hands each shard its nodes. */
async function putDesiredMany(fl: Fleet, req: Request): Promise<Response> {
  const m = req.headers.get("podsync-signature") ?? "";
  let aud: unknown;
  try {
    aud = decodeJwt(m).aud;
  } catch {
    throw new ProblemError(
      "unauthorized",
      "PUT /fleet/v1/node/pods takes a detached Podsync-Signature whose aud lists the nodes",
    );
  }
  const names = (Array.isArray(aud) ? aud : [aud]).filter(
    (n): n is string => typeof n === "string" && NodeName.safeParse(n).success,
  );
  if (names.length === 0 || names.length > 10_000)
    throw new ProblemError("bad-request", 'the signature\'s "aud" must list 1 to 10,000 node names');
  const { stored } = await checkedSet(fl, req, names);
  const byShard = new Map<number, string[]>();
  for (const n of names) {
    const i = shardOf(n, fl.f.PODSYNC_FLEET_SHARDS);
    byShard.set(i, [...(byShard.get(i) ?? []), n]);
  }
  const results = await Promise.all(
    [...byShard].map(([i, nodes]) =>
      shardFetch<{ stored: number; delivered: number; refused: { node: string; reason: string }[] }>(
        fl,
        i,
        "/desired-many",
        { nodes, ...stored },
      ),
    ),
  );
  return Response.json(
    {
      stored: results.reduce((n, r) => n + r.stored, 0),
      delivered: results.reduce((n, r) => n + r.delivered, 0),
      refused: results.flatMap((r) => r.refused),
    },
    { status: 202 },
  );
}

/** The set as the nodes will check it (the owner's key, act apply, the body's hash, a generation), for `audience`. */
export async function checkedSet(fl: Fleet, req: Request, audience: string[]) {
  const copy = req.clone();
  const max = fl.f.PODSYNC_FLEET_MAX_DESIRED_BYTES;
  const checker = verifier(fl, audience, { replay: false });
  const nonSpending: Verifier = { verify: (tok, o) => checker.verify(tok, { ...o, consume: false }) };
  const { token, items } = await readSignedList(req, nonSpending, "apply", max, (p) => {
    const g = p["generation"];
    return Number.isSafeInteger(g) && (g as number) >= 1
      ? undefined
      : new ProblemError("bad-request", "the token's generation must be a whole number from 1", {
          errors: [{ path: "generation", message: "required" }],
        });
  });
  return {
    token,
    items,
    stored: {
      generation: Number(token.payload["generation"]),
      contentType: req.headers.get("content-type") ?? "application/json",
      body: await copy.text(),
      signature: req.headers.get("podsync-signature"),
      actor: `${String(token.payload.iss)} (kid ${token.kid ?? "none"})`,
      jti: token.payload.jti,
    },
  };
}
