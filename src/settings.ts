// Settings for the Node entry: environment variables, optionally on top of a JSON config file
// (PODSYNC_CONFIG), validated with zod at start-up. Each bad setting is reported by name with the reason.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { z } from "zod";
import { DEFAULT_ALGORITHMS } from "./auth/verify.js";

const list = z
  .string()
  .transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean));
const int = (min: number, max: number) => z.coerce.number().int(`must be an integer`).min(min, `must be at least ${min}`).max(max, `must be at most ${max}`);
const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

export const Settings = z
  .object({
    PODSYNC_HOST: z.string().min(1).default("127.0.0.1"),
    PODSYNC_PORT: int(0, 65535).default(8080),
    PODSYNC_NODE_NAME: z.string().min(1).default(hostname()),
    /** Extra audiences this node answers to (e.g. a machine id). */
    PODSYNC_NODE_ALIASES: list.default([]),
    PODSYNC_CRI_ENDPOINT: z.string().min(1).default("unix:///run/containerd/containerd.sock"),
    PODSYNC_CRI_TIMEOUT_MS: int(100, 600_000).default(10_000),
    PODSYNC_CRI_PULL_TIMEOUT_MS: int(1000, 3_600_000).default(120_000),
    PODSYNC_CRI_TOKEN: z.string().optional(),
    PODSYNC_CRI_TLS: bool.default(false),
    PODSYNC_CRI_TLS_CA: z.string().optional(),
    PODSYNC_CRI_TLS_CERT: z.string().optional(),
    PODSYNC_CRI_TLS_KEY: z.string().optional(),
    PODSYNC_JWKS_FILE: z.string().optional(),
    PODSYNC_JWKS: z.string().optional(),
    PODSYNC_JWKS_URL: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
    PODSYNC_ISSUERS: list.optional(),
    PODSYNC_ALGORITHMS: list
      .pipe(z.array(z.enum(["EdDSA", "Ed25519", "ES256", "ES384", "RS256", "PS256", "HS256"], { error: "allowed: EdDSA, Ed25519, ES256, ES384, RS256, PS256, HS256 (never none)" })))
      .default(DEFAULT_ALGORITHMS),
    PODSYNC_MAX_TOKEN_LIFETIME_S: int(1, 86_400).default(300),
    PODSYNC_CLOCK_SKEW_S: int(0, 600).default(30),
    PODSYNC_MAX_BODY_BYTES: int(1024, 64 * 1024 * 1024).default(1024 * 1024),
    PODSYNC_LOCK_WAIT_MS: int(0, 600_000).default(30_000),
    PODSYNC_POD_LOGS_DIR: z.string().startsWith("/", "must be an absolute path").default("/var/log/pods"),
    PODSYNC_ROOT_DIR: z.string().startsWith("/", "must be an absolute path").default("/var/lib/podsync"),
    PODSYNC_CGROUP_PARENT: z.string().default(""),
    PODSYNC_CLUSTER_DNS: list.default([]),
    PODSYNC_CLUSTER_DOMAIN: z.string().default("cluster.local"),
    /** Where the dev key lives when no keys are configured. */
    PODSYNC_DEV_DIR: z.string().default(".podsync"),
  })
  .superRefine((s, ctx) => {
    const sources = [s.PODSYNC_JWKS_FILE, s.PODSYNC_JWKS, s.PODSYNC_JWKS_URL].filter(Boolean).length;
    if (sources > 1) ctx.addIssue({ code: "custom", path: ["PODSYNC_JWKS_FILE"], message: "set only one of PODSYNC_JWKS_FILE, PODSYNC_JWKS, PODSYNC_JWKS_URL" });
    if (sources === 1 && !s.PODSYNC_ISSUERS?.length) ctx.addIssue({ code: "custom", path: ["PODSYNC_ISSUERS"], message: "required with configured keys: the issuers (iss) to trust, comma separated" });
    if (s.PODSYNC_ALGORITHMS.includes("HS256") && !s.PODSYNC_JWKS_FILE && !s.PODSYNC_JWKS)
      ctx.addIssue({ code: "custom", path: ["PODSYNC_ALGORITHMS"], message: "HS256 needs a local JWKS holding the shared secret (never from a URL)" });
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
  for (const [k, v] of Object.entries(merged)) if (typeof v === "number" || typeof v === "boolean") merged[k] = String(v);
  for (const [k, v] of Object.entries(merged)) if (Array.isArray(v)) merged[k] = v.join(",");
  const r = Settings.safeParse(merged);
  if (r.success) return r.data;
  throw new SettingsError(
    "invalid settings:\n" + r.error.issues.map((i) => `  ${i.path.join(".") || "(settings)"}: ${i.message}`).join("\n"),
  );
}

/** The node's resolv.conf, for dnsPolicy Default. */
export function hostResolvConf(path = "/etc/resolv.conf"): { servers: string[]; searches: string[]; options: string[] } {
  const out = { servers: [] as string[], searches: [] as string[], options: [] as string[] };
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    const [key, ...rest] = line.replace(/[#;].*$/, "").trim().split(/\s+/);
    if (key === "nameserver" && rest[0]) out.servers.push(rest[0]);
    else if (key === "search") out.searches = rest;
    else if (key === "options") out.options.push(...rest);
  }
  return out;
}
