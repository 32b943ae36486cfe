// `podsync delete TYPE/NAME` for a workload: DELETE /v1/workloads/{uid}, with kubectl's --cascade
// (cmd/delete/delete.go, cmdutil.GetCascadingStrategy): background (the default) answers once the workload is gone
// and its pods go at the controllers' next pass; foreground waits for its dependents (the workloads it made and
// every pod they own) to be gone too, as the API server's foreground deletion holds the owner until then. orphan
// is refused: the node's controllers remove the pods of a workload that is gone, it cannot strip ownerReferences.
import { fail, usage } from "../args.js";
import type { Ctx } from "../client.js";
import { progress } from "../progress.js";
import type { KubeObject } from "../resources/resource.js";
import { listPods } from "../resources/pods.js";
import { listWorkloads, qualifiedKind, type WorkloadRef } from "./ref.js";

export type Cascade = "background" | "foreground" | "orphan";

/** kubectl's --cascade values; true and false as its deprecated forms (true: background, false: orphan). */
export function parseCascade(v: string | boolean | string[] | undefined, command: string): Cascade {
  if (v === undefined || v === "background" || v === "true" || v === true) return "background";
  if (v === "foreground") return "foreground";
  if (v === "orphan" || v === "false" || v === false) return "orphan";
  return usage(`--cascade must be "background", "foreground", or "orphan" (got ${JSON.stringify(v)})`, command);
}

/** Said before anything is deleted, when --cascade=orphan names a workload. */
export function refuseOrphan(): never {
  return fail(
    `--cascade=orphan is not supported by this node: its controllers remove the pods of a workload that is gone and cannot remove their ownerReferences (nothing was deleted). Use --cascade=background (the default) or --cascade=foreground.`,
  );
}

const owners = (o: { metadata: { ownerReferences?: { uid: string }[] | undefined } }) =>
  (o.metadata.ownerReferences ?? []).map((r) => r.uid);

/** The workloads and pods that belong to the uids in `tree`, through the workloads they made (a Deployment's
 * ReplicaSets). `tree` grows with each workload found and is kept across calls: a ReplicaSet removed before its
 * pods still owns them; `podUids` likewise keeps the pods found. */
export async function dependents(
  ctx: Ctx,
  tree: Set<string>,
  podUids: Set<string>,
): Promise<{ workloads: KubeObject[]; pods: number }> {
  const all = (await listWorkloads(ctx)) as (KubeObject & { metadata: { ownerReferences?: { uid: string }[] } })[];
  const found: KubeObject[] = [];
  for (let grew = true; grew; ) {
    grew = false;
    for (const w of all)
      if (w.metadata.uid && !tree.has(w.metadata.uid) && owners(w).some((u) => tree.has(u))) {
        tree.add(w.metadata.uid);
        grew = true;
      }
  }
  for (const w of all) if (w.metadata.uid && tree.has(w.metadata.uid)) found.push(w);
  const l = await listPods(ctx);
  // A pod taken out of the desired state is listed as an orphan, without its spec (or owner), until it is
  // stopped: it is known by the uid it had when it was still owned.
  for (const p of l.items) if (owners(p).some((u) => tree.has(u))) podUids.add(p.metadata.uid);
  const pods = [...l.items, ...l.orphans].filter((p) => podUids.has(p.metadata.uid)).length;
  return { workloads: found, pods };
}

export interface WorkloadDeleteOpts {
  cascade: Cascade;
  wait: boolean;
  /** Until when a foreground delete waits for the dependents; undefined: no limit. */
  deadline: number | undefined;
  json: boolean;
}

export async function deleteWorkload(ctx: Ctx, ref: WorkloadRef, o: WorkloadDeleteOpts): Promise<void> {
  const what = `${qualifiedKind(ref.kind)} "${ref.name}"`;
  // The tree is known before the delete: once the workload is gone, its children are found by their owner's uid.
  const tree = new Set([ref.uid]);
  const podUids = new Set<string>();
  if (o.cascade === "foreground") await dependents(ctx, tree, podUids);
  const body = await ctx.call("DELETE", `/v1/workloads/${encodeURIComponent(ref.uid)}`, {
    act: "delete",
    uid: ref.uid,
  });
  if (o.cascade === "foreground" && o.wait) {
    const p = progress(ctx);
    try {
      for (;;) {
        const d = await dependents(ctx, tree, podUids);
        if (!d.workloads.length && !d.pods) break;
        if (o.deadline !== undefined && Date.now() > o.deadline)
          fail(
            `timed out waiting for the dependents of ${what} to go: ${d.pods} pod(s), ${d.workloads.length} workload(s) left (the workload itself is deleted; they go at the controllers' next pass)`,
          );
        p.update(`deleting ${what} (foreground): ${d.pods} pod(s) and ${d.workloads.length} workload(s) left`);
        await new Promise((r) => setTimeout(r, 500));
      }
    } finally {
      p.done();
    }
  }
  if (o.json) console.log(JSON.stringify(body, null, 2));
  else console.log(`${what} deleted`);
}
