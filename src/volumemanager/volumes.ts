// Package volumemanager/ — pod volumes (emptyDir, hostPath, configMap/secret/projected/downwardAPI, claims), subPath, pod dirs.
// Imports container/, pod/ and cri/ only; the node's I/O behind its own interfaces (src/host/ implements them).
//
// Pod volumes on the node, as kubelet's volume manager sets them up before SyncPod (it waits for every volume
// of the pod to be mounted, then starts the sandbox): hostPath type checks (pkg/volume/hostpath/host_path.go
// checkType), emptyDir directories and tmpfs mounts (pkg/volume/emptydir/empty_dir.go), and, podsync's own
// in the manner of `podman kube play`, persistentVolumeClaims as node-local directories that outlive pods.
// The engine decides; the node's filesystem is behind VolumeHost (src/host/volumes/volume-host.ts on Node). A
// deployment without one (Workers, which reach the node only through CRI) refuses the volumes that need it.
// A tmpfs emptyDir is unmounted by DELETE's removal of the pod dir (pod-dirs.ts: nothing mounted under it is
// left, as kubelet removes an orphaned pod dir only once its volumes are unmounted).
import type { Pod, Volume } from "../pod/schema.js";
import type { FieldError } from "../pod/validate.js";
import { bytes } from "../pod/quantity.js";
import type { NodeConfig } from "../container/node-config.js";
import { StepError } from "../container/steps.js";
import { podVolumesDir } from "./pod-dirs.js";
import { filePlugin, volumeDir } from "./object-volumes.js";

export type HostPathType = Extract<Volume, { hostPath: unknown }>["hostPath"]["type"];

/** The node's filesystem, as far as volumes need it. */
export interface VolumeHost {
  /** kubelet's checkType: throws HostPathTypeError with kubelet's words; creates for the *OrCreate types. */
  checkHostPath(path: string, type: HostPathType): Promise<void>;
  /** mkdir -p; a leaf made now gets `mode` whatever the umask (an existing one is left as it is). */
  ensureDir(path: string, mode: number): Promise<void>;
  /** Mount a tmpfs of `sizeBytes` at `path` (an existing directory) unless a tmpfs is mounted there already. */
  mountTmpfs(path: string, sizeBytes: number): Promise<void>;
  /** kubelet's SetVolumeOwnership: every entry under `dir` (not following symlinks) gets group `gid`, group
   * read-write (read-only when `readOnly`), directories also group execute and setgid. With `onRootMismatch`
   * (fsGroupChangePolicy OnRootMismatch) nothing changes when the volume's root already has them. */
  setOwnership(dir: string, gid: number, readOnly: boolean, onRootMismatch?: boolean): Promise<void>;
  /** Subdirectories of `dir` (none when it does not exist). */
  listDirs(dir: string): Promise<string[]>;
  /** Remove a directory tree: never following a symlink, never through a mount point (unmounted first). */
  removeDir(path: string): Promise<void>;
}

/** A hostPath type check that failed: the message is kubelet's (`hostPath type check failed: ...`). */
export class HostPathTypeError extends Error {}

/** kubelet's getPodVolumeDir for a plugin: <rootDir>/pods/<uid>/volumes/<plugin> */
export const emptyDirPath = (rootDir: string, uid: string, name: string) =>
  `${podVolumesDir(rootDir, uid)}/kubernetes.io~empty-dir/${name}`;
/** podsync's own: one directory per claim, <namespace>/<claimName>, shared by every pod of the namespace that
 * names the claim (a claim is a namespaced object: ns-a/data-db-0 and ns-b/data-db-0 are two). */
export const claimsDir = (rootDir: string) => `${rootDir}/volumes/pvc`;
export const claimPath = (rootDir: string, namespace: string, claimName: string) =>
  `${claimsDir(rootDir)}/${namespace}/${claimName}`;

/** Where a volume lives on the host. */
export function volumeHostPath(pod: Pod, v: Volume, node: NodeConfig): string {
  if ("hostPath" in v) return v.hostPath.path;
  if ("persistentVolumeClaim" in v)
    return claimPath(node.rootDir, pod.metadata.namespace, v.persistentVolumeClaim.claimName);
  if (filePlugin(v) !== undefined) return volumeDir(node.rootDir, pod.metadata.uid, v);
  return emptyDirPath(node.rootDir, pod.metadata.uid, v.name);
}

/** The claims a pod uses. */
export const podClaims = (pod: Pod): string[] => [
  ...new Set(
    (pod.spec.volumes ?? []).flatMap((v) => ("persistentVolumeClaim" in v ? [v.persistentVolumeClaim.claimName] : [])),
  ),
];

/** Whether a volume needs node I/O beyond what the runtime does by itself (containerd creates a missing
 * bind-mount source directory, which is all an untyped hostPath, DirectoryOrCreate or a disk emptyDir needs). */
function needsHost(v: Volume): string | undefined {
  if ("hostPath" in v && v.hostPath.type !== "" && v.hostPath.type !== "DirectoryOrCreate") return "hostPath.type";
  if ("emptyDir" in v && v.emptyDir.medium === "Memory") return "emptyDir.medium";
  if ("persistentVolumeClaim" in v) return "persistentVolumeClaim";
  return undefined;
}

/** Fields a deployment without node filesystem access cannot honour, each named with the reason. */
export function volumeHostErrors(pod: Pod): FieldError[] {
  const out: FieldError[] = [];
  (pod.spec.volumes ?? []).forEach((v, i) => {
    const field = needsHost(v);
    if (field)
      out.push({
        path: `spec.volumes[${i}].${field}`,
        message: `needs podsync on the node (a type check, a tmpfs mount or a claim directory on the node's filesystem); this deployment reaches the node only through the container runtime`,
      });
  });
  // kubelet's volume ownership (group, group rw, setgid) is node I/O too: without it a non-root pod's fsGroup
  // would not reach its emptyDirs, silently.
  if (pod.spec.securityContext?.fsGroup !== undefined && (pod.spec.volumes ?? []).some((v) => "emptyDir" in v))
    out.push({
      path: "spec.securityContext.fsGroup",
      message:
        "gives emptyDir volumes the group's ownership on the node's filesystem, which this deployment cannot reach (it reaches the node only through the container runtime)",
    });
  return out;
}

/** kubelet's calculateEmptyDirMemorySize: the node's allocatable memory, lowered to the pod's memory limit
 * (when every container has one) and to sizeLimit. */
export function tmpfsSize(pod: Pod, sizeLimit: string | number | undefined, node: NodeConfig): number {
  let size = node.memoryCapacity;
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  const limits = pod.spec.containers.map((c) => c.resources?.limits?.memory);
  if (limits.every((l) => l !== undefined)) {
    // The pod's effective limit: the larger of the app containers' sum and the largest init container's.
    const sum = limits.reduce<number>((a, l) => a + bytes(l!), 0);
    const init = Math.max(
      0,
      ...(pod.spec.initContainers ?? []).map((c) =>
        c.resources?.limits?.memory !== undefined ? bytes(c.resources.limits.memory) : Infinity,
      ),
    );
    const podLimit = Math.max(sum, init);
    if (all.length && Number.isFinite(podLimit) && podLimit > 0) size = Math.min(size, podLimit);
  }
  if (sizeLimit !== undefined && bytes(sizeLimit) > 0) size = Math.min(size, bytes(sizeLimit));
  return size;
}

/** Whether the pod has a volume setUpVolumes acts on (anything but an untyped hostPath). */
export const needsSetUp = (pod: Pod): boolean =>
  (pod.spec.volumes ?? []).some((v) => !("hostPath" in v) || v.hostPath.type !== "");

/** Set up every volume of the pod (kubelet mounts all of a pod's volumes, mounted by a container or not).
 * Idempotent: a sync that finds them in place changes nothing. Throws with kubelet's FailedMount wording.
 * With `podStart` (a new sandbox) and a pod fsGroup, emptyDirs and claims get kubelet's volume ownership (its
 * fsGroupChangePolicy, applied when the pod starts rather than on every container start). */
export async function setUpVolumes(
  host: VolumeHost,
  pod: Pod,
  node: NodeConfig,
  podStart = true,
): Promise<string | undefined> {
  const done: string[] = [];
  const fsGroup = podStart ? pod.spec.securityContext?.fsGroup : undefined;
  const onRootMismatch = pod.spec.securityContext?.fsGroupChangePolicy === "OnRootMismatch";
  for (const v of pod.spec.volumes ?? []) {
    try {
      if ("hostPath" in v) {
        if (v.hostPath.type === "") continue;
        await host.checkHostPath(v.hostPath.path, v.hostPath.type);
      } else if ("emptyDir" in v) {
        const path = emptyDirPath(node.rootDir, pod.metadata.uid, v.name);
        // setupDir: 0777, so a container running as any user can write.
        await host.ensureDir(path, 0o777);
        if (v.emptyDir.medium === "Memory") await host.mountTmpfs(path, tmpfsSize(pod, v.emptyDir.sizeLimit, node));
        if (fsGroup !== undefined) await host.setOwnership(path, fsGroup, false, onRootMismatch);
      } else if ("persistentVolumeClaim" in v) {
        const path = claimPath(node.rootDir, pod.metadata.namespace, v.persistentVolumeClaim.claimName);
        await host.ensureDir(path, 0o777);
        if (fsGroup !== undefined)
          await host.setOwnership(path, fsGroup, v.persistentVolumeClaim.readOnly, onRootMismatch);
      } else continue;
      done.push(v.name);
    } catch (e) {
      throw new StepError(
        "FailedMount",
        `MountVolume.SetUp failed for volume "${v.name}" : ${(e as Error).message}`,
        e,
      );
    }
  }
  return done.length ? `volumes ready: ${done.join(", ")}` : undefined;
}
