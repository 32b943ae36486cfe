// kubectl describe for workloads (staging/src/k8s.io/kubectl/pkg/describe/describe.go: DeploymentDescriber,
// ReplicaSetDescriber, StatefulSetDescriber, DaemonSetDescriber, JobDescriber, CronJobDescriber, DescribePodTemplate,
// describeContainers, DescribeEvents), pure: the node's objects in, kubectl's lines out. Written, as kubectl
// writes them, through a tab writer (minwidth 0, padding 2) with two spaces per level.
type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const arr = (v: unknown): Obj[] => (Array.isArray(v) ? (v as Obj[]) : []);
const num = (v: unknown) => (typeof v === "number" ? v : 0);

/** Go's text/tabwriter (minwidth 0, padding 2): a column is aligned over the consecutive lines that have it. */
export function tabwrite(lines: readonly string[]): string[] {
  const cells = lines.map((l) => l.split("\t"));
  const widths = cells.map((c) => new Array<number>(Math.max(0, c.length - 1)).fill(0));
  const format = (start: number, end: number, col: number): void => {
    for (let i = start; i < end; ) {
      if (cells[i]!.length - 1 <= col) {
        i++;
        continue;
      }
      let j = i;
      let w = 0;
      for (; j < end && cells[j]!.length - 1 > col; j++) w = Math.max(w, cells[j]![col]!.length + 2);
      for (let k = i; k < j; k++) widths[k]![col] = w;
      format(i, j, col + 1);
      i = j;
    }
  };
  format(0, lines.length, 0);
  return cells.map((c, i) => c.map((x, j) => (j < c.length - 1 ? x.padEnd(widths[i]![j]!) : x)).join(""));
}

const indent = (level: number) => "  ".repeat(level);

/** printLabelsMultiline / printAnnotationsMultiline: one `k=v` per line, sorted, `<none>` when empty. */
function multiline(title: string, m: unknown, level = 0, sep = "="): string[] {
  const keys = Object.keys(rec(m)).sort();
  if (!keys.length) return [`${indent(level)}${title}:\t<none>`];
  return keys.map(
    (k, i) => `${i ? `${indent(level)}\t` : `${indent(level)}${title}:\t`}${k}${sep}${String(rec(m)[k])}`,
  );
}

/** metav1.FormatLabelSelector: matchLabels as k=v, matchExpressions as kubectl writes them. */
export function selectorString(sel: unknown): string {
  const s = rec(sel);
  const parts = Object.entries(rec(s["matchLabels"])).map(([k, v]) => `${k}=${String(v)}`);
  for (const e of arr(s["matchExpressions"])) {
    const values = (e["values"] as string[] | undefined) ?? [];
    const op = String(e["operator"]);
    parts.push(
      op === "Exists"
        ? String(e["key"])
        : op === "DoesNotExist"
          ? `!${String(e["key"])}`
          : `${String(e["key"])} ${op.toLowerCase()} (${values.join(",")})`,
    );
  }
  return parts.length ? parts.join(",") : "<none>";
}

/** DescribePodTemplate: labels, annotations, containers (image, ports, command, env, mounts), volumes. */
export function podTemplateLines(template: unknown, level = 0): string[] {
  const t = rec(template);
  const meta = rec(t["metadata"]);
  const spec = rec(t["spec"]);
  const out = [`${indent(level)}Pod Template:`, ...multiline("Labels", meta["labels"], level + 1)];
  if (Object.keys(rec(meta["annotations"])).length)
    out.push(...multiline("Annotations", meta["annotations"], level + 1));
  if (typeof spec["serviceAccountName"] === "string")
    out.push(`${indent(level + 1)}Service Account:\t${spec["serviceAccountName"]}`);
  const containers = (label: string, list: Obj[]) => {
    out.push(`${indent(level + 1)}${label}:${list.length ? "" : " <none>"}`);
    for (const c of list) {
      const l2 = indent(level + 2);
      out.push(`${indent(level + 1)} ${String(c["name"])}:`);
      out.push(`${l2}Image:\t${String(c["image"])}`);
      const ports = arr(c["ports"]);
      const p = ports.map((x) => `${num(x["containerPort"])}/${String(x["protocol"] ?? "TCP")}`).join(", ");
      const hp = ports.map((x) => `${num(x["hostPort"])}/${String(x["protocol"] ?? "TCP")}`).join(", ");
      out.push(`${l2}${ports.length > 1 ? "Ports" : "Port"}:\t${p || "<none>"}`);
      out.push(`${l2}${ports.length > 1 ? "Host Ports" : "Host Port"}:\t${hp || "<none>"}`);
      for (const [field, title] of [
        ["command", "Command"],
        ["args", "Args"],
      ] as const) {
        const words = c[field] as string[] | undefined;
        if (words?.length) out.push(`${l2}${title}:`, ...words.map((w) => `${l2}  ${w.replace(/\n/g, `\n${l2}  `)}`));
      }
      const env = arr(c["env"]);
      if (!env.length) out.push(`${l2}Environment:\t<none>`);
      else {
        out.push(`${l2}Environment:`);
        for (const e of env) {
          const from = rec(e["valueFrom"]);
          const ref = rec(from["configMapKeyRef"] ?? from["secretKeyRef"]);
          const v =
            e["value"] !== undefined
              ? String(e["value"])
              : ref["key"] !== undefined
                ? `<set to the key '${String(ref["key"])}' ${from["secretKeyRef"] ? "in secret" : "of config map"} '${String(ref["name"])}'>\tOptional: ${ref["optional"] === true}`
                : "";
          out.push(`${l2}  ${String(e["name"])}:\t${v}`);
        }
      }
      const mounts = arr(c["volumeMounts"]);
      if (!mounts.length) out.push(`${l2}Mounts:\t<none>`);
      else {
        out.push(`${l2}Mounts:`);
        for (const m of mounts)
          out.push(`${l2}  ${String(m["mountPath"])} from ${String(m["name"])} (${m["readOnly"] ? "ro" : "rw"})`);
      }
    }
  };
  if (arr(spec["initContainers"]).length) containers("Init Containers", arr(spec["initContainers"]));
  containers("Containers", arr(spec["containers"]));
  const volumes = arr(spec["volumes"]);
  if (!volumes.length) out.push(`${indent(level + 1)}Volumes:\t<none>`);
  else {
    out.push(`${indent(level + 1)}Volumes:`);
    for (const v of volumes) {
      const [type, src] = Object.entries(v).find(([k]) => k !== "name") ?? ["", {}];
      out.push(`${indent(level + 2)}${String(v["name"])}:`);
      out.push(`${indent(level + 3)}Type:\t${volumeType(type)}`);
      for (const [k, x] of Object.entries(rec(src)))
        out.push(
          `${indent(level + 3)}${k[0]!.toUpperCase()}${k.slice(1)}:\t${typeof x === "object" ? JSON.stringify(x) : String(x)}`,
        );
    }
  }
  out.push(...multiline("Node-Selectors", spec["nodeSelector"], level + 1));
  const tol = arr(spec["tolerations"]);
  out.push(
    `${indent(level + 1)}Tolerations:\t${tol.length ? tol.map((x) => `${String(x["key"] ?? "")}${x["operator"] === "Exists" ? "" : `=${String(x["value"] ?? "")}`}${x["effect"] ? `:${String(x["effect"])}` : ""}`).join(", ") : "<none>"}`,
  );
  return out;
}

/** describe.go's words for each volume source. */
function volumeType(k: string): string {
  const t: Record<string, string> = {
    emptyDir: "EmptyDir (a temporary directory that shares a pod's lifetime)",
    hostPath: "HostPath (bare host directory volume)",
    configMap: "ConfigMap (a volume populated by a ConfigMap)",
    secret: "Secret (a volume populated by a Secret)",
    persistentVolumeClaim: "PersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)",
    projected: "Projected (a volume that contains injected data from multiple sources)",
    downwardAPI: "DownwardAPI (a volume populated by information about the pod)",
  };
  return t[k] ?? k;
}

/** kubectl's time in describe: RFC 1123 with a numeric zone (Mon, 07 Dec 2026 03:00:00 +0000), in UTC. */
export function rfc1123z(iso: unknown): string {
  const d = new Date(String(iso));
  if (Number.isNaN(d.getTime())) return "<unknown>";
  return d.toUTCString().replace("GMT", "+0000");
}

export interface DescribeInput {
  obj: Obj;
  /** The ReplicaSets a Deployment owns (for OldReplicaSets / NewReplicaSet), the pods a workload owns. */
  children?: Obj[];
  pods?: Obj[];
  events?: Obj[];
  now: number;
}

const head = (o: Obj): string[] => {
  const m = rec(o["metadata"]);
  return [`Name:\t${String(m["name"])}`, `Namespace:\t${String(m["namespace"] ?? "default")}`];
};

/** `Pods Status:  1 Running / 0 Waiting / 0 Succeeded / 0 Failed` (getPodStatusForController). */
function podsStatus(pods: Obj[] = []): string {
  const n = (phase: string) => pods.filter((p) => rec(p["status"])["phase"] === phase).length;
  return `Pods Status:\t${n("Running")} Running / ${n("Pending")} Waiting / ${n("Succeeded")} Succeeded / ${n("Failed")} Failed`;
}

/** DescribeEvents: `Events:  <none>`, or kubectl's table (ages as kubectl's describe shows them). */
function events(list: Obj[] = [], now: number): string[] {
  if (!list.length) return ["Events:\t<none>"];
  const age = (t: unknown) => {
    const s = Math.max(0, Math.floor((now - Date.parse(String(t))) / 1000));
    return s < 120 ? `${s}s` : s < 7200 ? `${Math.floor(s / 60)}m` : `${Math.floor(s / 3600)}h`;
  };
  return [
    "Events:",
    "  Type\tReason\tAge\tFrom\tMessage",
    "  ----\t------\t----\t----\t-------",
    ...list.map(
      (e) =>
        `  ${String(e["type"] ?? "Normal")}\t${String(e["reason"] ?? "")}\t${age(e["lastTimestamp"] ?? e["eventTime"])}\t${String(rec(e["source"])["component"] ?? "")}\t${String(e["message"] ?? "")}`,
    ),
  ];
}

function conditions(st: Obj, withReason: boolean): string[] {
  const cs = arr(st["conditions"]);
  if (!cs.length) return [];
  return [
    "Conditions:",
    `  Type\tStatus${withReason ? "\tReason" : ""}`,
    `  ----\t------${withReason ? "\t------" : ""}`,
    ...cs.map(
      (c) => `  ${String(c["type"])} \t${String(c["status"])} ${withReason ? `\t${String(c["reason"] ?? "")}` : ""}`,
    ),
  ];
}

/** The lines of `kubectl describe KIND NAME` for one workload. */
export function describeWorkload(d: DescribeInput): string {
  const o = d.obj;
  const m = rec(o["metadata"]);
  const lines: string[] = [...head(o)];
  const common = () => {
    lines.push(`CreationTimestamp:\t${rfc1123z(m["creationTimestamp"])}`);
    lines.push(...multiline("Labels", m["labels"]), ...multiline("Annotations", m["annotations"], 0, ": "));
  };
  const kind = String(o["kind"]);
  if (kind === "Deployment") deploymentLines(d, lines, common);
  else if (kind === "ReplicaSet" || kind === "StatefulSet" || kind === "DaemonSet") setLines(d, lines, common);
  else if (kind === "Job") jobLines(d, lines);
  else if (kind === "CronJob") cronJobLines(d, lines, common);
  else lines.push(`Kind:\t${kind}`);
  lines.push(...events(d.events, d.now));
  return `${tabwrite(lines).join("\n")}\n`;
}

function deploymentLines(d: DescribeInput, lines: string[], common: () => void): void {
  const o = d.obj;
  const spec = rec(o["spec"]);
  const st = rec(o["status"]);
  common();
  lines.push(`Selector:\t${selectorString(spec["selector"])}`);
  lines.push(
    `Replicas:\t${num(spec["replicas"])} desired | ${num(st["updatedReplicas"])} updated | ${num(st["replicas"])} total | ${num(st["availableReplicas"])} available | ${num(st["unavailableReplicas"])} unavailable`,
  );
  const strategy = rec(spec["strategy"]);
  lines.push(`StrategyType:\t${String(strategy["type"] ?? "RollingUpdate")}`);
  lines.push(`MinReadySeconds:\t${num(spec["minReadySeconds"])}`);
  if (strategy["type"] !== "Recreate") {
    const ru = rec(strategy["rollingUpdate"]);
    lines.push(
      `RollingUpdateStrategy:\t${String(ru["maxUnavailable"] ?? "25%")} max unavailable, ${String(ru["maxSurge"] ?? "25%")} max surge`,
    );
  }
  lines.push(...podTemplateLines(spec["template"]), ...conditions(st, true));
  const rs = d.children ?? [];
  const replicas = (r: Obj) =>
    `${String(rec(r["metadata"])["name"])} (${num(rec(r["status"])["replicas"])}/${num(rec(r["spec"])["replicas"])} replicas created)`;
  const rev = (r: Obj) => Number(rec(rec(r["metadata"])["annotations"])["deployment.kubernetes.io/revision"] ?? 0);
  const newest = [...rs].sort((a, b) => rev(b) - rev(a))[0];
  const olds = rs.filter((r) => r !== newest && num(rec(r["spec"])["replicas"]) > 0);
  lines.push(`OldReplicaSets:\t${olds.length ? olds.map(replicas).join(", ") : "<none>"}`);
  lines.push(`NewReplicaSet:\t${newest ? replicas(newest) : "<none>"}`);
}

function setLines(d: DescribeInput, lines: string[], common: () => void): void {
  const o = d.obj;
  const m = rec(o["metadata"]);
  const spec = rec(o["spec"]);
  const st = rec(o["status"]);
  if (o["kind"] === "DaemonSet") {
    lines.push(`Selector:\t${selectorString(spec["selector"])}`);
    lines.push(
      `Node-Selector:\t${
        Object.entries(rec(rec(rec(spec["template"])["spec"])["nodeSelector"]))
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(",") || "<none>"
      }`,
    );
    lines.push(...multiline("Labels", m["labels"]), ...multiline("Annotations", m["annotations"], 0, ": "));
    lines.push(`Desired Number of Nodes Scheduled: ${num(st["desiredNumberScheduled"])}`);
    lines.push(`Current Number of Nodes Scheduled: ${num(st["currentNumberScheduled"])}`);
    lines.push(`Number of Nodes Scheduled with Up-to-date Pods: ${num(st["updatedNumberScheduled"])}`);
    lines.push(`Number of Nodes Scheduled with Available Pods: ${num(st["numberAvailable"])}`);
    lines.push(`Number of Nodes Misscheduled: ${num(st["numberMisscheduled"])}`);
  } else if (o["kind"] === "ReplicaSet") {
    lines.push(`Selector:\t${selectorString(spec["selector"])}`);
    lines.push(...multiline("Labels", m["labels"]), ...multiline("Annotations", m["annotations"], 0, ": "));
    const owner = arr(m["ownerReferences"]).find((r) => r["controller"] === true);
    if (owner) lines.push(`Controlled By:\t${String(owner["kind"])}/${String(owner["name"])}`);
    lines.push(`Replicas:\t${num(st["replicas"])} current / ${num(spec["replicas"])} desired`);
  } else {
    common();
    lines.push(`Selector:\t${selectorString(spec["selector"])}`);
    lines.push(`Replicas:\t${num(spec["replicas"])} desired | ${num(st["replicas"])} total`);
    lines.push(`Update Strategy:\t${String(rec(spec["updateStrategy"])["type"] ?? "RollingUpdate")}`);
    const part = rec(rec(spec["updateStrategy"])["rollingUpdate"])["partition"];
    if (typeof part === "number") lines.push(`  Partition:\t${part}`);
  }
  lines.push(podsStatus(d.pods), ...podTemplateLines(spec["template"]));
  if (o["kind"] === "StatefulSet") {
    const claims = arr(spec["volumeClaimTemplates"]);
    if (!claims.length) lines.push("Volume Claims:\t<none>");
    else {
      lines.push("Volume Claims:");
      for (const c of claims) {
        const cm = rec(c["metadata"]);
        const cs = rec(c["spec"]);
        lines.push(`  Name:\t${String(cm["name"])}`);
        lines.push(`  StorageClass:\t${String(cs["storageClassName"] ?? "")}`);
        lines.push(...multiline("Labels", cm["labels"], 1), ...multiline("Annotations", cm["annotations"], 1, ": "));
        lines.push(`  Capacity:\t${String(rec(rec(cs["resources"])["requests"])["storage"] ?? "")}`);
        lines.push(
          `  Access Modes:\t${((cs["accessModes"] as string[] | undefined) ?? []).map((a) => ({ ReadWriteOnce: "RWO", ReadOnlyMany: "ROX", ReadWriteMany: "RWX", ReadWriteOncePod: "RWOP" })[a] ?? a).join(",")}`,
        );
      }
    }
  }
  if (o["kind"] === "ReplicaSet") lines.push(...conditions(st, true));
}

function jobLines(d: DescribeInput, lines: string[]): void {
  const o = d.obj;
  const m = rec(o["metadata"]);
  const spec = rec(o["spec"]);
  const st = rec(o["status"]);
  lines.push(`Selector:\t${selectorString(spec["selector"])}`);
  lines.push(...multiline("Labels", m["labels"]), ...multiline("Annotations", m["annotations"], 0, ": "));
  const owner = arr(m["ownerReferences"]).find((r) => r["controller"] === true);
  if (owner) lines.push(`Controlled By:\t${String(owner["kind"])}/${String(owner["name"])}`);
  lines.push(`Parallelism:\t${num(spec["parallelism"] ?? 1)}`);
  lines.push(`Completions:\t${spec["completions"] === undefined ? "<unset>" : num(spec["completions"])}`);
  lines.push(`Completion Mode:\t${String(spec["completionMode"] ?? "NonIndexed")}`);
  if (st["startTime"]) lines.push(`Start Time:\t${rfc1123z(st["startTime"])}`);
  if (st["completionTime"]) lines.push(`Completed At:\t${rfc1123z(st["completionTime"])}`);
  if (spec["activeDeadlineSeconds"] !== undefined)
    lines.push(`Active Deadline Seconds:\t${num(spec["activeDeadlineSeconds"])}s`);
  lines.push(
    `Pods Statuses:\t${num(st["active"])} Active (${num(st["ready"])} Ready) / ${num(st["succeeded"])} Succeeded / ${num(st["failed"])} Failed`,
  );
  lines.push(...podTemplateLines(spec["template"]));
}

function cronJobLines(d: DescribeInput, lines: string[], common: () => void): void {
  const o = d.obj;
  const spec = rec(o["spec"]);
  const st = rec(o["status"]);
  common();
  lines.push(`Schedule:\t${String(spec["schedule"])}`);
  lines.push(`Concurrency Policy:\t${String(spec["concurrencyPolicy"] ?? "Allow")}`);
  lines.push(`Suspend:\t${spec["suspend"] === true ? "True" : "False"}`);
  lines.push(`Successful Job History Limit:\t${num(spec["successfulJobsHistoryLimit"] ?? 3)}`);
  lines.push(`Failed Job History Limit:\t${num(spec["failedJobsHistoryLimit"] ?? 1)}`);
  lines.push(
    `Starting Deadline Seconds:\t${spec["startingDeadlineSeconds"] === undefined ? "<unset>" : `${num(spec["startingDeadlineSeconds"])}s`}`,
  );
  const jt = rec(rec(spec["jobTemplate"])["spec"]);
  lines.push(`Selector:\t${jt["selector"] ? selectorString(jt["selector"]) : "<unset>"}`);
  lines.push(`Parallelism:\t${jt["parallelism"] === undefined ? "<unset>" : num(jt["parallelism"])}`);
  lines.push(`Completions:\t${jt["completions"] === undefined ? "<unset>" : num(jt["completions"])}`);
  lines.push(...podTemplateLines(jt["template"]));
  lines.push(`Last Schedule Time:\t${st["lastScheduleTime"] ? rfc1123z(st["lastScheduleTime"]) : "<unset>"}`);
  const active = arr(st["active"]).map((r) => String(r["name"]));
  lines.push(`Active Jobs:\t${active.length ? active.join(", ") : "<none>"}`);
}
