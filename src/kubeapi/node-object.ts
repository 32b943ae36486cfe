// This node as a v1.Node (kubelet's node status setters, pkg/kubelet/nodestatus/setters.go): labels and
// taints as admission sees them, capacity and allocatable, the pressure conditions and the Ready condition from
// the runtime's own status (CRI Status: RuntimeReady, and NetworkReady for the message), nodeInfo from CRI
// Version, addresses.
//
// The pressure conditions are setters.go's MemoryPressureCondition, DiskPressureCondition and
// PIDPressureCondition, in kubelet's order before Ready. DiskPressure comes from the eviction manager
// (src/eviction/manager.ts: the hard threshold on nodefs.available); podsync watches no memory or PID
// threshold, so those two are False as a kubelet reports them without pressure. Under disk pressure the Node
// also carries the node.kubernetes.io/disk-pressure:NoSchedule taint: in a cluster the node lifecycle
// controller adds it from the condition (TaintNodesByCondition), not kubelet; with no controller here, the
// node shows it itself. It is shown, not applied: podsync's admission reads the owner's taints only.
import type { NodeInfo } from "../lifecycle/predicates.js";
import type { RuntimeReadiness } from "../kubelet/pod-runtime.js";
import { apiTime } from "../status/api-status.js";
import { KUBE_GIT_VERSION } from "./discovery.js";

export interface NodeCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  lastHeartbeatTime: string | null;
  lastTransitionTime: string | null;
  reason: string;
  message: string;
}

export interface V1Node {
  apiVersion: "v1";
  kind: "Node";
  metadata: {
    name: string;
    uid: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    creationTimestamp: string | null;
    resourceVersion?: string;
  };
  spec: { taints?: { key: string; value?: string; effect: string }[]; unschedulable?: boolean };
  status: {
    capacity: Record<string, string>;
    allocatable: Record<string, string>;
    conditions: NodeCondition[];
    addresses: { type: "InternalIP" | "Hostname"; address: string }[];
    daemonEndpoints: { kubeletEndpoint: { Port: number } };
    nodeInfo: {
      machineID: string;
      systemUUID: string;
      bootID: string;
      kernelVersion: string;
      osImage: string;
      containerRuntimeVersion: string;
      kubeletVersion: string;
      kubeProxyVersion: string;
      operatingSystem: "linux";
      architecture: string;
    };
  };
}

/** What the node knows of itself that CRI does not tell (Node: os.cpus, /etc/os-release, uname; Workers: less). */
export interface NodeFacts {
  info: NodeInfo;
  /** Machine capacity, when known. */
  cpus?: number | undefined;
  memoryBytes?: number | undefined;
  hostIPs: readonly string[];
  hostname?: string | undefined;
  kernelVersion?: string | undefined;
  osImage?: string | undefined;
  machineID?: string | undefined;
  bootID?: string | undefined;
  /** When this podsync started (the Node's creationTimestamp). */
  startedAt: number;
  port?: number | undefined;
}

const cpu = (milli: number) => (milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`);
const memory = (bytes: number) => (bytes % 1024 === 0 ? `${bytes / 1024}Ki` : String(bytes));

/** What the eviction manager says of the node: under disk pressure or not, since when (ms); undefined: the
 * disk is not watched (no threshold set), which kubelet reports as no pressure. */
export interface NodePressure {
  disk?: { pressure: boolean; since: number } | undefined;
}

export const DISK_PRESSURE_TAINT = { key: "node.kubernetes.io/disk-pressure", effect: "NoSchedule" } as const;

/** setters.go's pressure conditions, MemoryPressure, DiskPressure, PIDPressure, in that order. */
function pressureConditions(p: NodePressure, startedAt: number, heartbeat: string | null): NodeCondition[] {
  const cond = (
    type: string,
    on: boolean,
    since: number,
    yes: [string, string],
    no: [string, string],
  ): NodeCondition => {
    const [reason, message] = on ? yes : no;
    return {
      type,
      status: on ? "True" : "False",
      lastHeartbeatTime: heartbeat,
      lastTransitionTime: apiTime(since),
      reason,
      message,
    };
  };
  return [
    cond(
      "MemoryPressure",
      false,
      startedAt,
      ["KubeletHasInsufficientMemory", "kubelet has insufficient memory available"],
      ["KubeletHasSufficientMemory", "kubelet has sufficient memory available"],
    ),
    cond(
      "DiskPressure",
      p.disk?.pressure ?? false,
      p.disk?.since ?? startedAt,
      ["KubeletHasDiskPressure", "kubelet has disk pressure"],
      ["KubeletHasNoDiskPressure", "kubelet has no disk pressure"],
    ),
    cond(
      "PIDPressure",
      false,
      startedAt,
      ["KubeletHasInsufficientPID", "kubelet has insufficient PID available"],
      ["KubeletHasSufficientPID", "kubelet has sufficient PID available"],
    ),
  ];
}

export function nodeObject(
  f: NodeFacts,
  runtime: RuntimeReadiness | undefined,
  now: number,
  pressure: NodePressure = {},
): V1Node {
  const info = f.info;
  const capacity: Record<string, string> = {};
  const allocatable: Record<string, string> = {};
  if (f.cpus) capacity["cpu"] = String(f.cpus);
  if (f.memoryBytes) capacity["memory"] = memory(f.memoryBytes);
  if (info.allocatable.pods) capacity["pods"] = String(info.allocatable.pods);
  if (info.allocatable.milliCPU !== undefined) allocatable["cpu"] = cpu(info.allocatable.milliCPU);
  else if (capacity["cpu"]) allocatable["cpu"] = capacity["cpu"];
  if (info.allocatable.memory !== undefined) allocatable["memory"] = memory(info.allocatable.memory);
  else if (capacity["memory"]) allocatable["memory"] = capacity["memory"];
  if (capacity["pods"]) allocatable["pods"] = capacity["pods"];
  const t = apiTime(now);
  const conditions = runtime?.runtime.conditions ?? {};
  // kubelet's ReadyCondition: not ready while the runtime is not (its message names what is not ready).
  const notReady = Object.entries(conditions)
    .filter(([type, ok]) => !ok && (type === "RuntimeReady" || type === "NetworkReady"))
    .map(([type]) => type);
  const ready: NodeCondition = !runtime
    ? {
        type: "Ready",
        status: "Unknown",
        lastHeartbeatTime: t,
        lastTransitionTime: t,
        reason: "NodeStatusUnknown",
        message: "the container runtime did not answer",
      }
    : !runtime.ok || notReady.length
      ? {
          type: "Ready",
          status: "False",
          lastHeartbeatTime: t,
          lastTransitionTime: t,
          reason: "KubeletNotReady",
          message: `container runtime status check may not have completed yet: ${notReady.map((c) => `${c}=false`).join(", ") || "runtime not ready"}`,
        }
      : {
          type: "Ready",
          status: "True",
          lastHeartbeatTime: t,
          lastTransitionTime: apiTime(f.startedAt),
          reason: "KubeletReady",
          message: "kubelet is posting ready status",
        };
  const rt = runtime?.runtime;
  const taints: { key: string; value?: string; effect: string }[] = info.taints.map((x) => ({
    key: x.key,
    ...(x.value ? { value: x.value } : {}),
    effect: x.effect,
  }));
  if (pressure.disk?.pressure && !taints.some((x) => x.key === DISK_PRESSURE_TAINT.key))
    taints.push({ ...DISK_PRESSURE_TAINT });
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: info.name,
      uid: info.name,
      labels: { ...info.labels },
      annotations: { "node.alpha.kubernetes.io/ttl": "0" },
      creationTimestamp: apiTime(f.startedAt),
    },
    spec: taints.length ? { taints } : {},
    status: {
      capacity,
      allocatable,
      conditions: [...pressureConditions(pressure, f.startedAt, t), ready],
      addresses: [
        ...f.hostIPs.map((address) => ({ type: "InternalIP" as const, address })),
        { type: "Hostname" as const, address: f.hostname ?? info.name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: f.port ?? 0 } },
      nodeInfo: {
        machineID: f.machineID ?? "",
        systemUUID: "",
        bootID: f.bootID ?? "",
        kernelVersion: f.kernelVersion ?? "",
        osImage: f.osImage ?? "",
        containerRuntimeVersion: rt ? `${rt.name}://${rt.version}` : "",
        kubeletVersion: KUBE_GIT_VERSION,
        kubeProxyVersion: "",
        operatingSystem: "linux",
        architecture: info.labels["kubernetes.io/arch"] ?? "",
      },
    },
  };
}
