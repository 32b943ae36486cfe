// `podsync get` for the workload kinds: the objects GET /v1/workloads returns, printed with the columns and cells
// the node's Kubernetes API makes for kubectl (src/kubeapi/kinds/workload-table.ts, from printers.go), so the CLI and
// kubectl print the same table; -o wide adds the priority-1 columns (CONTAINERS, IMAGES, SELECTOR).
import { WORKLOAD_COLUMNS, workloadCells } from "../../kubeapi/kinds/workload-table.js";
import type { V1Workload } from "../../kubeapi/kinds/workload-feed.js";
import { type ClaimDir, statefulSetClaims } from "../../kubeapi/kinds/statefulset-claims.js";
import type { WorkloadKind } from "../../pod/workloads/schema.js";
import type { KubeObject, Resource } from "../resources/resource.js";

/** `podsync get` of one workload kind: GET /v1/workloads?kind=, printed with kubectl's columns. */
export function workloadResource(kind: WorkloadKind): Resource {
  const columns = WORKLOAD_COLUMNS[kind];
  const shown = (wide: boolean) => columns.map((c, i) => [c, i] as const).filter(([c]) => wide || c.priority === 0);
  return {
    kind,
    list: async (ctx) => {
      const of = async (k: WorkloadKind) =>
        (await ctx.call<{ items?: KubeObject[] }>("GET", `/v1/workloads?kind=${k}`, { act: "status" })).items ?? [];
      const items = await of(kind);
      // A StatefulSet's claims and the claim directories left on the node (retained), as the node's Kubernetes
      // API lists them for kubectl. A node without the volumes route (a Worker) has only the sets' claims.
      if (kind === "PersistentVolumeClaim") {
        const dirs = await ctx
          .call<{ volumes?: ClaimDir[] }>("GET", "/v1/node/volumes", { act: "status" })
          .then((r) => r.volumes ?? [])
          .catch(() => []);
        items.push(...statefulSetClaims(await of("StatefulSet"), items, dirs));
      }
      return { items };
    },
    header: ({ wide }) => shown(wide).map(([c]) => c.name.toUpperCase()),
    row: (obj, { wide, now }) => {
      const cells = workloadCells({ ...obj, kind } as unknown as V1Workload, now);
      return shown(wide).map(([, i]) => String(cells[i] ?? ""));
    },
  };
}
