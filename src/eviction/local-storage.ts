// kubelet's eviction manager for local storage limits (pkg/kubelet/eviction/eviction_manager.go
// localStorageEviction, helpers.go): per pod, in kubelet's order,
//   emptyDirLimitEviction          an emptyDir on disk used more than its sizeLimit;
//   podEphemeralStorageLimitEviction the pod's containers' writable layers and logs, its local volumes (disk
//                                  emptyDirs) and its hosts file used more than the sum of its containers'
//                                  ephemeral-storage limits;
//   containerEphemeralStorageLimitEviction a container's writable layer and logs used more than its limit.
// The first that holds evicts the pod (evictPod with grace period override 0, which the pod worker makes the
// pod's own grace: manager.ts), with kubelet's message; its status is then Failed, reason Evicted, with no
// condition (only a node-pressure eviction sets DisruptionTarget). Pure: the usage comes in (stats.ts gathers it).
// Node disk pressure's ranking and message are below; manager.ts decides when.
import type { Pod } from "../pod/schema.js";
import { bytes } from "../pod/quantity.js";
import { isRestartableInitContainer } from "../pod/schema.js";

/** kubelet's eviction Reason. */
export const EVICTED_REASON = "Evicted";

/** A pod's local storage use, in bytes, as kubelet's summary stats give it. */
export interface PodStorageUsage {
  /** By container name: its writable layer (CRI ContainerStats) and its log files. */
  containers: ReadonlyMap<string, { rootfs: number; logs: number }>;
  /** By volume name: disk emptyDirs. */
  volumes: ReadonlyMap<string, number>;
  /** The kubelet-managed hosts file. */
  etcHosts: number;
}

/** Whether a pod has anything the eviction manager holds it to (so pods without limits cost no stats pass). */
export function hasLocalStorageLimits(pod: Pod): boolean {
  return (
    (pod.spec.volumes ?? []).some(
      (v) => "emptyDir" in v && v.emptyDir.medium !== "Memory" && v.emptyDir.sizeLimit !== undefined,
    ) ||
    [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some(
      (c) => c.resources?.limits?.["ephemeral-storage"] !== undefined,
    )
  );
}

/** The disk emptyDirs a stats pass measures. */
export const diskEmptyDirs = (pod: Pod) =>
  (pod.spec.volumes ?? []).filter((v) => "emptyDir" in v && v.emptyDir.medium !== "Memory").map((v) => v.name);

/** resource.Quantity's String() for a byte count kubelet summed: binary suffix when exact, else the number. */
export function formatBytes(n: number): string {
  for (const [suffix, size] of [
    ["Ei", 2 ** 60],
    ["Pi", 2 ** 50],
    ["Ti", 2 ** 40],
    ["Gi", 2 ** 30],
    ["Mi", 2 ** 20],
    ["Ki", 2 ** 10],
  ] as const)
    if (n >= size && n % size === 0) return `${n / size}${suffix}`;
  return String(n);
}

/** PodRequestsAndLimits for ephemeral-storage: the app containers' and sidecars' sum, or the largest init
 * container with the sidecars before it, if more; undefined when no container sets one. */
function podEphemeralStorageLimit(pod: Pod): number | undefined {
  const lim = (c: Pod["spec"]["containers"][number]) => c.resources?.limits?.["ephemeral-storage"];
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  if (!all.some((c) => lim(c) !== undefined)) return undefined;
  const b = (c: Pod["spec"]["containers"][number]) => (lim(c) !== undefined ? bytes(lim(c)!) : 0);
  let sum = pod.spec.containers.reduce((s, c) => s + b(c), 0);
  let sidecars = 0;
  let init = 0;
  for (const c of pod.spec.initContainers ?? []) {
    if (isRestartableInitContainer(c)) {
      sum += b(c);
      sidecars += b(c);
      init = Math.max(init, sidecars);
    } else init = Math.max(init, b(c) + sidecars);
  }
  return Math.max(sum, init);
}

/** localStorageEviction for one pod: kubelet's message when it must be evicted, else undefined. */
export function localStorageEviction(pod: Pod, usage: PodStorageUsage): string | undefined {
  for (const v of pod.spec.volumes ?? []) {
    if (!("emptyDir" in v) || v.emptyDir.medium === "Memory" || v.emptyDir.sizeLimit === undefined) continue;
    const used = usage.volumes.get(v.name);
    if (used !== undefined && used > bytes(v.emptyDir.sizeLimit))
      return `Usage of EmptyDir volume ${JSON.stringify(v.name)} exceeds the limit ${JSON.stringify(String(v.emptyDir.sizeLimit))}. `;
  }
  const podLimit = podEphemeralStorageLimit(pod);
  if (podLimit !== undefined) {
    let total = usage.etcHosts;
    for (const c of usage.containers.values()) total += c.rootfs + c.logs;
    for (const name of diskEmptyDirs(pod)) total += usage.volumes.get(name) ?? 0;
    if (total > podLimit)
      return `Pod ephemeral local storage usage exceeds the total limit of containers ${formatBytes(podLimit)}. `;
  }
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    const limit = c.resources?.limits?.["ephemeral-storage"];
    const used = usage.containers.get(c.name);
    if (limit === undefined || !used) continue;
    if (used.rootfs + used.logs > bytes(limit))
      return `Container ${c.name} exceeded its local ephemeral storage limit ${JSON.stringify(String(limit))}. `;
  }
  return undefined;
}

// ---- node disk pressure (kubelet's hard threshold on nodefs.available) ----

/** The pod's ephemeral-storage requests (PodRequests: app containers and sidecars, or the largest init
 * container with the sidecars before it). */
function podEphemeralStorageRequest(pod: Pod): number {
  const req = (c: Pod["spec"]["containers"][number]) => {
    const q = c.resources?.requests?.["ephemeral-storage"] ?? c.resources?.limits?.["ephemeral-storage"];
    return q !== undefined ? bytes(q) : 0;
  };
  let sum = pod.spec.containers.reduce((s, c) => s + req(c), 0);
  let sidecars = 0;
  let init = 0;
  for (const c of pod.spec.initContainers ?? []) {
    if (isRestartableInitContainer(c)) {
      sum += req(c);
      sidecars += req(c);
      init = Math.max(init, sidecars);
    } else init = Math.max(init, req(c) + sidecars);
  }
  return Math.max(sum, init);
}

/** What a pod uses of the node's disk, as kubelet's podDiskUsage counts it (writable layers, logs, local
 * volumes, hosts file). */
export function podDiskUsage(pod: Pod, usage: PodStorageUsage): number {
  let total = usage.etcHosts;
  for (const c of usage.containers.values()) total += c.rootfs + c.logs;
  for (const name of diskEmptyDirs(pod)) total += usage.volumes.get(name) ?? 0;
  return total;
}

/** rankDiskPressureFunc: pods using more than their ephemeral-storage requests first, then lower priority,
 * then the larger use beyond their requests. */
export function rankForDiskPressure<T extends { pod: Pod; usage: PodStorageUsage }>(pods: readonly T[]): T[] {
  const over = (x: T) => podDiskUsage(x.pod, x.usage) > podEphemeralStorageRequest(x.pod);
  const beyond = (x: T) => podDiskUsage(x.pod, x.usage) - podEphemeralStorageRequest(x.pod);
  return [...pods].sort(
    (a, b) =>
      Number(over(b)) - Number(over(a)) ||
      (a.pod.spec.priority ?? 0) - (b.pod.spec.priority ?? 0) ||
      beyond(b) - beyond(a),
  );
}

/** evictionMessage for DiskPressure: the resource, then each container that uses more than it requests. */
export function diskPressureMessage(pod: Pod, usage: PodStorageUsage): string {
  let msg = "The node was low on resource: ephemeral-storage. ";
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    const u = usage.containers.get(c.name);
    const q = c.resources?.requests?.["ephemeral-storage"];
    const request = q !== undefined ? bytes(q) : 0;
    if (u && u.rootfs + u.logs > request)
      msg += `Container ${c.name} was using ${formatBytes(u.rootfs + u.logs)}, request is ${q !== undefined ? String(q) : "0"}, has larger consumption of ephemeral-storage. `;
  }
  return msg;
}
