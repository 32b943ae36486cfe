// The embedded default: the function on Node, on localhost, talking to the node's runtime socket.
// `npm start` runs this. With no keys configured it makes a dev key on first run and prints how to use it.
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { serve, type ServerType } from "@hono/node-server";
import type { JSONWebKeySet } from "jose";
import { createApp } from "./http/app.js";
import { GrpcTransport } from "./cri/grpc-transport.js";
import { createCriClient } from "./cri/client.js";
import { watchContainerEvents } from "./cri/container-events.js";
import { createVerifier, type Algorithm } from "./auth/verify.js";
import { FileReplayStore } from "./state/used-jtis.js";
import { FileDesiredState } from "./state/desired-pods.js";
import { SealedDesiredState } from "./state/sealed-desired-state.js";
import { loadSealKey } from "./state/seal-key.js";
import type { StateUnavailableError } from "./state/state-unavailable.js";
import { generateSigningKey } from "./auth/keys.js";
import { MemoryPodLock } from "./kuberuntime/pod-lock.js";
import { createPodRuntime } from "./kuberuntime/runtime.js";
import { nodeConfigFrom, RELIST_INTERVAL_DEFAULT_MS } from "./settings/common.js";
import { nodePolicy } from "./auth/policy.js";
import { nodeInfoFrom } from "./settings/node-info.js";
import { nodeLogFiles } from "./host/log-files.js";
import { nodeTerminationFiles } from "./host/termination-files.js";
import { nodeVolumeFiles } from "./host/volume-files.js";
import { hostAppArmorEnabled, nodeVolumeHost } from "./host/volume-host.js";
import { canonicalRootDir } from "./host/mounts.js";
import { nodePodDirs } from "./host/pod-dirs.js";
import { nodeHostIPs, nodeProbeNetwork } from "./host/probe-network.js";
import { createProber, MemoryProbeStateStore, type ProbeStateStore } from "./prober/prober.js";
import { startReconcileLoop } from "./pleg/loop.js";
import { instrumentRuntime } from "./metrics/metrics.js";
import { createPromMetrics } from "./host/metrics.js";
import { FileProbeStateStore } from "./state/probe-state.js";
import { hostResolvConf, loadSettings, SettingsError, type Settings } from "./settings/node.js";
import { DEFAULT_HOST, DEFAULT_PORT } from "./settings/port.js";

export const DEV_ISSUER = "podsync-dev";
/** Where the node's state lives when PODSYNC_STATE_DIR is unset (outside dev mode). */
export const DEFAULT_STATE_DIR = "/var/lib/podsync/state";

interface Keys {
  keys: { jwks: JSONWebKeySet } | { url: string };
  issuers: string[];
  dev?: { keyFile: string };
}

async function loadKeys(s: Settings): Promise<Keys> {
  const issuers = s.PODSYNC_ISSUERS ?? [];
  if (s.PODSYNC_JWKS_URL) return { keys: { url: s.PODSYNC_JWKS_URL }, issuers };
  if (s.PODSYNC_JWKS) return { keys: { jwks: parseJwks(s.PODSYNC_JWKS, "PODSYNC_JWKS") }, issuers };
  if (s.PODSYNC_JWKS_FILE) return { keys: { jwks: parseJwks(readFile(s.PODSYNC_JWKS_FILE, "PODSYNC_JWKS_FILE"), "PODSYNC_JWKS_FILE") }, issuers };
  // Dev mode: a key pair kept in PODSYNC_DEV_DIR, made once.
  const dir = resolve(s.PODSYNC_DEV_DIR);
  const keyFile = join(dir, "dev-key.json");
  const jwksFile = join(dir, "dev-jwks.json");
  if (!existsSync(keyFile) || !existsSync(jwksFile)) {
    const k = await generateSigningKey("EdDSA");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(keyFile, JSON.stringify({ ...k.privateJwk, iss: DEV_ISSUER }, null, 2) + "\n", { mode: 0o600 });
    writeFileSync(jwksFile, JSON.stringify(k.jwks, null, 2) + "\n");
  }
  return { keys: { jwks: parseJwks(readFileSync(jwksFile, "utf8"), jwksFile) }, issuers: [DEV_ISSUER, ...issuers], dev: { keyFile } };
}

function readFile(path: string, setting: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    throw new SettingsError(`${setting}: cannot read ${path}: ${(e as Error).message}`);
  }
}

function parseJwks(text: string, setting: string): JSONWebKeySet {
  try {
    const j = JSON.parse(text) as JSONWebKeySet;
    if (!Array.isArray(j.keys) || j.keys.length === 0) throw new Error('expected {"keys": [...]} with at least one key');
    if (j.keys.some((k) => "d" in k && k.kty !== "oct")) throw new Error("a JWKS for verification must hold public keys only");
    return j;
  } catch (e) {
    throw new SettingsError(`${setting}: not a usable JWK set: ${(e as Error).message}`);
  }
}

export interface Running {
  server: ServerType;
  url: string;
  close(): Promise<void>;
}

export async function startNode(env: Record<string, string | undefined> = process.env, quiet = false): Promise<Running> {
  const s = loadSettings(env);
  const keys = await loadKeys(s);
  // Every CRI call is counted by method and gRPC code for /metrics (prom-client is loaded only if served).
  const metrics = s.PODSYNC_METRICS === "off" ? undefined : createPromMetrics();
  const transport = new GrpcTransport({
    endpoint: s.PODSYNC_CRI_ENDPOINT,
    timeoutMs: s.PODSYNC_CRI_TIMEOUT_MS,
    token: s.PODSYNC_CRI_TOKEN,
    tls: s.PODSYNC_CRI_TLS ? { ca: s.PODSYNC_CRI_TLS_CA, cert: s.PODSYNC_CRI_TLS_CERT, key: s.PODSYNC_CRI_TLS_KEY } : undefined,
  });
  const cri = createCriClient(transport, metrics?.criCall);
  // Used jtis persist on the node, so a token never acts twice even across restarts. A state directory
  // that cannot be used is not fatal: signed requests get 503 state-unavailable until it can.
  const stateDir = s.PODSYNC_STATE_DIR ?? (keys.dev ? join(resolve(s.PODSYNC_DEV_DIR), "state") : DEFAULT_STATE_DIR);
  const replay = new FileReplayStore(join(stateDir, "jti"));
  // The desired pods (pods/, generation.json) beside the used jtis: the node agent's store.
  const skipped: string[] = [];
  const files = new FileDesiredState(stateDir, { onSkip: (file, why) => skipped.push(`${file}: ${why}`) });
  const stateError = await replay.open().then(() => files.open()).then(() => undefined, (e: StateUnavailableError) => e);
  // Secrets signed with a pod are stored sealed under the node's key (<stateDir>/secrets.key), never in clear.
  const desired = new SealedDesiredState(files, () => loadSealKey(stateDir));
  const verifier = createVerifier({
    keys: keys.keys,
    issuers: keys.issuers,
    audience: [s.PODSYNC_NODE_NAME, ...s.PODSYNC_NODE_ALIASES],
    algorithms: s.PODSYNC_ALGORITHMS as Algorithm[],
    maxLifetimeSeconds: s.PODSYNC_MAX_TOKEN_LIFETIME_S,
    clockSkewSeconds: s.PODSYNC_CLOCK_SKEW_S,
    replay,
  });
  const hostIPs = await nodeHostIPs();
  const nodeInfo = nodeInfoFrom(s, s.PODSYNC_NODE_NAME, { arch: process.arch, cpus: cpus().length, memoryBytes: totalmem() });
  const engine = createPodRuntime(cri, {
    terminationFiles: nodeTerminationFiles,
    podDirs: nodePodDirs,
    hostIPs,
    pullTimeoutMs: s.PODSYNC_CRI_PULL_TIMEOUT_MS,
    lock: new MemoryPodLock(s.PODSYNC_LOCK_WAIT_MS),
    // The downward API's defaults for a missing limit are the node's allocatable, as admission sees it.
    node: { ...nodeConfigFrom(s, { dns: hostResolvConf(), memoryBytes: totalmem(), appArmorEnabled: hostAppArmorEnabled() }), rootDir: canonicalRootDir(s.PODSYNC_ROOT_DIR), nodeName: s.PODSYNC_NODE_NAME, cpuCapacity: (nodeInfo.allocatable.milliCPU ?? cpus().length * 1000) / 1000 },
    logFiles: nodeLogFiles,
    volumeHost: nodeVolumeHost,
    volumeFiles: nodeVolumeFiles,
  });
  // Requests and the loop share the engine (and so its per-pod lock); their syncs are counted apart.
  const runtime = instrumentRuntime(engine, metrics, "request");
  // Probe workers' state persists under the state dir, so a restart keeps their counts; in memory (with a
  // warning) when the directory cannot be used.
  const probeStore = new FileProbeStateStore(join(stateDir, "probes"), { onError: (e) => quiet || console.error(JSON.stringify({ time: new Date().toISOString(), loop: "probes", error: `probe state not written: ${(e as NodeJS.ErrnoException)?.code ?? String(e)}` })) });
  const probeStoreError = await probeStore.open().then(() => undefined, (e: StateUnavailableError) => e);
  const probes: ProbeStateStore = probeStoreError ? new MemoryProbeStateStore() : probeStore;
  const prober = createProber({ cri, network: nodeProbeNetwork, store: probes, ...(hostIPs[0] ? { hostIP: hostIPs[0] } : {}) });
  // The node agent's loop keeps every pod in the desired state running, with nobody calling.
  const loop = startReconcileLoop({
    runtime: instrumentRuntime(engine, metrics, "loop"),
    cri,
    desired,
    prober,
    metrics,
    relistIntervalMs: s.PODSYNC_RELIST_INTERVAL_MS ?? RELIST_INTERVAL_DEFAULT_MS.node,
    // Exits restart containers at once; the relist stays as the safety net (and takes over while the stream is down).
    events: s.PODSYNC_RUNTIME_EVENTS === "on" ? (on) => watchContainerEvents({ transport, version: () => cri.version({}), onEvent: on.event, onState: on.state }) : undefined,
    eventedRelistIntervalMs: s.PODSYNC_EVENTED_RELIST_INTERVAL_MS,
    resyncIntervalMs: s.PODSYNC_RESYNC_INTERVAL_MS,
    log: (rec) => quiet || console.error(JSON.stringify({ time: new Date().toISOString(), loop: "reconcile", ...rec })),
  });
  metrics?.setSource(loop);
  const app = createApp({
    runtime,
    prober,
    desired,
    verifier,
    nodeName: s.PODSYNC_NODE_NAME,
    policy: nodePolicy(s),
    nodeInfo,
    maxBodyBytes: s.PODSYNC_MAX_BODY_BYTES,
    allowExec: s.PODSYNC_ALLOW_EXEC,
    execMaxOutputBytes: s.PODSYNC_EXEC_MAX_OUTPUT_BYTES,
    logFollowMaxMs: s.PODSYNC_LOG_FOLLOW_MAX_S * 1000,
    ...(metrics
      ? {
          metrics: {
            mode: s.PODSYNC_METRICS,
            render: () => metrics.render(),
            contentType: metrics.contentType,
            // @hono/node-server hands the Node request in the context's env.
            peerAddress: (c: { env: unknown }) => (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress,
          },
        }
      : {}),
    // The request log: one write of the line as built (console.log would format the string again on its way out).
    log: quiet ? () => undefined : (rec) => void process.stdout.write(JSON.stringify(rec) + "\n"),
  });
  const server = await new Promise<ServerType>((res, rej) => {
    const srv = serve({ fetch: app.fetch, hostname: s.PODSYNC_HOST, port: s.PODSYNC_PORT }, () => res(srv));
    srv.once("error", (e: NodeJS.ErrnoException) => {
      // A port in use or a host that is not this machine's: a settings problem, said in one line (no stack).
      const where = `${s.PODSYNC_HOST}:${s.PODSYNC_PORT}`;
      if (e.code === "EADDRINUSE") rej(new SettingsError(`cannot listen on ${where}: the port is in use (another podsync? stop it, or set PODSYNC_PORT to a free port)`));
      else if (e.code === "EADDRNOTAVAIL" || e.code === "ENOTFOUND") rej(new SettingsError(`cannot listen on ${where}: PODSYNC_HOST is not an address of this machine`));
      else if (e.code === "EACCES") rej(new SettingsError(`cannot listen on ${where}: not allowed (ports below 1024 need privileges; set PODSYNC_PORT)`));
      else rej(e);
    });
  });
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : s.PODSYNC_PORT;
  const host = s.PODSYNC_HOST.includes(":") ? `[${s.PODSYNC_HOST}]` : s.PODSYNC_HOST;
  const url = `http://${host}:${port}`;
  if (!quiet) {
    const lines = [
      `podsync listening on ${url}  (node "${s.PODSYNC_NODE_NAME}", CRI ${s.PODSYNC_CRI_ENDPOINT})`,
      `  policy:  ${s.PODSYNC_POLICY} (PODSYNC_POLICY: ${s.PODSYNC_POLICY === "privileged" ? "every pod field is allowed" : `pods beyond the ${s.PODSYNC_POLICY} Pod Security Standard are refused; privileged allows hostNetwork, hostPath and the like`})` +
        `;  exec: ${s.PODSYNC_ALLOW_EXEC ? "on" : "off (PODSYNC_ALLOW_EXEC=true turns it on)"}`,
      `  health:  curl ${url}/healthz      runtime: curl ${url}/readyz`,
    ];
    const sock = s.PODSYNC_CRI_ENDPOINT.startsWith("unix://") ? s.PODSYNC_CRI_ENDPOINT.slice(7) : s.PODSYNC_CRI_ENDPOINT.startsWith("/") ? s.PODSYNC_CRI_ENDPOINT : "";
    if (sock && !existsSync(sock))
      lines.push(`  warning: ${sock} does not exist yet; /readyz will say 503 until the runtime runs (or set PODSYNC_CRI_ENDPOINT)`);
    lines.push(`  state:   ${stateDir} (desired pods in pods/, used token ids in jti/, probe state in probes/${keys.dev && !s.PODSYNC_STATE_DIR ? "; dev mode keeps them beside the dev key, set PODSYNC_STATE_DIR" : ""})`);
    for (const k of skipped) lines.push(`  warning: desired pod left out: ${k}`);
    if (probeStoreError) lines.push(`  warning: ${join(stateDir, "probes")} cannot be used (${probeStoreError.code ?? String(probeStoreError.cause)}); probe state is kept in memory only`);
    if (stateError) lines.push(`  warning: ${stateDir} cannot be used (${stateError.code ?? String(stateError.cause)}); signed requests get 503 until it can`);
    if (keys.dev)
      lines.push(
        `  dev key: ${keys.dev.keyFile} (issuer "${DEV_ISSUER}"; configure PODSYNC_JWKS_FILE + PODSYNC_ISSUERS for real keys)`,
        // The CLI finds the dev key in ./.podsync when run where the node was started, and the node at its default URL.
        `  try it:  npx podsync sync examples/pod.yaml${url === `http://${DEFAULT_HOST}:${DEFAULT_PORT}` ? "" : ` --url ${url}`}${resolve(s.PODSYNC_DEV_DIR) === resolve(".podsync") ? "" : ` --key ${keys.dev.keyFile}`}`,
      );
    console.error(lines.join("\n"));
  }
  return {
    server,
    url,
    close: () =>
      new Promise<void>((res) => {
        void loop.stop().then(async () => {
          await probeStore.close().catch(() => undefined);
          server.close(() => void replay.close().then(() => res()));
          cri.close();
        });
      }),
  };
}

// Run as the program (`node dist/node.js`, `npm start`), not imported (tests, bench). Node resolves the main
// module's symlinks, so compare real paths; fileURLToPath also decodes %20 and the like.
function isMain(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}
/** The node as a program: started from the environment, stopped by SIGINT or SIGTERM; a settings error is one line
 * and exit code 1. `npm start` (this file as the main module) and `podsync serve` (an installed package) run it. */
export function runNode(): void {
  startNode().then(
    (r) => {
      const stop = () => void r.close().then(() => process.exit(0));
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    },
    (e) => {
      console.error(e instanceof SettingsError ? `podsync: ${e.message}` : e);
      process.exit(1);
    },
  );
}
if (isMain()) runNode();
