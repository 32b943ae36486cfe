// What this node cannot honour, refused before any runtime call: kubelet's sysctl and AppArmor admission (lifecycle/),
// subPath without a safe bind, volumes and local storage limits that need what this deployment lacks.
import type { NodeConfig } from "../container/node-config.js";
import { hostAliasesUnsupported } from "../kuberuntime/config/etc-hosts.js";
import { admitOnNode, PodAdmissionError } from "../lifecycle/node-admission.js";
import { fileVolumeErrors } from "../pod/references.js";
import type { Pod } from "../pod/schema.js";
import { InvalidPodError } from "../pod/validate.js";
import { subPathUnsupported } from "../volumemanager/subpath.js";
import { volumeHostErrors } from "../volumemanager/volumes.js";
import type { PodRuntimeOptions } from "./types.js";

/** What the node cannot honour, refused before any runtime call: kubelet's sysctl and AppArmor admission;
 * subPath without a safe bind; volumes that need the node's filesystem where there is none. */
export function nodeAdmission(o: PodRuntimeOptions, node: NodeConfig): (pod: Pod) => void {
  return (pod: Pod) => {
    const failures = admitOnNode(pod, node);
    if (failures.length) throw new PodAdmissionError(failures);
    const errors = [
      ...(o.podDirs ? [] : subPathUnsupported(pod, "it cannot bind a subPath on the node safely (no node filesystem)")),
      ...(o.podDirs?.writeHostsFile
        ? []
        : hostAliasesUnsupported(pod, "it cannot write the pod's hosts file on the node (no node filesystem)")),
      ...(o.localStorageLimits ? [] : localStorageLimitsUnsupported(pod)),
      ...(o.volumeHost ? [] : volumeHostErrors(pod)),
      ...(o.volumeFiles
        ? []
        : fileVolumeErrors(pod, "this deployment cannot write files on the node (use env: valueFrom or envFrom)")),
    ];
    if (errors.length) throw new InvalidPodError(errors);
  };
}

/** Local storage limits where no eviction manager holds pods to them (kubelet enforces them only by evicting). */
function localStorageLimitsUnsupported(pod: Pod): { path: string; message: string }[] {
  const why =
    "is held only by kubelet's eviction manager, which this deployment does not run (it cannot measure the node's disk)";
  const out: { path: string; message: string }[] = [];
  (pod.spec.volumes ?? []).forEach((v, i) => {
    if ("emptyDir" in v && v.emptyDir.medium !== "Memory" && v.emptyDir.sizeLimit !== undefined)
      out.push({
        path: `spec.volumes[${i}].emptyDir.sizeLimit`,
        message: `a sizeLimit on a disk emptyDir ${why} (medium: Memory makes a tmpfs of that size)`,
      });
  });
  for (const kind of ["initContainers", "containers"] as const)
    (pod.spec[kind] ?? []).forEach((c, i) => {
      if (c.resources?.limits?.["ephemeral-storage"] !== undefined)
        out.push({
          path: `spec.${kind}[${i}].resources.limits.ephemeral-storage`,
          message: `an ephemeral-storage limit ${why}`,
        });
    });
  return out;
}
