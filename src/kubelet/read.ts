// The front door's reads: a pod's v1 status, the node-wide list, a pod's CRI status, the runtime's readiness.
import type { Pod } from "../pod/schema.js";
import { getPodStatusOrListed, listManagedPods, podStatusOrListed } from "../kuberuntime/pod-status.js";
import { generateAPIPodStatus, standInPod } from "../status/api-status.js";
import { counted, isEmpty, ref, refFromStatus, type RuntimeContext } from "./context.js";
import type { ListedPod, PodRuntime } from "./types.js";

export function createReads(ctx: RuntimeContext): Pick<PodRuntime, "apiStatus" | "list" | "status" | "ready"> {
  const { cri, o, syncOptions, reasons, evictions, deletions, names, nameOf, withMessages } = ctx;
  return {
    apiStatus: async (uid, spec, probes) => {
      const r = await counted(cri, async (c) => {
        // One broken sandbox is this pod's status (reason RuntimeError), not a 502.
        const listed = await getPodStatusOrListed(c, spec?.metadata ?? { uid, name: "", namespace: "" }, "full");
        if (isEmpty(listed)) return { found: undefined };
        const pod = spec ?? standInPod(refFromStatus(uid, listed), listed);
        const status = await withMessages(listed);
        const apiStatus = generateAPIPodStatus({
          pod,
          status,
          now: syncOptions.now(),
          runtimeName: await nameOf(c),
          hostIPs: o.hostIPs ?? [],
          probes,
          reasons: reasons.get(uid),
          eviction: evictions.get(uid),
        });
        return {
          found: {
            pod: spec ? ref(spec.metadata) : refFromStatus(uid, status),
            status,
            apiStatus,
            specKnown: spec !== undefined,
          },
        };
      });
      return r.found && { ...r.found, criCalls: r.criCalls };
    },

    list: (specs, probes) =>
      counted(cri, async (c) => {
        const listed = await listManagedPods(c);
        const name = listed.size ? await nameOf(c) : "";
        const one = async (uid: string, spec: Pod | undefined): Promise<ListedPod> => {
          const l = listed.get(uid) ?? { sandboxes: [], containers: [] };
          // A pod the runtime fails to report in full is listed with what the lists show and the error (reason
          // RuntimeError): one broken sandbox never fails the node's whole list.
          const read = await podStatusOrListed(c, spec?.metadata ?? { uid, name: "", namespace: "" }, l, "full");
          const pod = spec ? ref(spec.metadata) : refFromStatus(uid, read);
          const status = await withMessages(read);
          const apiStatus = generateAPIPodStatus({
            pod: spec ?? standInPod(pod, status),
            status,
            now: syncOptions.now(),
            runtimeName: name,
            hostIPs: o.hostIPs ?? [],
            probes: probes?.(uid),
            reasons: reasons.get(uid),
            eviction: evictions.get(uid),
          });
          return { pod, ...(spec ? { spec } : {}), status, apiStatus };
        };
        const desired = new Set(specs.map((p) => p.metadata.uid));
        // A pod being deleted is listed with the spec its delete was given, and its deletion.
        const orphan = async (uid: string): Promise<ListedPod> => {
          const d = deletions.get(uid);
          const p = await one(uid, d?.spec?.metadata.uid === uid ? d.spec : undefined);
          return d ? { ...p, deletion: d } : p;
        };
        const [pods, orphans] = await Promise.all([
          Promise.all(specs.map((p) => one(p.metadata.uid, p))),
          Promise.all(
            [...listed.keys()]
              .filter((uid) => !desired.has(uid))
              .sort()
              .map(orphan),
          ),
        ]);
        return { pods, orphans };
      }),

    status: async (uid) => {
      const r = await counted(cri, async (c) => ({
        status: await getPodStatusOrListed(c, { uid, name: "", namespace: "" }, "full"),
      }));
      if (isEmpty(r.status)) return undefined;
      return { pod: refFromStatus(uid, r.status), status: r.status, criCalls: r.criCalls };
    },

    ready: () =>
      counted(cri, async (c) => {
        const [v, st] = await Promise.all([c.version({}), c.status({})]);
        // The runtime's name for container ids (read once, as kubelet does): a readiness check that came first
        // spares a pod's first sync the Version call.
        names.runtimeName ??= Promise.resolve(v.runtimeName);
        const conditions = Object.fromEntries((st.status?.conditions ?? []).map((k) => [k.type, k.status]));
        // NetworkReady is reported but not required: hostNetwork pods still work without it.
        return {
          ok: conditions["RuntimeReady"] === true,
          runtime: { name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion, conditions },
        };
      }),
  };
}
