// What the node is, read once at start: its IPs, the admission view of it (NodeInfo: capacity, allocatable, labels,
// the DiskPressure condition) and the engine's node config (the downward API's defaults, DNS, the root dir).
import { statfs } from "node:fs/promises";
import { cpus, totalmem } from "node:os";
import { dirname } from "node:path";
import { nodePolicy } from "../auth/policy.js";
import { canonicalRootDir } from "../host/volumes/mounts.js";
import { hostAppArmorEnabled } from "../host/volumes/volume-host.js";
import { nodeHostIPs } from "../host/probe-network.js";
import { nodeConfigFrom } from "../settings/common.js";
import { nodeInfoFrom } from "../settings/node-info.js";
import { hostResolvConf, type Settings } from "../settings/node.js";

/** The node's DiskPressure as the eviction manager last found it (the Node object's condition, and admission's). */
export interface DiskPressure {
  current: { pressure: boolean; since: number } | undefined;
}

export async function describeNode(s: Settings, disk: DiskPressure) {
  const hostIPs = await nodeHostIPs();
  const policy = nodePolicy(s);
  const nodeInfo = {
    ...nodeInfoFrom(s, s.PODSYNC_NODE_NAME, {
      arch: process.arch,
      cpus: cpus().length,
      memoryBytes: totalmem(),
      ephemeralStorageBytes: await rootFsBytes(canonicalRootDir(s.PODSYNC_ROOT_DIR)),
    }),
    conditions: () => (disk.current?.pressure ? (["DiskPressure"] as const) : []),
  };
  // The downward API's defaults for a missing limit are the node's allocatable, as admission sees it.
  const nodeConfig = {
    ...nodeConfigFrom(s, { dns: hostResolvConf(), memoryBytes: totalmem(), appArmorEnabled: hostAppArmorEnabled() }),
    rootDir: canonicalRootDir(s.PODSYNC_ROOT_DIR),
    nodeName: s.PODSYNC_NODE_NAME,
    cpuCapacity: (nodeInfo.allocatable.milliCPU ?? cpus().length * 1000) / 1000,
  };
  return { hostIPs, policy, nodeInfo, nodeConfig };
}
export type NodeFacts = Awaited<ReturnType<typeof describeNode>>;

/** The size of the filesystem holding the root dir (kubelet's node ephemeral-storage capacity); unknown when it
 * cannot be read (then admission does not check ephemeral-storage). */
async function rootFsBytes(dir: string): Promise<number | undefined> {
  for (let d = dir; ; d = dirname(d)) {
    const st = await statfs(d).catch(() => undefined);
    if (st) return st.blocks * st.bsize;
    if (d === "/" || d === ".") return undefined;
  }
}
