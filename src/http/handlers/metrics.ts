// Package http/handlers/ — podsync's HTTP routes, one file per route group, registered by ../app.ts (HTTP layer).
// Import the front door, the agent's ports, auth/ and ../ (signed requests, problems); never kubeapi/ or an entry.
//
// GET /metrics: the node agent's Prometheus text exposition. Who may read it is the node owner's choice
// (PODSYNC_METRICS): `loopback` (the default) serves loopback peers without a token and anyone else with a
// Bearer token whose act is "metrics"; `token` asks everyone for one; `off` serves nothing (404). The token
// is not spent (a scraper reuses it until it expires). The exposition comes in from the entry point, so this
// module (and the Worker, which serves no /metrics) never loads a metrics library.
import type { Context, Env, Hono } from "hono";
import type { Verifier } from "../../auth/verify.js";
import { readBearer } from "../signed-request.js";

export type MetricsMode = "loopback" | "token" | "off";

export interface MetricsRouteOptions {
  mode: MetricsMode;
  render(): Promise<string>;
  contentType: string;
  /** The peer's address, where the server knows it (Node: the socket's remote address). */
  peerAddress(c: Context): string | undefined;
}

/** 127.0.0.0/8, ::1, and IPv4 loopback mapped into IPv6. */
export function isLoopbackAddress(addr: string | undefined): boolean {
  if (!addr) return false;
  const a = addr.toLowerCase().replace(/^::ffff:/, "");
  return a === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

export function registerMetrics<E extends Env>(
  app: Hono<E>,
  path: string,
  verifier: Verifier,
  o: MetricsRouteOptions,
  note: (c: Context, jti: string | undefined) => void,
): void {
  if (o.mode === "off") return;
  app.get(path, async (c) => {
    if (!(o.mode === "loopback" && isLoopbackAddress(o.peerAddress(c)))) {
      const token = await readBearer(c.req.raw, verifier, "metrics", "", false);
      note(c, token.payload.jti);
    }
    return c.body(await o.render(), 200, { "content-type": o.contentType });
  });
}
