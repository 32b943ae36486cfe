// The node owner's admission policy: a Pod Security Standards level and a hostPath allow-list, set in
// the node's settings (Node, Workers and cri-proxy read the same names) and never by a signed request.
import { z } from "zod";
import { normalizeHostPath } from "./host-path.js";

export const POLICY_LEVELS = ["privileged", "baseline", "restricted"] as const;
export type PolicyLevel = (typeof POLICY_LEVELS)[number];

/**
 * Default: baseline. podsync acts on signed requests from fleet automation, so a stolen or misused signing
 * key must not be root on the node: baseline refuses the known escalations (privileged, host namespaces,
 * hostPath, hostPort, added capabilities, unsafe sysctls, unconfined profiles) while still running ordinary
 * images unchanged, which restricted does not (it needs runAsNonRoot, seccomp RuntimeDefault and dropped
 * capabilities on every container). The owner opts out explicitly with PODSYNC_POLICY=privileged.
 */
export const DEFAULT_POLICY_LEVEL: PolicyLevel = "baseline";

export interface NodePolicy {
  level: PolicyLevel;
  /** Normalised absolute host directories whose subtrees hostPath volumes may use (see host-path.ts). */
  hostPathAllow: readonly string[];
  /** Host ports (inclusive ranges) baseline allows: PSS's "known list" (PODSYNC_POLICY_HOSTPORT_ALLOW). */
  hostPortAllow?: readonly (readonly [number, number])[];
}

/** `8080,9000-9010`: single ports and inclusive ranges inside 1-65535. */
const hostPortRange = z.string().transform((item, ctx) => {
  const m = /^(\d+)(?:-(\d+))?$/.exec(item);
  const lo = Number(m?.[1]);
  const hi = Number(m?.[2] ?? m?.[1]);
  if (!m || lo < 1 || hi > 65535 || lo > hi) {
    ctx.addIssue({ code: "custom", message: `"${item}" is not a port or a range such as 8080 or 30000-30010` });
    return z.NEVER;
  }
  return [lo, hi] as const;
});

const hostPathPrefix = z
  .string()
  .startsWith("/", "must be an absolute path")
  .transform((p) => normalizeHostPath(p))
  .refine((p) => p !== "/", "allowing / allows every host path; use PODSYNC_POLICY=privileged instead");

/** Zod fields for the settings object; spread them into Settings (z.object({...policySettingsShape})). */
export const policySettingsShape = {
  PODSYNC_POLICY: z
    .enum(POLICY_LEVELS, { error: "must be privileged, baseline or restricted" })
    .default(DEFAULT_POLICY_LEVEL),
  /** Comma separated (or a JSON array in the config file, which loadSettings joins with commas). */
  PODSYNC_POLICY_HOSTPATH_ALLOW: z
    .string()
    .transform((s) =>
      s
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(hostPathPrefix))
    .default([]),
  /** Comma separated ports and ranges (`8080,30000-30010`): hostPorts baseline admits (empty: none). */
  PODSYNC_POLICY_HOSTPORT_ALLOW: z
    .string()
    .transform((s) =>
      s
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(hostPortRange))
    .default([]),
};
export const PolicySettings = z.object(policySettingsShape);
export type PolicySettings = z.output<typeof PolicySettings>;

export function nodePolicy(s: PolicySettings): NodePolicy {
  return {
    level: s.PODSYNC_POLICY,
    hostPathAllow: [...new Set(s.PODSYNC_POLICY_HOSTPATH_ALLOW)],
    ...(s.PODSYNC_POLICY_HOSTPORT_ALLOW.length ? { hostPortAllow: s.PODSYNC_POLICY_HOSTPORT_ALLOW } : {}),
  };
}

/** One refused field: the upstream check id, the field path, and upstream's "reason (detail)" text. */
export interface Violation {
  rule: string;
  path: string;
  message: string;
}

/** PodSecurity admission's summary: `violates PodSecurity "baseline:latest": reason (detail), ...`. */
export function formatViolations(level: PolicyLevel, violations: readonly Violation[]): string {
  const messages = [...new Set(violations.map((v) => v.message))];
  return `violates PodSecurity "${level}:latest": ${messages.join(", ")}`;
}

export const levelIncludes = (level: PolicyLevel, check: "baseline" | "restricted"): boolean =>
  level === "restricted" || (level === "baseline" && check === "baseline");
