// Two of kubelet's pod admit handlers that concern the security context, run before any runtime call:
// - the sysctl allow-list (pkg/kubelet/sysctl/allowlist.go, safe_sysctls.go, namespace.go): the safe set plus
//   the owner's --allowed-unsafe-sysctls (PODSYNC_ALLOWED_UNSAFE_SYSCTLS), none of the host's namespaces
//   shared with a pod that sets them; refused as `SysctlForbidden`;
// - the AppArmor validator (pkg/security/apparmor/validate.go): a pod that asks for a profile on a host
//   without AppArmor is refused as `AppArmor` (containerd would refuse it anyway: "apparmor is not supported",
//   seen on the lab VM, which has no AppArmor). Unconfined needs no AppArmor and passes.
import type { Pod } from "../pod/schema.js";
import type { NodeConfig } from "../container/node-config.js";

export interface AdmitFailure {
  /** kubelet's PodAdmitResult.Reason */
  reason: "SysctlForbidden" | "AppArmor";
  message: string;
  path: string;
}

/** safe_sysctls.go (every kernel condition holds on the kernels podsync supports). The Pod Security
 * Standards keep the same list (src/auth/pss-rules.ts), from their own source file. */
export const KUBELET_SAFE_SYSCTLS: ReadonlySet<string> = new Set([
  "kernel.shm_rmid_forced",
  "net.ipv4.ip_local_port_range",
  "net.ipv4.tcp_syncookies",
  "net.ipv4.ping_group_range",
  "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
  "net.ipv4.tcp_rmem",
  "net.ipv4.tcp_wmem",
]);

type Namespace = "ipc" | "net";
/** namespace.go: sysctls known to be namespaced, by name and by prefix. */
const NAMESPACED: Record<string, Namespace> = {
  "kernel.sem": "ipc",
  "kernel.shmall": "ipc",
  "kernel.shmmax": "ipc",
  "kernel.shmmni": "ipc",
  "kernel.msgmax": "ipc",
  "kernel.msgmnb": "ipc",
  "kernel.msgmni": "ipc",
  "kernel.shm_rmid_forced": "ipc",
};
const NAMESPACED_PREFIXES: [string, Namespace][] = [
  ["kernel.shm", "ipc"],
  ["kernel.msg", "ipc"],
  ["fs.mqueue.", "ipc"],
  ["net.", "net"],
];

/** ConvertSysctlVariableToDotsSeparator: `/` separates, and a `.` inside a segment becomes `/`. */
export const sysctlDots = (name: string): string => {
  const sep = name.search(/[./]/);
  if (sep < 0 || name[sep] === ".") return name;
  return name
    .split("/")
    .map((seg) => seg.replaceAll(".", "/"))
    .join(".");
};

export function namespacedBy(name: string): Namespace | undefined {
  return NAMESPACED[name] ?? NAMESPACED_PREFIXES.find(([p]) => name.startsWith(p))?.[1];
}

const SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?";
/** A name, or a prefix ending in `*` (`net.core.*`, `kernel.msg*`). */
const SYSCTL_PATTERN = new RegExp(`^(${SEGMENT}[./])*(${SEGMENT}\\*?|\\*)$`);

/** NewAllowlist's checks on one --allowed-unsafe-sysctls entry: an error message, or undefined when usable. */
export function unsafeSysctlPatternError(pattern: string): string | undefined {
  if (pattern.length > 253 || !SYSCTL_PATTERN.test(pattern))
    return `sysctl ${JSON.stringify(pattern)} must have at most 253 characters and be a sysctl name or prefix* pattern`;
  const s = sysctlDots(pattern);
  const name = s.endsWith("*") ? s.slice(0, -1) : s;
  if (!namespacedBy(name))
    return `the sysctl ${JSON.stringify(s)} is not known to be namespaced (kubelet allows only namespaced sysctls: net.*, kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*)`;
  return undefined;
}

/** validateSysctl: undefined when admitted, else kubelet's error text. */
function validateSysctl(name: string, pod: Pod, allowed: readonly string[]): string | undefined {
  const s = sysctlDots(name);
  const patterns = allowed.map(sysctlDots);
  let ns: Namespace | undefined | null = null; // null: not on the allow-list
  if (KUBELET_SAFE_SYSCTLS.has(s) || patterns.includes(s)) ns = namespacedBy(s);
  else {
    const prefix = patterns.find((p) => p.endsWith("*") && s.startsWith(p.slice(0, -1)));
    if (prefix !== undefined) ns = namespacedBy(prefix.slice(0, -1));
  }
  if (ns === null) return `${JSON.stringify(s)} not allowlisted`;
  if (ns === "ipc" && pod.spec.hostIPC) return `${JSON.stringify(s)} not allowed with host ipc enabled`;
  if (ns === "net" && pod.spec.hostNetwork) return `${JSON.stringify(s)} not allowed with host net enabled`;
  return undefined;
}

/** isRequired: any profile but Unconfined needs AppArmor on the host. */
function appArmorPaths(pod: Pod): string[] {
  const needs = (p: { type: string } | undefined) => p !== undefined && p.type !== "Unconfined";
  const paths: string[] = [];
  if (needs(pod.spec.securityContext?.appArmorProfile)) paths.push("spec.securityContext.appArmorProfile");
  for (const kind of ["initContainers", "containers"] as const)
    (pod.spec[kind] ?? []).forEach((c, i) => {
      if (needs(c.securityContext?.appArmorProfile)) paths.push(`spec.${kind}[${i}].securityContext.appArmorProfile`);
    });
  return paths;
}

/** Every admission failure, in kubelet's words; empty when the pod is admitted. */
export function admitOnNode(
  pod: Pod,
  node: Pick<NodeConfig, "allowedUnsafeSysctls" | "appArmorEnabled">,
): AdmitFailure[] {
  const out: AdmitFailure[] = [];
  (pod.spec.securityContext?.sysctls ?? []).forEach((s, i) => {
    const err = validateSysctl(s.name, pod, node.allowedUnsafeSysctls);
    if (err)
      out.push({
        reason: "SysctlForbidden",
        message: `forbidden sysctl: ${err}`,
        path: `spec.securityContext.sysctls[${i}].name`,
      });
  });
  if (node.appArmorEnabled === false)
    for (const path of appArmorPaths(pod))
      out.push({ reason: "AppArmor", message: "Cannot enforce AppArmor: AppArmor is not enabled on the host", path });
  return out;
}

/** A pod refused by admitOnNode (the HTTP layer renders it as 403 `admission` with kubelet's reason). */
export class PodAdmissionError extends Error {
  constructor(readonly failures: AdmitFailure[]) {
    super(failures.map((f) => f.message).join("; "));
  }
}
