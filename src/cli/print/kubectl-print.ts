// Package cli/print/ — the CLI's printers: kubectl's columns and ages, workload rows, -o json/yaml/jsonpath.
// Pure formatting on the model and kubeapi/'s Table shapes; never a network client or the node's agent.
//
// kubectl's `get pods` table (pkg/printers/internalversion/printers.go printPod) over v1.Pod objects:
// NAME READY STATUS RESTARTS AGE, with STATUS as kubectl computes it (the reason of the first init container
// that has not finished, else of the last app container waiting or terminated with a reason, else the phase)
// and ages as duration.HumanDuration prints them. For `podsync get` and the node agent's `podsync pods`; the
// cells are the Kubernetes API's Table cells (src/kubeapi/table.ts).
import type { V1Pod } from "../../status/api-status.js";
import { table } from "../output.js";
import { humanDuration, podCells } from "../../kubeapi/table.js";

export { humanDuration };

export interface PodRow {
  name: string;
  ready: string;
  status: string;
  restarts: string;
  age: string;
}

/** printPod's first five cells (src/kubeapi/table.ts, what the node's Kubernetes API sends kubectl). */
export function podRow(pod: V1Pod, now: number): PodRow {
  const [name, ready, status, restarts, age] = podCells(pod, now) as [string, string, string, string, string];
  return { name, ready, status, restarts, age };
}

/** kubectl's column layout: upper-case headers, columns padded to the widest cell plus three spaces; with
 * `namespace`, kubectl get pods -A's NAMESPACE column first. */
export function podTable(pods: readonly V1Pod[], now: number, o: { namespace?: boolean } = {}): string {
  const rows = pods.map((p) => podRow(p, now));
  const ns = (cells: string[], namespace: string) => (o.namespace ? [namespace, ...cells] : cells);
  const cells = [
    ns(["NAME", "READY", "STATUS", "RESTARTS", "AGE"], "NAMESPACE"),
    ...rows.map((r, i) => ns([r.name, r.ready, r.status, r.restarts, r.age], pods[i]!.metadata.namespace)),
  ];
  return table(cells);
}
