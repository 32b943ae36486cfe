// The pod kubectl picks for `logs TYPE/NAME` (polymorphichelpers.AttachablePodForObject → GetFirstPod): of the
// workload's pods (through the workloads it made), the first by podutils.ActivePods' order, reduced here to
// running before not running, then the oldest; with more than one, kubectl says `Found N pods, using pod/x`.
import { fail } from "../args.js";
import type { Ctx } from "../client.js";
import { listPods } from "../resources/pods.js";
import type { V1Pod } from "../../status/api-status.js";
import { dependents } from "./delete.js";
import { qualifiedKind, type WorkloadRef } from "./ref.js";

export async function firstPodOf(ctx: Ctx, ref: WorkloadRef): Promise<V1Pod> {
  const tree = new Set([ref.uid]);
  await dependents(ctx, tree, new Set());
  const l = await listPods(ctx);
  const pods = l.items.filter((p) => (p.metadata.ownerReferences ?? []).some((r) => tree.has(r.uid)));
  if (!pods.length) return fail(`${qualifiedKind(ref.kind)} "${ref.name}" has no pods`);
  const running = (p: V1Pod) => (p.status.phase === "Running" ? 0 : 1);
  pods.sort(
    (a, b) =>
      running(a) - running(b) ||
      String(a.metadata.creationTimestamp ?? "").localeCompare(String(b.metadata.creationTimestamp ?? "")) ||
      a.metadata.name.localeCompare(b.metadata.name),
  );
  const first = pods[0]!;
  if (pods.length > 1) process.stderr.write(`Found ${pods.length} pods, using pod/${first.metadata.name}\n`);
  return first;
}
