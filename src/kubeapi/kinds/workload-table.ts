// The Table columns and cells of the workload kinds, as the API server makes them for kubectl
// (pkg/printers/internalversion/printers.go: deploymentColumnDefinitions/printDeployment, replicaSet…,
// statefulSet…, daemonSet…, job…, cronJob…, persistentVolumeClaim…, replicationController…,
// horizontalPodAutoscaler… (formatHPAMetrics), podDisruptionBudget…, with layoutContainerCells and
// metav1.FormatLabelSelector). The wide columns (priority 1) are CONTAINERS, IMAGES and SELECTOR.
import type { WorkloadKind } from "../../pod/workloads/schema.js";
import { humanDuration, type TableColumn } from "../table.js";
import type { V1Workload } from "./workload-feed.js";
import { SERVICE_COLUMNS, serviceCells } from "./service-table.js";

const col = (
  name: string,
  description: string,
  o: { priority?: number; type?: string; format?: string } = {},
): TableColumn => ({ name, type: o.type ?? "string", format: o.format ?? "", description, priority: o.priority ?? 0 });
const NAME = col("Name", "Name must be unique within a namespace.", { format: "name" });
const AGE = col("Age", "CreationTimestamp is a timestamp representing the server time when this object was created.");
const CONTAINERS = col("Containers", "Names of each container in the template.", { priority: 1 });
const IMAGES = col("Images", "Images referenced by each container in the template.", { priority: 1 });
const SELECTOR = col("Selector", "Label selector for pods.", { priority: 1 });
const int = (name: string, description: string) => col(name, description, { type: "integer" });

export const WORKLOAD_COLUMNS: Record<WorkloadKind, TableColumn[]> = {
  Deployment: [
    NAME,
    col("Ready", "Number of the pod with ready state"),
    col(
      "Up-to-date",
      "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    col(
      "Available",
      "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  ReplicaSet: [
    NAME,
    int("Desired", "Replicas is the number of desired pods."),
    int("Current", "Replicas is the most recently observed number of non-terminating pods."),
    int("Ready", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  StatefulSet: [NAME, col("Ready", "Number of the pod with ready state"), AGE, CONTAINERS, IMAGES],
  DaemonSet: [
    NAME,
    int(
      "Desired",
      "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).",
    ),
    int(
      "Current",
      "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
    ),
    int(
      "Ready",
      "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
    ),
    int("Up-to-date", "The total number of nodes that are running updated daemon pod"),
    int(
      "Available",
      "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
    ),
    col("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  Job: [
    NAME,
    col("Status", "Status of the job."),
    col("Completions", "The number of pods which reached phase Succeeded."),
    col("Duration", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  CronJob: [
    NAME,
    col("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    col(
      "Timezone",
      "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
    ),
    col(
      "Suspend",
      "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.",
      { type: "boolean" },
    ),
    int("Active", "A list of pointers to currently running jobs."),
    col("Last Schedule", "Information when was the last time the job was successfully scheduled."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  ReplicationController: [
    NAME,
    int("Desired", "Replicas is the number of desired replicas."),
    int("Current", "Replicas is the most recently observed number of replicas."),
    int("Ready", "The number of ready replicas for this replication controller."),
    AGE,
    CONTAINERS,
    IMAGES,
    col("Selector", "Selector is a label query over pods that should match the Replicas count.", { priority: 1 }),
  ],
  HorizontalPodAutoscaler: [
    NAME,
    col("Reference", "scaleTargetRef points to the target resource to scale."),
    col("Targets", "metrics contains the specifications for which to use to calculate the desired replica count."),
    col("MinPods", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down."),
    int("MaxPods", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up."),
    int("Replicas", "currentReplicas is current number of replicas of pods managed by this autoscaler."),
    AGE,
  ],
  PodDisruptionBudget: [
    NAME,
    col(
      "Min Available",
      'An eviction is allowed if at least "minAvailable" pods selected by "selector" will still be available after the eviction.',
    ),
    col(
      "Max Unavailable",
      'An eviction is allowed if at most "maxUnavailable" pods selected by "selector" are unavailable after the eviction.',
    ),
    int("Allowed Disruptions", "Number of pod disruptions that are currently allowed."),
    AGE,
  ],
  PersistentVolumeClaim: [
    NAME,
    col("Status", "phase represents the current phase of PersistentVolumeClaim."),
    col("Volume", "volumeName is the binding reference to the PersistentVolume backing this claim."),
    col("Capacity", "capacity represents the actual resources of the underlying volume."),
    col("Access Modes", "accessModes contains the actual access modes the volume backing the PVC has."),
    col("StorageClass", "StorageClass of the pvc"),
    col("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
    AGE,
    col("VolumeMode", "volumeMode defines what type of volume is required by the claim.", { priority: 1 }),
  ],
  Service: SERVICE_COLUMNS,
};

type LabelSelector =
  | { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }
  | undefined;

/** metav1.FormatLabelSelector: the selector's string form, "<none>" when empty. */
export function formatLabelSelector(s: LabelSelector): string {
  if (!s) return "<none>";
  const parts: string[] = Object.entries(s.matchLabels ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);
  for (const e of s.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(",");
    if (e.operator === "In") parts.push(`${e.key} in (${values})`);
    else if (e.operator === "NotIn") parts.push(`${e.key} notin (${values})`);
    else if (e.operator === "Exists") parts.push(e.key);
    else if (e.operator === "DoesNotExist") parts.push(`!${e.key}`);
  }
  // LabelSelectorAsSelector sorts the requirements by key.
  const sorted = parts.sort((a, b) => {
    const key = (p: string) => p.replace(/^!/, "").split(/[= ]/)[0]!;
    return key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
  });
  return sorted.length ? sorted.join(",") : "<none>";
}

/** labels.FormatLabels: "k=v,..." sorted, "<none>" when empty. */
const formatLabels = (m: Record<string, string> | undefined) => {
  const s = Object.entries(m ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  return s || "<none>";
};

/** layoutContainerCells: the template's container names and images, comma separated. */
function containerCells(
  template: { spec?: { containers?: { name: string; image?: string }[] } } | undefined,
): [string, string] {
  const cs = template?.spec?.containers ?? [];
  return [cs.map((c) => c.name).join(","), cs.map((c) => c.image ?? "").join(",")];
}

const since = (t: string | null | undefined, now: number) => (t ? humanDuration(now - Date.parse(t)) : "<unknown>");
const n = (v: unknown) => (typeof v === "number" ? v : 0);
const hasCondition = (o: V1Workload, type: string) =>
  ((o.status["conditions"] as { type: string; status: string }[] | undefined) ?? []).find((c) => c.type === type)
    ?.status === "True";
/** GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order. */
const accessModes = (modes: string[] | undefined) =>
  (
    [
      ["ReadWriteOnce", "RWO"],
      ["ReadOnlyMany", "ROX"],
      ["ReadWriteMany", "RWX"],
      ["ReadWriteOncePod", "RWOP"],
    ] as const
  )
    .filter(([m]) => (modes ?? []).includes(m))
    .map(([, s]) => s)
    .join(",");

type MetricSpec = { type: string; resource?: ResourceMetric; containerResource?: ResourceMetric };
type ResourceMetric = { name: string; target: { averageUtilization?: number; averageValue?: string | number } };
type MetricStatus = {
  resource?: { current: { averageUtilization?: number; averageValue?: string } };
  containerResource?: { current: { averageUtilization?: number; averageValue?: string } };
};

/** formatHPAMetrics (the Resource and ContainerResource cases; at most 2, then "+ N more..."). */
export function formatHPAMetrics(specs: MetricSpec[], statuses: MetricStatus[]): string {
  if (specs.length === 0) return "<none>";
  const list = specs.map((spec, i) => {
    const m =
      spec.type === "Resource" ? spec.resource : spec.type === "ContainerResource" ? spec.containerResource : undefined;
    if (!m) return "<unknown type>";
    const cur = spec.type === "Resource" ? statuses[i]?.resource?.current : statuses[i]?.containerResource?.current;
    if (m.target.averageValue !== undefined)
      return `${m.name}: ${cur?.averageValue ?? "<unknown>"}/${m.target.averageValue}`;
    const current = cur?.averageUtilization !== undefined ? `${cur.averageUtilization}%` : "<unknown>";
    const target = m.target.averageUtilization !== undefined ? `${m.target.averageUtilization}%` : "<auto>";
    return `${m.name}: ${current}/${target}`;
  });
  return list.length > 2 ? `${list.slice(0, 2).join(", ")} + ${list.length - 2} more...` : list.join(", ");
}

/** printJob: its state, completions, duration. */
function jobCells(o: V1Workload, now: number): (string | number)[] {
  const { spec, status } = o;
  const age = since(o.metadata.creationTimestamp, now);
  const succeeded = n(status["succeeded"]);
  const completions =
    spec["completions"] !== undefined && spec["completions"] !== null
      ? `${succeeded}/${spec["completions"]}`
      : n(spec["parallelism"]) > 1
        ? `${succeeded}/1 of ${spec["parallelism"]}`
        : `${succeeded}/1`;
  const start = status["startTime"] as string | undefined;
  const end = status["completionTime"] as string | undefined;
  const duration = !start
    ? ""
    : !end
      ? humanDuration(now - Date.parse(start))
      : humanDuration(Date.parse(end) - Date.parse(start));
  const state = hasCondition(o, "Complete")
    ? "Complete"
    : hasCondition(o, "Failed")
      ? "Failed"
      : hasCondition(o, "Suspended")
        ? "Suspended"
        : hasCondition(o, "FailureTarget")
          ? "FailureTarget"
          : "Running";
  return [
    o.metadata.name,
    state,
    completions,
    duration,
    age,
    ...containerCells(spec["template"]),
    formatLabelSelector(spec["selector"]),
  ];
}

/** printCronJob. */
function cronJobCells(o: V1Workload, now: number): (string | number)[] {
  const { spec, status } = o;
  const age = since(o.metadata.creationTimestamp, now);
  const template = spec["jobTemplate"]?.spec;
  return [
    o.metadata.name,
    spec["schedule"],
    spec["timeZone"] ?? "<none>",
    // printBoolPtr
    spec["suspend"] === undefined || spec["suspend"] === null ? "<unset>" : spec["suspend"] ? "True" : "False",
    ((status["active"] as unknown[] | undefined) ?? []).length,
    status["lastScheduleTime"] ? since(status["lastScheduleTime"], now) : "<none>",
    age,
    ...containerCells(template?.template),
    formatLabelSelector(template?.selector),
  ];
}

/** The printer's cells for one workload (every column, the wide ones too). */
export function workloadCells(o: V1Workload, now: number): (string | number)[] {
  const { spec, status } = o;
  const age = since(o.metadata.creationTimestamp, now);
  switch (o.kind) {
    case "Deployment":
      return [
        o.metadata.name,
        `${n(status["readyReplicas"])}/${n(spec["replicas"])}`,
        n(status["updatedReplicas"]),
        n(status["availableReplicas"]),
        age,
        ...containerCells(spec["template"]),
        formatLabelSelector(spec["selector"]),
      ];
    // printReplicaSet and printReplicationController: the same columns; an RC's selector is a plain map.
    case "ReplicaSet":
    case "ReplicationController":
      return [
        o.metadata.name,
        n(spec["replicas"]),
        n(status["replicas"]),
        n(status["readyReplicas"]),
        age,
        ...containerCells(spec["template"]),
        o.kind === "ReplicaSet" ? formatLabelSelector(spec["selector"]) : formatLabels(spec["selector"]),
      ];
    case "StatefulSet":
      return [
        o.metadata.name,
        `${n(status["readyReplicas"])}/${n(spec["replicas"])}`,
        age,
        ...containerCells(spec["template"]),
      ];
    case "DaemonSet":
      return [
        o.metadata.name,
        n(status["desiredNumberScheduled"]),
        n(status["currentNumberScheduled"]),
        n(status["numberReady"]),
        n(status["updatedNumberScheduled"]),
        n(status["numberAvailable"]),
        formatLabels(spec["template"]?.spec?.nodeSelector),
        age,
        ...containerCells(spec["template"]),
        formatLabelSelector(spec["selector"]),
      ];
    case "Job":
      return jobCells(o, now);
    case "CronJob":
      return cronJobCells(o, now);
    case "HorizontalPodAutoscaler":
      return [
        o.metadata.name,
        `${spec["scaleTargetRef"]?.kind}/${spec["scaleTargetRef"]?.name}`,
        formatHPAMetrics(spec["metrics"] ?? [], status["currentMetrics"] ?? []),
        spec["minReplicas"] === undefined ? "<unset>" : String(spec["minReplicas"]),
        n(spec["maxReplicas"]),
        n(status["currentReplicas"]),
        age,
      ];
    case "PodDisruptionBudget":
      return [
        o.metadata.name,
        spec["minAvailable"] === undefined ? "N/A" : String(spec["minAvailable"]),
        spec["maxUnavailable"] === undefined ? "N/A" : String(spec["maxUnavailable"]),
        n(status["disruptionsAllowed"]),
        age,
      ];
    case "PersistentVolumeClaim": {
      const bound = Boolean(spec["volumeName"]);
      const storageClass =
        spec["storageClassName"] ?? o.metadata.annotations?.["volume.beta.kubernetes.io/storage-class"] ?? "";
      return [
        o.metadata.name,
        status["phase"] ?? "",
        spec["volumeName"] ?? "",
        bound ? (status["capacity"]?.storage ?? "") : "",
        bound ? accessModes(status["accessModes"]) : "",
        storageClass,
        spec["volumeAttributesClassName"] ?? "<unset>",
        age,
        spec["volumeMode"] ?? "<unset>",
      ];
    }
    case "Service":
      return serviceCells(o, now);
  }
}
