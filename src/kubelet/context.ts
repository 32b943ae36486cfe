// The pod runtime's shared state and helpers: the per-pod lock (and the uid check's absent pods), the status cache,
// the options a sync runs with, kubelet's reason cache, the eviction verdicts, the deletes and syncs running, the
// runtime's name, and the read-back of a pod's full and v1 status. Each part of the front door (sync.ts, read.ts,
// delete.ts, streams.ts) works on this one context.
import type { CriClient } from "../cri/client.js";
import { requestView } from "../cri/request-view.js";
import type { Pod } from "../pod/schema.js";
import { MemoryPullBackOff } from "../container/backoff.js";
import type { PodRef } from "../container/types.js";
import { defaultNodeConfig } from "../container/node-config.js";
import { MemoryPodLock } from "../kuberuntime/pod-lock.js";
import { withReportedExits, type ReportedExits } from "../kuberuntime/reported-exits.js";
import { completeRunning, getPodStatus, RunningDetails, statusOfMade } from "../kuberuntime/pod-status.js";
import { AbsentPods } from "../kuberuntime/absent-pods.js";
import type { PodStatus } from "../container/types.js";
import { generateAPIPodStatus, type PodProbeResults } from "../status/api-status.js";
import { MemoryReasonCache } from "../status/reason-cache.js";
import { readTerminationMessages } from "../kuberuntime/termination-message.js";
import { VolumeBackOff } from "../volumemanager/volume-backoff.js";
import type { PodEviction } from "../status/api-status.js";
import { nodeAdmission } from "./admission.js";
import {
  type PodRuntimeOptions,
  UnsupportedError,
  SupersededError,
  type GuardOptions,
  type Counted,
  type PodDeletion,
} from "./types.js";

export async function checkCurrent(guard: GuardOptions | undefined, what: string): Promise<void> {
  if (guard?.current && !(await guard.current()))
    throw new SupersededError(
      `${what} was superseded: a later request changed the pod in the desired state while this one waited for the pod's lock; nothing was done`,
    );
}

export const ref = (m: PodRef): PodRef => ({ namespace: m.namespace, name: m.name, uid: m.uid });

/** Run fn against a view of the client that counts its round trips (and with a fence, stops its writes once
 * the fence fires), and report the count. */
export async function counted<T>(
  cri: CriClient,
  fn: (cri: CriClient) => Promise<T>,
  fence?: AbortSignal,
  stop?: AbortSignal,
): Promise<T & Counted> {
  const c = requestView(cri, fence, stop);
  const r = await fn(c.client);
  return { ...r, criCalls: c.calls };
}

export const isEmpty = (s: PodStatus) => s.sandboxStatuses.length === 0 && s.containerStatuses.length === 0;

/** getPodStatus's answer for a pod the runtime holds nothing of. */
export const emptyStatus = (m: PodRef): PodStatus => ({
  id: m.uid,
  name: m.name,
  namespace: m.namespace,
  ips: [],
  sandboxStatuses: [],
  containerStatuses: [],
});

/** Without the spec (DELETE, status), the pod's name and namespace come from its newest sandbox's metadata. */
export function refFromStatus(uid: string, s: PodStatus): PodRef {
  const meta = s.sandboxStatuses[0]?.metadata;
  return { uid, name: meta?.name ?? "", namespace: meta?.namespace ?? "" };
}

export function createRuntimeContext(cri: CriClient, o: PodRuntimeOptions) {
  const lock = o.lock ?? new MemoryPodLock();
  const cache = o.statusCache;
  const syncOptions = {
    node: o.node ?? defaultNodeConfig(),
    now: o.now ?? Date.now,
    pullTimeoutMs: o.pullTimeoutMs ?? 120_000,
    pullBackOff: o.pullBackOff ?? new MemoryPullBackOff(),
    volumeBackOff: new VolumeBackOff(),
    terminationFiles: o.terminationFiles,
    podDirs: o.podDirs,
    volumeHost: o.volumeHost,
    volumeFiles: o.volumeFiles,
    hostIPs: o.hostIPs ?? [],
    hookNetwork: o.hookNetwork,
    onPulling: o.onPulling,
    services: o.services,
  };
  const admit = nodeAdmission(o, syncOptions.node);
  const volumeHost = () => {
    if (!o.volumeHost) throw new UnsupportedError("node volumes are not reachable on this deployment");
    return o.volumeHost;
  };
  // Pods a uid check found absent, for their next sync's decision (an in-process lock only: every run that could
  // act on a pod is then seen here).
  const absent = lock instanceof MemoryPodLock ? new AbsentPods() : undefined;
  /** lock.run, with the run seen by `absent` from before it waits for the lock until it is over. */
  const lockedRun = <T>(uid: string, fn: (fence: AbortSignal | undefined) => Promise<T>): Promise<T> => {
    absent?.enter(uid);
    return lock.run(uid, fn).finally(() => absent?.leave(uid));
  };
  const reasons = o.reasons ?? new MemoryReasonCache();
  // The eviction manager's verdicts by uid (kubelet's status manager keeps them as the pod's Failed status):
  // in memory, like the reason cache; DELETE forgets one, and so does the loop when it re-creates the pod.
  const evictions = new Map<string, PodEviction>();
  // Deletes asked and not over (Terminating), by uid.
  const deletions = new Map<string, PodDeletion>();
  // The running sync of each pod, to cancel when the pod is asked gone.
  const syncing = new Map<string, AbortController>();
  // kubelet reads the runtime's name once (Version) for container ids: `containerd://<id>`.
  const names: { runtimeName?: Promise<string> | undefined } = {};
  const nameOf = (c: CriClient) =>
    (names.runtimeName ??= (o.version?.() ?? c.version({})).then(
      (v) => v.runtimeName,
      (e) => {
        names.runtimeName = undefined;
        throw e;
      },
    ));
  /** A status with its exited containers' termination messages (a copy: the read may be the status cache's). */
  const withMessages = async (st: PodStatus): Promise<PodStatus> => ({
    ...st,
    containerStatuses: await readTerminationMessages(st.containerStatuses, o.terminationFiles, o.logFiles),
  });
  /** Running containers' start times, mounts and log paths, read once per container. */
  const running = new RunningDetails();
  /** The full status with termination messages, and the v1 status for `spec`. */
  const readApiStatus = async (
    c: CriClient,
    spec: Pod,
    probes: PodProbeResults | undefined,
    unchanged?: PodStatus,
    made?: Parameters<typeof statusOfMade>[2],
    exited?: ReportedExits,
  ) => {
    // Nothing was done: the decision's reads stand, completed for the running containers from what an earlier
    // read kept (3 CRI calls in all for a converged pod; + 1 per running container never read in full here).
    // A new pod made whole: a ContainerStatus per container it made (statusOfMade), no list.
    // Otherwise the whole status is read again (3 + containers), and its running containers' details kept.
    const read = unchanged
      ? completeRunning(c, unchanged, running)
      : (made ? statusOfMade(c, spec.metadata, made) : getPodStatus(c, spec.metadata, "full")).then(
          (st) => (running.learn(st), st),
        );
    const [readStatus, name] = await Promise.all([read, nameOf(c)]);
    const status = await withMessages(withReportedExits(readStatus, exited));
    const apiStatus = generateAPIPodStatus({
      pod: spec,
      status,
      now: syncOptions.now(),
      runtimeName: name,
      hostIPs: o.hostIPs ?? [],
      probes,
      reasons: reasons.get(spec.metadata.uid),
      eviction: evictions.get(spec.metadata.uid),
    });
    return { status, apiStatus };
  };
  return {
    cri,
    o,
    lock,
    cache,
    syncOptions,
    admit,
    volumeHost,
    absent,
    lockedRun,
    reasons,
    evictions,
    deletions,
    syncing,
    names,
    nameOf,
    withMessages,
    running,
    readApiStatus,
  };
}
export type RuntimeContext = ReturnType<typeof createRuntimeContext>;
