// Package workers/ — the Cloudflare Worker's Durable Objects and settings (entry layer), composed by ../worker.ts.
// Imports any lower layer (http/, kubeapi/, the front door); nothing imports it but worker.ts.
//
// The Worker's root app: one node-embedded app (src/http/app.ts) per node in PODSYNC_NODES, under /nodes/{node}/,
// and the node's Kubernetes API (served by its Durable Object) under the same prefix.
import { Hono } from "hono";
import { createApp } from "../http/app.js";
import { ProblemError } from "../usecases/problems.js";
import { nodePolicy } from "../auth/policy.js";
import { nodeInfoFrom, withNodeOverrides } from "../settings/node-info.js";
import { DurableDesiredState, DurableWorkloadStore } from "./desired-state-client.js";
import { isKubePath } from "../kubeapi/routes.js";
import { reportingToNode } from "./node-kube.js";
import { nodeRuntime, nodeVerifier, sealed } from "./node-runtime.js";
import { settingsOf, type Env } from "./settings.js";

export function buildWorkerApp(env: Env): Hono {
  const s = settingsOf(env);
  const root = new Hono();
  root.get("/healthz", (c) => c.json({ ok: true, nodes: Object.keys(s.PODSYNC_NODES) }));
  for (const [name, cfg] of Object.entries(s.PODSYNC_NODES)) {
    const desiredOf = new DurableDesiredState(env.DESIRED, name);
    // The routes' syncs and deletes are reported to the node object, which serves the Kubernetes API.
    const runtime = reportingToNode(nodeRuntime(env, s, name)!.runtime, desiredOf.report, (e) =>
      console.log(
        JSON.stringify({
          time: new Date().toISOString(),
          node: name,
          error: `not reported to the Kubernetes API: ${String((e as Error)?.message ?? e).slice(0, 200)}`,
        }),
      ),
    );
    const prefix = `/nodes/${encodeURIComponent(name)}`;
    // The Kubernetes API (/version, /api, /apis under the node) is the node object's: it holds the pods the alarm's
    // relist feeds, the events and the watches (src/workers/node-kube.ts).
    root.use(`${prefix}/*`, async (c, next) => {
      const rest = new URL(c.req.url).pathname.slice(prefix.length);
      if (!isKubePath(rest)) return next();
      return desiredOf.kube(c.req.raw, rest);
    });
    const app = createApp({
      runtime,
      verifier: nodeVerifier(env, s, name)!,
      nodeName: name,
      desired: sealed(desiredOf, s),
      // The node's workloads: stored in its object, whose alarm runs the controllers.
      workloads: new DurableWorkloadStore(env.DESIRED, name),
      // The node object's alarm runs the probes; the GET routes read its results from there.
      probeResults: (uids) => desiredOf.probeResults(uids),
      policy: nodePolicy(s),
      // A Worker cannot see the node's machine: arch, cpu and memory are checked only when the owner sets them.
      nodeInfo: nodeInfoFrom(withNodeOverrides(s, cfg), name, {}),
      maxBodyBytes: s.PODSYNC_MAX_BODY_BYTES,
      maxWorkloads: s.PODSYNC_MAX_WORKLOADS,
      allowExec: s.PODSYNC_ALLOW_EXEC,
      execMaxOutputBytes: s.PODSYNC_EXEC_MAX_OUTPUT_BYTES,
      logFollowMaxMs: s.PODSYNC_LOG_FOLLOW_MAX_S * 1000,
      // Each look at a followed log is a read and a stat through the node's cri-proxy (billed subrequests): at
      // most one look a second.
      logFollowPollMs: 1000,
      // exec probes go through the proxy (ExecSync); a Worker cannot open a connection to a pod.
      probeHandlers: {
        allowed: ["exec"],
        why: "a Worker reaches the node only through cri-proxy and cannot connect to the pod",
      },
      serviceAccountTokens: s.PODSYNC_SERVICE_ACCOUNT_TOKENS,
      unknownKinds: s.PODSYNC_UNKNOWN_KINDS,
    });
    root.route(`/nodes/${encodeURIComponent(name)}`, app);
  }
  root.notFound((c) =>
    new ProblemError(
      "not-found",
      `no route for ${c.req.method} ${c.req.path}; node APIs live under /nodes/{node}/`,
    ).toResponse(c.req.path),
  );
  return root;
}
