// The sync loop's public shapes: its options, the controllers' port, a tick's report, and the loop itself.
import type { ContainerEvent, EventStreamState } from "../cri/container-events.js";
import type { EvictionOptions } from "../eviction/manager.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { CriClient } from "../cri/client.js";
import type { MetricsSource, NodeMetrics } from "../metrics/metrics.js";
import type { DesiredPod, DesiredState } from "../pleg/desired-state.js";
import type { Relist } from "../pleg/relist.js";
import type { PodDispatch } from "../podworkers/dispatch.js";
import type { Prober } from "../prober/prober.js";
import type { V1PodStatus } from "../status/api-status.js";

export interface ReconcileLoopOptions {
  /** The engine's front door; loop syncs go through it (and its lock). */
  runtime: PodRuntime;
  /** For the relist's list calls and its one-off detail reads. */
  cri: CriClient;
  desired: DesiredState;
  prober?: Prober | undefined;
  metrics?: NodeMetrics | undefined;
  /** Default 1000 (kubelet's PLEG relist period). */
  relistIntervalMs?: number;
  /** Default 60000 (kubelet's syncFrequency). */
  resyncIntervalMs?: number;
  /** A failed sync is retried after this long without a new event. Default 10000 (kubelet's backOffPeriod). */
  errorBackOffMs?: number;
  /** Loop syncs running at once. Default 8. */
  maxConcurrentSyncs?: number;
  /** The pod workers every source dispatches to (requests too); default: the loop's own. */
  pods?: PodDispatch<DesiredPod> | undefined;
  now?: () => number;
  /** One JSON-able record per event worth a line (errors once per change, recoveries, start-up). */
  log?: (rec: Record<string, unknown>) => void;
  /** Handed every relist's desired entries and view (undefined when nothing needed a relist): the Kubernetes
   * API's pods are fed from it, so a watch costs no runtime call of its own. */
  onRelist?: (entries: readonly DesiredPod[], view: Relist | undefined) => void;
  /** A relist saw the pod's objects differ from the last relist: what a status cache kept of it goes (the resync
   * reads that cache). */
  statusChanged?: (uid: string) => void;
  /** No timers: the caller drives the loop with tick() (the Workers node object's alarm, tests, bench). */
  manual?: boolean;
  /** Subscribe to the runtime's events (Node: watchContainerEvents over the CRI socket); returns the unsubscribe. */
  events?:
    | ((on: { event(e: ContainerEvent): void; state(s: EventStreamState): void }) => { close(): void })
    | undefined;
  /** The relist period while the event stream is up. Default 300000 (kubelet's eventedPlegRelistPeriod). */
  eventedRelistIntervalMs?: number;
  /** How long nothing must change before the controllers' pods are relisted at their requeue time instead of the
   * interval; also the longest a quiet node with workloads goes between relists. Default CONTROLLERS_QUIET_MS. */
  controllersQuietMs?: number;
  /** The eviction manager's local storage pass (eviction/manager.ts); without it no pod is held to its
   * ephemeral-storage limits or disk emptyDir sizeLimit (the runtime then refuses such pods). */
  eviction?: EvictionOptions | undefined;
  /** The node's workload controllers (src/controllers/run.ts), run at the start of every pass on the last relist's
   * view; the pods they create are synced in the same pass. */
  controllers?: LoopControllers | undefined;
}

/** What the loop needs of the workload controllers (the port; src/controllers/run.ts implements it). */
export interface LoopControllers {
  pass(
    now: number,
    observe: (uid: string) => V1PodStatus | undefined,
  ): Promise<{ created: string[]; deleted: string[]; requeueAt?: number | undefined }>;
  /** Whether workloads were stored at the last pass (or pods of theirs are being deleted): the controllers watch
   * their pods through the relist. While the pods or the workloads change the loop relists at its interval; once
   * quiet, at the controllers' requeue time, or at most every CONTROLLERS_QUIET_MS (relist-timer.ts). */
  watching(): boolean;
  /** Pods of theirs are being deleted: nothing announces a delete's end, so the loop relists at its interval. */
  deleting?(): boolean;
}

export interface TickReport {
  relisted: boolean;
  /** CRI calls the relist made. */
  relistCalls: number;
  /** Pods synced in this tick, with why. */
  synced: { uid: string; reason: string }[];
}

export interface ReconcileLoop extends MetricsSource {
  /** One relist, its syncs and the due probes, all awaited. */
  tick(): Promise<TickReport>;
  /** Relist soon (e.g. after the desired set changed). */
  kick(): void;
  /** The pod workers: requests dispatch their syncs and teardowns here, as the loop does. A pod whose worker is
   * busy is left to it (no relist decides it meanwhile); a request's sync read-back is the relist's too. */
  readonly pods: PodDispatch<DesiredPod>;
  stop(): Promise<void>;
}
