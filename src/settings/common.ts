// Package settings/ — every setting, parsed and bounded by zod; the same names on Node and Workers.
// Imports the engine's config types; imported only by entry points.
//
// The settings Node and Workers share, as one zod shape: the same names, defaults and bounds on both, so a
// node owner can move between them without relearning. Each entry point adds only what is its own
// (Node: where to listen and the runtime socket; Workers: the node map and proxy tokens).
import { posix } from "node:path";
import { z } from "zod";
import { DEFAULT_ALGORITHMS } from "../auth/verify.js";
import type { NodeConfig } from "../container/node-config.js";
import { policySettingsShape } from "../auth/policy.js";
import { unsafeSysctlPatternError } from "../lifecycle/node-admission.js";
import { nodeAdmissionSettingsShape } from "./node-info.js";
import { SERVICE_ACCOUNT_TOKEN_MODES } from "../pod/workloads/export.js";
import { UNKNOWN_KIND_MODES } from "../pod/workloads/intake.js";

export const list = z.string().transform((s) =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean),
);
export const int = (min: number, max: number) =>
  z.coerce.number().int(`must be an integer`).min(min, `must be at least ${min}`).max(max, `must be at most ${max}`);
export const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const absolute = z.string().startsWith("/", "must be an absolute path");

export const ALGORITHMS = ["EdDSA", "Ed25519", "ES256", "ES384", "RS256", "PS256", "HS256"] as const;

export const commonSettings = {
  ...policySettingsShape,
  ...nodeAdmissionSettingsShape,
  PODSYNC_JWKS: z.string().optional(),
  PODSYNC_JWKS_URL: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
  PODSYNC_ISSUERS: list.optional(),
  PODSYNC_ALGORITHMS: list
    .pipe(z.array(z.enum(ALGORITHMS, { error: `allowed: ${ALGORITHMS.join(", ")} (never none)` })))
    .default(DEFAULT_ALGORITHMS),
  PODSYNC_MAX_TOKEN_LIFETIME_S: int(1, 86_400).default(300),
  PODSYNC_CLOCK_SKEW_S: int(0, 600).default(30),
  PODSYNC_MAX_BODY_BYTES: int(1024, 64 * 1024 * 1024).default(1024 * 1024),
  PODSYNC_LOCK_WAIT_MS: int(0, 600_000).default(30_000),
  PODSYNC_CRI_TIMEOUT_MS: int(100, 600_000).default(10_000),
  PODSYNC_CRI_PULL_TIMEOUT_MS: int(1000, 3_600_000).default(120_000),
  PODSYNC_POD_LOGS_DIR: absolute.default("/var/log/pods"),
  /** Normalised (no trailing slash, `.`, `..` or `//`): the host code compares paths under it with the mount
   * table's canonical ones (the Node entry also resolves its symlinks at start-up). */
  PODSYNC_ROOT_DIR: absolute.transform((p) => posix.normalize(p).replace(/(.)\/+$/, "$1")).default("/var/lib/podsync"),
  PODSYNC_CGROUP_PARENT: z.string().default(""),
  PODSYNC_CLUSTER_DNS: list.default([]),
  PODSYNC_CLUSTER_DOMAIN: z.string().default("cluster.local"),
  /** `POST /v1/pods/{uid}/exec` is off unless the node owner turns it on. */
  PODSYNC_ALLOW_EXEC: bool.default(false),
  /** kubectl port-forward is off unless the node owner turns it on (as exec). */
  PODSYNC_ALLOW_PORT_FORWARD: bool.default(false),
  /** Each of an exec's stdout and stderr is cut at this many bytes. */
  PODSYNC_EXEC_MAX_OUTPUT_BYTES: int(1024, 16 * 1024 * 1024).default(1024 * 1024),
  /** The longest a `logs?follow=true` stream lasts before the server ends it. */
  PODSYNC_LOG_FOLLOW_MAX_S: int(1, 86_400).default(1800),
  /** kubelet's --seccomp-default, on by default: RuntimeDefault for containers that set no profile. */
  PODSYNC_SECCOMP_DEFAULT: bool.default(true),
  /** kubelet's --allowed-unsafe-sysctls: names or prefix* patterns, namespaced ones only. */
  PODSYNC_ALLOWED_UNSAFE_SYSCTLS: list
    .pipe(
      z.array(
        z.string().superRefine((p, ctx) => {
          const err = unsafeSysctlPatternError(p);
          if (err) ctx.addIssue({ code: "custom", message: err });
        }),
      ),
    )
    .default([]),
  /** Node memory capacity (bytes) for Burstable oom_score_adj; Node reads the machine's when unset. */
  PODSYNC_NODE_MEMORY_BYTES: int(1, Number.MAX_SAFE_INTEGER).optional(),
  /** The node agent's relist period (ms): two CRI calls for the whole node each time. Unset: each entry point's
   * default (RELIST_INTERVAL_DEFAULT_MS), Node 1 s like kubelet's PLEG, Workers 10 s (each relist there is an
   * alarm plus two round trips through cri-proxy). */
  PODSYNC_RELIST_INTERVAL_MS: int(100, 3_600_000).optional(),
  /** A pod (or template) naming a service account whose token would be mounted: `drop` runs it without the token
   * (automountServiceAccountToken: false) with a warning; `refuse` refuses it (400 naming the field). There is no
   * API server on a node to issue the token either way. */
  PODSYNC_SERVICE_ACCOUNT_TOKENS: z
    .enum(SERVICE_ACCOUNT_TOKEN_MODES, { error: 'must be "drop" or "refuse"' })
    .default("drop"),
  /** A document of a kind no controller here runs (a custom resource: monitoring.coreos.com/v1 PrometheusRule):
   * `warn` applies the rest of the file and warns for it (as kubectl apply reports it); `refuse` refuses the file. */
  PODSYNC_UNKNOWN_KINDS: z.enum(UNKNOWN_KIND_MODES, { error: 'must be "warn" or "refuse"' }).default("warn"),
  /** The HPAs' sync period (kube-controller-manager's --horizontal-pod-autoscaler-sync-period, 15 s). */
  PODSYNC_HPA_SYNC_PERIOD_MS: int(1000, 3_600_000).default(15_000),
  /** The HPAs' scale-down stabilization window when an HPA sets none
   * (--horizontal-pod-autoscaler-downscale-stabilization, 5 min). */
  PODSYNC_HPA_DOWNSCALE_STABILIZATION_MS: int(0, 3_600_000).default(300_000),
  /** Every desired pod gets a full sync at least this often, changed or not (kubelet's syncFrequency, 1 min). */
  PODSYNC_RESYNC_INTERVAL_MS: int(1000, 86_400_000).default(60_000),
};

/** PODSYNC_RELIST_INTERVAL_MS when unset, per entry point. */
export const RELIST_INTERVAL_DEFAULT_MS = { node: 1000, workers: 10_000 } as const;

type Common = z.output<z.ZodObject<typeof commonSettings>>;

/** Checks across settings that both entry points share. */
export function checkCommon(s: Common, ctx: z.RefinementCtx, localKeys: boolean): void {
  if (s.PODSYNC_ALGORITHMS.includes("HS256") && !localKeys)
    ctx.addIssue({
      code: "custom",
      path: ["PODSYNC_ALGORITHMS"],
      message: "HS256 needs a local JWKS holding the shared secret (never from a URL)",
    });
}

/** The engine's view of the node, from the shared settings. */
export function nodeConfigFrom(
  s: Common,
  host: { dns: NodeConfig["hostDNS"]; memoryBytes: number; appArmorEnabled?: boolean },
): NodeConfig {
  return {
    podLogsDir: s.PODSYNC_POD_LOGS_DIR,
    rootDir: s.PODSYNC_ROOT_DIR,
    cgroupParent: s.PODSYNC_CGROUP_PARENT,
    clusterDNS: s.PODSYNC_CLUSTER_DNS,
    clusterDomain: s.PODSYNC_CLUSTER_DOMAIN,
    hostDNS: host.dns,
    memoryCapacity: s.PODSYNC_NODE_MEMORY_BYTES ?? host.memoryBytes,
    seccompDefault: s.PODSYNC_SECCOMP_DEFAULT,
    allowedUnsafeSysctls: s.PODSYNC_ALLOWED_UNSAFE_SYSCTLS,
    appArmorEnabled: host.appArmorEnabled,
  };
}

/** "PODSYNC_X: reason" lines, one per bad setting. */
export const formatIssues = (e: z.ZodError) =>
  e.issues.map((i) => `  ${i.path.join(".") || "(settings)"}: ${i.message}`).join("\n");
