// Pods addressed as kubectl addresses them: NAME (or pod/NAME) in -n's namespace; a uid is accepted too, so the
// old uid-only forms keep working. Resolved against GET /v1/pods (desired pods and orphans).
import type { V1Pod } from "../status/api-status.js";
import { fail } from "./args.js";
import type { Ctx } from "./client.js";
import { notFound } from "./output.js";
import { listPods } from "./resources/pods.js";

export interface PodRef {
  uid: string;
  namespace: string;
  name: string;
  pod: V1Pod;
}

/** `pod/NAME`, `pods/NAME` and `po/NAME` name a pod as `NAME` does. */
export function podName(arg: string): string {
  const m = /^(?:pods?|po)\/(.+)$/i.exec(arg);
  return m ? m[1]! : arg;
}

export async function resolvePod(ctx: Ctx, arg: string): Promise<PodRef> {
  const name = podName(arg);
  const l = await listPods(ctx);
  const all = [...l.items, ...l.orphans];
  const p =
    all.find((p) => p.metadata.namespace === ctx.namespace && p.metadata.name === name) ??
    all.find((p) => p.metadata.uid === name);
  if (p) return { uid: p.metadata.uid, namespace: p.metadata.namespace, name: p.metadata.name, pod: p };
  return fail(
    notFound(
      "pods",
      name,
      ctx.namespace,
      all.filter((p) => p.metadata.name === name).map((p) => p.metadata.namespace),
    ),
  );
}
