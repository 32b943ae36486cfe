// The Worker's root app: one node-embedded app (src/http/app.ts) per node in PODSYNC_NODES, under /nodes/{node}/.
import { Hono } from "hono";
import { createVerifier, type Algorithm } from "../auth/verify.js";
import { createApp } from "../http/app.js";
import { ProblemError } from "../http/problems.js";
import { nodePolicy } from "../auth/policy.js";
import { nodeInfoFrom, withNodeOverrides } from "../settings/node-info.js";
import { DurableDesiredState } from "./desired-state-client.js";
import { nodeRuntime, sealed } from "./node-runtime.js";
import { DurableReplayStore } from "./replay-store.js";
import { settingsOf, type Env } from "./settings.js";

export function buildWorkerApp(env: Env): Hono {
  const s = settingsOf(env);
  const keys = s.PODSYNC_JWKS ? { jwks: JSON.parse(s.PODSYNC_JWKS) } : { url: s.PODSYNC_JWKS_URL! };
  const root = new Hono();
  root.get("/healthz", (c) => c.json({ ok: true, nodes: Object.keys(s.PODSYNC_NODES) }));
  for (const [name, cfg] of Object.entries(s.PODSYNC_NODES)) {
    const { runtime } = nodeRuntime(env, s, name)!;
    const desiredOf = new DurableDesiredState(env.DESIRED, name);
    const app = createApp({
      runtime,
      verifier: createVerifier({
        keys,
        issuers: s.PODSYNC_ISSUERS,
        audience: [name, ...cfg.aliases],
        algorithms: s.PODSYNC_ALGORITHMS as Algorithm[],
        maxLifetimeSeconds: s.PODSYNC_MAX_TOKEN_LIFETIME_S,
        clockSkewSeconds: s.PODSYNC_CLOCK_SKEW_S,
        replay: new DurableReplayStore(env.REPLAY, name),
      }),
      nodeName: name,
      desired: sealed(desiredOf, s),
      // The node object's alarm runs the probes; the GET routes read its results from there.
      probeResults: (uids) => desiredOf.probeResults(uids),
      policy: nodePolicy(s),
      // A Worker cannot see the node's machine: arch, cpu and memory are checked only when the owner sets them.
      nodeInfo: nodeInfoFrom(withNodeOverrides(s, cfg), name, {}),
      maxBodyBytes: s.PODSYNC_MAX_BODY_BYTES,
      allowExec: s.PODSYNC_ALLOW_EXEC,
      execMaxOutputBytes: s.PODSYNC_EXEC_MAX_OUTPUT_BYTES,
      logFollowMaxMs: s.PODSYNC_LOG_FOLLOW_MAX_S * 1000,
      // Each look at a followed log is a read and a stat through the node's cri-proxy (billed subrequests): at
      // most one look a second.
      logFollowPollMs: 1000,
      // exec probes go through the proxy (ExecSync); a Worker cannot open a connection to a pod.
      probeHandlers: { allowed: ["exec"], why: "a Worker reaches the node only through cri-proxy and cannot connect to the pod" },
    });
    root.route(`/nodes/${encodeURIComponent(name)}`, app);
  }
  root.notFound((c) => new ProblemError("not-found", `no route for ${c.req.method} ${c.req.path}; node APIs live under /nodes/{node}/`).toResponse(c.req.path));
  return root;
}
