// One uid is one pod. CRI keys a sandbox by (name, namespace, uid, attempt), and podsync finds a pod's
// objects by its uid label, so a pod signed with the uid of another pod already on the node (but another
// name or namespace) would be synced against that pod's sandbox: its containers would start inside the
// first pod's network and IPC. The API server makes uids unique; podsync has no API server, so the engine
// refuses such a pod from the status it reads anyway, before any runtime write.
import type { PodRef } from "../container/types.js";
import type { PodStatus } from "../container/types.js";
import { POD_UID_LABEL } from "../container/labels.js";

/** The runtime already holds another pod (name/namespace) under this uid. */
export class UidConflictError extends Error {
  constructor(
    readonly pod: PodRef,
    readonly holder: { name: string; namespace: string },
  ) {
    super(
      `pod uid ${pod.uid} already belongs to pod ${holder.namespace}/${holder.name} on this node; refusing ${pod.namespace}/${pod.name} (one uid is one pod: delete the other pod first, or use a new uid)`,
    );
  }
}

/** Throws UidConflictError when any of the uid's sandboxes names another pod. */
export function assertOwnUid(pod: PodRef, status: PodStatus): void {
  for (const s of status.sandboxStatuses) {
    const m = s.metadata;
    if (m && (m.name !== pod.name || m.namespace !== pod.namespace))
      throw new UidConflictError(pod, { name: m.name, namespace: m.namespace });
  }
}

/** The same rule over listed sandboxes (ListPodSandbox items carry their metadata), for pods not stored yet:
 * throws UidConflictError for the first of `pods` that a sandbox labelled with its uid names otherwise. */
export function assertOwnUids(
  pods: readonly PodRef[],
  sandboxes: readonly { labels: Record<string, string>; metadata?: { name: string; namespace: string } | undefined }[],
): void {
  const byUid = new Map(pods.map((p) => [p.uid, p]));
  for (const s of sandboxes) {
    const pod = byUid.get(s.labels[POD_UID_LABEL] ?? "");
    const m = s.metadata;
    if (pod && m && (m.name !== pod.name || m.namespace !== pod.namespace))
      throw new UidConflictError(pod, { name: m.name, namespace: m.namespace });
  }
}
