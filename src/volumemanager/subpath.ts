// subPath, the safe way (CVE-2017-1002101): a container may write a symlink into a volume (`ln -s /
// /scratch/escape`), so `subPath: escape` joined onto the volume path and handed to the runtime would mount
// the host's `/`. As kubelet does (pkg/volume/util/subpath/subpath_linux.go: doBindSubPath, doSafeOpen,
// doSafeMakeDir), the node side opens the subPath component by component without following symlinks, checks
// that what it opened lies inside the volume, and bind-mounts that open file descriptor onto
// <pod dir>/volume-subpaths/<volume>/<container>/<index>; the runtime gets that target, so nothing can be
// swapped between the check and the mount. A deployment without the node filesystem (Workers) cannot do this
// and refuses subPath before any runtime call.
import type { Container, Pod } from "../pod/schema.js";
import type { FieldError } from "../pod/validate.js";
import { volumeHostPath } from "./volumes.js";
import type { NodeConfig } from "../container/node-config.js";
import { podDir, type SubPathBind } from "./pod-dirs.js";

/** Why a bind was refused, in words safe to return to the caller (`reason`, no host path); the message has
 * the details. kubelet returns only "failed to prepare subPath ..." for the same reason: host paths stay on
 * the node. */
export class SubPathError extends Error {
  constructor(
    readonly reason: string,
    detail: string,
  ) {
    super(detail);
  }
}

/** kubelet's makeMounts message, with the safe reason when there is one. */
export function subPathStepMessage(mountName: string, container: string, e: unknown): string {
  const why = e instanceof SubPathError ? e.reason : `${(e as NodeJS.ErrnoException)?.code ?? "error"} on the node`;
  return `failed to prepare subPath for volumeMount ${JSON.stringify(mountName)} of container ${JSON.stringify(container)}: ${why}`;
}

/** kubelet's getSubpathBindTarget */
export const subPathTarget = (rootDir: string, uid: string, volume: string, container: string, index: number) =>
  `${podDir(rootDir, uid)}/volume-subpaths/${volume}/${container}/${index}`;

/** The binds a container's mounts need, by index into its volumeMounts: a subPath, or a subPathExpr as
 * `expanded` (by index) gives it. */
export function subPathBinds(
  pod: Pod,
  container: Container,
  node: NodeConfig,
  expanded: ReadonlyMap<number, string> = new Map(),
): Map<number, SubPathBind> {
  const volumes = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v] as const));
  const out = new Map<number, SubPathBind>();
  (container.volumeMounts ?? []).forEach((m, i) => {
    const subPath = m.subPath || expanded.get(i);
    if (!subPath) return;
    const v = volumes.get(m.name)!;
    out.set(i, {
      volumePath: volumeHostPath(pod, v, node),
      subPath,
      target: subPathTarget(node.rootDir, pod.metadata.uid, v.name, container.name, i),
      createVolume: !("hostPath" in v),
    });
  });
  return out;
}

/** Every subPath in the pod, named, for a deployment that cannot bind them safely. */
export function subPathUnsupported(pod: Pod, why: string): FieldError[] {
  const out: FieldError[] = [];
  for (const [kind, list] of [
    ["initContainers", pod.spec.initContainers ?? []],
    ["containers", pod.spec.containers],
  ] as const)
    list.forEach((c, i) =>
      (c.volumeMounts ?? []).forEach((m, j) => {
        if (m.subPath)
          out.push({
            path: `spec.${kind}[${i}].volumeMounts[${j}].subPath`,
            message: `subPath cannot be used on this deployment: ${why}`,
          });
        if (m.subPathExpr)
          out.push({
            path: `spec.${kind}[${i}].volumeMounts[${j}].subPathExpr`,
            message: `subPathExpr cannot be used on this deployment: ${why}`,
          });
      }),
    );
  return out;
}
