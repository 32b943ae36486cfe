// podsync describe TYPE/NAME | TYPE NAME: kubectl describe for the node's workloads (print/describe.ts), from
// GET /v1/workloads, GET /v1/pods and the node's events (GET /api/v1/namespaces/NS/events, read token).
import type { Command } from "../command.js";
import type { Ctx } from "../client.js";
import type { WorkloadKind } from "../../pod/workloads/schema.js";
import { describeWorkload } from "../print/describe.js";
import { listPods } from "../resources/pods.js";
import type { Obj } from "../workloads/edit.js";
import { listWorkloads, resolveWorkload, workloadArg } from "../workloads/ref.js";

const KINDS: WorkloadKind[] = ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"];

const describe: Command = {
  usage: ["describe TYPE/NAME | TYPE NAME [-n NS]"],
  help: "Show a workload (deployment, replicaset, statefulset, daemonset, job, cronjob) as kubectl describe does: its\nspec, status, pod template, conditions, ReplicaSets and events. For a pod, podsync status NAME (the runtime's view)\nor kubectl describe pod with podsync kubeconfig.",
  examples: ["podsync describe deployment/web", "podsync describe sts db -n shop"],
  options: {},
  async run(ctx) {
    const { kind, name } = workloadArg(ctx.args, KINDS, "describe", ctx.command);
    const ref = await resolveWorkload(ctx, kind, name);
    const owned = (o: { metadata: unknown }, uids: Set<string>) =>
      ((o.metadata as { ownerReferences?: { uid: string }[] }).ownerReferences ?? []).some((r) => uids.has(r.uid));
    const children =
      kind === "Deployment" ? (await listWorkloads(ctx, "ReplicaSet")).filter((r) => owned(r, new Set([ref.uid]))) : [];
    const tree = new Set([ref.uid, ...children.map((c) => c.metadata.uid ?? "")]);
    const pods = (await listPods(ctx)).items.filter((p) => owned(p, tree));
    process.stdout.write(
      describeWorkload({
        obj: ref.obj as unknown as Obj,
        children: children as unknown as Obj[],
        pods: pods as unknown as Obj[],
        events: await eventsOf(ctx, ref.namespace, ref.uid),
        now: Date.now(),
      }),
    );
  },
};
export default describe;

/** The events about the object (by uid), oldest first; none where the node serves no events. */
async function eventsOf(ctx: Ctx, namespace: string, uid: string): Promise<Obj[]> {
  try {
    const r = await ctx.fetch(`/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, {
      headers: { authorization: `Bearer ${await ctx.sign({ act: "read" })}` },
    });
    if (!r.ok) return [];
    const items = ((await r.json()) as { items?: Obj[] }).items ?? [];
    return items.filter((e) => (e["involvedObject"] as { uid?: string } | undefined)?.uid === uid);
  } catch {
    return [];
  }
}
