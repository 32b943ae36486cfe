// The front door's plan, uid check and sync (kubelet's computePodActions and SyncPod under the pod's lock).
import { evictedPodActions, podActionsAt } from "../kuberuntime/compute-actions.js";
import { withReportedExits } from "../kuberuntime/reported-exits.js";
import { getPodStatus } from "../kuberuntime/pod-status.js";
import { syncPod } from "../kuberuntime/sync-pod.js";
import { assertOwnUid, assertOwnUids } from "../kuberuntime/pod-identity.js";
import { KUBERNETES_MANAGED_LABEL, MANAGED_BY, POD_UID_LABEL, managedSelector } from "../container/labels.js";
import { generateAPIPodStatus } from "../status/api-status.js";
import { checkCurrent, counted, emptyStatus, isEmpty, ref, type RuntimeContext } from "./context.js";
import type { PodRuntime } from "./types.js";

export function createSync(ctx: RuntimeContext): Pick<PodRuntime, "plan" | "checkUids" | "sync"> {
  const { cri, o, cache, syncOptions, admit, absent, lockedRun, reasons, evictions, syncing, names, readApiStatus } =
    ctx;
  return {
    plan: (pod, probes, guard) =>
      counted(cri, async (c) => {
        if (!guard?.admitted) admit(pod);
        const status = await getPodStatus(c, pod.metadata);
        assertOwnUid(pod.metadata, status);
        return { pod: ref(pod.metadata), actions: podActionsAt(pod, status, probes, syncOptions.now()), status };
      }),

    checkUids: (pods) =>
      counted(cri, async (c) => {
        if (pods.length === 0) return {};
        const labelSelector =
          pods.length === 1 ? managedSelector(pods[0]!.metadata.uid) : { [KUBERNETES_MANAGED_LABEL]: MANAGED_BY };
        const uids = pods.map((p) => p.metadata.uid);
        // The pods the list finds nothing of are remembered as absent for their next sync (absent-pods.ts).
        const watch = absent?.watch(uids);
        try {
          const { items } = await c.listPodSandbox({ filter: { labelSelector } });
          assertOwnUids(
            pods.map((p) => ref(p.metadata)),
            items,
          );
          watch?.listed(new Set(items.map((s) => s.labels[POD_UID_LABEL] ?? "")), syncOptions.now());
        } finally {
          watch?.end();
        }
        return {};
      }),

    sync: async (pod, probes, objects, guard) => {
      if (!guard?.admitted) admit(pod);
      const uid = pod.metadata.uid;
      // Known absent: a uid check just listed nothing of the pod and nothing has acted on it since.
      const known = absent?.take(uid, syncOptions.now()) === true;
      // The sync's context (pod_workers.go: a pod asked to terminate cancels the running sync's context): a delete
      // aborts it, so a hanging postStart hook or pull does not hold the pod's lock against the delete.
      const cancel = new AbortController();
      return lockedRun(uid, (fence) => {
        const signal = cancel.signal;
        syncing.set(uid, cancel);
        return counted(
          cri,
          async (c) => {
            await checkCurrent(guard, `the sync of pod ${uid}`);
            // Read from the cache when the event stream vouches for it (kubelet's pod workers read the PLEG's cache,
            // not the runtime); else from the runtime, kept for the next sync if nothing touched the pod meanwhile.
            const cached = known || guard?.fresh ? undefined : cache?.get(uid);
            const ticket = known || cached ? undefined : cache?.ticket(uid);
            const read = known ? emptyStatus(pod.metadata) : (cached ?? (await getPodStatus(c, pod.metadata)));
            const status = withReportedExits(read, guard?.exited);
            // Refused before any write: the status read is the only call made.
            assertOwnUid(pod.metadata, status);
            const actions = evictions.has(pod.metadata.uid)
              ? evictedPodActions(status)
              : podActionsAt(pod, status, probes, syncOptions.now());
            const r = await syncPod(
              c,
              pod,
              status,
              { ...syncOptions, ...(objects ? { objects } : {}), signal },
              actions,
            );
            // What acted on the pod voids what was kept of it (its events would too, a moment later); a read that
            // changed nothing is kept (the read-back, which adds termination messages, never is).
            // A status with an exit CRI has not recorded yet is not the runtime's: never kept.
            if (r.steps.length || status !== read) cache?.invalidate(uid);
            else if (ticket) cache?.set(uid, status, ticket);
            reasons.update(pod.metadata.uid, r.steps);
            // What the steps did, read back (as kubelet's next status generation would see it).
            // A failed read-back does not hide the steps: the status the decision was made from stands in.
            // A step that lost the runtime (its connection gone or cancelled) says a read-back would fail too.
            const lost = r.steps.some((st) => st.grpcCode === "UNAVAILABLE" || st.grpcCode === "CANCELLED");
            const stand = async () => ({
              status,
              apiStatus: generateAPIPodStatus({
                pod,
                status,
                now: syncOptions.now(),
                runtimeName: names.runtimeName ? await names.runtimeName.catch(() => "unknown") : "unknown",
                hostIPs: o.hostIPs ?? [],
                probes,
                reasons: reasons.get(pod.metadata.uid),
                eviction: evictions.get(pod.metadata.uid),
              }),
            });
            // A pod that held nothing and whose steps all succeeded holds what the steps made: found without lists.
            const made = isEmpty(status) && r.ok && r.made.sandbox ? { ...r.made, sandbox: r.made.sandbox } : undefined;
            const after = lost
              ? await stand()
              : await readApiStatus(
                  c,
                  pod,
                  probes,
                  r.steps.length === 0 ? status : undefined,
                  made,
                  guard?.exited,
                ).catch(stand);
            return {
              ok: r.ok,
              pod: ref(pod.metadata),
              actions: r.actions,
              steps: r.steps,
              status,
              after: after.status,
              apiStatus: after.apiStatus,
            };
          },
          fence,
          signal,
        ).finally(() => {
          if (syncing.get(uid) === cancel) syncing.delete(uid);
        });
      });
    },
  };
}
