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

/** The ConfigMaps and Secrets a pod template names (volumes, projected sources, env, envFrom, pull secrets). */
export function objectRefs(template: unknown): string[] {
  const out = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(x);
      return;
    }
    if (typeof v !== "object" || v === null) return;
    for (const [k, x] of Object.entries(v as Obj)) {
      const o = typeof x === "object" && x !== null ? (x as Obj) : undefined;
      if (o && (k === "configMap" || k === "configMapRef" || k === "configMapKeyRef") && typeof o["name"] === "string")
        out.add(`ConfigMap "${o["name"]}"`);
      else if (o && k === "secret" && typeof o["secretName"] === "string") out.add(`Secret "${o["secretName"]}"`);
      else if (o && k === "secret" && typeof o["name"] === "string") out.add(`Secret "${o["name"]}"`);
      else if (o && (k === "secretRef" || k === "secretKeyRef") && typeof o["name"] === "string")
        out.add(`Secret "${o["name"]}"`);
      else if (k === "imagePullSecrets" && Array.isArray(x))
        for (const s of x as { name?: unknown }[]) if (typeof s.name === "string") out.add(`Secret "${s.name}"`);
      walk(x);
    }
  };
  walk(template);
  return [...out];
}

/** The pod template of a workload's spec (a CronJob's job template's). */
export function templateOf(w: Obj): Obj | undefined {
  const spec = w["spec"] as Obj | undefined;
  const jt = spec?.["jobTemplate"] as { spec?: { template?: Obj } } | undefined;
  return (spec?.["template"] as Obj | undefined) ?? jt?.spec?.template;
}

/** Refusals before an edit: a workload another one made (its controller would undo the edit), and one whose pods
 * use ConfigMaps or Secrets (the node never gives them back, and its pods would wait without them). */
export function checkEditable(ref: WorkloadRef, verb: string): void {
  const meta = ref.obj.metadata as { ownerReferences?: { kind: string; name: string }[] };
  const owner = meta.ownerReferences?.[0];
  if (owner)
    fail(
      `${qualifiedKind(ref.kind)} "${ref.name}" is managed by ${owner.kind.toLowerCase()}/${owner.name}: ${verb} that instead (its controller would undo the change)`,
    );
  const refs = objectRefs(templateOf(ref.obj as unknown as Obj));
  if (refs.length)
    fail(
      `${qualifiedKind(ref.kind)} "${ref.name}" uses ${refs.join(", ")}: the node keeps a workload's ConfigMaps and Secrets but never gives them back, so the CLI cannot re-sign it alone (nothing was changed). Change the file it came from and run podsync sync -f FILE`,
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
