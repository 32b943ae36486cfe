// Package kubelet/ — the pod runtime: kuberuntime/'s steps and status/'s v1 status composed behind ONE front door,
// as kubelet.go composes its runtime manager and status (status above the runtime). Imports kuberuntime/ and status/.
//
// The engine's one front door, shaped like kubelet's kubecontainer.Runtime: plan, sync, status and delete
// for one pod, and the runtime's own readiness. The HTTP routes, the Worker, the bench and the tests all
// come through here; nothing above the engine assembles a sync from its parts.
//
// Every call runs under the per-pod lock (plan and status excepted: they only read), so a request and any
// other caller never act on one pod at once; its runtime writes go through the lock's fence. Each result
// carries the number of CRI round trips it cost.
import type { CriClient } from "../cri/client.js";
import { requestView } from "../cri/request-view.js";
import { NamespaceMode, PodSandboxState, type VersionResponse } from "../gen/runtime/v1/api_pb.js";
import type { Pod } from "../pod/schema.js";
import { MemoryPullBackOff, type PullBackOffStore } from "../container/backoff.js";
import { evictedPodActions, podActionsAt, type ProbeResults } from "../kuberuntime/compute-actions.js";
import { deletePod, effectiveGracePeriod, killPod } from "../kuberuntime/kill.js";
import type { PodRef } from "../container/types.js";
import type { ServiceLister } from "../container/service-env.js";
import { defaultNodeConfig, type NodeConfig } from "../container/node-config.js";
import { MemoryPodLock, type PodLock } from "../kuberuntime/pod-lock.js";
import { withReportedExits, type ReportedExits } from "../kuberuntime/reported-exits.js";
import {
  completeRunning,
  getPodStatus,
  getPodStatusOrListed,
  listManagedPods,
  podStatusOrListed,
  RunningDetails,
  statusOfMade,
} from "../kuberuntime/pod-status.js";
import { syncPod } from "../kuberuntime/sync-pod.js";
import { assertOwnUid, assertOwnUids } from "../kuberuntime/pod-identity.js";
import { AbsentPods } from "../kuberuntime/absent-pods.js";
import { KUBERNETES_MANAGED_LABEL, MANAGED_BY, POD_UID_LABEL, managedSelector } from "../container/labels.js";
import { subPathUnsupported } from "../volumemanager/subpath.js";
import { InvalidPodError } from "../pod/validate.js";
import type { PodActions, PodStatus, SyncStep } from "../container/types.js";
import { Steps } from "../container/steps.js";
import { ContainerChoiceError, pickContainer } from "../container/container-choice.js";
import { pickInstance } from "../logs/pick-instance.js";
import { readLogs, type LogOptions } from "../logs/read-logs.js";
import type { LogFiles } from "../logs/log-files.js";
import { execSync, runningInstance, type ExecResult } from "../kuberuntime/exec.js";
import { ContainerState } from "../gen/runtime/v1/api_pb.js";
import { generateAPIPodStatus, standInPod, type PodProbeResults, type V1PodStatus } from "../status/api-status.js";
import { MemoryReasonCache, type ReasonCache } from "../status/reason-cache.js";
import { readTerminationMessages, type TerminationMessageFiles } from "../kuberuntime/termination-message.js";
import type { PodStatusCache } from "../container/cache.js";
import { podDataPaths, podVolumesDir, removePodData, type PodDirs } from "../volumemanager/pod-dirs.js";
import { FILE_VOLUME_PLUGINS, type VolumeFiles } from "../volumemanager/object-volumes.js";
import { VolumeBackOff } from "../volumemanager/volume-backoff.js";
import type { PodObjects } from "../pod/objects.js";
import { fileVolumeErrors } from "../pod/references.js";
import { volumeHostErrors, type VolumeHost } from "../volumemanager/volumes.js";
import { admitOnNode, PodAdmissionError } from "../lifecycle/node-admission.js";
import { listClaims, removeClaim, type ClaimInfo } from "../volumemanager/claims.js";
import type { HookNetwork } from "../lifecycle/handlers.js";
import type { PodEviction } from "../status/api-status.js";
import { hostAliasesUnsupported } from "../kuberuntime/etc-hosts.js";

export interface PodRuntimeOptions {
  node?: NodeConfig;
  now?: () => number;
  /** Deadline for PullImage (ms). */
  pullTimeoutMs?: number;
  /** Image-pull back-off: the one piece of kubelet state with no record in the runtime (a failed pull leaves
   * no container). In memory by default; losing it costs one early retry. */
  pullBackOff?: PullBackOffStore;
  /** Per-pod serialisation; in memory by default (Workers pass a Durable Object lock). */
  lock?: PodLock;
  /** Told as an image pull starts, so the Pulling event is there while the pull runs. */
  onPulling?: (pod: Pod, container: string, image: string) => void;
  /** Where container logs are read from; without it, logs are not available on this deployment. */
  logFiles?: LogFiles;
  /** Node filesystem for termination-message files (mounted at start, read when a container has exited);
   * without it (Workers) no file is mounted and only the runtime's message is reported. */
  terminationFiles?: TerminationMessageFiles;
  /** The node filesystem for the pod's directories (DELETE removes them); without it (Workers) they stay. */
  podDirs?: PodDirs;
  /** kubelet's reasonCache (the last start failure per container); in memory by default. */
  reasons?: ReasonCache;
  /** The node's IPs, for status.hostIPs (and a hostNetwork pod's podIPs). */
  hostIPs?: string[];
  /** Node filesystem for volumes (hostPath type checks, tmpfs emptyDirs, claim directories); without it
   * (Workers) pods needing those are refused, naming the field. */
  volumeHost?: VolumeHost;
  /** Node filesystem for configMap, secret, downwardAPI and projected volumes (src/host/volume-files.ts);
   * without it (Workers) pods with such volumes are refused, naming the field. */
  volumeFiles?: VolumeFiles;
  /** Connections from the node to its pods, for httpGet lifecycle hooks (the probes' client on Node);
   * without it (Workers) an httpGet hook fails, naming why. */
  hookNetwork?: HookNetwork;
  /** The node's Services as a container starts, for its Service env vars (kubelet's serviceLister); absent: none. */
  services?: ServiceLister;
  /** The node agent's loop runs the eviction manager (src/eviction/) and so holds pods to their
   * ephemeral-storage limits and disk emptyDir sizeLimits; without it (Workers) such pods are refused. */
  localStorageLimits?: boolean;
  /** The runtime's Version as the caller has already read it, if it has (the Node entry reads it at start for the
   * event stream, as kubelet reads it once at start-up): the runtime's name for container ids is taken from it, so
   * no pod's sync asks for it. Otherwise the first sync that needs the name reads it. */
  version?: () => Promise<Pick<VersionResponse, "runtimeName">> | undefined;
  /** The pods' status as last read, kept while the runtime's event stream vouches for it (container/cache.ts; the
   * Node entry with events on): a sync's decision reads it instead of the runtime. Without it every sync reads. */
  statusCache?: PodStatusCache;
}

/** The runtime holds nothing of this pod (or nothing podsync manages). */
export class PodNotFoundError extends Error {
  constructor(readonly uid: string) {
    super(`the runtime has no sandbox or container for pod uid ${uid}`);
  }
}

/** A feature this deployment cannot offer (e.g. logs without access to the node's log files). */
export class UnsupportedError extends Error {}

/** A caller's `current` check, made under the pod's lock, found the call no longer wanted (a later request
 * changed the pod in the desired state while this one waited): nothing was done. */
export class SupersededError extends Error {}

export interface GuardOptions {
  /** Evaluated under the pod's lock, before any runtime call: false refuses the call (SupersededError). It
   * closes the gap between the caller's read of the desired state and the lock: what another request stored
   * meanwhile is seen here, and whatever that request does runs after this call, not interleaved with it. */
  current?: () => Promise<boolean>;
  /** Read the runtime, not the status cache: the loop's syncs (a relist, an event or a resync found the pod due),
   * so the relist stays the safety net it is under kubelet's Evented PLEG. */
  fresh?: boolean;
  /** Exits the runtime reported that its CRI status may not show yet (reported-exits.ts): applied to the
   * decision's read and to the read-back. */
  exited?: ReportedExits | undefined;
}

export interface LogsRequest {
  container?: string | undefined;
  previous?: boolean | undefined;
  /** The names a missing `container` may default to (the spec's app containers, when known). */
  defaultContainers?: string[] | undefined;
}

/** An instance's log, resolved and ready to stream. */
export interface ContainerLog {
  pod: PodRef;
  container: string;
  containerId: string;
  /** Stream it: resolves when done (see readLogs). */
  read(
    options: LogOptions,
    write: (bytes: Uint8Array) => Promise<void>,
    follow?: { signal?: AbortSignal; maxMs: number },
  ): Promise<void>;
}

export interface ExecRequest {
  container?: string | undefined;
  command: string[];
  timeoutSeconds: number;
  /** Each of stdout and stderr is cut at this many bytes. */
  maxOutputBytes: number;
}

export interface ExecStreamRequest {
  container?: string | undefined;
  command: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface Counted {
  /** CRI round trips this call made. */
  criCalls: number;
}

export interface PlanResult extends Counted {
  pod: PodRef;
  actions: PodActions;
  status: PodStatus;
}

export interface SyncResult extends PlanResult {
  /** Every step succeeded. */
  ok: boolean;
  steps: SyncStep[];
  /** The pod's status read again after the steps (`status` is the one the decision was made from). */
  after: PodStatus;
  /** v1.PodStatus generated from `after`. */
  apiStatus: V1PodStatus;
}

export interface ApiStatusResult extends StatusResult {
  /** v1.PodStatus (kubelet's generateAPIPodStatus). */
  apiStatus: V1PodStatus;
  /** Whether a spec was given; without one the status is for a stand-in (see standInPod). */
  specKnown: boolean;
}

/** One pod of a node-wide list. */
export interface ListedPod {
  pod: PodRef;
  /** The desired spec; absent for an orphan (its status is then generated for a stand-in). */
  spec?: Pod;
  status: PodStatus;
  apiStatus: V1PodStatus;
  /** Set while the pod's delete runs (it is no longer desired; listed among the orphans, with the spec it had). */
  deletion?: PodDeletion;
}

/** A pod asked gone whose delete is still running (the API server's deletionTimestamp and
 * deletionGracePeriodSeconds, set when the delete is asked: now + the grace period). Shown as Terminating
 * (printPod) until the delete is over. */
export interface PodDeletion {
  /** When the grace period ends (ms): the API server's deletionTimestamp. */
  deletionTimestamp: number;
  deletionGracePeriodSeconds: number;
  /** The pod as last desired, when the caller knew it. */
  spec?: Pod | undefined;
}

export interface NodeListResult extends Counted {
  /** One per desired spec, in the order given (a pod the runtime holds nothing of is reported Pending). */
  pods: ListedPod[];
  /** Pods podsync made (its managed-by label) that no given spec names: left by a lost state dir or another
   * instance. Nothing acts on them but an explicit DELETE. */
  orphans: ListedPod[];
}

export interface StatusResult extends Counted {
  pod: PodRef;
  status: PodStatus;
}

export interface DeleteResult extends Counted {
  ok: boolean;
  pod: PodRef;
  steps: SyncStep[];
  /** Whether the runtime held anything podsync made for the pod (the HTTP route answers 404 when not). */
  deleted: boolean;
  /** Whether its newest sandbox was still ready. */
  wasRunning: boolean;
  /** The runtime failed to report the pod's status: it was deleted from its listed sandboxes and containers,
   * best effort (the failed steps say what is left). */
  statusError?: string;
}

export interface RuntimeReadiness extends Counted {
  /** kubelet's runtime health check: the runtime answers and reports RuntimeReady. */
  ok: boolean;
  runtime: { name: string; version: string; apiVersion: string; conditions: Record<string, boolean> };
}

export interface PodRuntime {
  /** computePodActions only: what a sync would do, with no write to the runtime. */
  plan(pod: Pod, probes?: ProbeResults): Promise<PlanResult>;
  /** Read the pod's status, decide and act (kubelet's SyncPod), under the pod's lock. `objects`: the
   * ConfigMaps and Secrets signed with the pod (validated against it: see src/pod/bundle.ts). */
  sync(
    pod: Pod,
    probes?: ProbeResults & PodProbeResults,
    objects?: PodObjects,
    guard?: GuardOptions,
  ): Promise<SyncResult>;
  /** The pod's v1.PodStatus: the runtime's full status (with termination messages) through
   * generateAPIPodStatus, for the spec given (or a stand-in) and the prober's results. */
  apiStatus(uid: string, spec?: Pod, probes?: PodProbeResults): Promise<ApiStatusResult | undefined>;
  /** v1.PodStatus of every desired pod and of every orphan, from one node-wide ListPodSandbox and
   * ListContainers (then each pod's newest PodSandboxStatus and its ContainerStatuses, concurrently). */
  list(specs: readonly Pod[], probes?: (uid: string) => PodProbeResults | undefined): Promise<NodeListResult>;
  /** The pod's full status as the runtime reports it; undefined when the runtime holds nothing of it. */
  status(uid: string): Promise<StatusResult | undefined>;
  /** Kill the pod and remove its containers and sandboxes. Without a grace period each container gets the
   * one it was started with. `spec`: the pod as last desired, when known (its preStop hooks and sidecar order
   * come from it; else from what the containers' annotations kept). */
  delete(uid: string, gracePeriodSeconds?: number, guard?: GuardOptions, spec?: Pod): Promise<DeleteResult>;
  /** The pods whose delete is running, from when it is asked until it is over. */
  deleting(): ReadonlyMap<string, PodDeletion>;
  ready(): Promise<RuntimeReadiness>;
  /** The eviction manager's verdict (eviction/): start nothing of the pod again and report it Failed with
   * `reason` and `message` (and its condition) from now until DELETE or forgetEviction; kill it as kubelet's
   * evictPod does: grace period override 0, which the pod worker makes the pod's own grace (at least 1 s), and
   * killContainer applies before the preStop hook, so the hooks run and StopContainer gets what they leave.
   * Its desired entry, volumes and claims stay. */
  evict(pod: Pod, eviction: PodEviction): Promise<{ ok: boolean; steps: SyncStep[] } & Counted>;
  eviction(uid: string): PodEviction | undefined;
  /** The pod may run again (a controller's new pod, for one whose restartPolicy is Always). */
  forgetEviction(uid: string): void;
  /** Resolve which instance's log a request means (kubelet's rules and wording); stream it with read(). */
  logs(uid: string, req: LogsRequest): Promise<ContainerLog>;
  /** CRI Exec (streaming) in the pod's running container: the runtime's streaming-server URL for it (kubectl
   * exec's WebSocket is joined to it by src/kubeapi/exec-stream.ts). */
  execStream(
    uid: string,
    req: ExecStreamRequest,
  ): Promise<Counted & { pod: PodRef; container: string; containerId: string; url: string }>;
  /** CRI PortForward on the pod's newest sandbox (kuberuntime's GetPortForward): the runtime's streaming-server URL
   * (kubectl port-forward is joined to it by src/kubeapi/portforward/). */
  portForwardStream(uid: string, ports: number[]): Promise<Counted & { pod: PodRef; sandboxId: string; url: string }>;
  /** ExecSync in the pod's running container, output bounded. */
  exec(uid: string, req: ExecRequest): Promise<ExecResult & Counted & { pod: PodRef; container: string }>;
  /** What this node cannot honour, with no runtime call (kubelet's sysctl and AppArmor admission; subPath and
   * volumes that need the node's filesystem where there is none): throws PodAdmissionError or InvalidPodError.
   * plan and sync run it first; callers that store a pod before syncing it run it before storing. */
  admit(pod: Pod): void;
  /** One uid is one pod (pod-identity.ts), checked before the pods are stored: a request whose pod's uid
   * belongs to another pod on the node is refused (UidConflictError, the first such pod) with nothing
   * changed. One ListPodSandbox (the pod's own for one pod, the node's managed sandboxes for a set; none for
   * an empty set). sync checks again under the pod's lock. */
  checkUids(pods: readonly Pod[]): Promise<Counted>;
  /** The node's persistentVolumeClaim directories and the pods using each (`desired`: pods that should run). */
  claims(desired?: readonly Pod[]): Promise<{ claims: ClaimInfo[] } & Counted>;
  /** Remove a claim and its data; ClaimInUseError while a pod uses it, ClaimNotFoundError when absent. */
  removeClaim(namespace: string, name: string, desired?: readonly Pod[]): Promise<Counted>;
}

async function checkCurrent(guard: GuardOptions | undefined, what: string): Promise<void> {
  if (guard?.current && !(await guard.current()))
    throw new SupersededError(
      `${what} was superseded: a later request changed the pod in the desired state while this one waited for the pod's lock; nothing was done`,
    );
}

const ref = (m: PodRef): PodRef => ({ namespace: m.namespace, name: m.name, uid: m.uid });

/** Run fn against a view of the client that counts its round trips (and with a fence, stops its writes once
 * the fence fires), and report the count. */
async function counted<T>(
  cri: CriClient,
  fn: (cri: CriClient) => Promise<T>,
  fence?: AbortSignal,
  stop?: AbortSignal,
): Promise<T & Counted> {
  const c = requestView(cri, fence, stop);
  const r = await fn(c.client);
  return { ...r, criCalls: c.calls };
}

export function createPodRuntime(cri: CriClient, o: PodRuntimeOptions = {}): PodRuntime {
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
  /** What the node cannot honour, refused before any runtime call: kubelet's sysctl and AppArmor admission;
   * subPath without a safe bind; volumes that need the node's filesystem where there is none. */
  const admit = (pod: Pod) => {
    const failures = admitOnNode(pod, syncOptions.node);
    if (failures.length) throw new PodAdmissionError(failures);
    const errors = [
      ...(o.podDirs ? [] : subPathUnsupported(pod, "it cannot bind a subPath on the node safely (no node filesystem)")),
      ...(o.podDirs?.writeHostsFile
        ? []
        : hostAliasesUnsupported(pod, "it cannot write the pod's hosts file on the node (no node filesystem)")),
      ...(o.localStorageLimits ? [] : localStorageLimitsUnsupported(pod)),
      ...(o.volumeHost ? [] : volumeHostErrors(pod)),
      ...(o.volumeFiles
        ? []
        : fileVolumeErrors(pod, "this deployment cannot write files on the node (use env: valueFrom or envFrom)")),
    ];
    if (errors.length) throw new InvalidPodError(errors);
  };
  const volumeHost = () => {
    if (!o.volumeHost) throw new UnsupportedError("node volumes are not reachable on this deployment");
    return o.volumeHost;
  };
  // Pods a uid check found absent, for their next sync's decision (an in-process lock only: every run that could
  // act on a pod is then seen here).
  const absent = lock instanceof MemoryPodLock ? new AbsentPods() : undefined;
  /** lock.run, with the run seen by `absent` from before it waits for the lock until it is over. */
  const lockedRun = <T>(uid: string, fn: (fence: AbortSignal) => Promise<T>): Promise<T> => {
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
  let runtimeName: Promise<string> | undefined;
  const nameOf = (c: CriClient) =>
    (runtimeName ??= (o.version?.() ?? c.version({})).then(
      (v) => v.runtimeName,
      (e) => {
        runtimeName = undefined;
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

  /** The pod's file volumes (their tmpfs unmounted first, so no secret is left in memory), then its node data
   * (`paths`: pod dir, log dirs). Any failure is the step's error: DELETE answers 207 and a later one retries. */
  const removeNodeData =
    (o.volumeFiles || o.podDirs) &&
    (async (uid: string, paths: string[]) => {
      syncOptions.volumeBackOff.forget(`${podVolumesDir(syncOptions.node.rootDir, uid)}/`);
      if (o.volumeFiles)
        for (const plugin of FILE_VOLUME_PLUGINS)
          await o.volumeFiles.removeAll(`${podVolumesDir(syncOptions.node.rootDir, uid)}/${plugin}`);
      return o.podDirs ? removePodData(o.podDirs, paths) : "removed the pod's file volumes";
    });

  /** DELETE's kill under the pod's lock. */
  const deleteLocked = (uid: string, gracePeriodSeconds?: number, guard?: GuardOptions, spec?: Pod) =>
    lockedRun(uid, (fence) =>
      counted(
        cri,
        async (c) => {
          await checkCurrent(guard, `the delete of pod ${uid}`);
          cache?.forget(uid);
          // Best effort: a sandbox whose status the runtime cannot report is still stopped and removed by its id
          // from the list (its steps say what could not be; the answer is then 207 with statusError).
          const status = await getPodStatusOrListed(c, { uid, name: "", namespace: "" });
          const pod = refFromStatus(uid, status);
          if (isEmpty(status)) {
            // No sandbox, yet its volumes may have been set up (a tmpfs emptyDir mounted before a later volume
            // failed, or a sandbox removed by hand): its node data goes as on the normal path, as kubelet's
            // cleanupOrphanedPodDirs removes a pod dir no pod owns (kubelet_pods.go).
            const steps = new Steps();
            if (removeNodeData)
              await steps.run(
                "RemovePodDirs",
                uid,
                () => removeNodeData(uid, podDataPaths(syncOptions.node, uid, status)),
                "RemovePodDirsError",
              );
            return {
              ok: steps.steps.every((st) => st.ok),
              pod,
              steps: steps.steps,
              deleted: false,
              wasRunning: false,
            };
          }
          const wasRunning = status.sandboxStatuses.some((s) => s.state === PodSandboxState.SANDBOX_READY);
          // The file volumes, the pod dir (emptyDirs, termination-message files, subPath binds) and its log dir go
          // with it, before its sandboxes (a failure keeps them, so the next DELETE finds the pod and retries).
          const removeDirs = removeNodeData && (() => removeNodeData(uid, podDataPaths(syncOptions.node, uid, status)));
          const known = spec?.metadata.uid === uid ? spec.spec : undefined;
          const target = {
            metadata: pod,
            spec: {
              terminationGracePeriodSeconds: gracePeriodSeconds,
              initContainers: known?.initContainers,
              containers: known?.containers,
              hostNetwork:
                known?.hostNetwork ??
                status.sandboxStatuses[0]?.linux?.namespaces?.options?.network === NamespaceMode.NODE,
            },
          };
          const r = await deletePod(c, target, status, removeDirs, { network: o.hookNetwork, hostIPs: o.hostIPs });
          reasons.delete(uid);
          evictions.delete(uid);
          return {
            ok: r.ok,
            pod,
            steps: r.steps,
            deleted: true,
            wasRunning,
            ...(status.statusError ? { statusError: status.statusError } : {}),
          };
        },
        fence,
      ),
    );

  return {
    plan: (pod, probes) =>
      counted(cri, async (c) => {
        admit(pod);
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
      admit(pod);
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
                runtimeName: runtimeName ? await runtimeName.catch(() => "unknown") : "unknown",
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

    delete: (uid, gracePeriodSeconds, guard, spec) => {
      // Terminating from the ask on (the API server sets deletionTimestamp before kubelet's kill starts).
      const grace = gracePeriodSeconds ?? spec?.spec.terminationGracePeriodSeconds ?? 30;
      const mark: PodDeletion = {
        deletionTimestamp: syncOptions.now() + grace * 1000,
        deletionGracePeriodSeconds: grace,
        spec: deletions.get(uid)?.spec ?? spec,
      };
      deletions.set(uid, mark);
      // kubelet's pod worker cancels the running sync of a pod that became terminating (pod_workers.go UpdatePod:
      // `if (becameTerminating || wasGracePeriodShortened) && status.cancelFn != nil { status.cancelFn() }`): the
      // delete waits for the lock no longer than the sync takes to notice.
      syncing.get(uid)?.abort(new Error(`pod ${uid} is being deleted`));
      return deleteLocked(uid, gracePeriodSeconds, guard, spec).finally(() => {
        if (deletions.get(uid) === mark) deletions.delete(uid);
      });
    },

    deleting: () => deletions,

    evict: (pod, eviction) => {
      // The verdict holds at once (the loop starts nothing of it, its status says Failed); the kill waits its turn.
      evictions.set(pod.metadata.uid, eviction);
      return lockedRun(pod.metadata.uid, (fence) =>
        counted(
          cri,
          async (c) => {
            cache?.invalidate(pod.metadata.uid);
            const status = await getPodStatus(c, pod.metadata);
            const steps = new Steps();
            // evictPod's gracePeriodOverride 0, through the pod worker (pod_workers.go calculateEffectiveGracePeriod).
            const target = { metadata: pod.metadata, spec: pod.spec };
            await killPod(
              c,
              target,
              status,
              steps,
              { network: o.hookNetwork, hostIPs: o.hostIPs },
              effectiveGracePeriod(target, 0),
            );
            return { ok: steps.steps.every((s) => s.ok), steps: steps.steps };
          },
          fence,
        ),
      );
    },

    eviction: (uid) => evictions.get(uid),

    forgetEviction: (uid) => void evictions.delete(uid),

    ready: () =>
      counted(cri, async (c) => {
        const [v, st] = await Promise.all([c.version({}), c.status({})]);
        // The runtime's name for container ids (read once, as kubelet does): a readiness check that came first
        // spares a pod's first sync the Version call.
        runtimeName ??= Promise.resolve(v.runtimeName);
        const conditions = Object.fromEntries((st.status?.conditions ?? []).map((k) => [k.type, k.status]));
        // NetworkReady is reported but not required: hostNetwork pods still work without it.
        return {
          ok: conditions["RuntimeReady"] === true,
          runtime: { name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion, conditions },
        };
      }),

    async logs(uid, req) {
      const files = o.logFiles;
      if (!files) throw new UnsupportedError("container logs are not readable on this deployment");
      const status = await getPodStatus(cri, { uid, name: "", namespace: "" }, "full");
      if (isEmpty(status)) throw new PodNotFoundError(uid);
      const pod = refFromStatus(uid, status);
      const container = pickContainer(status, pod.name, req.container, req.defaultContainers);
      const instance = pickInstance(status, pod.name, container, req.previous === true);
      const path = (await cri.containerStatus({ containerId: instance.id })).status?.logPath ?? "";
      // The runtime reports where it writes; read only inside this node's pod log directory.
      if (!insideDir(path, syncOptions.node.podLogsDir))
        throw new ContainerChoiceError(
          "bad-request",
          `container ${JSON.stringify(container)} in pod ${JSON.stringify(pod.name)} has no log file under the node's pod log directory`,
        );
      const running = async () =>
        (await cri.containerStatus({ containerId: instance.id }).catch(() => undefined))?.status?.state ===
        ContainerState.CONTAINER_RUNNING;
      return {
        pod,
        container,
        containerId: instance.id,
        read: (options, write, follow) => readLogs(files, path, options, write, follow && { ...follow, running }),
      };
    },

    admit,

    claims: (desired = []) =>
      counted(cri, async (c) => ({ claims: await listClaims(c, volumeHost(), syncOptions.node.rootDir, desired) })),

    removeClaim: (namespace, name, desired = []) =>
      counted(cri, async (c) =>
        removeClaim(c, volumeHost(), syncOptions.node.rootDir, namespace, name, desired).then(() => ({})),
      ),

    execStream: (uid, req) =>
      counted(cri, async (c) => {
        const t = await execTarget(c, uid, req.container);
        const r = await c.exec({
          containerId: t.containerId,
          cmd: req.command,
          tty: req.tty,
          stdin: req.stdin,
          stdout: req.stdout,
          stderr: req.stderr && !req.tty,
        });
        return { ...t, url: r.url };
      }),

    portForwardStream: (uid, ports) =>
      counted(cri, async (c) => {
        const status = await getPodStatus(c, { uid, name: "", namespace: "" });
        const sandbox = status.sandboxStatuses[0];
        if (!sandbox) throw new PodNotFoundError(uid);
        const r = await c.portForward({ podSandboxId: sandbox.id, port: ports });
        return { pod: refFromStatus(uid, status), sandboxId: sandbox.id, url: r.url };
      }),

    exec: (uid, req) =>
      counted(cri, async (c) => {
        const t = await execTarget(c, uid, req.container);
        const r = await execSync(c, t.containerId, req.command, req.timeoutSeconds, req.maxOutputBytes);
        return { ...r, pod: t.pod, container: t.container };
      }),
  };
}

/** The pod's running instance of a container (kubelet's rules for a missing name), for exec. */
async function execTarget(
  c: CriClient,
  uid: string,
  name: string | undefined,
): Promise<{ pod: PodRef; container: string; containerId: string }> {
  const status = await getPodStatus(c, { uid, name: "", namespace: "" });
  if (isEmpty(status)) throw new PodNotFoundError(uid);
  const pod = refFromStatus(uid, status);
  const container = pickContainer(status, pod.name, name);
  return { pod, container, containerId: runningInstance(status, pod.name, container) };
}

/** `path` lies inside `dir` once `.` and `..` are resolved. */
function insideDir(path: string, dir: string): boolean {
  const norm = (p: string) => {
    const out: string[] = [];
    for (const part of p.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") out.pop();
      else out.push(part);
    }
    return `/${out.join("/")}`;
  };
  if (!path.startsWith("/")) return false;
  const d = norm(dir);
  return norm(path).startsWith(d === "/" ? "/" : `${d}/`);
}

const isEmpty = (s: PodStatus) => s.sandboxStatuses.length === 0 && s.containerStatuses.length === 0;

/** getPodStatus's answer for a pod the runtime holds nothing of. */
const emptyStatus = (m: PodRef): PodStatus => ({
  id: m.uid,
  name: m.name,
  namespace: m.namespace,
  ips: [],
  sandboxStatuses: [],
  containerStatuses: [],
});

/** Without the spec (DELETE, status), the pod's name and namespace come from its newest sandbox's metadata. */
function refFromStatus(uid: string, s: PodStatus): PodRef {
  const meta = s.sandboxStatuses[0]?.metadata;
  return { uid, name: meta?.name ?? "", namespace: meta?.namespace ?? "" };
}

/** Local storage limits where no eviction manager holds pods to them (kubelet enforces them only by evicting). */
function localStorageLimitsUnsupported(pod: Pod): { path: string; message: string }[] {
  const why =
    "is held only by kubelet's eviction manager, which this deployment does not run (it cannot measure the node's disk)";
  const out: { path: string; message: string }[] = [];
  (pod.spec.volumes ?? []).forEach((v, i) => {
    if ("emptyDir" in v && v.emptyDir.medium !== "Memory" && v.emptyDir.sizeLimit !== undefined)
      out.push({
        path: `spec.volumes[${i}].emptyDir.sizeLimit`,
        message: `a sizeLimit on a disk emptyDir ${why} (medium: Memory makes a tmpfs of that size)`,
      });
  });
  for (const kind of ["initContainers", "containers"] as const)
    (pod.spec[kind] ?? []).forEach((c, i) => {
      if (c.resources?.limits?.["ephemeral-storage"] !== undefined)
        out.push({
          path: `spec.${kind}[${i}].resources.limits.ephemeral-storage`,
          message: `an ephemeral-storage limit ${why}`,
        });
    });
  return out;
}
