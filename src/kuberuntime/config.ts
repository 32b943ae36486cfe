// PodSpec → PodSandboxConfig / ContainerConfig, the way kubelet's generatePodSandboxConfig and
// generateContainerConfig build them (kuberuntime_sandbox.go, kuberuntime_container.go, labels.go).
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ContainerConfigSchema,
  NamespaceMode,
  PodSandboxConfigSchema,
  Protocol,
  type ContainerConfig,
  type PodSandboxConfig,
  type KeyValueSchema,
  type Mount,
  type LinuxContainerResourcesSchema,
} from "../gen/runtime/v1/api_pb.js";
import type { Container, Pod } from "../api/pod-schema.js";
import { bytes, milliCPU } from "../api/quantity.js";
import { hashContainer } from "./hash.js";
import * as L from "./labels.js";

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
  /** Node memory capacity in bytes, for Burstable oom_score_adj. */
  memoryCapacity: number;
}

export const defaultNodeConfig = (): NodeConfig => ({
  podLogsDir: "/var/log/pods",
  rootDir: "/var/lib/podsync",
  cgroupParent: "",
  clusterDNS: [],
  clusterDomain: "cluster.local",
  hostDNS: { servers: [], searches: [], options: [] },
  memoryCapacity: 8 * 2 ** 30,
});

/** BuildPodLogsDirectory */
export function podLogsDirectory(node: NodeConfig, pod: Pod): string {
  return `${node.podLogsDir}/${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`;
}

/** newPodLabels: the pod's labels plus the kubelet's identifying ones. */
export function podLabels(pod: Pod): Record<string, string> {
  return {
    ...pod.metadata.labels,
    [L.POD_NAME_LABEL]: pod.metadata.name,
    [L.POD_NAMESPACE_LABEL]: pod.metadata.namespace,
    [L.POD_UID_LABEL]: pod.metadata.uid,
    [L.KUBERNETES_MANAGED_LABEL]: L.MANAGED_BY,
  };
}

/** newContainerLabels */
export function containerLabels(container: Container, pod: Pod): Record<string, string> {
  return {
    [L.POD_NAME_LABEL]: pod.metadata.name,
    [L.POD_NAMESPACE_LABEL]: pod.metadata.namespace,
    [L.POD_UID_LABEL]: pod.metadata.uid,
    [L.CONTAINER_NAME_LABEL]: container.name,
    [L.KUBERNETES_MANAGED_LABEL]: L.MANAGED_BY,
  };
}

/** newContainerAnnotations */
export function containerAnnotations(container: Container, pod: Pod, restartCount: number): Record<string, string> {
  const a: Record<string, string> = {
    [L.CONTAINER_HASH_ANNOTATION]: hashContainer(container),
    [L.CONTAINER_RESTART_COUNT_ANNOTATION]: String(restartCount),
    [L.CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION]: container.terminationMessagePath,
    [L.CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION]: container.terminationMessagePolicy,
    [L.POD_TERMINATION_GRACE_PERIOD_ANNOTATION]: String(pod.spec.terminationGracePeriodSeconds),
  };
  if (container.ports?.length) a[L.CONTAINER_PORTS_ANNOTATION] = JSON.stringify(container.ports);
  return a;
}

/** GeneratePodHostNameAndDomain + GetNodenameForKernel: spec.hostname or the pod name, cut to 63. */
export function podHostname(pod: Pod): string {
  const name = pod.spec.hostname ?? pod.metadata.name;
  return name.length <= 63 ? name : name.slice(0, 63).replace(/[-.]+$/, "");
}

const MAX_DNS_SEARCHES = 32;

/** GetPodDNS for the dnsPolicy values kubelet supports. */
export function podDNS(pod: Pod, node: NodeConfig): { servers: string[]; searches: string[]; options: string[] } {
  let policy = pod.spec.dnsPolicy;
  if (policy === "ClusterFirst" && pod.spec.hostNetwork) policy = "Default";
  if (policy === "ClusterFirstWithHostNet") policy = "ClusterFirst";
  if (policy === "ClusterFirst" && node.clusterDNS.length === 0) policy = "Default";
  let dns: { servers: string[]; searches: string[]; options: string[] };
  switch (policy) {
    case "None":
      dns = { servers: [], searches: [], options: [] };
      break;
    case "ClusterFirst": {
      const ns = pod.metadata.namespace;
      const d = node.clusterDomain;
      dns = { servers: [...node.clusterDNS], searches: [`${ns}.svc.${d}`, `svc.${d}`, d, ...node.hostDNS.searches], options: ["ndots:5"] };
      break;
    }
    default:
      dns = { servers: [...node.hostDNS.servers], searches: [...node.hostDNS.searches], options: [...node.hostDNS.options] };
  }
  const cfg = pod.spec.dnsConfig;
  if (cfg) {
    dns.servers = [...new Set([...dns.servers, ...(cfg.nameservers ?? [])])];
    dns.searches = [...new Set([...dns.searches, ...(cfg.searches ?? [])])];
    const opts = new Map(dns.options.map((o) => [o.split(":")[0]!, o] as const));
    for (const o of cfg.options ?? []) opts.set(o.name, o.value === undefined ? o.name : `${o.name}:${o.value}`);
    dns.options = [...opts.values()];
  }
  dns.searches = dns.searches.slice(0, MAX_DNS_SEARCHES);
  return dns;
}

const PROTOCOL: Record<string, Protocol> = { TCP: Protocol.TCP, UDP: Protocol.UDP, SCTP: Protocol.SCTP };

function namespaceOptions(pod: Pod) {
  return {
    network: pod.spec.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
    pid: pod.spec.hostPID ? NamespaceMode.NODE : NamespaceMode.CONTAINER,
    ipc: pod.spec.hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
  };
}

export function generatePodSandboxConfig(pod: Pod, attempt: number, node: NodeConfig): PodSandboxConfig {
  const sc = pod.spec.securityContext;
  const dns = podDNS(pod, node);
  const anyPrivileged = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some((c) => c.securityContext?.privileged);
  return create(PodSandboxConfigSchema, {
    metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid, attempt },
    // A hostNetwork sandbox gets no hostname: runc cannot set one without a private UTS namespace.
    hostname: pod.spec.hostNetwork ? "" : podHostname(pod),
    logDirectory: podLogsDirectory(node, pod),
    dnsConfig: dns,
    portMappings: pod.spec.containers.flatMap((c) =>
      (c.ports ?? [])
        .filter((p) => p.hostPort !== undefined)
        .map((p) => ({ protocol: PROTOCOL[p.protocol]!, containerPort: p.containerPort, hostPort: p.hostPort!, hostIp: p.hostIP ?? "" })),
    ),
    labels: podLabels(pod),
    annotations: { ...pod.metadata.annotations },
    linux: {
      cgroupParent: node.cgroupParent,
      securityContext: {
        namespaceOptions: namespaceOptions(pod),
        privileged: anyPrivileged,
        runAsUser: sc?.runAsUser !== undefined ? { value: BigInt(sc.runAsUser) } : undefined,
        runAsGroup: sc?.runAsGroup !== undefined ? { value: BigInt(sc.runAsGroup) } : undefined,
        supplementalGroups: [...(sc?.supplementalGroups ?? []), ...(sc?.fsGroup !== undefined ? [sc.fsGroup] : [])].map(BigInt),
      },
      sysctls: Object.fromEntries((sc?.sysctls ?? []).map((s) => [s.name.replaceAll("/", "."), s.value])),
    },
  });
}

/** third_party/forked/golang/expansion: $(VAR) is replaced when VAR is defined, $$ escapes a $. */
export function expand(input: string, vars: ReadonlyMap<string, string>): string {
  if (!input.includes("$")) return input;
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const ch = input[i]!;
    if (ch !== "$" || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const nx = input[i + 1]!;
    if (nx === "$") {
      out += "$";
      i++;
    } else if (nx === "(") {
      const close = input.indexOf(")", i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const val = vars.get(name);
      out += val ?? `$(${name})`;
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}

/** makeEnvironmentVariables: each value may refer to the variables defined before it (later ones win). */
export function containerEnv(container: Container): Map<string, string> {
  const vars = new Map<string, string>();
  for (const e of container.env ?? []) vars.set(e.name, expand(e.value, vars));
  return vars;
}

const utf8 = new TextEncoder();
// CRI KeyValue.value is bytes since cri-api 1.36 (binary env values); ours are UTF-8 text.
const toKeyValues = (vars: Map<string, string>): MessageInitShape<typeof KeyValueSchema>[] =>
  [...vars].map(([key, value]) => ({ key, value: utf8.encode(value) }));

const DEFAULT_MASKED_PATHS = ["/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"];
const DEFAULT_READONLY_PATHS = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

const MIN_SHARES = 2;
const QUOTA_PERIOD = 100_000;
const MIN_QUOTA = 1000;

export type QOSClass = "Guaranteed" | "Burstable" | "BestEffort";

/** v1qos.GetPodQOS over cpu and memory. Requests default to limits (API-server defaulting). */
export function podQOS(pod: Pod): QOSClass {
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  let any = false;
  let guaranteed = true;
  for (const c of all) {
    const lim = c.resources?.limits ?? {};
    const req = { ...lim, ...c.resources?.requests };
    for (const r of ["cpu", "memory"] as const) {
      const rq = req[r] !== undefined ? (r === "cpu" ? milliCPU(req[r]) : bytes(req[r])) : 0;
      const lm = lim[r] !== undefined ? (r === "cpu" ? milliCPU(lim[r]) : bytes(lim[r])) : 0;
      if (rq > 0 || lm > 0) any = true;
      if (lm === 0 || rq !== lm) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

/** qos.GetContainerOOMScoreAdjust */
export function oomScoreAdj(pod: Pod, container: Container, node: NodeConfig): number {
  const qos = podQOS(pod);
  if (qos === "Guaranteed") return -997;
  if (qos === "BestEffort") return 1000;
  const req = container.resources?.requests?.memory ?? container.resources?.limits?.memory;
  const memRequest = req !== undefined ? bytes(req) : 0;
  const adj = 1000 - Math.floor((1000 * memRequest) / node.memoryCapacity);
  return Math.min(999, Math.max(2, adj));
}

export function linuxResources(pod: Pod, container: Container, node: NodeConfig): MessageInitShape<typeof LinuxContainerResourcesSchema> {
  const lim = container.resources?.limits ?? {};
  const req = { ...lim, ...container.resources?.requests };
  const cpuReq = req.cpu !== undefined ? milliCPU(req.cpu) : 0;
  const cpuLim = lim.cpu !== undefined ? milliCPU(lim.cpu) : 0;
  const shares = cpuReq === 0 ? MIN_SHARES : Math.max(MIN_SHARES, Math.floor((cpuReq * 1024) / 1000));
  const quota = cpuLim === 0 ? 0 : Math.max(MIN_QUOTA, Math.floor((cpuLim * QUOTA_PERIOD) / 1000));
  return {
    cpuPeriod: BigInt(QUOTA_PERIOD),
    cpuQuota: BigInt(quota),
    cpuShares: BigInt(shares),
    memoryLimitInBytes: BigInt(lim.memory !== undefined ? bytes(lim.memory) : 0),
    oomScoreAdj: BigInt(oomScoreAdj(pod, container, node)),
  };
}

/** makeMounts for the volume kinds podsync supports (hostPath, emptyDir). */
export function containerMounts(pod: Pod, container: Container, node: NodeConfig): MessageInitShape<typeof import("../gen/runtime/v1/api_pb.js").MountSchema>[] {
  const volumes = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v] as const));
  return (container.volumeMounts ?? []).map((m) => {
    const v = volumes.get(m.name)!;
    const base = "hostPath" in v ? v.hostPath.path : `${node.rootDir}/pods/${pod.metadata.uid}/volumes/kubernetes.io~empty-dir/${v.name}`;
    const hostPath = m.subPath ? `${base.replace(/\/$/, "")}/${m.subPath}` : base;
    return { containerPath: m.mountPath, hostPath, readonly: m.readOnly, selinuxRelabel: false } satisfies Partial<Mount>;
  });
}

/** The user an image runs as (ImageStatus uid / username), for the runAsNonRoot check. */
export interface ImageUser {
  uid: bigint | undefined;
  username: string;
}

/** Whether runAsNonRoot applies and the check needs to know the image's user (no explicit runAsUser). */
export function needsImageUser(pod: Pod, container: Container): boolean {
  const nonRoot = container.securityContext?.runAsNonRoot ?? pod.spec.securityContext?.runAsNonRoot;
  const runAsUser = container.securityContext?.runAsUser ?? pod.spec.securityContext?.runAsUser;
  return nonRoot === true && runAsUser === undefined;
}

/** kubelet's verifyRunAsNonRoot: an error message, or undefined when the container may run. */
export function verifyRunAsNonRoot(pod: Pod, container: Container, image: ImageUser | undefined): string | undefined {
  const nonRoot = container.securityContext?.runAsNonRoot ?? pod.spec.securityContext?.runAsNonRoot;
  if (!nonRoot) return undefined;
  const who = `(pod: "${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})", container: ${container.name})`;
  const runAsUser = container.securityContext?.runAsUser ?? pod.spec.securityContext?.runAsUser;
  if (runAsUser !== undefined) return runAsUser === 0 ? `container's runAsUser breaks non-root policy ${who}` : undefined;
  if (image?.uid !== undefined) return image.uid === 0n ? `container has runAsNonRoot and image will run as root ${who}` : undefined;
  if (image?.username) return `container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root ${who}`;
  // No user in the image config at all: it runs as root.
  return `container has runAsNonRoot and image will run as root ${who}`;
}

export function generateContainerConfig(
  pod: Pod,
  container: Container,
  restartCount: number,
  imageRef: string,
  node: NodeConfig,
): ContainerConfig {
  const vars = containerEnv(container);
  const csc = container.securityContext;
  const psc = pod.spec.securityContext;
  const runAsUser = csc?.runAsUser ?? psc?.runAsUser;
  const runAsGroup = csc?.runAsGroup ?? psc?.runAsGroup;
  const privileged = csc?.privileged ?? false;
  return create(ContainerConfigSchema, {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: imageRef, userSpecifiedImage: container.image },
    command: (container.command ?? []).map((c) => expand(c, vars)),
    args: (container.args ?? []).map((a) => expand(a, vars)),
    workingDir: container.workingDir ?? "",
    envs: toKeyValues(vars),
    mounts: containerMounts(pod, container, node),
    labels: containerLabels(container, pod),
    annotations: containerAnnotations(container, pod, restartCount),
    logPath: `${container.name}/${restartCount}.log`,
    stdin: container.stdin,
    stdinOnce: container.stdinOnce,
    tty: container.tty,
    linux: {
      resources: linuxResources(pod, container, node),
      securityContext: {
        capabilities: { addCapabilities: csc?.capabilities?.add ?? [], dropCapabilities: csc?.capabilities?.drop ?? [] },
        privileged,
        namespaceOptions: namespaceOptions(pod),
        runAsUser: runAsUser !== undefined ? { value: BigInt(runAsUser) } : undefined,
        runAsGroup: runAsGroup !== undefined ? { value: BigInt(runAsGroup) } : undefined,
        readonlyRootfs: csc?.readOnlyRootFilesystem ?? false,
        supplementalGroups: [...(psc?.supplementalGroups ?? []), ...(psc?.fsGroup !== undefined ? [psc.fsGroup] : [])].map(BigInt),
        noNewPrivs: csc?.allowPrivilegeEscalation === false,
        maskedPaths: privileged ? [] : DEFAULT_MASKED_PATHS,
        readonlyPaths: privileged ? [] : DEFAULT_READONLY_PATHS,
      },
    },
  });
}
