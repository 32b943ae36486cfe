// kubectl's `get` tables for the workload kinds (pkg/printers/internalversion/printers.go: printDeployment,
// printReplicaSet, printStatefulSet, printDaemonSet, printJob, printCronJob), over the objects GET /v1/workloads
// returns. AGE and LAST SCHEDULE as translateTimestampSince prints them.
import { humanDuration } from "../../kubeapi/table.js";
import type { KubeObject, Resource } from "../resources/resource.js";

type Obj = { metadata: { name: string; creationTimestamp?: string }; spec: Record<string, any>; status: Record<string, any> };

const since = (t: string | undefined, now: number) => (t ? humanDuration(now - Date.parse(t)) : "<unknown>");
const n = (v: unknown) => String(typeof v === "number" ? v : 0);
const has = (o: Obj, type: string) => ((o.status["conditions"] as { type: string; status: string }[] | undefined) ?? []).some((c) => c.type === type && c.status === "True");

export const WORKLOAD_COLUMNS: Record<string, { head: string[]; row: (o: Obj, now: number) => string[] }> = {
  Deployment: { head: ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"], row: (o, now) => [o.metadata.name, `${n(o.status["readyReplicas"])}/${n(o.spec["replicas"])}`, n(o.status["updatedReplicas"]), n(o.status["availableReplicas"]), since(o.metadata.creationTimestamp, now)] },
  ReplicaSet: { head: ["NAME", "DESIRED", "CURRENT", "READY", "AGE"], row: (o, now) => [o.metadata.name, n(o.spec["replicas"]), n(o.status["replicas"]), n(o.status["readyReplicas"]), since(o.metadata.creationTimestamp, now)] },
  StatefulSet: { head: ["NAME", "READY", "AGE"], row: (o, now) => [o.metadata.name, `${n(o.status["readyReplicas"])}/${n(o.spec["replicas"])}`, since(o.metadata.creationTimestamp, now)] },
  DaemonSet: {
    head: ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"],
    row: (o, now) => {
      const sel = Object.entries((o.spec["template"]?.spec?.nodeSelector as Record<string, string> | undefined) ?? {}).map(([k, v]) => `${k}=${v}`).sort().join(",");
      return [o.metadata.name, n(o.status["desiredNumberScheduled"]), n(o.status["currentNumberScheduled"]), n(o.status["numberReady"]), n(o.status["updatedNumberScheduled"]), n(o.status["numberAvailable"]), sel || "<none>", since(o.metadata.creationTimestamp, now)];
    },
  },
  Job: {
    head: ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
    row: (o, now) => {
      const s = o.status;
      const completions = o.spec["completions"] !== undefined ? `${n(s["succeeded"])}/${o.spec["completions"]}` : o.spec["parallelism"] > 1 ? `${n(s["succeeded"])}/1 of ${o.spec["parallelism"]}` : `${n(s["succeeded"])}/1`;
      const duration = !s["startTime"] ? "" : !s["completionTime"] ? humanDuration(now - Date.parse(s["startTime"])) : humanDuration(Date.parse(s["completionTime"]) - Date.parse(s["startTime"]));
      const status = has(o, "Complete") ? "Complete" : has(o, "Failed") ? "Failed" : has(o, "Suspended") ? "Suspended" : has(o, "FailureTarget") ? "FailureTarget" : has(o, "SuccessCriteriaMet") ? "SuccessCriteriaMet" : "Running";
      return [o.metadata.name, status, completions, duration, since(o.metadata.creationTimestamp, now)];
    },
  },
  CronJob: {
    head: ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"],
    row: (o, now) => [o.metadata.name, o.spec["schedule"], o.spec["timeZone"] ?? "<none>", String(o.spec["suspend"] ?? false), String((o.status["active"] as unknown[] | undefined)?.length ?? 0), o.status["lastScheduleTime"] ? since(o.status["lastScheduleTime"], now) : "<none>", since(o.metadata.creationTimestamp, now)],
  },
  PersistentVolumeClaim: { head: ["NAME", "STATUS", "ACCESS MODES", "AGE"], row: (o, now) => [o.metadata.name, "Bound", ((o.spec["accessModes"] as string[] | undefined) ?? []).map((m) => ({ ReadWriteOnce: "RWO", ReadOnlyMany: "ROX", ReadWriteMany: "RWX", ReadWriteOncePod: "RWOP" })[m] ?? m).join(","), since(o.metadata.creationTimestamp, now)] },
};

/** `podsync get` of one workload kind: GET /v1/workloads?kind=, printed with kubectl's columns. */
export function workloadResource(kind: string): Resource {
  const c = WORKLOAD_COLUMNS[kind]!;
  return {
    kind,
    list: async (ctx) => ({ items: (await ctx.call<{ items?: KubeObject[] }>("GET", `/v1/workloads?kind=${kind}`, { act: "status" })).items ?? [] }),
    header: () => c.head,
    row: (obj, { now }) => c.row(obj as unknown as Obj, now),
  };
}
