// podsync dev worker (npm run dev:worker): the Worker on this machine in one command, from a checkout. It starts
// cri-proxy (bin/cri-proxy.mjs, a child process) on the lab's containerd, then the Worker in workerd (wrangler dev's
// API, unstable_startWorker, over https with a serving certificate made for 127.0.0.1) with one node entry naming that
// proxy, a key the Worker trusts and the proxy's token; then prints the settings the CLI and kubectl need (the URL, the
// key, the CA for Node's fetch) and writes them to DIR/env and DIR/kubeconfig. SIGINT or SIGTERM stops both; the
// pods stay on containerd, and the Worker's state (DIR/wrangler) is there at the next start.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { fail, usage } from "../args.js";
import type { Command } from "../command.js";
import { DEV_ISSUER } from "../keys.js";
import { kubeconfigYaml } from "./keys/kubeconfig.js";

/** The checkout this podsync runs from (dist/cli/commands/ or src/cli/commands/ are three levels below it). */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

const dev: Command = {
  usage: [
    "dev worker [--node NAME] [--port N] [--dir DIR] [--cri-endpoint ENDPOINT] [--policy privileged|baseline|restricted]",
  ],
  help: `Run the Worker locally against the lab's containerd, as npm run dev:worker does: cri-proxy on the runtime, the
Worker in workerd (wrangler dev) over https on 127.0.0.1, and one node (--node) reached through that proxy. Prints
what podsync and kubectl need (PODSYNC_URL, PODSYNC_KEY, NODE_EXTRA_CA_CERTS, KUBECONFIG), also in DIR/env (source
it in another shell). The runtime is --cri-endpoint, else $PODSYNC_CRI_ENDPOINT, else the lab's socket
($PODSYNC_LAB_DIR, default /tmp/podsync-lab: npm run lab:start). Runs from a checkout (wrangler is a
devDependency). Ctrl-C or SIGTERM stops the Worker and the proxy; the pods stay on the runtime.`,
  examples: [
    "npm run dev:worker",
    "podsync dev worker --node edge-7 --port 8787",
    ". .podsync/dev-worker/env && podsync get pods && kubectl get pods",
  ],
  options: {
    node: { type: "string", help: "the node's name (default dev-node)" },
    port: { type: "string", help: "the Worker's https port on 127.0.0.1 (default 8787; 0 picks a free one)" },
    dir: { type: "string", help: "its key, certificate, settings and state (default .podsync/dev-worker)" },
    "cri-endpoint": { type: "string", help: "the runtime (default $PODSYNC_CRI_ENDPOINT, else the lab's socket)" },
    policy: { type: "string", help: "the node policy of the Worker and cri-proxy (default baseline)" },
  },
  async run(ctx) {
    if (ctx.args[0] !== "worker" || ctx.args.length > 1)
      usage(`dev takes one thing to run: podsync dev worker (got ${JSON.stringify(ctx.args.join(" "))})`, ctx.command);
    const o = readOptions(ctx.o);
    if (!existsSync(join(ROOT, "wrangler.toml")) || !existsSync(join(ROOT, "node_modules", "wrangler")))
      fail(`podsync dev worker runs from a checkout after npm ci (wrangler.toml and wrangler under ${ROOT})`);
    const socket = o.cri.startsWith("unix://") ? o.cri.slice("unix://".length) : undefined;
    if (socket && !existsSync(socket))
      fail(`no runtime at ${o.cri}: start the lab (npm run lab:start) or give --cri-endpoint / $PODSYNC_CRI_ENDPOINT`);
    mkdirSync(o.dir, { recursive: true, mode: 0o700 });
    const key = await devKey(o.dir);
    const token = randomBytes(24).toString("base64url");
    const logs = join(o.dir, "logs");
    const root = join(o.dir, "root");
    const stops: (() => Promise<void>)[] = [];
    const stop = async (code: number) => {
      for (const s of stops.reverse()) await s().catch(() => undefined);
      process.exit(code);
    };
    process.once("SIGINT", () => void stop(0));
    process.once("SIGTERM", () => void stop(0));
    try {
      const proxy = await startProxy(o, token, logs, root);
      stops.push(() => stopChild(proxy.child));
      // wrangler's own signal handlers may end the process first: the proxy goes with it either way.
      process.once("exit", () => proxy.child.kill("SIGTERM"));
      const { loadOrMakeServingCert } = await import("../../host/serving/serving-cert.js");
      const cert = loadOrMakeServingCert(join(o.dir, "tls"), "podsync-dev-worker", ["localhost"], ["127.0.0.1"]);
      const worker = await startWorker(o, {
        PODSYNC_NODES: JSON.stringify({ [o.node]: { url: `http://127.0.0.1:${proxy.port}` } }),
        PODSYNC_ISSUERS: DEV_ISSUER,
        PODSYNC_JWKS: JSON.stringify({ keys: [key.publicJwk] }),
        PODSYNC_PROXY_TOKEN: token,
        PODSYNC_SECRETS_KEY: secretsKey(o.dir),
        PODSYNC_POD_LOGS_DIR: logs,
        PODSYNC_ROOT_DIR: root,
        PODSYNC_POLICY: o.policy,
        // The alarm's relist and controllers every second, as on Node (10 s by default on Workers).
        PODSYNC_RELIST_INTERVAL_MS: "1000",
        PODSYNC_CRI_TIMEOUT_MS: "30000",
      });
      stops.push(() => worker.dispose());
      const url = `https://127.0.0.1:${(await worker.url).port}/nodes/${o.node}`;
      printSettings(o, url, cert.cert, join(o.dir, "tls", "serving.crt"), key.path);
    } catch (e) {
      process.stderr.write(`podsync: ${(e as Error).message}\n`);
      await stop(1);
    }
    // Runs until a signal.
    await new Promise(() => undefined);
  },
};
export default dev;

interface DevOptions {
  node: string;
  port: number;
  dir: string;
  cri: string;
  policy: string;
}

function readOptions(o: Record<string, unknown>): DevOptions {
  const port = Number(o["port"] ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    usage(`--port must be a port number (got ${o["port"]})`, "dev");
  const policy = String(o["policy"] ?? "baseline");
  if (!["privileged", "baseline", "restricted"].includes(policy))
    usage(`--policy must be privileged, baseline or restricted (got ${policy})`, "dev");
  const lab = process.env["PODSYNC_LAB_DIR"] ?? "/tmp/podsync-lab";
  return {
    node: String(o["node"] ?? "dev-node"),
    port,
    dir: resolve(String(o["dir"] ?? join(process.env["PODSYNC_DEV_DIR"] ?? ".podsync", "dev-worker"))),
    cri: String(o["cri-endpoint"] ?? process.env["PODSYNC_CRI_ENDPOINT"] ?? `unix://${lab}/containerd.sock`),
    policy,
  };
}

/** DIR/key.json, made on the first start (as podsync keygen writes one); the Worker trusts its public half. */
async function devKey(dir: string): Promise<{ path: string; publicJwk: Record<string, unknown> }> {
  const path = join(dir, "key.json");
  if (!existsSync(path)) {
    const { generateSigningKey } = await import("../../auth/keys.js");
    const k = await generateSigningKey("EdDSA");
    writeFileSync(path, `${JSON.stringify({ ...k.privateJwk, iss: DEV_ISSUER }, null, 2)}\n`, { mode: 0o600 });
  }
  const { d: _private, iss: _iss, ...publicJwk } = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  return { path, publicJwk };
}

/** DIR/secrets-key (32 random bytes, base64), made on the first start: the Worker seals stored Secrets with it, so
 * the state it keeps in DIR/wrangler opens again at the next start. */
function secretsKey(dir: string): string {
  const path = join(dir, "secrets-key");
  if (!existsSync(path)) writeFileSync(path, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
  return readFileSync(path, "utf8").trim();
}

/** cri-proxy as a child, its gRPC-Web port on loopback read from its start-up line. */
function startProxy(
  o: DevOptions,
  token: string,
  logs: string,
  root: string,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [
      join(ROOT, "bin", "cri-proxy.mjs"),
      "--runtime",
      o.cri,
      "--grpc-web-listen",
      "127.0.0.1:0",
      "--pod-logs-dir",
      logs,
      "--root-dir",
      root,
      "--policy",
      o.policy,
      // The Worker runs the pods' exec probes (and the examples' readiness probes) through ExecSync, which the
      // proxy refuses unless allowed (docs/engine.md): without it no probed pod of a dev Worker is ever Ready.
      "--allow",
      "ExecSync",
    ],
    { env: { ...process.env, CRI_PROXY_TOKEN: token }, stdio: ["ignore", "inherit", "pipe"] },
  );
  return new Promise((res, rej) => {
    let err = "";
    child.stderr!.on("data", (b: Buffer) => {
      process.stderr.write(b);
      err += b.toString();
      const m = /gRPC-Web on 127\.0\.0\.1:(\d+)/.exec(err);
      if (m) res({ child, port: Number(m[1]) });
    });
    child.once("exit", (code) => rej(new Error(`cri-proxy on ${o.cri} exited (${code}) before it served`)));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((res) => child.once("exit", res));
  child.kill("SIGTERM");
  await exited;
}

/** The Worker in workerd over https, with `vars` as its bindings (what wrangler dev --var would set). */
async function startWorker(o: DevOptions, vars: Record<string, string>) {
  // No telemetry and no Cloudflare fetches from a local run.
  process.env["CLOUDFLARE_CF_FETCH_ENABLED"] = "false";
  process.env["WRANGLER_SEND_METRICS"] = "false";
  const { unstable_startWorker } = await import("wrangler");
  const worker = await unstable_startWorker({
    config: join(ROOT, "wrangler.toml"),
    bindings: Object.fromEntries(Object.entries(vars).map(([k, value]) => [k, { type: "plain_text" as const, value }])),
    dev: {
      server: {
        hostname: "127.0.0.1",
        port: o.port,
        secure: true,
        httpsCertPath: join(o.dir, "tls", "serving.crt"),
        httpsKeyPath: join(o.dir, "tls", "serving.key"),
      },
      inspector: false,
      persist: join(o.dir, "wrangler"),
      logLevel: "warn",
    },
  });
  await worker.ready;
  return worker;
}

/** The CLI's and kubectl's settings, printed (stdout) and written to DIR/env and DIR/kubeconfig. */
function printSettings(o: DevOptions, url: string, ca: string, caPath: string, keyPath: string): void {
  const kubeconfig = join(o.dir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    kubeconfigYaml({
      server: url,
      ca,
      keyPath,
      node: o.node,
      iss: DEV_ISSUER,
      namespace: "default",
      exec: false,
      portForward: false,
    }),
    { mode: 0o600 },
  );
  const env = [
    `export PODSYNC_URL=${url}`,
    `export PODSYNC_KEY=${keyPath}`,
    `export NODE_EXTRA_CA_CERTS=${caPath}`,
    `export KUBECONFIG=${kubeconfig}`,
  ].join("\n");
  writeFileSync(join(o.dir, "env"), `${env}\n`);
  process.stdout.write(
    [
      `podsync dev worker: node "${o.node}" at ${url} (workerd), through cri-proxy on ${o.cri}`,
      `In another shell (or: . ${join(o.dir, "env")}):`,
      env,
      "then: podsync get pods; podsync sync -f examples/deployment.yaml; kubectl get pods",
      "Ctrl-C stops the Worker and cri-proxy (the pods stay on the runtime).",
      "",
    ].join("\n"),
  );
}
