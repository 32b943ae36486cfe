// The CLI's edits of a stored workload (scale, rollout restart|pause|resume|undo), as kubectl's patches would make
// them, sent the one way the node takes a workload: signed with the owner's key through POST /v1/pods/sync. The
// node replaces the workload of that kind, namespace and name (same uid: its status is kept, its generation moves
// when the spec changed; src/http/handlers/workloads.ts workloadEntries). The object is the one GET /v1/workloads
// serves, without what the API server adds (status, generation, creationTimestamp, ownerReferences).
import { READ_ONLY_METADATA } from "../../pod/schema.js";
import { fail } from "../args.js";
import type { Ctx } from "../client.js";
import type { KubeObject } from "../resources/resource.js";
import { qualifiedKind, type WorkloadRef } from "./ref.js";

export type Obj = Record<string, unknown>;

/** The stored workload as it can be sent again: a copy without status and the API server's metadata. */
export function editable(w: KubeObject): Obj {
  const { status: _s, ...copy } = structuredClone(w) as unknown as Obj;
  const meta = { ...(copy["metadata"] as Obj) };
  for (const k of READ_ONLY_METADATA) delete meta[k];
  return { ...copy, metadata: meta };
}

/** The refusal before an edit: a workload another one made (its controller would undo the edit). A workload whose
 * pods use ConfigMaps or Secrets is re-signed alone: a sync that sends no objects with it keeps those the node
 * stored with it (src/usecases/workloads/entries.ts). */
export function checkEditable(ref: WorkloadRef, verb: string): void {
  const meta = ref.obj.metadata as { ownerReferences?: { kind: string; name: string }[] };
  const owner = meta.ownerReferences?.[0];
  if (owner)
    fail(
      `${qualifiedKind(ref.kind)} "${ref.name}" is managed by ${owner.kind.toLowerCase()}/${owner.name}: ${verb} that instead (its controller would undo the change)`,
    );
}

/** Sign the edited workload and send it (POST /v1/pods/sync); the node's answer for it. */
export async function sendWorkload(ctx: Ctx, w: Obj): Promise<{ action: string }> {
  const token = await ctx.sign({ act: "sync", items: [w] });
  const body = await ctx.json<{ workloads?: { action: string }[]; ok?: boolean }>(
    await ctx.fetch("/v1/pods/sync", { method: "POST", headers: { "content-type": "application/jose" }, body: token }),
  );
  return body.workloads?.[0] ?? { action: "unchanged" };
}
