// GetPodStatus from CRI, like kubelet's kubeGenericRuntimeManager.GetPodStatus, with the fewest round trips:
// ListPodSandbox and ListContainers (both filtered by the pod uid label and podsync's managed-by label) go
// out together; then
// PodSandboxStatus for the newest sandbox and ContainerStatus for each container whose list entry
// is not enough, concurrently.
//
// Differences from kubelet, deliberate:
// - Only sandboxes and containers labelled io.kubernetes.managed-by=podsync count. Every read that selects a
//   pod's objects (sync, plan, DELETE, GC, logs, exec, status) comes through here, so podsync never sees,
//   kills or removes what another manager made under the same uid.
// - Only the newest sandbox gets a PodSandboxStatus call. kubelet reads every sandbox, but its decisions
//   (PodSandboxChanged, the pod IPs) use only the newest one's details; older ones need just id, state,
//   metadata and createdAt, which ListPodSandbox already returns.
// - In "decide" detail a RUNNING container's ListContainers entry is used as its status (state, hash and
//   restart count annotations, createdAt): computePodActions reads exit code, reason and finish time only
//   of containers that are not running. "full" detail calls ContainerStatus for every container, as kubelet does.
import { create } from "@bufbuild/protobuf";
import {
  ContainerSchema,
  ContainerState as CriContainerState,
  NamespaceMode,
  PodSandboxState,
  PodSandboxStatusSchema,
  type Container as CriContainer,
  type ContainerStatus as CriContainerStatus,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxStatus,
} from "../gen/runtime/v1/api_pb.js";
import type { CriClient } from "../cri/client.js";
import { isCriError, GrpcCode } from "../cri/errors.js";
import {
  CONTAINER_BACKOFF_STREAK_ANNOTATION,
  CONTAINER_HASH_ANNOTATION,
  CONTAINER_IMAGE_ANNOTATION,
  CONTAINER_PRESTOP_HANDLER_ANNOTATION,
  CONTAINER_RESTART_COUNT_ANNOTATION,
  CONTAINER_SPEC_HASH_ANNOTATION,
  CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION,
  CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION,
  KUBERNETES_MANAGED_LABEL,
  MANAGED_BY,
  POD_TERMINATION_GRACE_PERIOD_ANNOTATION,
  POD_UID_LABEL,
  managedSelector,
} from "../container/labels.js";
import type { ContainerState, ContainerStatus, PodStatus } from "../container/types.js";

export type StatusDetail = "decide" | "full";

const NS_PER_MS = 1_000_000n;
export const nsToMs = (ns: bigint): number => Number(ns / NS_PER_MS);

export function toState(s: CriContainerState): ContainerState {
  switch (s) {
    case CriContainerState.CONTAINER_CREATED:
      return "created";
    case CriContainerState.CONTAINER_RUNNING:
      return "running";
    case CriContainerState.CONTAINER_EXITED:
      return "exited";
    default:
      return "unknown";
  }
}

function count(annotations: Record<string, string>, key: string, fallback: number): number {
  const n = Number.parseInt(annotations[key] ?? "", 10);
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

export function fromList(c: CriContainer): ContainerStatus {
  return {
    id: c.id,
    name: c.metadata?.name ?? "",
    state: toState(c.state),
    createdAt: nsToMs(c.createdAt),
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    image: c.annotations[CONTAINER_IMAGE_ANNOTATION] || c.image?.userSpecifiedImage || c.image?.image || "",
    imageRef: c.imageRef,
    hash: c.annotations[CONTAINER_HASH_ANNOTATION] ?? "",
    ...(c.annotations[CONTAINER_SPEC_HASH_ANNOTATION] !== undefined && {
      specHash: c.annotations[CONTAINER_SPEC_HASH_ANNOTATION],
    }),
    ...(c.annotations[CONTAINER_PRESTOP_HANDLER_ANNOTATION] !== undefined && {
      preStopHandler: c.annotations[CONTAINER_PRESTOP_HANDLER_ANNOTATION],
    }),
    restartCount: count(c.annotations, CONTAINER_RESTART_COUNT_ANNOTATION, 0),
    reason: "",
    message: "",
    attempt: c.metadata?.attempt ?? 0,
    sandboxId: c.podSandboxId,
    gracePeriodSeconds:
      c.annotations[POD_TERMINATION_GRACE_PERIOD_ANNOTATION] !== undefined
        ? count(c.annotations, POD_TERMINATION_GRACE_PERIOD_ANNOTATION, 30)
        : undefined,
    backoffStreak: count(
      c.annotations,
      CONTAINER_BACKOFF_STREAK_ANNOTATION,
      count(c.annotations, CONTAINER_RESTART_COUNT_ANNOTATION, 0),
    ),
  };
}

/** The list entry has identity and annotations; ContainerStatus adds (and is newer on) state, times and
 * exit, and names the image as kubelet reads it (Image.Image, ImageRef) when podsync's annotation is absent. */
export function fromStatus(s: CriContainerStatus, listed: CriContainer): ContainerStatus {
  const l = fromList(listed);
  return {
    ...l,
    image: listed.annotations[CONTAINER_IMAGE_ANNOTATION] || s.image?.userSpecifiedImage || s.image?.image || l.image,
    imageRef: s.imageRef || l.imageRef,
    state: toState(s.state),
    startedAt: nsToMs(s.startedAt),
    finishedAt: nsToMs(s.finishedAt),
    exitCode: s.exitCode,
    reason: s.reason,
    message: s.message,
    mounts: s.mounts.map((m) => ({ containerPath: m.containerPath, hostPath: m.hostPath })),
    logPath: s.logPath,
    terminationMessagePath: listed.annotations[CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION] ?? "",
    terminationMessagePolicy: listed.annotations[CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION] ?? "",
  };
}

export function sandboxFromList(s: PodSandbox): PodSandboxStatus {
  return create(PodSandboxStatusSchema, {
    id: s.id,
    metadata: s.metadata,
    state: s.state,
    createdAt: s.createdAt,
    labels: s.labels,
    annotations: s.annotations,
    runtimeHandler: s.runtimeHandler,
  });
}

/** kubelet's determinePodSandboxIPs: primary IP first, then the additional ones. */
export function sandboxIPs(status: PodSandboxStatus | undefined): string[] {
  const net = status?.network;
  if (!net?.ip) return [];
  return [net.ip, ...net.additionalIps.map((a) => a.ip).filter((ip) => ip !== "")];
}

export const byCreatedDesc = (a: { createdAt: bigint | number }, b: { createdAt: bigint | number }) =>
  a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0;

export async function getPodStatus(
  cri: CriClient,
  pod: { uid: string; name: string; namespace: string },
  detail: StatusDetail = "decide",
): Promise<PodStatus> {
  // Only what podsync made: a kubelet or another tool on the node keeps its objects, even under the same uid.
  // One selector (CRI ANDs its pairs), so this costs no extra call.
  const filter = { labelSelector: managedSelector(pod.uid) };
  const [sandboxList, containerList] = await Promise.all([
    cri.listPodSandbox({ filter }),
    cri.listContainers({ filter }),
  ]);
  return podStatusFromLists(cri, pod, { sandboxes: sandboxList.items, containers: containerList.containers }, detail);
}

/** One pod's listed sandboxes and containers. */
export interface PodListing {
  sandboxes: PodSandbox[];
  containers: CriContainer[];
}

/** Every pod podsync manages on the node (its managed-by label), grouped by uid, in one ListPodSandbox and
 * one ListContainers: what a node-wide read costs before any per-pod status call. */
export async function listManagedPods(cri: CriClient): Promise<Map<string, PodListing>> {
  const filter = { labelSelector: { [KUBERNETES_MANAGED_LABEL]: MANAGED_BY } };
  const [sandboxList, containerList] = await Promise.all([
    cri.listPodSandbox({ filter }),
    cri.listContainers({ filter }),
  ]);
  const pods = new Map<string, PodListing>();
  const of = (uid: string) => pods.get(uid) ?? (pods.set(uid, { sandboxes: [], containers: [] }), pods.get(uid)!);
  for (const s of sandboxList.items) {
    const uid = s.labels[POD_UID_LABEL];
    if (uid) of(uid).sandboxes.push(s);
  }
  for (const c of containerList.containers) {
    const uid = c.labels[POD_UID_LABEL];
    if (uid) of(uid).containers.push(c);
  }
  return pods;
}

/** GetPodStatus from lists already read (the pod's own, or its part of a node-wide list). */
export async function podStatusFromLists(
  cri: CriClient,
  pod: { uid: string; name: string; namespace: string },
  listed: PodListing,
  detail: StatusDetail = "decide",
): Promise<PodStatus> {
  const sandboxes = listed.sandboxes.slice().sort(byCreatedDesc);
  const containers = listed.containers.slice().sort(byCreatedDesc);

  const newest = sandboxes[0];
  const [newestStatus, containerStatuses] = await Promise.all([
    newest
      ? cri.podSandboxStatus({ podSandboxId: newest.id }).then(
          (r) => r.status ?? sandboxFromList(newest),
          (e) => notFoundToUndefined(e),
        )
      : undefined,
    Promise.all(
      containers.map((c) =>
        detail === "decide" && c.state === CriContainerState.CONTAINER_RUNNING
          ? fromList(c)
          : cri.containerStatus({ containerId: c.id }).then(
              (r) => (r.status ? fromStatus(r.status, c) : fromList(c)),
              // Removed between list and status (a concurrent GC): kubelet skips such containers.
              (e) => notFoundToUndefined(e),
            ),
      ),
    ),
  ]);

  // GetPodStatus skips a sandbox whose PodSandboxStatus is NotFound (removed since the list), and takes the pod
  // IPs only from the newest listed sandbox, so a vanished newest one leaves none.
  const sandboxStatuses = sandboxes.slice(1).map(sandboxFromList);
  if (newestStatus) sandboxStatuses.unshift(newestStatus);
  const ready = newestStatus?.state === PodSandboxState.SANDBOX_READY;
  return {
    id: pod.uid,
    name: pod.name,
    namespace: pod.namespace,
    ips: ready ? sandboxIPs(newestStatus) : [],
    sandboxStatuses,
    containerStatuses: containerStatuses.filter((c): c is ContainerStatus => c !== undefined),
  };
}

/** What a sync made in the runtime (sync-pod.ts), so the read-back after it needs no list to find it. */
export interface MadeObjects {
  /** The sandbox the sync made: its config, when RunPodSandbox was sent (ms), and its PodSandboxStatus when the
   * sync read it (for the pod IPs). */
  sandbox?: { id: string; config: PodSandboxConfig; sentAt: number; status?: PodSandboxStatus };
  /** The containers the sync created, by id. */
  containers: string[];
}

/** The "full" status of a pod that held nothing in the runtime before a sync which made `made` and whose every
 * step succeeded: no list is needed, the sync knows each object the pod has (its decision read found none, under
 * the pod's lock). A ContainerStatus per created container (concurrently). The new sandbox's PodSandboxStatus is
 * the one the sync read for the pod IPs, else read now, except for a sandbox in the node's network namespace:
 * it has no IP of its own and CRI's RunPodSandbox leaves a sandbox ready when it succeeds, so its status is the
 * config the sync sent, SANDBOX_READY, created when the call was sent (a difference of the call's duration, well
 * under v1's one-second timestamps; the loop's relist takes createdAt from its list). */
export async function statusOfMade(
  cri: CriClient,
  pod: { uid: string; name: string; namespace: string },
  made: MadeObjects & { sandbox: NonNullable<MadeObjects["sandbox"]> },
): Promise<PodStatus> {
  const sb = made.sandbox;
  const hostNetwork = sb.config.linux?.securityContext?.namespaceOptions?.network === NamespaceMode.NODE;
  const sandbox = async (): Promise<PodSandboxStatus | undefined> => {
    if (sb.status) return sb.status;
    if (!hostNetwork) return (await cri.podSandboxStatus({ podSandboxId: sb.id }).catch(notFoundToUndefined))?.status;
    return create(PodSandboxStatusSchema, {
      id: sb.id,
      metadata: sb.config.metadata,
      state: PodSandboxState.SANDBOX_READY,
      createdAt: BigInt(sb.sentAt) * NS_PER_MS,
      network: { ip: "" },
      linux: { namespaces: { options: sb.config.linux?.securityContext?.namespaceOptions } },
      labels: sb.config.labels,
      annotations: sb.config.annotations,
    });
  };
  const container = (id: string) =>
    cri.containerStatus({ containerId: id }).then((r) => {
      const s = r.status;
      if (!s) return undefined;
      const listed = create(ContainerSchema, {
        id: s.id,
        podSandboxId: sb.id,
        metadata: s.metadata,
        image: s.image,
        imageRef: s.imageRef,
        state: s.state,
        createdAt: s.createdAt,
        labels: s.labels,
        annotations: s.annotations,
      });
      return fromStatus(s, listed);
    }, notFoundToUndefined);
  const [newest, containers] = await Promise.all([sandbox(), Promise.all(made.containers.map(container))]);
  const ready = newest?.state === PodSandboxState.SANDBOX_READY;
  return {
    id: pod.uid,
    name: pod.name,
    namespace: pod.namespace,
    ips: ready ? sandboxIPs(newest) : [],
    sandboxStatuses: newest ? [newest] : [],
    containerStatuses: containers.filter((c): c is ContainerStatus => c !== undefined).sort(byCreatedDesc),
  };
}

/** podStatusFromLists, or, when the runtime fails a detail read of this pod (a sandbox whose PodSandboxStatus
 * fails: "failed to get sandbox ip ... device or resource busy" after a netns could not be removed), the status
 * the lists alone give, with the error in statusError. kubelet's PLEG does the same per pod (generic.go: the
 * pod's inspection error is logged and retried at the next relist; the other pods go on). Other errors (not the
 * runtime's answer) are thrown. */
export async function podStatusOrListed(
  cri: CriClient,
  pod: { uid: string; name: string; namespace: string },
  listed: PodListing,
  detail: StatusDetail = "decide",
): Promise<PodStatus> {
  try {
    return await podStatusFromLists(cri, pod, listed, detail);
  } catch (e) {
    if (!isCriError(e)) throw e;
    return listedStatus(pod, listed, `${e.method}: ${e.details} (${e.codeName})`);
  }
}

/** getPodStatus with podStatusOrListed's fallback (the list calls themselves still fail the call: they are the
 * runtime's, not the pod's). */
export async function getPodStatusOrListed(
  cri: CriClient,
  pod: { uid: string; name: string; namespace: string },
  detail: StatusDetail = "decide",
): Promise<PodStatus> {
  const filter = { labelSelector: managedSelector(pod.uid) };
  const [sandboxList, containerList] = await Promise.all([
    cri.listPodSandbox({ filter }),
    cri.listContainers({ filter }),
  ]);
  return podStatusOrListed(cri, pod, { sandboxes: sandboxList.items, containers: containerList.containers }, detail);
}

/** What the lists alone say of a pod: every sandbox and container as listed. */
export function listedStatus(
  pod: { uid: string; name: string; namespace: string },
  listed: PodListing,
  statusError: string,
): PodStatus {
  return {
    id: pod.uid,
    name: pod.name,
    namespace: pod.namespace,
    ips: [],
    sandboxStatuses: listed.sandboxes.slice().sort(byCreatedDesc).map(sandboxFromList),
    containerStatuses: listed.containers.slice().sort(byCreatedDesc).map(fromList),
    statusError,
  };
}

function notFoundToUndefined(e: unknown): undefined {
  if (isCriError(e, GrpcCode.NOT_FOUND)) return undefined;
  throw e;
}

const byName = new WeakMap<readonly ContainerStatus[], { n: number; map: Map<string, ContainerStatus> }>();

/** kubecontainer.PodStatus.FindContainerStatusByName: the newest instance with that name. computePodActions
 * asks this for every container, so large pods get a name index (kept per status array) to stay linear. */
export function findContainerStatusByName(status: PodStatus, name: string): ContainerStatus | undefined {
  const list = status.containerStatuses;
  if (list.length <= 8) {
    for (const c of list) if (c.name === name) return c;
    return undefined;
  }
  let idx = byName.get(list);
  if (!idx || idx.n !== list.length) {
    const map = new Map<string, ContainerStatus>();
    for (let i = list.length - 1; i >= 0; i--) map.set(list[i]!.name, list[i]!);
    byName.set(list, (idx = { n: list.length, map }));
  }
  return idx.map.get(name);
}

/** What a running container's ContainerStatus adds to its list entry (start time, mounts, log path): fixed for
 * the container's life, so read once per container id and kept (the oldest dropped past `max` entries). */
export class RunningDetails {
  private readonly byId = new Map<string, Pick<ContainerStatus, "startedAt" | "mounts" | "logPath">>();
  constructor(private readonly max = 4096) {}
  /** Keep the details of the running containers of a status read in full. */
  learn(status: PodStatus): void {
    for (const c of status.containerStatuses)
      if (c.state === "running" && c.startedAt > 0 && !this.byId.has(c.id)) {
        if (this.byId.size >= this.max) this.byId.delete(this.byId.keys().next().value!);
        this.byId.set(c.id, { startedAt: c.startedAt, mounts: c.mounts, logPath: c.logPath });
      }
  }
  get(id: string) {
    return this.byId.get(id);
  }
}

/** Complete a "decide" status for reporting: ContainerStatus for the running containers it took from the
 * list (start time, mounts, log path), nothing else read again; none for a container whose details are kept.
 * What a converged sync's read-back costs: no call once its containers were read in full before. */
export async function completeRunning(cri: CriClient, status: PodStatus, known?: RunningDetails): Promise<PodStatus> {
  let read = false;
  const containerStatuses = await Promise.all(
    status.containerStatuses.map((c) => {
      if (c.state !== "running" || c.startedAt > 0) return c;
      const k = known?.get(c.id);
      if (k) return { ...c, ...k };
      read = true;
      return cri.containerStatus({ containerId: c.id }).then(
        (r) =>
          r.status
            ? {
                ...c,
                state: toState(r.status.state),
                startedAt: nsToMs(r.status.startedAt),
                finishedAt: nsToMs(r.status.finishedAt),
                exitCode: r.status.exitCode,
                reason: r.status.reason,
                message: r.status.message,
                mounts: r.status.mounts.map((m) => ({ containerPath: m.containerPath, hostPath: m.hostPath })),
                logPath: r.status.logPath,
              }
            : c,
        (e) => notFoundToUndefined(e),
      );
    }),
  );
  const done = { ...status, containerStatuses: containerStatuses.filter((c): c is ContainerStatus => c !== undefined) };
  if (read) known?.learn(done);
  return done;
}

/** sortPodIPs: the first IPv4 then the first IPv6 (podsync assumes an IPv4-first node). */
export function sortPodIPs(ips: readonly string[]): string[] {
  const v4 = ips.find((ip) => !ip.includes(":"));
  const v6 = ips.find((ip) => ip.includes(":"));
  return [v4, v6].filter((ip): ip is string => ip !== undefined);
}
