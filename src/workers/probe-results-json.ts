// PodProbeResults as JSON, between the node object (whose alarm runs the probes) and the Worker's routes.
import type { PodProbeResults } from "../status/api-status.js";

/** Its maps as entry lists. */
export type ProbeResultsJSON = Partial<Record<keyof PodProbeResults, [string, unknown][]>>;
export const probeResultsJSON = (r: PodProbeResults): ProbeResultsJSON =>
  Object.fromEntries(
    (["liveness", "readiness", "startup", "changedAt"] as const).flatMap((k) =>
      r[k] ? [[k, [...r[k]!.entries()]]] : [],
    ),
  );
export const probeResultsFrom = (j: ProbeResultsJSON): PodProbeResults =>
  Object.fromEntries(Object.entries(j).map(([k, v]) => [k, new Map(v)])) as PodProbeResults;
