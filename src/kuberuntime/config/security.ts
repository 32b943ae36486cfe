// Security settings kubelet derives for a container: default masked/readonly /proc paths, the seccomp and
// AppArmor profiles (helpers.go getSeccompProfile, getAppArmorProfile), SELinux options
// (security_context.go convertToRuntimeSELinuxOption) and the runAsNonRoot check against the image's user
// (kuberuntime_container_linux.go, security_context_others.go).
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  SecurityProfile_ProfileType,
  type SecurityProfileSchema,
  type SELinuxOptionSchema,
} from "../../gen/runtime/v1/api_pb.js";
import type { Container, Pod } from "../../pod/schema.js";
import type { NodeConfig } from "../../container/node-config.js";

type Profile = MessageInitShape<typeof SecurityProfileSchema>;
type ProfileField = { type: "RuntimeDefault" | "Localhost" | "Unconfined"; localhostProfile?: string | undefined };
const TYPE = {
  RuntimeDefault: SecurityProfile_ProfileType.RuntimeDefault,
  Localhost: SecurityProfile_ProfileType.Localhost,
  Unconfined: SecurityProfile_ProfileType.Unconfined,
} as const;

/** kubelet's seccomp profile root (<root-dir>/seccomp): Localhost profiles are files under it. */
export const seccompProfileRoot = (node: NodeConfig) => `${node.rootDir}/seccomp`;

/** getSeccompProfile: the container's field, else the pod's, else the node default (RuntimeDefault when
 * seccompDefault is on). Differs from kubelet in one way: with the default off and nothing set, kubelet sends
 * Unconfined and podsync sends no profile (the runtime's meaning is the same, unconfined), so that an explicit
 * Unconfined in a CRI request always means the pod asked for it (src/auth/cri-policy.ts relies on that). */
export function seccompProfile(pod: Pod, container: Container | undefined, node: NodeConfig): Profile | undefined {
  const field: ProfileField | undefined =
    container?.securityContext?.seccompProfile ?? pod.spec.securityContext?.seccompProfile;
  if (!field) return node.seccompDefault ? { profileType: TYPE.RuntimeDefault } : undefined;
  if (field.type === "Localhost")
    return { profileType: TYPE.Localhost, localhostRef: `${seccompProfileRoot(node)}/${field.localhostProfile}` };
  return { profileType: TYPE[field.type] };
}

/** getAppArmorProfile: the container's field, else the pod's; none leaves it to the runtime (containerd
 * applies its default profile when the host has AppArmor). Both the field and the deprecated string form. */
export function appArmorProfile(pod: Pod, container: Container): { apparmor?: Profile; apparmorProfile?: string } {
  const field: ProfileField | undefined =
    container.securityContext?.appArmorProfile ?? pod.spec.securityContext?.appArmorProfile;
  if (!field) return {};
  if (field.type === "Localhost")
    return {
      apparmor: { profileType: TYPE.Localhost, localhostRef: field.localhostProfile! },
      apparmorProfile: `localhost/${field.localhostProfile}`,
    };
  return {
    apparmor: { profileType: TYPE[field.type] },
    apparmorProfile: field.type === "RuntimeDefault" ? "runtime/default" : "unconfined",
  };
}

/** convertToRuntimeSELinuxOption. Without SELinux on the host the runtime ignores it, as under kubelet. */
export function seLinuxOptions(
  o:
    | { user?: string | undefined; role?: string | undefined; type?: string | undefined; level?: string | undefined }
    | undefined,
): MessageInitShape<typeof SELinuxOptionSchema> | undefined {
  return o && { user: o.user ?? "", role: o.role ?? "", type: o.type ?? "", level: o.level ?? "" };
}

export const DEFAULT_MASKED_PATHS = [
  "/proc/asound",
  "/proc/acpi",
  "/proc/kcore",
  "/proc/keys",
  "/proc/latency_stats",
  "/proc/timer_list",
  "/proc/timer_stats",
  "/proc/sched_debug",
  "/proc/scsi",
  "/sys/firmware",
  "/sys/devices/virtual/powercap",
];
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
  if (runAsUser !== undefined)
    return runAsUser === 0 ? `container's runAsUser breaks non-root policy ${who}` : undefined;
  if (image?.uid !== undefined)
    return image.uid === 0n ? `container has runAsNonRoot and image will run as root ${who}` : undefined;
  if (image?.username)
    return `container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root ${who}`;
  // No user in the image config at all: it runs as root.
  return `container has runAsNonRoot and image will run as root ${who}`;
}
