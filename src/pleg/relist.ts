// The node agent's relist, like kubelet's GenericPLEG.Relist (pkg/kubelet/pleg/generic.go): the whole node in
// two CRI calls, ListPodSandbox and ListContainers, filtered to what podsync made (io.kubernetes.managed-by=
// podsync), grouped by pod uid. From them it builds, for each pod it is asked about, the same "decide" status
// getPodStatus would read (pod-status.ts), from the lists plus what never changes once known:
//   - a sandbox's PodSandboxStatus (network and namespaces are fixed for its life; only its state changes,
//     and that comes from the list), cached by sandbox id;
//   - an exited container's ContainerStatus (exit code, reason, start and finish are final), cached by id;
//   - a running container's start time (for probes' initialDelaySeconds), cached by id, read only for pods
//     the caller says need it.
// Each is read once in an object's life (or learnt from a sync's read-back, which already has it), so a
// converged node costs the two list calls and nothing more. Cache entries go when their object leaves the list.
//
// Unlike kubelet's PLEG, which calls GetPodStatus for every pod with an event, this builds statuses from the
// lists: the engine's decision reads only what the lists and the caches hold.
import type { Container as CriContainer, PodSandbox, PodSandboxStatus } from "../gen/runtime/v1/api_pb.js";
import { ContainerState as CriContainerState, PodSandboxState } from "../gen/runtime/v1/api_pb.js";
import type { CriClient } from "../cri/client.js";
import { GrpcCode, isCriError } from "../cri/errors.js";
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from "../container/labels.js";
import {
  byCreatedDesc,
  fromList,
  listManagedPods,
  fromStatus,
  nsToMs,
  sandboxFromList,
  sandboxIPs,
  toState,
} from "../kuberuntime/pod-status.js";
import type { Owner } from "./evented.js";
import type { ContainerStatus, PodStatus } from "../container/types.js";

export interface PodView {
  /** Built when first read (a converged pod's is often not needed at all); read it before the next relist. */
  readonly status: PodStatus;
  /** Every sandbox's and container's id and state: a pod whose fingerprint changed had a lifecycle event. */
  fingerprint: string;
  /** The runtime failed a detail read of this pod (its status is then incomplete: decide nothing from it). */
  error?: string | undefined;
}

export interface Relist {
  /** When the list calls went out (ms): anything that changed the pod after this is not in the view. */
  at: number;
  /** The pods asked about that the runtime holds anything of. */
  pods: Map<string, PodView>;
  /** Every pod uid podsync's labels name on the node. */
  uids: Set<string>;
  /** Which pod each listed sandbox and container id belongs to (for runtime events, which name only the id). */
  owners: Map<string, Owner>;
  /** CRI calls this relist made (2 when every detail was cached). */
  criCalls: number;
}

export interface RelistInterest {
  /** Build a status for this pod. */
  wants(uid: string): boolean;
  /** Its running containers' start times are needed (its probes have initial delays). */
  wantsStartTimes(uid: string): boolean;
}

export interface Relister {
  relist(interest: RelistInterest, now: () => number): Promise<Relist>;
  /** Take what a sync's read-back already read (sandbox status, exited containers, start times). */
  learn(status: PodStatus): void;
  /** Cache sizes, for tests. */
  readonly cached: { sandboxes: number; exited: number; started: number };
}

/** At most this many detail reads at once (a start-up after a reboot reads one per sandbox). */
const DETAIL_CONCURRENCY = 16;
/** A detail read the runtime failed is tried again after 1 s, doubling up to 10 s (kubelet's backOffPeriod). */
const READ_RETRY_MS = 1000;
const READ_RETRY_MAX_MS = 10_000;

/** What the relister keeps between relists: details that never change once known, and failed reads' back-off. */
interface Caches {
  sandbox: Map<string, PodSandboxStatus>;
  exited: Map<string, ContainerStatus>;
  started: Map<string, number>;
  /** Objects whose detail read the runtime failed: the error, and when to read again. */
  failedReads: Map<string, { error: string; retryAt: number; delay: number }>;
}

export function createRelister(cri: CriClient): Relister {
  const c: Caches = { sandbox: new Map(), exited: new Map(), started: new Map(), failedReads: new Map() };
  return {
    relist: (interest, now) => relistOnce(cri, c, interest, now),
    learn(status) {
      const s = status.sandboxStatuses[0];
      // A status from PodSandboxStatus (the list's stand-in has no linux section).
      if (s && s.linux !== undefined) c.sandbox.set(s.id, s);
      for (const x of status.containerStatuses) {
        if (x.state === "exited" && x.finishedAt > 0) c.exited.set(x.id, x);
        if (x.startedAt > 0) c.started.set(x.id, x.startedAt);
      }
    },
    get cached() {
      return { sandboxes: c.sandbox.size, exited: c.exited.size, started: c.started.size };
    },
  };
}

async function relistOnce(cri: CriClient, c: Caches, interest: RelistInterest, now: () => number): Promise<Relist> {
  const at = now();
  const byPod = await listManagedPods(cri);
  forgetGone(c, byPod);
  // One pod's broken sandbox (its PodSandboxStatus fails) is that pod's error, never the relist's: kubelet's
  // PLEG logs the pod's inspection error and goes on (generic.go), reinspecting it later.
  const errors = new Map<string, string>();
  const reads = detailReads(cri, c, byPod, interest, { at, now }, errors);
  await pool(reads, DETAIL_CONCURRENCY);

  const pods = new Map<string, PodView>();
  for (const [uid, g] of byPod) {
    if (!interest.wants(uid)) continue;
    let status: PodStatus | undefined;
    const fingerprint = fingerprintOf({
      sandboxStatuses: g.sandboxes,
      containerStatuses: g.containers.map((x) => ({ id: x.id, state: toState(x.state) })),
    });
    pods.set(uid, {
      fingerprint,
      error: errors.get(uid),
      get status() {
        return (status ??= build(c, uid, g.sandboxes, g.containers));
      },
    });
  }
  const owners = new Map<string, Owner>();
  for (const [uid, g] of byPod) {
    for (const sb of g.sandboxes) owners.set(sb.id, { uid, sandbox: true });
    for (const x of g.containers) owners.set(x.id, { uid, sandbox: false });
  }
  return { at, pods, uids: new Set(byPod.keys()), owners, criCalls: 2 + reads.length };
}

/** Forget what left the node. */
function forgetGone(c: Caches, byPod: Map<string, { sandboxes: PodSandbox[]; containers: CriContainer[] }>): void {
  const listed = [...byPod.values()];
  const sandboxIds = new Set(listed.flatMap((g) => g.sandboxes.map((s) => s.id)));
  const containerIds = new Set(listed.flatMap((g) => g.containers.map((x) => x.id)));
  for (const id of c.sandbox.keys()) if (!sandboxIds.has(id)) c.sandbox.delete(id);
  for (const id of c.exited.keys()) if (!containerIds.has(id)) c.exited.delete(id);
  for (const id of c.started.keys()) if (!containerIds.has(id)) c.started.delete(id);
  for (const id of c.failedReads.keys()) if (!sandboxIds.has(id) && !containerIds.has(id)) c.failedReads.delete(id);
}

/** What must still be read: the newest sandbox of each pod of interest, its exited containers, and the start
 * times its prober needs. A read the runtime fails is the pod's error (`errors`), read again after a back-off. */
function detailReads(
  cri: CriClient,
  c: Caches,
  byPod: Map<string, { sandboxes: PodSandbox[]; containers: CriContainer[] }>,
  interest: RelistInterest,
  clock: { at: number; now: () => number },
  errors: Map<string, string>,
): (() => Promise<void>)[] {
  const detail = async (uid: string, id: string, read: () => Promise<void>) => {
    const f = c.failedReads.get(id);
    if (f && clock.at < f.retryAt) {
      errors.set(uid, f.error);
      return;
    }
    try {
      await read();
      c.failedReads.delete(id);
    } catch (e) {
      if (!isCriError(e)) throw e;
      const delay = f ? Math.min(f.delay * 2, READ_RETRY_MAX_MS) : READ_RETRY_MS;
      const error = `${e.method}: ${e.details} (${e.codeName})`;
      c.failedReads.set(id, { error, retryAt: clock.now() + delay, delay });
      errors.set(uid, error);
    }
  };
  const reads: (() => Promise<void>)[] = [];
  for (const [uid, g] of byPod) {
    if (!interest.wants(uid)) continue;
    g.sandboxes.sort(byCreatedDesc);
    g.containers.sort(byCreatedDesc);
    const newest = g.sandboxes[0];
    if (newest && !c.sandbox.has(newest.id))
      reads.push(() =>
        detail(uid, newest.id, async () => {
          const r = await cri.podSandboxStatus({ podSandboxId: newest.id }).catch(notFound);
          if (r?.status) c.sandbox.set(newest.id, r.status);
        }),
      );
    const starts = interest.wantsStartTimes(uid);
    for (const x of g.containers) {
      const exited = x.state === CriContainerState.CONTAINER_EXITED;
      if (
        (exited && !c.exited.has(x.id)) ||
        (starts && x.state === CriContainerState.CONTAINER_RUNNING && !c.started.has(x.id))
      )
        reads.push(() =>
          detail(uid, x.id, async () => {
            const r = await cri.containerStatus({ containerId: x.id }).catch(notFound);
            const st = r?.status;
            if (!st) return;
            if (st.state === CriContainerState.CONTAINER_EXITED) c.exited.set(x.id, fromStatus(st, x));
            if (st.startedAt > 0n) c.started.set(x.id, nsToMs(st.startedAt));
          }),
        );
    }
  }
  return reads;
}

function build(c: Caches, uid: string, sandboxes: PodSandbox[], containers: CriContainer[]): PodStatus {
  const newest = sandboxes[0];
  const cached = newest && c.sandbox.get(newest.id);
  // The newest sandbox as getPodStatus reports it: its status call's details with the list's current state (and
  // creation time: a sync's read-back of a hostNetwork sandbox it made has only the time its call was sent).
  // One whose status could not be read (removed since the list) is left out, as getPodStatus leaves it.
  const sandboxStatuses: PodSandboxStatus[] = sandboxes.slice(1).map(sandboxFromList);
  if (cached) sandboxStatuses.unshift({ ...cached, state: newest.state, createdAt: newest.createdAt });
  const containerStatuses: ContainerStatus[] = [];
  for (const x of containers) {
    if (x.state === CriContainerState.CONTAINER_EXITED) {
      const e = c.exited.get(x.id);
      if (e) containerStatuses.push(e);
      continue; // removed between the list and its status: left out, as in getPodStatus
    }
    const s = fromList(x);
    const started = c.started.get(x.id);
    containerStatuses.push(started !== undefined ? { ...s, startedAt: started } : s);
  }
  const labels = newest?.labels ?? containers[0]?.labels ?? {};
  return {
    id: uid,
    name: labels[POD_NAME_LABEL] ?? "",
    namespace: labels[POD_NAMESPACE_LABEL] ?? "",
    ips: cached && newest.state === PodSandboxState.SANDBOX_READY ? sandboxIPs(cached) : [],
    sandboxStatuses,
    containerStatuses,
  };
}

/** The ids and states of a pod's sandboxes and containers: equal for a relist and for a sync's read-back that
 * saw the same objects, so the loop can tell its own sync's doing from a later event. */
export function fingerprintOf(status: {
  sandboxStatuses: readonly { id: string; state: number }[];
  containerStatuses: readonly { id: string; state: string }[];
}): string {
  const sb = status.sandboxStatuses.map((s) => `${s.id}:${s.state}`).sort();
  const cs = status.containerStatuses.map((c) => `${c.id}:${c.state}`).sort();
  return `${sb.join(",")}|${cs.join(",")}`;
}

function notFound(e: unknown): undefined {
  if (isCriError(e, GrpcCode.NOT_FOUND)) return undefined;
  throw e;
}

async function pool(tasks: (() => Promise<void>)[], n: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(n, tasks.length) }, worker));
}
