// The Services of a sync, plan or PUT body: their ClusterIPs and NodePorts given (src/services/allocate.ts)
// against what the node holds, before anything is stored, so a refused body leaves nothing behind. A deployment
// without a service network (a Worker driving a node through cri-proxy) refuses every Service, naming the node
// agent: it cannot program the node's kernel through CRI.
import type { WorkloadStore } from "../../controllers/store.js";
import type { WorkloadItem } from "../../pod/workloads/intake.js";
import type { Service } from "../../pod/workloads/service.js";
import { InvalidPodError } from "../../pod/validate.js";
import { allocateServices, type ServiceNetwork } from "../../services/allocate.js";
import { ProblemError } from "../problems.js";

export const WORKER_SERVICES_REFUSAL =
  "Services need the podsync node agent on the node (`npm start` / `podsync serve`): it programs the node's kernel (nftables) and answers cluster DNS there. A Worker reaches the node only through cri-proxy (CRI), which cannot do either, so the Service is refused rather than dropped; send it to the node agent (docs/services.md, docs/workers.md)";

const keyOf = (s: Service) => `${s.metadata.namespace}/${s.metadata.name}`;

/**
 * Allocate the body's Services in place. `mode`: "add" (sync, plan: the node's other Services stay) or
 * "replace" (PUT /v1/node/pods: the set's Services are all the node keeps).
 */
export async function allocateBodyServices(
  items: readonly WorkloadItem[],
  d: {
    workloads?: WorkloadStore | undefined;
    services?: ServiceNetwork | undefined;
    servicesRefusal?: string | undefined;
  },
  mode: "add" | "replace",
): Promise<void> {
  const incoming = items.flatMap((w) => (w.workload.kind === "Service" ? [{ svc: w.workload, at: w.at }] : []));
  if (incoming.length === 0) return;
  if (!d.services || !d.workloads)
    throw new ProblemError("unsupported", d.servicesRefusal ?? WORKER_SERVICES_REFUSAL, {
      errors: incoming.map(({ svc, at }) => ({
        path: at ? `${at}.kind` : "kind",
        message: `Service ${keyOf(svc)}: ${d.servicesRefusal ? "the node's Services data plane is not running" : "needs the node agent"}`,
      })),
    });
  const stored = (await d.workloads.list()).map((s) => s.workload).filter((w): w is Service => w.kind === "Service");
  const names = new Set(incoming.map(({ svc }) => keyOf(svc)));
  const kept = mode === "add" ? stored.filter((s) => !names.has(keyOf(s))) : [];
  const r = allocateServices(incoming, kept, new Map(stored.map((s) => [keyOf(s), s])), d.services);
  if (r.policy.length)
    throw new ProblemError("policy", r.policy.map((e) => `${e.path}: ${e.message}`).join("; "), { errors: r.policy });
  if (r.invalid.length) throw new InvalidPodError(r.invalid);
}
