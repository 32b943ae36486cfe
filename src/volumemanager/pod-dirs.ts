// The pod's data on the node: <rootDir>/pods/<uid> (emptyDir volumes, termination-message files, subPath
// binds) and its log directory <podLogsDir>/<namespace>_<name>_<uid>. DELETE removes both once the pod's
// containers are gone, as kubelet's cleanupOrphanedPodDirs (pod dir, after podVolumesExist says nothing is
// mounted) and its container GC's log-directory eviction do (kubelet_pods.go, kuberuntime_gc.go).
//
// The node filesystem sits behind PodDirs (src/host/volumes/pod-dirs.ts on Node), which also makes subPath binds
// (subpath.ts). A deployment without it (Workers) leaves both directories on the node and refuses subPath.
import type { NodeConfig } from "../container/node-config.js";
import type { PodStatus } from "../container/types.js";

export interface PodDirs {
  /** Remove a directory tree the pod owned; missing is fine. Never follows a symlink (a link is removed, not
   * its target) and never removes through a mount point: mounts under `dir` are unmounted first, and one that
   * cannot be is an error before anything under `dir` is removed. */
  removeTree(dir: string): Promise<void>;
  /** Bind the volume's subPath onto `target` so that it cannot resolve outside the volume (see subpath.ts);
   * an error says why not (kubelet reports it as CreateContainerConfigError). */
  bindSubPath(bind: SubPathBind): Promise<void>;
  /** Write the pod's kubelet-managed hosts file (etc-hosts.ts), mode 0644, making its directory; without it
   * the runtime's own /etc/hosts stays. */
  writeHostsFile?(file: string, content: string): Promise<void>;
  /** The node's own /etc/hosts (a hostNetwork pod's hosts file starts from it). */
  readNodeHosts?(): Promise<string>;
}

/** kubelet's getPodDir */
export const podDir = (rootDir: string, uid: string) => `${rootDir}/pods/${uid}`;
/** Where a pod's volumes live, one directory per plugin (kubelet's layout: kubernetes.io~empty-dir, ~configmap, ...). */
export const podVolumesDir = (rootDir: string, uid: string) => `${podDir(rootDir, uid)}/volumes`;

/** BuildPodLogsDirectory for each name the uid's sandboxes carry (one, unless made before uids were unique). */
export function podDataPaths(node: NodeConfig, uid: string, status: PodStatus): string[] {
  const logs = new Set<string>();
  for (const s of status.sandboxStatuses) {
    const m = s.metadata;
    const base = m ? `${m.namespace}_${m.name}_${uid}` : "";
    // Names podsync validated when it made the sandbox; a base that could leave the directory is skipped.
    if (m && !base.includes("/") && base !== "." && base !== "..") logs.add(`${node.podLogsDir}/${base}`);
  }
  return [podDir(node.rootDir, uid), ...logs];
}

/** Remove each path in turn; the step's message lists them. */
export async function removePodData(dirs: PodDirs, paths: string[]): Promise<string> {
  for (const p of paths) await dirs.removeTree(p);
  return `removed ${paths.join(", ")}`;
}

export interface SubPathBind {
  /** The volume's directory on the node (not followed if it is a symlink's target: resolved once, as kubelet does). */
  volumePath: string;
  /** Relative, no `..` (validated); may name a file or a directory, created as a directory when missing. */
  subPath: string;
  /** Where the bind goes: the path handed to the runtime. */
  target: string;
  /** An emptyDir is made on first use; a hostPath must exist. */
  createVolume: boolean;
}
