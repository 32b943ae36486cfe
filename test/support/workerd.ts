// The Worker in workerd (wrangler's local runtime) for tests and the bench: the bindings every run needs (its
// nodes, the trusted key, the proxy token, a long CRI deadline for a loaded machine) plus the caller's own.
import type { JWK } from "jose";
import { unstable_startWorker } from "wrangler";
import { ISSUER } from "./http.js";

// No telemetry and no Cloudflare fetches from a test run.
process.env["CLOUDFLARE_CF_FETCH_ENABLED"] = "false";
process.env["WRANGLER_SEND_METRICS"] = "false";

export type Workerd = Awaited<ReturnType<typeof unstable_startWorker>>;

export interface WorkerdOptions {
  /** PODSYNC_NODES: name → { url of its cri-proxy's gRPC-Web port, ... }. */
  nodes: Record<string, unknown>;
  /** The public key the Worker trusts (issuer ISSUER). */
  jwk: JWK;
  proxyToken: string;
  /** More PODSYNC_* settings, as strings. */
  env?: Record<string, string>;
  /** Another entry module than wrangler.toml's (the bench's timing subclass). */
  entrypoint?: string;
  logLevel?: "warn" | "log";
  /** Serve https with this certificate and key (PEM files): kubectl sends credentials only over https. */
  https?: { certPath: string; keyPath: string };
  /** A fixed port (a restarted Worker keeps its address) and a directory its Durable Objects persist to. */
  port?: number;
  persist?: string;
}

export async function startWorkerd(o: WorkerdOptions): Promise<{ worker: Workerd; base: URL }> {
  const vars: Record<string, string> = {
    PODSYNC_NODES: JSON.stringify(o.nodes),
    PODSYNC_ISSUERS: ISSUER,
    PODSYNC_JWKS: JSON.stringify({ keys: [o.jwk] }),
    PODSYNC_PROXY_TOKEN: o.proxyToken,
    PODSYNC_CRI_TIMEOUT_MS: "30000",
    ...o.env,
  };
  const worker = await unstable_startWorker({
    config: "wrangler.toml",
    ...(o.entrypoint ? { entrypoint: o.entrypoint } : {}),
    bindings: Object.fromEntries(Object.entries(vars).map(([k, value]) => [k, { type: "plain_text" as const, value }])),
    dev: {
      server: {
        hostname: "127.0.0.1",
        port: o.port ?? 0,
        ...(o.https ? { secure: true, httpsCertPath: o.https.certPath, httpsKeyPath: o.https.keyPath } : {}),
      },
      inspector: false,
      persist: o.persist ?? false,
      logLevel: o.logLevel ?? "warn",
    },
  });
  await worker.ready;
  return { worker, base: await worker.url };
}
