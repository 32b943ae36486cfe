// What the engine needs to know about the node it configures pods for.
export interface NodeConfig {
  /** kubelet's --pod-logs-dir; sandboxes log under <dir>/<namespace>_<name>_<uid>. */
  podLogsDir: string;
  /** Where emptyDir volumes live: <rootDir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name> (kubelet's layout). */
  rootDir: string;
  /** cgroup parent for pod sandboxes (cgroupfs form); empty lets the runtime choose. */
  cgroupParent: string;
  /** Cluster DNS for dnsPolicy ClusterFirst; when empty, ClusterFirst falls back to Default as kubelet does. */
  clusterDNS: string[];
  clusterDomain: string;
  /** The node's resolv.conf, for dnsPolicy Default (and ClusterFirst without cluster DNS). */
  hostDNS: { servers: string[]; searches: string[]; options: string[] };
  /** Node memory capacity in bytes, for Burstable oom_score_adj, a memory emptyDir's default size and the downward
   * API's default memory limit. */
  memoryCapacity: number;
  /** The node's name (the downward API's spec.nodeName); empty when unknown. */
  nodeName?: string;
  /** Node cpu capacity in cores (the downward API's default cpu limit, as kubelet uses node allocatable). */
  cpuCapacity?: number;
  /** kubelet's --seccomp-default: RuntimeDefault for containers whose pod and container set no profile.
   * podsync's default is on (PODSYNC_SECCOMP_DEFAULT); kubelet's is off. */
  seccompDefault: boolean;
  /** kubelet's --allowed-unsafe-sysctls: names or `prefix*` patterns admitted beyond the safe set. */
  allowedUnsafeSysctls: string[];
  /** Whether the host has AppArmor enabled; undefined when podsync cannot tell (Workers). */
  appArmorEnabled?: boolean | undefined;
}

export const defaultNodeConfig = (): NodeConfig => ({
  podLogsDir: "/var/log/pods",
  rootDir: "/var/lib/podsync",
  cgroupParent: "",
  clusterDNS: [],
  clusterDomain: "cluster.local",
  hostDNS: { servers: [], searches: [], options: [] },
  memoryCapacity: 8 * 2 ** 30,
  seccompDefault: true,
  allowedUnsafeSysctls: [],
});
