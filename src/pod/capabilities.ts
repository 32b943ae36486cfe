// Linux capability names as manifests write them and as runtimes read them. Kubernetes does not validate
// the names and the kubelet passes them through unchanged; containerd compares "ALL" case-insensitively and
// otherwise upper-cases a name and prefixes CAP_. So `drop: [all]` and `add: [net_admin]` work on a kubelet
// node, while `add: [CAP_NET_ADMIN]` becomes CAP_CAP_NET_ADMIN, which containerd 1.6 silently ignores (seen
// on the lab: CapEff unchanged). podsync accepts any case, with or without CAP_, refuses names that are not
// capabilities (containerd would fail CreateContainer or drop them), and sends the runtime the canonical form.

/** capability(7), without the CAP_ prefix (Linux 5.9+: PERFMON, BPF, CHECKPOINT_RESTORE). */
export const LINUX_CAPABILITIES: ReadonlySet<string> = new Set([
  "CHOWN",
  "DAC_OVERRIDE",
  "DAC_READ_SEARCH",
  "FOWNER",
  "FSETID",
  "KILL",
  "SETGID",
  "SETUID",
  "SETPCAP",
  "LINUX_IMMUTABLE",
  "NET_BIND_SERVICE",
  "NET_BROADCAST",
  "NET_ADMIN",
  "NET_RAW",
  "IPC_LOCK",
  "IPC_OWNER",
  "SYS_MODULE",
  "SYS_RAWIO",
  "SYS_CHROOT",
  "SYS_PTRACE",
  "SYS_PACCT",
  "SYS_ADMIN",
  "SYS_BOOT",
  "SYS_NICE",
  "SYS_RESOURCE",
  "SYS_TIME",
  "SYS_TTY_CONFIG",
  "MKNOD",
  "LEASE",
  "AUDIT_WRITE",
  "AUDIT_CONTROL",
  "SETFCAP",
  "MAC_OVERRIDE",
  "MAC_ADMIN",
  "SYSLOG",
  "WAKE_ALARM",
  "BLOCK_SUSPEND",
  "AUDIT_READ",
  "PERFMON",
  "BPF",
  "CHECKPOINT_RESTORE",
]);

/** The form the runtime is sent: upper case, no CAP_ prefix ("all" → "ALL", "cap_net_admin" → "NET_ADMIN"). */
export const canonicalCapability = (name: string): string => name.toUpperCase().replace(/^CAP_/, "");

/** Whether a manifest's capability name names a capability (or ALL) in any spelling runtimes accept. */
export const isCapabilityName = (name: string): boolean => {
  const c = canonicalCapability(name);
  return c === "ALL" || LINUX_CAPABILITIES.has(c);
};
