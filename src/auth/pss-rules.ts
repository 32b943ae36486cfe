// What the Pod Security Standards allow, and upstream's message helpers, shared by the pod-level checks
// (pod-security-checks.ts) and the CRI-level checks (cri-policy.ts) so both refuse exactly the same values.
// Source: kubernetes/kubernetes staging/src/k8s.io/pod-security-admission/policy/ (helpers.go and the
// check_*.go files named beside each constant).

/** check_capabilities_baseline.go: the container runtime's default set. */
export const BASELINE_CAPABILITIES: ReadonlySet<string> = new Set([
  "AUDIT_WRITE",
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "KILL",
  "MKNOD",
  "NET_BIND_SERVICE",
  "SETFCAP",
  "SETGID",
  "SETPCAP",
  "SETUID",
  "SYS_CHROOT",
]);

/** check_capabilities_restricted.go */
export const CAPABILITY_ALL = "ALL";
export const CAPABILITY_NET_BIND_SERVICE = "NET_BIND_SERVICE";

/** check_sysctls.go, newest version (1.0 + 1.27 + 1.29 + 1.32 additions): namespaced, isolated sysctls. */
export const SAFE_SYSCTLS: ReadonlySet<string> = new Set([
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

/** A sysctl may be written with / separators (net/ipv4/tcp_syncookies); the kubelet converts it to dots
 * before the runtime sees it, so the allow-list is checked on the dotted form. */
export const sysctlAllowed = (name: string): boolean => SAFE_SYSCTLS.has(name.replaceAll("/", "."));

/** check_seLinuxOptions.go (1.31+ adds container_engine_t). */
export const SELINUX_ALLOWED_TYPES: ReadonlySet<string> = new Set([
  "",
  "container_t",
  "container_init_t",
  "container_kvm_t",
  "container_engine_t",
]);

/** check_seccompProfile_baseline.go validSeccomp, check_appArmorProfile.go allowedProfileType. */
export const CONFINED_PROFILE_TYPES: ReadonlySet<string> = new Set(["RuntimeDefault", "Localhost"]);

/** check_appArmorProfile.go: the deprecated per-container annotation and its allowed values. */
export const APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/";
export const appArmorAnnotationAllowed = (v: string): boolean =>
  v === "" || v === "runtime/default" || v.startsWith("localhost/");

/** helpers.go */
export function joinQuote(items: readonly string[]): string {
  return items.length === 0 ? "" : `"${items.join('", "')}"`;
}

/** helpers.go */
export const pluralize = (singular: string, plural: string, count: number): string => (count === 1 ? singular : plural);

/** sets.String.List(): unique and sorted (byte order, as Go sorts strings). */
export function sortedSet(items: Iterable<string>): string[] {
  return [...new Set(items)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** `containers "a", "b"` */
export const containersPhrase = (names: readonly string[]): string =>
  `${pluralize("container", "containers", names.length)} ${joinQuote(names)}`;
