// Package proxy/ — cri-proxy, the node-local CRI proxy with its policy gate (an entry point of its own).
// Imports cri/ framing, auth/ policy and host/; no client transport.
//
// `cri-proxy`: run the node-local CRI proxy beside containerd.
//   cri-proxy --runtime unix:///run/containerd/containerd.sock --listen 0.0.0.0:9090 --grpc-web-listen 0.0.0.0:9091 \
//             --token-file /etc/podsync/proxy-token [--tls-cert c.pem --tls-key k.pem [--client-ca ca.pem]] [--allow Exec,ListImages]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { z } from "zod";
import { nodePolicy, policySettingsShape } from "../auth/policy.js";
import { canonicalRootDir } from "../host/volumes/mounts.js";
import { commonSettings } from "../settings/common.js";
import { startProxy, splitHostPort } from "./cri-proxy.js";

const USAGE = `usage: cri-proxy --runtime ENDPOINT [--listen HOST:PORT] [--grpc-web-listen HOST:PORT]
                 [--token-file FILE | $CRI_PROXY_TOKEN] [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
                 [--allow Method,...] [--max-concurrent N] [--max-deadline-ms MS] [--max-message-bytes N]
                 [--max-connections N] [--pod-logs-dir DIR]   (serve container logs under DIR to authenticated gRPC-Web callers)
                 [--policy privileged|baseline|restricted] [--policy-hostpath-allow DIR,...]   (the node policy; default baseline)
                 [--root-dir DIR]   (podsync's root dir, default /var/lib/podsync; env PODSYNC_POLICY, PODSYNC_POLICY_HOSTPATH_ALLOW,
                                     PODSYNC_ROOT_DIR, PODSYNC_POD_LOGS_DIR as on the node)
                 [--insecure-no-auth]   (only for loopback addresses)`;

const isLoopback = (addr: string) => /^(127\.|\[?::1\]?$|localhost$)/.test(splitHostPort(addr)[0]);

async function main() {
  const v = flags();
  if (v.help) return console.log(USAGE);
  const fail = (m: string): never => {
    console.error(`cri-proxy: ${m}\n${USAGE}`);
    process.exit(2);
  };
  if (!v.listen && !v["grpc-web-listen"]) fail("give --listen and/or --grpc-web-listen");
  for (const flag of ["listen", "grpc-web-listen"] as const)
    if (v[flag] !== undefined && !/^\[?[^\]]*\]?:\d{1,5}$/.test(v[flag]!))
      fail(`--${flag}: must be host:port (got ${JSON.stringify(v[flag])})`);
  const token = v["token-file"] ? readFileSync(v["token-file"], "utf8").trim() : process.env["CRI_PROXY_TOKEN"];
  if (Boolean(v["tls-cert"]) !== Boolean(v["tls-key"])) fail("--tls-cert and --tls-key go together");
  const tls = v["tls-cert"]
    ? {
        cert: readFileSync(v["tls-cert"], "utf8"),
        key: readFileSync(v["tls-key"]!, "utf8"),
        clientCa: v["client-ca"] ? readFileSync(v["client-ca"], "utf8") : undefined,
      }
    : undefined;
  const open = [v.listen, v["grpc-web-listen"]].filter((a): a is string => Boolean(a));
  if (!token && !tls?.clientCa && !(v["insecure-no-auth"] && open.every(isLoopback)))
    fail(
      "refusing to serve CRI without authentication: set a token (--token-file or CRI_PROXY_TOKEN) or mutual TLS (--client-ca); --insecure-no-auth works on loopback only",
    );
  // A limit that does not parse is a start-up error naming the flag, never a limit that is silently off.
  const num = (flag: string, min: number, max: number): number | undefined => {
    const s = v[flag as keyof typeof v] as string | undefined;
    if (s === undefined) return undefined;
    const n = /^\d+$/.test(s) ? Number(s) : NaN;
    if (!(Number.isSafeInteger(n) && n >= min && n <= max))
      fail(`--${flag}: must be an integer from ${min} to ${max} (got ${JSON.stringify(s)})`);
    return n;
  };
  const settings = proxySettings(v, fail);
  const p = await startProxy({
    upstream: v.runtime!,
    grpcListen: v.listen,
    grpcWebListen: v["grpc-web-listen"],
    token,
    tls,
    allow: v.allow ? v.allow.split(",").map((s) => s.trim()) : [],
    maxConcurrent: num("max-concurrent", 1, 100_000),
    maxDeadlineMs: num("max-deadline-ms", 1, 3_600_000),
    maxMessageBytes: num("max-message-bytes", 1024, 256 * 1024 * 1024),
    maxConnections: num("max-connections", 1, 100_000),
    podLogsDir: v["pod-logs-dir"],
    policy: nodePolicy(settings),
    // As the node resolves it (its mounts name canonical paths).
    rootDir: canonicalRootDir(settings.PODSYNC_ROOT_DIR),
    // Sandboxes log under the node's pod logs dir, whether or not this proxy serves those logs.
    policyLogsDir: settings.PODSYNC_POD_LOGS_DIR,
  });
  console.error(banner(v, settings, p, token, tls));
  const stop = () => {
    console.error("cri-proxy: draining in-flight calls");
    void p.shutdown().then(() => process.exit(0));
  };
  // Last line of defence: an error in one request's handling is logged (no body, no token) and the proxy serves on.
  process.on("unhandledRejection", (e) =>
    console.error(
      JSON.stringify({ time: new Date().toISOString(), error: `unhandled: ${(e as Error)?.message ?? String(e)}` }),
    ),
  );
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

function flags() {
  return parseArgs({
    options: {
      runtime: {
        type: "string",
        default: process.env["CRI_PROXY_RUNTIME"] ?? "unix:///run/containerd/containerd.sock",
      },
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
      "max-connections": { type: "string" },
      "pod-logs-dir": { type: "string" },
      policy: { type: "string" },
      "policy-hostpath-allow": { type: "string" },
      "root-dir": { type: "string" },
      "insecure-no-auth": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  }).values;
}

type Flags = ReturnType<typeof flags>;

function proxySettings(v: Flags, fail: (m: string) => never) {
  // The node policy and layout: the same settings, names, defaults and checks as Node and Workers
  // (src/settings/common.ts); a flag wins over the environment, and a bad value names where it came from.
  const env = process.env;
  const from = (flag: string, name: string) =>
    v[flag as keyof typeof v] !== undefined
      ? { value: v[flag as keyof typeof v] as string, source: `--${flag}` }
      : env[name] !== undefined
        ? { value: env[name]!, source: name }
        : undefined;
  const sources = {
    PODSYNC_POLICY: from("policy", "PODSYNC_POLICY"),
    PODSYNC_POLICY_HOSTPATH_ALLOW: from("policy-hostpath-allow", "PODSYNC_POLICY_HOSTPATH_ALLOW"),
    PODSYNC_ROOT_DIR: from("root-dir", "PODSYNC_ROOT_DIR"),
    PODSYNC_POD_LOGS_DIR: from("pod-logs-dir", "PODSYNC_POD_LOGS_DIR"),
  };
  const parsed = z
    .object({
      ...policySettingsShape,
      PODSYNC_ROOT_DIR: commonSettings.PODSYNC_ROOT_DIR,
      PODSYNC_POD_LOGS_DIR: commonSettings.PODSYNC_POD_LOGS_DIR,
    })
    .safeParse(Object.fromEntries(Object.entries(sources).flatMap(([k, s]) => (s ? [[k, s.value]] : []))));
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    const key = String(i.path[0]) as keyof typeof sources;
    fail(`${sources[key]?.source ?? key}: ${i.message} (got ${JSON.stringify(sources[key]?.value)})`);
  }
  return parsed.data!;
}

/** The start-up line: where it forwards and listens, how callers authenticate, the node policy. */
function banner(
  v: Flags,
  settings: ReturnType<typeof proxySettings>,
  p: { grpcPort?: number | undefined; grpcWebPort?: number | undefined },
  token: string | undefined,
  tls: { clientCa?: string | undefined } | undefined,
): string {
  return (
    `cri-proxy: forwarding to ${v.runtime}` +
    (p.grpcPort ? `; gRPC on ${v.listen!.replace(/:\d+$/, `:${p.grpcPort}`)}` : "") +
    (p.grpcWebPort ? `; gRPC-Web on ${v["grpc-web-listen"]!.replace(/:\d+$/, `:${p.grpcWebPort}`)}` : "") +
    (tls ? (tls.clientCa ? " (mutual TLS)" : " (TLS)") : "") +
    (token ? " (bearer token)" : "") +
    `; node policy ${settings.PODSYNC_POLICY}` +
    (settings.PODSYNC_POLICY_HOSTPATH_ALLOW.length
      ? ` (hostPath allowed under ${settings.PODSYNC_POLICY_HOSTPATH_ALLOW.join(", ")})`
      : "")
  );
}

main().catch((e) => {
  console.error(`cri-proxy: ${(e as Error).message}`);
  process.exit(1);
});
