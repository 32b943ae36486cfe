// Security settings kubelet derives for a container: default masked/readonly /proc paths and the
// runAsNonRoot check against the image's user (kuberuntime_container_linux.go, security_context_others.go).
import type { Container, Pod } from "../pod/schema.js";

export const DEFAULT_MASKED_PATHS = ["/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"];
export const DEFAULT_READONLY_PATHS = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

/** The user an image runs as (ImageStatus uid / username), for the runAsNonRoot check. */
export interface ImageUser {
  uid: bigint | undefined;
  username: string;
}

/** Whether runAsNonRoot applies and the check needs to know the image's user (no explicit runAsUser). */
export function needsImageUser(pod: Pod, container: Container): boolean {
  const nonRoot = container.securityContext?.runAsNonRoot ?? pod.spec.securityContext?.runAsNonRoot;
  const runAsUser = container.securityContext?.runAsUser ?? pod.spec.securityContext?.runAsUser;
  return nonRoot === true && runAsUser === undefined;
}

/** kubelet's verifyRunAsNonRoot: an error message, or undefined when the container may run. */
export function verifyRunAsNonRoot(pod: Pod, container: Container, image: ImageUser | undefined): string | undefined {
  const nonRoot = container.securityContext?.runAsNonRoot ?? pod.spec.securityContext?.runAsNonRoot;
  if (!nonRoot) return undefined;
  const who = `(pod: "${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})", container: ${container.name})`;
  const runAsUser = container.securityContext?.runAsUser ?? pod.spec.securityContext?.runAsUser;
  if (runAsUser !== undefined) return runAsUser === 0 ? `container's runAsUser breaks non-root policy ${who}` : undefined;
  if (image?.uid !== undefined) return image.uid === 0n ? `container has runAsNonRoot and image will run as root ${who}` : undefined;
  if (image?.username) return `container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root ${who}`;
  // No user in the image config at all: it runs as root.
  return `container has runAsNonRoot and image will run as root ${who}`;
}

