// The function as a separate process for the load benchmark: the real app behind @hono/node-server, the
// real verifier and replay store, a CRI endpoint given on the command line. Adds GET /__bench/mem (after a
// forced GC) so the benchmark can see whether memory grows. Prints its URL as one JSON line.
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { createApp } from "../src/http/app.js";
import { createVerifier } from "../src/auth/verify.js";
import { MemoryReplayStore } from "../src/auth/replay.js";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import { createPodRuntime } from "../src/kubelet/pod-runtime.js";

const [endpoint, jwks] = process.argv.slice(2);
const cri = connectGrpc({ endpoint: endpoint!, timeoutMs: 10_000 });
const app = createApp({
  runtime: createPodRuntime(cri),
  nodeName: "bench-node",
  verifier: createVerifier({
    keys: { jwks: JSON.parse(jwks!) },
    issuers: ["bench"],
    audience: ["bench-node"],
    replay: new MemoryReplayStore(),
    maxLifetimeSeconds: 3600,
  }),
  log: () => undefined, // the log line is cheap but its stdout write is not what we measure
});
const root = new Hono();
root.get("/__bench/mem", (c) => {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return c.json({ rss: m.rss, heapUsed: m.heapUsed, external: m.external });
});
root.route("/", app);
const server = serve({ fetch: root.fetch, hostname: "127.0.0.1", port: 0 }, (info) => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${info.port}` }));
});
process.on("SIGTERM", () => {
  server.close();
  cri.close();
  process.exit(0);
});
