// The pod runtime's types: its options, its results, its errors and the PodRuntime interface (kubelet's
// kubecontainer.Runtime, as podsync's front door has it). Re-exported by pod-runtime.ts, where callers import them.
import type { VersionResponse } from "../gen/runtime/v1/api_pb.js";
import type { Pod } from "../pod/schema.js";
import type { PullBackOffStore } from "../container/backoff.js";
import type { ProbeResults } from "../kuberuntime/compute-actions.js";
import type { PodRef } from "../container/types.js";
import type { ServiceLister } from "../container/service-env.js";
import type { NodeConfig } from "../container/node-config.js";
import type { PodLock } from "../kuberuntime/pod-lock.js";
import type { ReportedExits } from "../kuberuntime/reported-exits.js";
import type { PodActions, PodStatus, SyncStep } from "../container/types.js";
import type { LogOptions } from "../logs/read-logs.js";
import type { LogFiles } from "../logs/log-files.js";
import type { ExecResult } from "../kuberuntime/exec.js";
import type { PodProbeResults, V1PodStatus } from "../status/api-status.js";
import type { ReasonCache } from "../status/reason-cache.js";
import type { TerminationMessageFiles } from "../kuberuntime/termination-message.js";
import type { PodStatusCache } from "../container/cache.js";
import type { PodDirs } from "../volumemanager/pod-dirs.js";
import type { VolumeFiles } from "../volumemanager/object-volumes.js";
import type { PodObjects } from "../pod/objects.js";
import type { VolumeHost } from "../volumemanager/volumes.js";
import type { ClaimInfo } from "../volumemanager/claims.js";
import type { HookNetwork } from "../lifecycle/handlers.js";
import type { PodEviction } from "../status/api-status.js";

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
  /** Node filesystem for configMap, secret, downwardAPI and projected volumes (src/host/volumes/volume-files.ts);
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
  /** The caller ran the pod through the admission pipeline (src/usecases/admission/) just before: `admit` is not
   * run again on this call (a request's pod is admitted once; the loop's syncs of stored pods still admit). */
  admitted?: boolean;
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
  plan(pod: Pod, probes?: ProbeResults, guard?: Pick<GuardOptions, "admitted">): Promise<PlanResult>;
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
  /** The pod is asked gone, its kill to follow in its pod worker: Terminating from now (deleting()), and its running
   * sync cancelled, as kubelet's UpdatePod cancels a pod worker's sync when a kill arrives (pod_workers.go). */
  terminating?(uid: string, gracePeriodSeconds?: number, spec?: Pod): void;
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
