// Settings for the Node entry: environment variables, optionally on top of a JSON config file
// (PODSYNC_CONFIG), validated with zod at start-up. Each bad setting is reported by name with the reason.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { z } from "zod";
import { DEFAULT_HOST, DEFAULT_PORT } from "./port.js";
import { bool, checkCommon, commonSettings, formatIssues, int, list } from "./common.js";
import { serviceDataplaneSettingsShape, serviceSettingsShape } from "./services.js";
import { parseQuantity } from "../pod/quantity.js";

export const Settings = z
  .object({
    ...commonSettings,
    ...serviceSettingsShape,
    ...serviceDataplaneSettingsShape,
    PODSYNC_HOST: z.string().min(1).default(DEFAULT_HOST),
    PODSYNC_PORT: int(0, 65535).default(DEFAULT_PORT),
    PODSYNC_NODE_NAME: z.string().min(1).default(hostname()),
    /** Extra audiences this node answers to (e.g. a machine id). */
    PODSYNC_NODE_ALIASES: list.default([]),
    PODSYNC_CRI_ENDPOINT: z.string().min(1).default("unix:///run/containerd/containerd.sock"),
    PODSYNC_CRI_TOKEN: z.string().optional(),
    PODSYNC_CRI_TLS: bool.default(false),
    PODSYNC_CRI_TLS_CA: z.string().optional(),
    PODSYNC_CRI_TLS_CERT: z.string().optional(),
    PODSYNC_CRI_TLS_KEY: z.string().optional(),
    PODSYNC_JWKS_FILE: z.string().optional(),
    /** Where the dev key lives when no keys are configured. */
    PODSYNC_DEV_DIR: z.string().default(".podsync"),
    /** The node's own state (used token ids under jti/). Unset: /var/lib/podsync/state, or in dev mode (no
     * keys configured) <PODSYNC_DEV_DIR>/state, so `npm start` works without root. */
    PODSYNC_STATE_DIR: z.string().startsWith("/", "must be an absolute path").optional(),
    /** GET /metrics: unauthenticated from loopback and with a Bearer token (act "metrics") from elsewhere
     * (loopback), only with a token (token), or not served (off). Node only: the Worker serves no /metrics. */
    /** https on the server's own port (a TLS handshake is told from plain http by its first byte), for kubectl,
     * which sends credentials only over https. Off: plain http only. */
    PODSYNC_TLS: bool.default(true),
    /** The serving certificate and key (PEM files, as kubelet's --tls-cert-file/--tls-private-key-file); unset:
     * a self-signed one made in PODSYNC_STATE_DIR/tls/. */
    PODSYNC_TLS_CERT_FILE: z.string().optional(),
    PODSYNC_TLS_KEY_FILE: z.string().optional(),
    PODSYNC_METRICS: z
      .enum(["loopback", "token", "off"], { error: "allowed: loopback, token, off" })
      .default("loopback"),
    /** The runtime's event stream (CRI GetContainerEvents, or containerd's event service on containerd < 1.7):
     * exits restart containers at once and the relist becomes the safety net (on), or the relist alone (off). */
    PODSYNC_RUNTIME_EVENTS: z.enum(["on", "off"], { error: "allowed: on, off" }).default("on"),
    /** The relist period while the event stream is up (kubelet's eventedPlegRelistPeriod, 300 s); a pod's resync,
     * retry or back-off end still brings the next relist sooner. Also how long the status cache serves a read. */
    PODSYNC_EVENTED_RELIST_INTERVAL_MS: int(1000, 86_400_000).default(300_000),
    /** How often the eviction manager measures the pods that declare local storage limits (ms); kubelet's
     * housekeeping period, 10 s, when unset. */
    PODSYNC_EVICTION_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).optional(),
    /** kubelet's --volume-stats-agg-period (ms): how often the eviction manager measures a pod's emptyDirs again;
     * between passes it reads their cached use. 1 minute when unset. */
    PODSYNC_VOLUME_STATS_AGG_PERIOD_MS: z.coerce.number().int().min(100).max(3_600_000).optional(),
    /** kubelet's hard eviction threshold nodefs.available on the root dir's filesystem: a percentage (`10%`,
     * kubelet's default) or a size (`5Gi`); below it pods are evicted by kubelet's ranking. Unset: not watched. */
    PODSYNC_EVICTION_HARD_NODEFS_AVAILABLE: z
      .string()
      .regex(
        /^(100|[1-9]?[0-9])(\.[0-9]+)?%$|^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$/,
        "a percentage such as 10% or a size such as 5Gi",
      )
      .optional(),
    /** Open watches, exec sessions and log streams on the node (also held below half the process's open-file
     * limit) and per token; over either: 429 (src/usecases/streams/budget.ts). */
    PODSYNC_MAX_STREAMS: int(1, 1_000_000).default(256),
    PODSYNC_MAX_STREAMS_PER_TOKEN: int(1, 1_000_000).default(32),
    /** Bytes an exec stream may hold for a reader that is slow, per direction, before it stops reading the writer. */
    PODSYNC_STREAM_BUFFER_BYTES: int(16 * 1024, 64 * 1024 * 1024).default(1024 * 1024),
    /** kubelet's containerLogMaxSize (a quantity, 10Mi) and containerLogMaxFiles (5): a container's log is rotated
     * when it passes the size, keeping that many files (the live one included). */
    PODSYNC_CONTAINER_LOG_MAX_SIZE: z
      .string()
      .refine((v) => (parseQuantity(v) ?? 0) >= 1, "must be a size such as 10Mi")
      .transform((v) => Math.ceil(parseQuantity(v)!))
      .default(10 * 1024 * 1024),
    PODSYNC_CONTAINER_LOG_MAX_FILES: int(2, 1000).default(5),
    /** How often container logs are checked for rotation (kubelet's containerLogMonitorInterval, 10 s). */
    PODSYNC_CONTAINER_LOG_MONITOR_INTERVAL_MS: int(100, 3_600_000).default(10_000),
  })
  .superRefine((s, ctx) => {
    const sources = [s.PODSYNC_JWKS_FILE, s.PODSYNC_JWKS, s.PODSYNC_JWKS_URL].filter(Boolean).length;
    if (sources > 1)
      ctx.addIssue({
        code: "custom",
        path: ["PODSYNC_JWKS_FILE"],
        message: "set only one of PODSYNC_JWKS_FILE, PODSYNC_JWKS, PODSYNC_JWKS_URL",
      });
    if (sources === 1 && !s.PODSYNC_ISSUERS?.length)
      ctx.addIssue({
        code: "custom",
        path: ["PODSYNC_ISSUERS"],
        message: "required with configured keys: the issuers (iss) to trust, comma separated",
      });
    if (Boolean(s.PODSYNC_TLS_CERT_FILE) !== Boolean(s.PODSYNC_TLS_KEY_FILE))
      ctx.addIssue({
        code: "custom",
        path: [s.PODSYNC_TLS_CERT_FILE ? "PODSYNC_TLS_KEY_FILE" : "PODSYNC_TLS_CERT_FILE"],
        message:
          "set both PODSYNC_TLS_CERT_FILE and PODSYNC_TLS_KEY_FILE, or neither (a self-signed certificate is made)",
      });
    checkCommon(s, ctx, Boolean(s.PODSYNC_JWKS_FILE || s.PODSYNC_JWKS));
  });
export type Settings = z.output<typeof Settings>;

export class SettingsError extends Error {}

/** Environment over config file. Throws SettingsError listing every bad setting. */
export function loadSettings(env: Record<string, string | undefined> = process.env): Settings {
  let file: Record<string, unknown> = {};
  const path = env["PODSYNC_CONFIG"];
  if (path) {
    try {
      file = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    } catch (e) {
      throw new SettingsError(`PODSYNC_CONFIG: cannot read ${path}: ${(e as Error).message}`);
    }
  }
  const merged: Record<string, unknown> = { ...file };
  for (const [k, v] of Object.entries(env)) if (k.startsWith("PODSYNC_") && v !== undefined && v !== "") merged[k] = v;
  for (const [k, v] of Object.entries(merged))
    if (typeof v === "number" || typeof v === "boolean") merged[k] = String(v);
  for (const [k, v] of Object.entries(merged)) if (Array.isArray(v)) merged[k] = v.join(",");
  const r = Settings.safeParse(merged);
  if (r.success) return r.data;
  throw new SettingsError(`invalid settings:\n${formatIssues(r.error)}`);
}

/** The node's resolv.conf, for dnsPolicy Default. */
export function hostResolvConf(path = "/etc/resolv.conf"): {
  servers: string[];
  searches: string[];
  options: string[];
} {
  const out = { servers: [] as string[], searches: [] as string[], options: [] as string[] };
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    const [key, ...rest] = line
      .replace(/[#;].*$/, "")
      .trim()
      .split(/\s+/);
    // kubelet's parseResolvConf: nameservers accumulate; the last search and options lines win; search paths lose
    // a trailing dot and "." is dropped.
    if (key === "nameserver" && rest[0]) out.servers.push(rest[0]);
    else if (key === "search") out.searches = rest.filter((x) => x !== ".").map((x) => x.replace(/\.$/, ""));
    else if (key === "options") out.options = rest;
  }
  return out;
}
