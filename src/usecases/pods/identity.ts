// One uid is one pod (kuberuntime/pod-identity.ts), checked against the runtime before the store changes: a pod
// whose uid belongs to another pod on the node is refused 409 uid-conflict, naming the item, with nothing changed.
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import { UidConflictError } from "../../kuberuntime/pod-identity.js";
import type { DesiredPod } from "../../pleg/desired-state.js";
import type { Pod } from "../../pod/schema.js";
import { ProblemError } from "../problems.js";

/** One uid is one pod (kuberuntime/pod-identity.ts), checked against the runtime before the store changes, so
 * a refusal (409 uid-conflict, naming the item when there is a path) leaves the node as it was. A pod the store
 * already holds under its uid with the same namespace/name passed this check when it was stored: no call for
 * it (a converged re-sync costs nothing more); sync checks again under the pod's lock. Returns the CRI calls. */
export async function checkUidsOnRuntime(
  rt: Pick<PodRuntime, "checkUids">,
  items: readonly { pod: Pod; at?: string }[],
  stored: (uid: string) => Promise<DesiredPod | undefined> | DesiredPod | undefined,
): Promise<number> {
  const unchecked: { pod: Pod; at?: string }[] = [];
  for (const it of items) {
    const m = (await stored(it.pod.metadata.uid))?.pod.metadata;
    if (!m || m.name !== it.pod.metadata.name || m.namespace !== it.pod.metadata.namespace) unchecked.push(it);
  }
  if (unchecked.length === 0) return 0;
  try {
    return (await rt.checkUids(unchecked.map((it) => it.pod))).criCalls;
  } catch (e) {
    throw uidConflictAt(e, unchecked);
  }
}

/** A UidConflictError as 409 uid-conflict naming the item (`<at>.metadata.uid`) of the pod it refused; any other
 * error as it is. */
export function uidConflictAt(e: unknown, items: readonly { pod: Pod; at?: string }[]): unknown {
  if (!(e instanceof UidConflictError)) return e;
  const at = items.find((it) => it.pod.metadata.uid === e.pod.uid)?.at;
  if (at === undefined) return e;
  const path = `${at}.metadata.uid`;
  return new ProblemError("uid-conflict", `${path}: ${e.message}`, {
    holder: e.holder,
    errors: [{ path, message: e.message }],
  });
}
