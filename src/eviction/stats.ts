// The stats pass behind local storage eviction, as kubelet's summary provider feeds its eviction manager:
// one CRI ListContainerStats for the pod's containers (each running instance's writable layer), and the disk
// use of its log directory per container, its disk emptyDirs and its hosts file, measured on the node
// (DiskUsage: src/host/metrics/disk-usage.ts). Only pods that declare a limit are measured. The emptyDirs' use comes
// from the volume stats cache (volume-stats.ts: kubelet's fsResourceAnalyzer), measured once per aggregation
// period; the logs and hosts file are measured on every pass, as kubelet's host stats provider does.
import type { CriClient } from "../cri/client.js";
import type { Pod } from "../pod/schema.js";
import type { NodeConfig } from "../container/node-config.js";
import type { PodStatus } from "../container/types.js";
import { KUBERNETES_MANAGED_LABEL, MANAGED_BY } from "../container/labels.js";
import { podLogsDirectory } from "../kuberuntime/config/config.js";
import { etcHostsFile } from "../kuberuntime/config/etc-hosts.js";
import { emptyDirPath } from "../volumemanager/volumes.js";
import { diskEmptyDirs, type PodStorageUsage } from "./local-storage.js";
import type { VolumeStatsCache } from "./volume-stats.js";

/** Disk use on the node, in bytes (du's blocks, as kubelet's fsquota/du measure it); 0 for a missing path. */
export interface DiskUsage {
  usage(path: string): Promise<number>;
}

/** Every managed container's writable layer use, by container id: one ListContainerStats for the node. */
export async function writableLayers(cri: CriClient): Promise<Map<string, number>> {
  const { stats } = await cri.listContainerStats({
    filter: { labelSelector: { [KUBERNETES_MANAGED_LABEL]: MANAGED_BY } },
  });
  return new Map(stats.map((s) => [s.attributes?.id ?? "", Number(s.writableLayer?.usedBytes?.value ?? 0n)]));
}

/** What one pass measures with: the node's writable layers (`rootfs`), du, and the volume stats cache. */
export interface StatsSources {
  rootfs: ReadonlyMap<string, number>;
  disk: DiskUsage;
  volumeStats: VolumeStatsCache;
  node: NodeConfig;
  now: number;
}

/** One pod's use: its running containers' writable layers, its emptyDirs (cached), and what du measures. */
export async function podStorageUsage(src: StatsSources, pod: Pod, status: PodStatus): Promise<PodStorageUsage> {
  const { rootfs, disk, node } = src;
  const uid = pod.metadata.uid;
  const measureVolumes = async () =>
    new Map(
      await Promise.all(
        diskEmptyDirs(pod).map(
          async (name) => [name, await disk.usage(emptyDirPath(node.rootDir, uid, name))] as const,
        ),
      ),
    );
  const [volumes, etcHosts] = await Promise.all([
    src.volumeStats.get(uid, src.now, measureVolumes),
    disk.usage(etcHostsFile(node.rootDir, uid)),
  ]);
  const logsDir = podLogsDirectory(node, pod);
  const containers = new Map<string, { rootfs: number; logs: number }>();
  await Promise.all(
    [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map(async (c) => {
      const running = status.containerStatuses.find((s) => s.name === c.name && s.state === "running");
      containers.set(c.name, {
        rootfs: running ? (rootfs.get(running.id) ?? 0) : 0,
        logs: await disk.usage(`${logsDir}/${c.name}`),
      });
    }),
  );
  return { containers, volumes, etcHosts };
}
