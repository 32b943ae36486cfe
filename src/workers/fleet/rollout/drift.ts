// Drift (issue #39): a node whose applied state differs from what it should run. Pure. Counted: the applied
// generation differs from the stored desired one (behind: not yet applied or refused; ahead: something else was
// applied), the last apply's error, and, when the desired pods are known, a pod set that differs by name. Status-
// only fields (phase, readiness, restarts, times) never count: Rancher Fleet counted them and reported drift for
// every status change (rancher/fleet#2521).
import type { FleetNode } from "../../../http/fleet/node-view.js";

/** `expected`: the namespace/name of every pod the desired set runs, when known (Deployments' pods are named
 * by the node, so they are compared by their owner's prefix). */
export function driftOf(n: FleetNode, expected?: { pods: string[]; prefixes: string[] }): string[] {
  const out: string[] = [];
  const { generation: g, desiredGeneration: d } = n.status;
  if (d > 0 && g !== d)
    out.push(
      g < d
        ? `applied generation ${g} is behind the desired ${d}`
        : `applied generation ${g} is ahead of the desired ${d}`,
    );
  if (n.status.error) out.push(`last error: ${n.status.error}`);
  if (expected && g === d) {
    const have = n.status.pods.map((p) => `${p.namespace}/${p.name}`);
    const missing = expected.pods.filter((p) => !have.includes(p));
    const extra = have.filter((p) => !expected.pods.includes(p) && !expected.prefixes.some((x) => p.startsWith(x)));
    if (missing.length) out.push(`pods missing: ${missing.slice(0, 5).join(", ")}`);
    if (extra.length) out.push(`pods not in the desired set: ${extra.slice(0, 5).join(", ")}`);
  }
  return out;
}
