// Pod-level admission: the node policy's level applied to a pod, as PodSecurity admission does
// (registry.go: baseline checks, plus restricted checks that replace the baseline check they tighten).
import { isUnderAny } from "./host-path.js";
import * as C from "./pod-security-checks.js";
import type { CheckContext, CheckFn, PodLike } from "./pod-security-checks.js";
import { formatViolations, type NodePolicy, type PolicyLevel, type Violation } from "./policy.js";

export type { PodLike } from "./pod-security-checks.js";

export interface CheckDef {
  /** Upstream's check id (podsync's own for hostPathAllowList). */
  id: string;
  level: PolicyLevel;
  /** Checks this one replaces when both apply (upstream's OverrideCheckIDs). */
  overrides?: readonly string[];
  check: CheckFn;
}

export const POD_CHECKS: readonly CheckDef[] = [
  { id: "hostPathAllowList", level: "privileged", check: C.hostPathAllowList },
  { id: "appArmorProfile", level: "baseline", check: C.appArmorProfile },
  { id: "capabilities_baseline", level: "baseline", check: C.capabilitiesBaseline },
  { id: "hostNamespaces", level: "baseline", check: C.hostNamespaces },
  { id: "hostPathVolumes", level: "baseline", overrides: ["hostPathAllowList"], check: C.hostPathVolumes },
  { id: "hostPorts", level: "baseline", check: C.hostPorts },
  { id: "hostProbesAndHostLifecycle", level: "baseline", check: C.hostProbesAndHostLifecycle },
  { id: "privileged", level: "baseline", check: C.privileged },
  { id: "procMount", level: "baseline", check: C.procMount },
  { id: "seLinuxOptions", level: "baseline", check: C.seLinuxOptions },
  { id: "seccompProfile_baseline", level: "baseline", check: C.seccompProfileBaseline },
  { id: "sysctls", level: "baseline", check: C.sysctls },
  { id: "windowsHostProcess", level: "baseline", check: C.windowsHostProcess },
  { id: "allowPrivilegeEscalation", level: "restricted", check: C.allowPrivilegeEscalation },
  {
    id: "capabilities_restricted",
    level: "restricted",
    overrides: ["capabilities_baseline"],
    check: C.capabilitiesRestricted,
  },
  {
    id: "restrictedVolumes",
    level: "restricted",
    overrides: ["hostPathVolumes", "hostPathAllowList"],
    check: C.restrictedVolumes,
  },
  { id: "runAsNonRoot", level: "restricted", check: C.runAsNonRoot },
  { id: "runAsUser", level: "restricted", check: C.runAsUser },
  {
    id: "seccompProfile_restricted",
    level: "restricted",
    overrides: ["seccompProfile_baseline"],
    check: C.seccompProfileRestricted,
  },
];

const RANK: Record<PolicyLevel, number> = { privileged: 0, baseline: 1, restricted: 2 };

/** The checks a level runs, in order, without those a stricter applicable check overrides. */
export function checksFor<T extends Pick<CheckDef, "id" | "level" | "overrides">>(
  checks: readonly T[],
  level: PolicyLevel,
): T[] {
  const active = checks.filter((c) => RANK[c.level] <= RANK[level]);
  const overridden = new Set(active.flatMap((c) => c.overrides ?? []));
  return active.filter((c) => !overridden.has(c.id));
}

export function checkContext(policy: NodePolicy): CheckContext {
  const ports = policy.hostPortAllow ?? [];
  return {
    hostPathAllow: policy.hostPathAllow,
    hostPathAllowed: (p) => isUnderAny(p, policy.hostPathAllow),
    hostPortAllowed: (port) => ports.some(([lo, hi]) => port >= lo && port <= hi),
  };
}

/** Every violation of the node policy by the pod, one per offending field; empty when admitted. */
export function evaluatePodSecurity(pod: PodLike, policy: NodePolicy): Violation[] {
  const ctx = checkContext(policy);
  return checksFor(POD_CHECKS, policy.level).flatMap((def) => {
    const r = def.check(pod, ctx);
    return r ? r.paths.map((path) => ({ rule: def.id, path, message: `${r.reason} (${r.detail})` })) : [];
  });
}

/** The policy's verdict in words (`violates PodSecurity "baseline:latest": ...`), or undefined when admitted: what
 * the controllers hold each template to (src/controllers/gate.ts). */
export const policyRefusal =
  (policy: NodePolicy) =>
  (pod: PodLike): string | undefined => {
    const v = evaluatePodSecurity(pod, policy);
    return v.length ? formatViolations(policy.level, v) : undefined;
  };
