// The pod reads (GET /v1/pods/{uid}, its CRI-level view, and GET /v1/pods): the spec as stored, the status as
// kubelet generates it, read through the front door with the probes' results; each with the CRI calls it cost.
import { toV1Pod } from "../../status/api-status.js";
import type { NodePorts } from "../ports.js";
import { ProblemError } from "../problems.js";

const notFound = (uid: string) =>
  new ProblemError("pod-not-found", `the runtime has no sandbox or container for pod uid ${uid}`);

/** The pod's CRI-level status (404 pod-not-found when the runtime has nothing of it). */
export async function readRuntimeView(p: Pick<NodePorts, "runtime">, uid: string) {
  const r = await p.runtime.status(uid);
  if (!r) throw notFound(uid);
  return { pod: r.pod, status: r.status, criCalls: r.criCalls };
}

/** The v1.Pod: the spec as last given (left out when only the runtime knows the pod), the status as kubelet
 * generates it. */
export async function readPod(p: NodePorts, uid: string) {
  const [stored, remote] = await Promise.all([p.desired.get(uid), p.probeResults?.([uid])]);
  const spec = stored?.pod ?? p.prober?.spec(uid);
  const r = await p.runtime.apiStatus(uid, spec, p.prober?.results(uid) ?? remote?.get(uid));
  if (!r) throw notFound(uid);
  p.prober?.observe(uid, r.status);
  return { pod: toV1Pod(spec, r.pod, r.apiStatus), criCalls: r.criCalls };
}

/** The desired pods with their status as a v1.PodList (resourceVersion = generation), those being deleted
 * (Terminating), and the orphans: pods podsync made that the store does not hold. */
export async function listPods(p: NodePorts) {
  const [entries, generation] = await Promise.all([p.desired.list(), p.desired.generation()]);
  entries.sort(
    (a, b) =>
      a.pod.metadata.namespace.localeCompare(b.pod.metadata.namespace) ||
      a.pod.metadata.name.localeCompare(b.pod.metadata.name),
  );
  const remote =
    p.probeResults && entries.length ? await p.probeResults(entries.map((e) => e.pod.metadata.uid)) : undefined;
  const r = await p.runtime.list(
    entries.map((e) => e.pod),
    (uid) => p.prober?.results(uid) ?? remote?.get(uid),
  );
  for (const x of r.pods) p.prober?.observe(x.pod.uid, x.status);
  // A pod whose delete runs is listed as a cluster lists it, Terminating (with its deletionTimestamp), until
  // it is gone: not among the orphans.
  const terminating = r.orphans.filter((x) => x.deletion);
  const list = {
    apiVersion: "v1",
    kind: "PodList",
    metadata: { resourceVersion: String(generation) },
    items: [
      ...r.pods.map((x) => toV1Pod(x.spec, x.pod, x.apiStatus)),
      ...terminating.map((x) => toV1Pod(x.spec, x.pod, x.apiStatus, x.deletion)),
    ],
    // Not in v1.PodList: pods podsync made that this node's store does not hold (status for a stand-in).
    orphans: r.orphans.filter((x) => !x.deletion).map((x) => toV1Pod(undefined, x.pod, x.apiStatus)),
  };
  return { list, criCalls: r.criCalls };
}
