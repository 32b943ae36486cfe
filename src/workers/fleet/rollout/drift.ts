// Drift (issue #39): a node whose applied state differs from what it should run. Counted: the applied generation
// differs from the stored desired one (behind: not yet applied or refused; ahead: something else was applied), the
// last apply's error, and, at the desired generation, a pod set that differs from the desired set's: a Pod missing
// by name, a controller with fewer pods than it should run, or a pod that nothing in the set names. Status-only
// fields (phase, readiness, restarts, times) never count: Rancher Fleet counted them and reported drift for every
// status change (rancher/fleet#2521). Pods are compared by name, not by spec: a changed spec is a new generation.
import { decodeJwt } from "jose";
import type { FleetNode } from "../../../http/fleet/node-view.js";
import type { StoredDesired } from "../table.js";
import type { Expected } from "./health.js";

export function driftOf(n: FleetNode, expected?: Expected): string[] {
  const out: string[] = [];
  const { generation: g, desiredGeneration: d } = n.status;
  if (d > 0 && g !== d)
    out.push(
      g < d
        ? `applied generation ${g} is behind the desired ${d}`
        : `applied generation ${g} is ahead of the desired ${d}`,
    );
  if (n.status.error) out.push(`last error: ${n.status.error}`);
  if (expected && g === d) out.push(...podSetDrift(n.status.pods, expected));
  return out;
}

/** The node's pods (namespace/name) against the set's: missing and extra, whatever their status. A Job's pods come
 * and go as it runs, so only a Job's extra pods would count (none: its prefix covers them). */
function podSetDrift(pods: FleetNode["status"]["pods"], e: Expected): string[] {
  const have = pods.map((p) => `${p.namespace}/${p.name}`);
  const missing = e.pods.filter((p) => !have.includes(p));
  for (const o of e.owners) {
    const n = have.filter((p) => p.startsWith(o.prefix)).length;
    if (!o.succeeded && n < o.count) missing.push(`${o.prefix}* (${n} of ${o.count})`);
  }
  const extra = have.filter((p) => !e.pods.includes(p) && !e.owners.some((o) => p.startsWith(o.prefix)));
  const out: string[] = [];
  if (missing.length) out.push(`pods missing: ${missing.slice(0, 5).join(", ")}`);
  if (extra.length) out.push(`pods not in the desired set: ${extra.slice(0, 5).join(", ")}`);
  return out;
}

/** A stored set's objects, as the node reads them (signed-request.ts readSignedList): a JSON v1.List, a YAML stream
 * (or one v1.List document), or a compact JWS whose payload has `pods`. Its signature was checked when it was stored. */
export async function desiredItems(d: StoredDesired): Promise<unknown[]> {
  const listOf = (v: unknown): unknown[] | undefined => {
    const l = v as { kind?: unknown; items?: unknown } | null;
    return l && l.kind === "List" && Array.isArray(l.items) ? l.items : undefined;
  };
  if (d.signature === null) {
    const t = d.body.trim();
    const pods = decodeJwt(t.startsWith("{") ? String((JSON.parse(t) as { jws?: unknown }).jws) : t)["pods"];
    return Array.isArray(pods) ? pods : [];
  }
  if (/json/i.test(d.contentType)) return listOf(JSON.parse(d.body)) ?? [];
  const docs = (await import("../../../http/parse-yaml.js")).parseYamlStream(d.body).filter((x) => x != null);
  return (docs.length === 1 && listOf(docs[0])) || docs;
}
