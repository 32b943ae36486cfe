// `cri-proxy`: run the node-local CRI proxy beside containerd.
//   cri-proxy --runtime unix:///run/containerd/containerd.sock --listen 0.0.0.0:9090 --grpc-web-listen 0.0.0.0:9091 \
//             --token-file /etc/podsync/proxy-token [--tls-cert c.pem --tls-key k.pem [--client-ca ca.pem]] [--allow Exec,ListImages]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { startProxy, splitHostPort } from "./cri-proxy.js";

const USAGE = `usage: cri-proxy --runtime ENDPOINT [--listen HOST:PORT] [--grpc-web-listen HOST:PORT]
                 [--token-file FILE | $CRI_PROXY_TOKEN] [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
                 [--allow Method,...] [--max-concurrent N] [--max-deadline-ms MS] [--max-message-bytes N]
                 [--pod-logs-dir DIR]   (serve container logs under DIR to authenticated gRPC-Web callers)
                 [--insecure-no-auth]   (only for loopback addresses)`;

const isLoopback = (addr: string) => /^(127\.|\[?::1\]?$|localhost$)/.test(splitHostPort(addr)[0]);

async function main() {
  const { values: v } = parseArgs({
    options: {
      runtime: { type: "string", default: process.env["CRI_PROXY_RUNTIME"] ?? "unix:///run/containerd/containerd.sock" },
      listen: { type: "string" },
      "grpc-web-listen": { type: "string" },
      "token-file": { type: "string" },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
      "client-ca": { type: "string" },
      allow: { type: "string" },
      "max-concurrent": { type: "string" },
      "max-deadline-ms": { type: "string" },
      "max-message-bytes": { type: "string" },
      "pod-logs-dir": { type: "string" },
      "insecure-no-auth": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (v.help) return console.log(USAGE);
  const fail = (m: string): never => {
    console.error(`cri-proxy: ${m}\n${USAGE}`);
    process.exit(2);
  };
  if (!v.listen && !v["grpc-web-listen"]) fail("give --listen and/or --grpc-web-listen");
  const token = v["token-file"] ? readFileSync(v["token-file"], "utf8").trim() : process.env["CRI_PROXY_TOKEN"];
  if (Boolean(v["tls-cert"]) !== Boolean(v["tls-key"])) fail("--tls-cert and --tls-key go together");
  const tls = v["tls-cert"] ? { cert: readFileSync(v["tls-cert"], "utf8"), key: readFileSync(v["tls-key"]!, "utf8"), clientCa: v["client-ca"] ? readFileSync(v["client-ca"], "utf8") : undefined } : undefined;
  const open = [v.listen, v["grpc-web-listen"]].filter((a): a is string => Boolean(a));
  if (!token && !tls?.clientCa && !(v["insecure-no-auth"] && open.every(isLoopback)))
    fail("refusing to serve CRI without authentication: set a token (--token-file or CRI_PROXY_TOKEN) or mutual TLS (--client-ca); --insecure-no-auth works on loopback only");
  const num = (s: string | undefined) => (s === undefined ? undefined : Number(s));
  const p = await startProxy({
    upstream: v.runtime!,
    grpcListen: v.listen,
    grpcWebListen: v["grpc-web-listen"],
    token,
    tls,
    allow: v.allow ? v.allow.split(",").map((s) => s.trim()) : [],
    maxConcurrent: num(v["max-concurrent"]),
    maxDeadlineMs: num(v["max-deadline-ms"]),
    maxMessageBytes: num(v["max-message-bytes"]),
    podLogsDir: v["pod-logs-dir"],
  });
  console.error(`cri-proxy: forwarding to ${v.runtime}` + (p.grpcPort ? `; gRPC on ${v.listen!.replace(/:\d+$/, `:${p.grpcPort}`)}` : "") + (p.grpcWebPort ? `; gRPC-Web on ${v["grpc-web-listen"]!.replace(/:\d+$/, `:${p.grpcWebPort}`)}` : "") + (tls ? (tls.clientCa ? " (mutual TLS)" : " (TLS)") : "") + (token ? " (bearer token)" : ""));
  const stop = () => {
    console.error("cri-proxy: draining in-flight calls");
    void p.shutdown().then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main().catch((e) => {
  console.error(`cri-proxy: ${(e as Error).message}`);
  process.exit(1);
});
