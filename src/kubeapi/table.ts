// The meta.k8s.io/v1 Table form (apimachinery/pkg/apis/meta/v1/types.go Table) that kubectl asks for with
// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, with kubectl's columns for pods, nodes and events
// (pkg/printers/internalversion/printers.go: printPod, printNode, printEvent). As the API server does, every
// column is sent, the wide ones (priority 1) too; kubectl shows them only for -o wide.
import type { V1Pod } from "../status/api-status.js";
import type { V1Event } from "./events.js";
import type { V1Node } from "./node-object.js";

export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface TableRow {
  cells: (string | number)[];
  conditions?: { type: string; status: string; reason: string; message: string }[];
  object?: unknown;
}

export interface Table {
  kind: "Table";
  apiVersion: "meta.k8s.io/v1";
  metadata: { resourceVersion?: string; continue?: string };
  columnDefinitions?: TableColumn[];
  rows: TableRow[];
}

/** The `includeObject` query parameter: what each row carries (default Metadata, as the API server). */
export type IncludeObject = "None" | "Metadata" | "Object";

/** k8s.io/apimachinery/pkg/util/duration.HumanDuration */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8)
    return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.floor(hours / 24) % 365;
    return dy === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

const col = (name: string, description: string, priority = 0, format = ""): TableColumn => ({
  name,
  type: "string",
  format,
  description,
  priority,
});
const NAME_COL = col("Name", "Name must be unique within a namespace.", 0, "name");
const AGE_COL = col(
  "Age",
  "CreationTimestamp is a timestamp representing the server time when this object was created.",
);

export const POD_COLUMNS: TableColumn[] = [
  NAME_COL,
  col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
  col("Status", "The aggregate status of the containers in this pod."),
  col(
    "Restarts",
    "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
  ),
  AGE_COL,
  col("IP", "podIP address allocated to the pod.", 1),
  col("Node", "NodeName indicates in which node this pod is scheduled.", 1),
  col("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node.", 1),
  col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness.", 1),
];

export const NODE_COLUMNS: TableColumn[] = [
  NAME_COL,
  col("Status", "The status of the node"),
  col("Roles", "The roles of the node"),
  AGE_COL,
  col("Version", "Kubelet Version reported by the node."),
  col("Internal-IP", "List of addresses reachable to the node. Queried from cloud provider, if available.", 1),
  col("External-IP", "List of addresses reachable to the node. Queried from cloud provider, if available.", 1),
  col("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1),
  col("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
  col(
    "Container-Runtime",
    "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    1,
  ),
];

export const EVENT_COLUMNS: TableColumn[] = [
  col("Last Seen", "The last time this event was recorded."),
  col("Type", "Type of this event (Normal, Warning), new types could be added in the future."),
  col(
    "Reason",
    "This should be a short, machine understandable string that gives the reason for this event being generated.",
  ),
  col("Object", "The object that this event is about."),
  col("Message", "A human-readable description of the status of this operation."),
  col("Subobject", "The field of the object this event is about.", 1),
  col("Source", "The component reporting this event.", 1),
  col("First Seen", "The first time this event was recorded.", 1),
  col("Count", "The number of times this event has occurred.", 1),
  col("Name", NAME_COL.description, 1, "name"),
];

const age = (ts: string | null | undefined, now: number) => (ts ? humanDuration(now - Date.parse(ts)) : "<unknown>");

/** printPod's cells (with the wide ones). */
export function podCells(pod: V1Pod, now: number): string[] {
  const st = pod.status;
  const spec = pod.spec;
  const total = spec?.containers.length ?? st.containerStatuses.length;
  // printPod starts from status.reason (Evicted, DeadlineExceeded); a container's reason below takes its place.
  let reason: string = st.reason || st.phase;
  let restarts = 0;
  let sidecarRestarts = 0;
  let ready = 0;
  let lastRestart = 0;
  let lastSidecarRestart = 0;
  const finished = (c: { lastState: { terminated?: { finishedAt?: string | null } } }) =>
    Date.parse(c.lastState.terminated?.finishedAt ?? "") || 0;
  const sidecars = new Set(
    (spec?.initContainers ?? [])
      .filter((c) => (c as { restartPolicy?: string }).restartPolicy === "Always")
      .map((c) => c.name),
  );
  let initializing = false;
  const inits = st.initContainerStatuses ?? [];
  for (let i = 0; i < inits.length; i++) {
    const c = inits[i]!;
    restarts += c.restartCount;
    lastRestart = Math.max(lastRestart, finished(c));
    if (sidecars.has(c.name)) {
      sidecarRestarts += c.restartCount;
      lastSidecarRestart = Math.max(lastSidecarRestart, finished(c));
    }
    const t = c.state.terminated;
    if (t && t.exitCode === 0) continue;
    if (sidecars.has(c.name) && c.started) {
      if (c.ready) ready++;
      continue;
    }
    if (t) reason = t.reason ? `Init:${t.reason}` : `Init:ExitCode:${t.exitCode}`;
    else if (c.state.waiting?.reason && c.state.waiting.reason !== "PodInitializing")
      reason = `Init:${c.state.waiting.reason}`;
    else reason = `Init:${i}/${spec?.initContainers?.length ?? inits.length}`;
    initializing = true;
    break;
  }
  const condition = (type: string) => st.conditions.some((c) => c.type === type && c.status === "True");
  if (!initializing || condition("Initialized")) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    for (let i = st.containerStatuses.length - 1; i >= 0; i--) {
      const c = st.containerStatuses[i]!;
      restarts += c.restartCount;
      lastRestart = Math.max(lastRestart, finished(c));
      if (c.state.waiting?.reason) reason = c.state.waiting.reason;
      else if (c.state.terminated?.reason) reason = c.state.terminated.reason;
      else if (c.state.terminated) reason = `ExitCode:${c.state.terminated.exitCode}`;
      else if (c.ready && c.state.running) {
        hasRunning = true;
        ready++;
      }
    }
    if (reason === "Completed" && hasRunning) reason = condition("Ready") ? "Running" : "NotReady";
  }
  // printPod: a pod being deleted is Terminating until it is gone (unless its phase is already terminal).
  if (pod.metadata.deletionTimestamp && st.reason === "NodeLost") reason = "Unknown";
  else if (pod.metadata.deletionTimestamp && st.phase !== "Succeeded" && st.phase !== "Failed") reason = "Terminating";
  const gates = (spec as { readinessGates?: { conditionType: string }[] } | undefined)?.readinessGates ?? [];
  return [
    pod.metadata.name,
    `${ready}/${total}`,
    reason,
    restarts !== 0 && lastRestart ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts),
    age(pod.metadata.creationTimestamp, now),
    st.podIPs?.[0]?.ip || "<none>",
    spec?.nodeName || "<none>",
    "<none>",
    gates.length
      ? `${gates.filter((g) => st.conditions.some((c) => c.type === g.conditionType && c.status === "True")).length}/${gates.length}`
      : "<none>",
  ];
}

export function podRowConditions(pod: V1Pod): TableRow["conditions"] {
  if (pod.status.phase === "Succeeded")
    return [{ type: "Completed", status: "True", reason: "Succeeded", message: "The pod has completed successfully." }];
  if (pod.status.phase === "Failed")
    return [{ type: "Completed", status: "True", reason: "Failed", message: "The pod failed." }];
  return undefined;
}

/** printNode's cells. */
export function nodeCells(node: V1Node, now: number): string[] {
  const ready = node.status.conditions.find((c) => c.type === "Ready");
  const status = ready?.status === "True" ? "Ready" : ready?.status === "False" ? "NotReady" : "Unknown";
  const roles = Object.keys(node.metadata.labels)
    .flatMap((k) =>
      k.startsWith("node-role.kubernetes.io/")
        ? [k.slice("node-role.kubernetes.io/".length)]
        : k === "kubernetes.io/role"
          ? [node.metadata.labels[k]!]
          : [],
    )
    .filter(Boolean)
    .sort();
  const address = (t: string) => node.status.addresses.find((a) => a.type === t)?.address ?? "<none>";
  const info = node.status.nodeInfo;
  return [
    node.metadata.name,
    status + (node.spec.unschedulable ? ",SchedulingDisabled" : ""),
    roles.length ? roles.join(",") : "<none>",
    age(node.metadata.creationTimestamp, now),
    info.kubeletVersion,
    address("InternalIP"),
    address("ExternalIP"),
    info.osImage || "<unknown>",
    info.kernelVersion || "<unknown>",
    info.containerRuntimeVersion || "<unknown>",
  ];
}

/** printEvent's cells. */
export function eventCells(e: V1Event, now: number): (string | number)[] {
  const o = e.involvedObject;
  return [
    age(e.lastTimestamp, now),
    e.type,
    e.reason,
    `${o.kind.toLowerCase()}/${o.name}`,
    e.message.trim(),
    o.fieldPath ?? "",
    `${e.source.component}, ${e.source.host}`,
    age(e.firstTimestamp, now),
    e.count,
    e.metadata.name,
  ];
}

/** A row's object as `includeObject` asks: the whole object, or its metadata as a PartialObjectMetadata. */
export function rowObject(obj: { metadata: unknown }, include: IncludeObject): unknown {
  if (include === "None") return undefined;
  if (include === "Object") return obj;
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: obj.metadata };
}

export function table<T extends { metadata: unknown }>(
  columns: TableColumn[] | undefined,
  items: readonly T[],
  cells: (item: T) => (string | number)[],
  include: IncludeObject,
  meta: Table["metadata"],
  conditions?: (item: T) => TableRow["conditions"],
): Table {
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: meta,
    ...(columns ? { columnDefinitions: columns } : {}),
    rows: items.map((it) => {
      const c = conditions?.(it);
      const object = rowObject(it, include);
      return { cells: cells(it), ...(c ? { conditions: c } : {}), ...(object ? { object } : {}) };
    }),
  };
}

/** The Accept header asks for a Table (`as=Table;g=meta.k8s.io;v=v1`, or v1beta1). */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? "").split(",").some((part) => {
    const params = part.split(";").map((p) => p.trim());
    return (
      params.includes("as=Table") &&
      params.includes("g=meta.k8s.io") &&
      (params.includes("v=v1") || params.includes("v=v1beta1"))
    );
  });
}
