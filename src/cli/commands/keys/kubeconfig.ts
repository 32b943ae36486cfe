// podsync kubeconfig: a kubeconfig for kubectl against one node's Kubernetes API (src/kubeapi/). The cluster
// is the node's https URL with its serving certificate as certificate-authority-data (from --ca, else read
// from the server's TLS handshake and shown by fingerprint); the user is an exec credential plugin
// (client.authentication.k8s.io/v1) that runs this podsync by absolute path (node + the launcher, never npx)
// to mint a read token: `podsync token --act read --exec-credential --ttl 300`, which prints kubectl's
// ExecCredential around a read token (act "read", `exec: true` with --exec) that lives 300 s.
// `podsync kubeconfig --credential` is the same, kept for the kubeconfigs made before the plugin ran `token`.
import { X509Certificate } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import { connect } from "node:tls";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { fail, usage } from "../../args.js";
import type { Ctx } from "../../client.js";
import { signToken } from "../../keys.js";
import { READ_ACT } from "../../../auth/read-token.js";
import type { Command } from "../../command.js";
import { execCredential, READ_TTL_MAX_S } from "./token.js";
import { cacheFileName, cacheKey } from "../../token-cache.js";

/** The server's certificate as it presents it (trust on first use: the fingerprint is printed to compare). */
function serverCert(url: URL): Promise<string> {
  return new Promise((res, rej) => {
    const s = connect(
      {
        host: url.hostname.replace(/^\[|\]$/g, ""),
        port: Number(url.port || 443),
        rejectUnauthorized: false,
        ...(/^[\d.:[\]]+$/.test(url.hostname) ? {} : { servername: url.hostname }),
      },
      () => {
        const raw = s.getPeerCertificate().raw;
        s.end();
        if (!raw) return rej(new Error("the server sent no certificate"));
        res(
          `-----BEGIN CERTIFICATE-----\n${raw.toString("base64").replace(/.{64}/g, "$&\n").replace(/\n?$/, "\n")}-----END CERTIFICATE-----\n`,
        );
      },
    );
    s.setTimeout(10_000, () => s.destroy(new Error("timed out")));
    s.once("error", rej);
  });
}

/** The guard: $1 is the cache file's name under $XDG_CACHE_HOME/podsync (default ~/.cache/podsync); the rest is the
 * plugin's command. The file is printed as it is when this user owns it and its `.fresh` marker (mtime: when the
 * entry stops being served) is newer than /proc/$$ (Linux stamps a process's /proc directory when it is first
 * looked at: now); anything else runs the command. Only sh builtins: one process, no node start. */
export const CACHE_GUARD =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell script: ${XDG_CACHE_HOME:-…} is sh's expansion
  'f="${XDG_CACHE_HOME:-$HOME/.cache}/podsync/$1"; shift; [ -O "$f" ] && [ "$f.fresh" -nt /proc/$$ ] && read -r c < "$f" && { printf "%s\\n" "$c"; exit 0; }; exec "$@"';

/** The cache file the plugin (`token` and its flags) writes for this server: the name the guard looks for. */
function cacheFile(tokenArgs: readonly string[], server: string): string {
  const key = cacheKey(tokenArgs, { KUBERNETES_EXEC_INFO: JSON.stringify({ spec: { cluster: { server } } }) });
  if (!key) fail("the key file cannot be read for the plugin's cache key");
  return cacheFileName(key);
}

/** This podsync's launcher (bin/podsync.mjs), by absolute path. */
function launcher(): string {
  return realpathSync(fileURLToPath(new URL("../../../../bin/podsync.mjs", import.meta.url)));
}

const kubeconfig: Command = {
  usage: [
    "kubeconfig [--server URL] [--key FILE] [--iss ID] [--node NAME] [--namespace NS] [--exec] [--port-forward] [--ca FILE]",
  ],
  help: [
    "Print a kubeconfig for kubectl against the node at --server (its https URL, e.g. https://10.0.0.7:8484; default:",
    "the CLI's node, --url or $PODSYNC_URL, over https on the same port).",
    "Its user runs `podsync token --act read --exec-credential` (this podsync, by absolute path) for a read token",
    "(get, list, watch, logs, events) that lives at most 300 s; --exec adds exec, where the node allows it.",
    "The server's certificate is embedded: --ca FILE, else the one the server presents (its SHA-256 is printed).",
  ].join("\n"),
  examples: [
    "podsync kubeconfig --server https://127.0.0.1:8484 --key ~/.config/podsync/key.json > ~/.kube/podsync",
    "KUBECONFIG=~/.kube/podsync kubectl get pods -w",
  ],
  options: {
    server: { type: "string", help: "the node's https URL (default: --url / $PODSYNC_URL with https)" },
    node: { type: "string", help: "the node name tokens are for (default: what the server's /healthz says)" },
    namespace: { type: "string", short: "n", help: "the context's namespace (default: default)" },
    exec: {
      type: "boolean",
      help: "tokens that also allow kubectl exec (the node owner must set PODSYNC_ALLOW_EXEC=true)",
    },
    "port-forward": {
      type: "boolean",
      help: "tokens that also allow kubectl port-forward (the node owner must set PODSYNC_ALLOW_PORT_FORWARD=true)",
    },
    ca: { type: "string", help: "the server's CA certificate (PEM), instead of reading it from the server" },
    credential: {
      type: "boolean",
      help: "the plugin mode of kubeconfigs made by earlier versions: the same as podsync token --act read --exec-credential --ttl 300",
    },
  },
  async run(ctx) {
    if (ctx.o["credential"]) return legacyCredential(ctx);
    const { url, base } = serverUrl(ctx);
    // The key found now (--key, $PODSYNC_KEY, the config dir, the dev key) is the one the plugin will use, by path.
    const keyPath = resolve(ctx.key().path);
    const ca =
      ctx.o["ca"] !== undefined
        ? readFileSync(String(ctx.o["ca"]), "utf8")
        : await serverCert(url).catch((e: Error) => fail(`cannot read ${url.origin}'s certificate: ${e.message}`));
    const x = new X509Certificate(ca);
    if (ctx.o["ca"] === undefined)
      console.error(
        `podsync: trusting the certificate ${url.host} presents: SHA-256 ${x.fingerprint256} (compare with the server's start-up line)`,
      );
    const node =
      (ctx.o["node"] as string | undefined) ?? (ctx.o["aud"] as string | undefined) ?? (await healthzNode(base, ca));
    process.stdout.write(
      kubeconfigYaml({
        server: base.href,
        ca,
        keyPath,
        node,
        iss: ctx.iss,
        namespace: String(ctx.o["namespace"] ?? "default"),
        exec: Boolean(ctx.o["exec"]),
        portForward: Boolean(ctx.o["port-forward"]),
      }),
    );
  },
};
export default kubeconfig;

/** `--credential`: the plugin mode of kubeconfigs made by earlier versions (podsync token --act read --exec-credential). */
async function legacyCredential(ctx: Ctx): Promise<void> {
  if (ctx.o["aud"] === undefined) usage("--credential needs --aud: the node the token is for", ctx.command);
  const token = await signToken(
    ctx.key().key,
    {
      act: READ_ACT,
      ...(ctx.o["exec"] ? { exec: true } : {}),
      ...(ctx.o["port-forward"] ? { portForward: true } : {}),
    },
    String(ctx.o["aud"]),
    READ_TTL_MAX_S,
    ctx.iss,
  );
  console.log(execCredential(token, READ_TTL_MAX_S));
}

/** --server (else the CLI's node over https: the same port serves both) and the node's API root under it: the
 * origin for a node's own podsync, https://<worker>/nodes/<node> through a Worker (kubectl keeps a server's path). */
function serverUrl(ctx: Ctx): { url: URL; base: URL } {
  const server = (ctx.o["server"] as string | undefined) ?? ctx.url.replace(/^http:/, "https:");
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return usage(`--server ${JSON.stringify(server)} is not a URL`, ctx.command);
  }
  if (url.protocol !== "https:")
    usage(
      "--server must be https:// (kubectl sends credentials only over https; podsync serves both on its port)",
      ctx.command,
    );
  return { url, base: new URL(url.pathname.replace(/\/*$/, "/"), url.origin) };
}

/** The node name, from /healthz over https with the certificate `ca`. */
async function healthzNode(base: URL, ca: string): Promise<string> {
  const { Agent, request } = await import("node:https");
  const node = await new Promise<string>((res, rej) => {
    const req = request(new URL("healthz", base), { agent: new Agent({ ca }), timeout: 10_000 }, (r) => {
      let body = "";
      r.on("data", (b: Buffer) => (body += b.toString()));
      r.on("end", () => {
        try {
          res(String((JSON.parse(body) as { node?: string }).node ?? ""));
        } catch (e) {
          rej(e as Error);
        }
      });
    });
    req.on("error", rej);
    req.end();
  }).catch((e: Error) => fail(`cannot ask ${base.href}healthz for the node name (${e.message}); pass --node`));
  if (!node) fail(`${base.href}healthz did not say the node name; pass --node`);
  return node;
}

export interface KubeconfigInput {
  /** The node's API root (https). */
  server: string;
  /** The server's certificate (PEM), embedded as certificate-authority-data. */
  ca: string;
  /** The signing key the plugin uses, by absolute path. */
  keyPath: string;
  node: string;
  iss: string | undefined;
  namespace: string;
  exec: boolean;
  portForward: boolean;
}

/** The kubeconfig (YAML, with a comment naming the node and the certificate's fingerprint). */
export function kubeconfigYaml(k: KubeconfigInput): string {
  const args = [
    launcher(),
    "token",
    "--act",
    READ_ACT,
    "--exec-credential",
    "--ttl",
    String(READ_TTL_MAX_S),
    "--key",
    k.keyPath,
    "--aud",
    k.node,
    ...(k.iss ? ["--iss", k.iss] : []),
    ...(k.exec ? ["--exec"] : []),
    ...(k.portForward ? ["--port-forward"] : []),
  ];
  const name = `podsync-${k.node}`;
  const server = k.server.replace(/\/$/, "");
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster: { server, "certificate-authority-data": Buffer.from(k.ca).toString("base64") } }],
    users: [
      {
        name,
        user: {
          exec: {
            apiVersion: "client.authentication.k8s.io/v1",
            // A POSIX sh guard prints the plugin's cached ExecCredential when it is fresh and this user's (no node
            // start: kubectl runs the plugin before every command); else it runs podsync token, which signs or
            // reads the cache and writes it (src/cli/token-cache.ts).
            command: "/bin/sh",
            args: ["-c", CACHE_GUARD, "podsync-token", cacheFile(args.slice(2), server), process.execPath, ...args],
            interactiveMode: "Never",
            // The plugin's cache is keyed by the cluster's server (KUBERNETES_EXEC_INFO).
            provideClusterInfo: true,
          },
        },
      },
    ],
    contexts: [{ name, context: { cluster: name, user: name, namespace: k.namespace } }],
    "current-context": name,
  };
  const fingerprint = new X509Certificate(k.ca).fingerprint256;
  return `# podsync kubeconfig for node ${k.node} (certificate SHA-256 ${fingerprint})\n${stringify(config)}`;
}
