// The node owner's bounds on a workload (PODSYNC_MAX_PODS): no workload may ask for more pods than the node can
// hold. The schema (schema.ts) holds every number to the API's own bounds (int32, percentages, Indexed Jobs'
// 100000); these are the node's, checked at intake (a 400 naming the field and the bound) and again by the
// controllers on every stored workload (src/controllers/run.ts), so a bound lowered after a workload was stored
// refuses it there instead of letting it make pods.
import type { FieldError } from "../validate.js";
import type { Workload } from "./schema.js";

export interface WorkloadLimits {
  /** The pods one workload may have on the node, and the pods on the node (PODSYNC_MAX_PODS, kubelet's maxPods). */
  maxPods: number;
  /** The workloads the node stores as sent to it (PODSYNC_MAX_WORKLOADS); none: unbounded. */
  maxWorkloads?: number | undefined;
}

export const MAX_PODS_SETTING = "PODSYNC_MAX_PODS";

/** intstr.GetScaledValueFromIntOrPercent: an int as it is, a percentage of `total` rounded up or down. */
export function scaledIntOrPercent(v: number | string, total: number, roundUp: boolean): number {
  if (typeof v === "number") return v;
  const raw = (Number(v.slice(0, -1)) * total) / 100;
  return roundUp ? Math.ceil(raw) : Math.floor(raw);
}

/** The first workload of a body past PODSYNC_MAX_WORKLOADS: `kept` are the node's stored keys the body keeps
 * (sync: every sent workload it does not replace; apply: none), `sent` the body's in order. */
export function workloadCountError(
  kept: ReadonlySet<string>,
  sent: readonly { key: string; at: string }[],
  limits: WorkloadLimits | undefined,
): FieldError | undefined {
  const max = limits?.maxWorkloads;
  if (max === undefined) return undefined;
  const all = new Set(kept);
  for (const s of sent) {
    all.add(s.key);
    if (all.size > max)
      return {
        path: s.at || "(root)",
        message: `one workload too many: a node stores at most ${max} workloads sent to it (PODSYNC_MAX_WORKLOADS), and this one would be number ${all.size}`,
      };
  }
  return undefined;
}

const join = (at: string, f: string) => (at ? `${at}.${f}` : f);

const obj = (v: unknown): Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
/** A count as sent: a whole number, or undefined (anything else is the schema's to refuse). */
const count = (v: unknown): number | undefined => (typeof v === "number" && Number.isSafeInteger(v) ? v : undefined);

/** Every number of a workload past the node's bounds, each naming its field and the bound. It reads the workload
 * as parsed, or as sent when the schema refused it (`kind` and `spec` as given), so a body's every bad number is
 * named in one answer. */
export function workloadBoundErrors(
  w: Workload | { kind: string; spec?: unknown },
  limits: WorkloadLimits,
  at = "",
): FieldError[] {
  const out: FieldError[] = [];
  const max = limits.maxPods;
  const over = (field: string, value: unknown, what: string, dflt?: number) => {
    const n = count(value) ?? dflt;
    if (n !== undefined && n > max)
      out.push({
        path: join(at, field),
        message: `${what} ${n} is more than this node holds: must be at most ${max} (${MAX_PODS_SETTING}, the pods one workload may have on this node)`,
      });
  };
  const spec = obj(w.spec);
  switch (w.kind) {
    case "Deployment": {
      over("spec.replicas", spec["replicas"], "replicas");
      // ResolveFenceposts (deployment_util.go): maxSurge against replicas, rounded up (25% when unset). replicas +
      // maxSurge is the most pods a rollout makes at once.
      const replicas = spec["replicas"] === undefined ? 1 : count(spec["replicas"]);
      const strategy = obj(spec["strategy"]);
      const surge = obj(strategy["rollingUpdate"])["maxSurge"];
      const valid = count(surge) !== undefined || (typeof surge === "string" && /^[0-9]+%$/.test(surge));
      if ((strategy["type"] ?? "RollingUpdate") === "RollingUpdate" && valid && replicas !== undefined) {
        const n = scaledIntOrPercent(surge as number | string, replicas, true);
        if (replicas <= max && replicas + n > max)
          out.push({
            path: join(at, "spec.strategy.rollingUpdate.maxSurge"),
            message: `${JSON.stringify(surge)} resolves to ${n} pods over ${replicas} replicas: replicas + maxSurge must be at most ${max} (${MAX_PODS_SETTING})`,
          });
      }
      break;
    }
    case "ReplicaSet":
    case "StatefulSet":
      over("spec.replicas", spec["replicas"], "replicas");
      break;
    case "Job":
      jobBounds(spec, "spec", over);
      break;
    case "CronJob":
      jobBounds(obj(obj(spec["jobTemplate"])["spec"]), "spec.jobTemplate.spec", over);
      break;
    default:
      break;
  }
  return out;
}

/** A Job keeps its finished pods until it goes (as in a cluster), so its completions are pods on the node too. */
function jobBounds(
  spec: Record<string, unknown>,
  at: string,
  over: (field: string, value: unknown, what: string) => void,
): void {
  over(`${at}.parallelism`, spec["parallelism"], "parallelism");
  over(`${at}.completions`, spec["completions"], "completions");
}
