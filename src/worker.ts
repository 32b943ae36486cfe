// The same Hono app as a Cloudflare Worker. One Worker serves many nodes: `/nodes/{node}/v1/...` is the
// node-embedded API of that node, reaching its runtime through the node's cri-proxy over gRPC-Web (fetch).
// Replay protection and per-pod serialisation are Durable Objects, since isolates share no memory; so is each
// node's desired state and workloads, whose object also runs the node agent's reconcile loop and controllers on an
// alarm and serves the node's Kubernetes API under /nodes/{node}/ (NodeDesiredState; docs/workers.md).
//
// Settings (wrangler vars and secrets):
//   PODSYNC_NODES        JSON {"edge-7": {"url": "https://edge-7.example:9091", "aliases": ["m-123"]}} (optional per node:
//                        labels, taints, cpu, memoryBytes, maxPods, arch, over the shared PODSYNC_NODE_* settings)
//   PODSYNC_PROXY_TOKEN  secret: the bearer token for the proxies (or per node in PODSYNC_PROXY_TOKENS, JSON)
//   PODSYNC_JWKS         secret/var: the trusted JWK set (JSON), or PODSYNC_JWKS_URL
//   PODSYNC_ISSUERS      comma separated trusted `iss`
//   PODSYNC_SECRETS_KEY  secret: 32 random bytes, base64 (`openssl rand -base64 32`): seals the Secrets signed
//                        with pods in the desired state; without it a pod that brings Secrets is refused (500)
//   and every setting Node has in common (src/settings/common.ts: algorithms, token lifetime, clock skew,
//   body limit, lock wait, CRI deadlines, node layout, cgroup parent, DNS, memory capacity), same names.
import type { ExecutionContext, Hono } from "hono";
import { toProblemError } from "./usecases/problems.js";
import { buildWorkerApp } from "./workers/app.js";
import type { Env } from "./workers/settings.js";
import { fleetFetch, isFleetPath } from "./workers/fleet/routes.js";
import type { FleetEnv } from "./workers/fleet/settings.js";
import { isRolloutPath, rolloutFetch } from "./workers/fleet/rollout/routes.js";

// The Durable Object classes wrangler binds (wrangler.toml), exported from the Worker's main module.
export { ReplayGuard } from "./workers/replay-guard.js";
export { PodSerializer } from "./workers/pod-serializer.js";
export { NodeDesiredState } from "./workers/node-desired-state.js";
export { DurablePodLock } from "./workers/pod-lock.js";
// Pull mode's node registry (docs/fleet.md): /fleet/... is its own, before the per-node apps.
export { FleetShard } from "./workers/fleet/shard.js";
// Rollouts to node groups (issue #39): a coordinator per rollout and their index.
export { FleetRollout } from "./workers/fleet/rollout/coordinator.js";
export type { Env } from "./workers/settings.js";

let cache: { key: string; root: Hono } | undefined;

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    try {
      if (isRolloutPath(new URL(req.url).pathname)) return await rolloutFetch(req, env as FleetEnv);
      if (isFleetPath(new URL(req.url).pathname)) return await fleetFetch(req, env as FleetEnv);
      const key = `${env.PODSYNC_NODES}\u0000${env.PODSYNC_ISSUERS}\u0000${env.PODSYNC_JWKS ?? env.PODSYNC_JWKS_URL}`;
      if (cache?.key !== key) cache = { key, root: buildWorkerApp(env) };
      return await cache.root.fetch(req, env, ctx);
    } catch (e) {
      return toProblemError(e).toResponse(new URL(req.url).pathname);
    }
  },
};
