// Pods: GET /v1/pods (the desired pods and the orphans, with status as kubelet generates it); printed as
// kubectl get pods prints them (print/kubectl-print.ts), with IP, NODE and UID under -o wide.
import type { V1Pod } from "../../status/api-status.js";
import type { Ctx } from "../client.js";
import { podRow } from "../print/kubectl-print.js";
import type { KubeObject, Listed, Resource } from "./resource.js";

export interface PodList {
  items: V1Pod[];
  orphans: V1Pod[];
  metadata: { resourceVersion: string };
}

export async function listPods(ctx: Ctx): Promise<PodList> {
  return ctx.call<PodList>("GET", "/v1/pods", { act: "status" });
}

const pods: Resource = {
  kind: "Pod",
  async list(ctx) {
    const l = await listPods(ctx);
    // No "generation N" note: it informs after apply and sync, not after a read (issue 41).
    const notes: string[] = [];
    if (l.orphans.length)
      notes.push(
        `orphans (made by podsync, not in this node's desired state; only delete removes them): ${l.orphans.map((p) => `${p.metadata.namespace}/${p.metadata.name}`).join(", ")}`,
      );
    return { items: [...l.items, ...l.orphans] as unknown as KubeObject[], notes } satisfies Listed;
  },
  // Desired pods only: an orphan (not in the desired state) is listed, but its changes are not watched.
  watchPath: "/api/v1/pods",
  header: ({ wide }) => ["NAME", "READY", "STATUS", "RESTARTS", "AGE", ...(wide ? ["IP", "NODE", "UID"] : [])],
  row(obj, { wide, now, node }) {
    const p = obj as unknown as V1Pod;
    const r = podRow(p, now);
    return [
      r.name,
      r.ready,
      r.status,
      r.restarts,
      r.age,
      ...(wide ? [p.status.podIP ?? "<none>", node, p.metadata.uid] : []),
    ];
  },
};
export default pods;
