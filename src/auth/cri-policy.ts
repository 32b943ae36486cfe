// The node policy enforced on CRI requests (for cri-proxy): a caller holding the proxy's token must not get
// more than a signed pod could. Each Pod Security Standards rule is checked on the CRI fields the kubelet
// (and podsync's src/kuberuntime/config/config.ts) produces from the pod field it restricts, with the same rule ids
// and the same allowed values (pss-rules.ts). Rules with no CRI counterpart (probe hosts: the kubelet runs
// probes) are not checked here. A few podsync rules cover what only a raw CRI caller can ask for: devices,
// bidirectional mount propagation, another container's PID namespace, log paths outside the pod logs dir.
//
// Differences a raw CRI request forces:
// - runAsNonRoot is not a CRI field (the kubelet checks it against the image before CreateContainer), so
//   at restricted a container must carry an explicit non-zero runAsUser.
// - seccomp: an absent profile is what podsync sends for a pod without one (allowed at baseline); an explicit
//   Unconfined profile is the pod asking for it. Whoever maps seccompProfile in config.ts must keep that.
// - capability names are compared as containerd reads them: case-insensitive, with or without CAP_. config.ts
//   sends the canonical form, so `drop: [all]` passes restricted here while Pod Security (pod level, exact
//   names as upstream) refuses it: the pod-level check is the stricter one.
// - the node's seccomp default (RuntimeDefault for pods that set none) satisfies seccompProfile_restricted here;
//   at pod level upstream still asks for the field.
import {
  MountPropagation,
  NamespaceMode,
  SecurityProfile_ProfileType,
  type ContainerConfig,
  type CreateContainerRequest,
  type LinuxContainerSecurityContext,
  type LinuxSandboxSecurityContext,
  type NamespaceOption,
  type PodSandboxConfig,
  type RunPodSandboxRequest,
  type SecurityProfile,
  type SELinuxOption,
} from "../gen/runtime/v1/api_pb.js";
import { DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS } from "../kuberuntime/config/security.js";
import { claimsDir } from "../volumemanager/volumes.js";
import { isUnderAny, isUnderPrefix, normalizeHostPath } from "./host-path.js";
import { checksFor } from "./pod-security.js";
import type { CheckResult } from "./pod-security-checks.js";
import type { NodePolicy, PolicyLevel, Violation } from "./policy.js";
import {
  BASELINE_CAPABILITIES,
  CAPABILITY_ALL,
  CAPABILITY_NET_BIND_SERVICE,
  SELINUX_ALLOWED_TYPES,
  containersPhrase,
  joinQuote,
  pluralize,
  sortedSet,
  sysctlAllowed,
} from "./pss-rules.js";

export interface CriPolicyContext {
  /** Whether a host path is one podsync itself bind-mounts for this pod (admitted at every level). Keep it
   * per pod (podsyncInternalMount with the sandbox's real uid) so one pod cannot mount another's. */
  isInternalMount: (hostPath: string) => boolean;
  /** When set, a sandbox's logDirectory must be under it (PODSYNC_POD_LOGS_DIR): the runtime writes there. */
  podLogsDir?: string;
  /** For CreateContainer: the namespaces of the sandbox the container joins, as the runtime reports them
   * (PodSandboxStatus). A container in a host-network (host-PID, host-IPC) sandbox shares the host's
   * namespace whatever its own config says, so the sandbox's modes count as the container's. */
  sandboxNamespaces?: NamespaceOption | undefined;
}

/**
 * The host paths podsync itself bind-mounts for pod `podUid`, in kubelet's layout under <rootDir>/pods/<uid>:
 * volumes/kubernetes.io~empty-dir/<volume> (config.ts containerMounts), containers/<container>/<file>
 * (termination-message files), volume-subpaths/<volume>/<container>/<index> (kubelet's safe subPath binds) and
 * etc-hosts (the kubelet-managed hosts file), and the node's persistentVolumeClaim directories
 * <rootDir>/volumes/pvc/<namespace>/<claim>.
 * Exactly these depths, without `.` or `..`: anything below one of them is inside what a container can write,
 * where it may have planted a symlink to / (CVE-2017-1002101), and the bind source is resolved by the runtime
 * long after any check here.
 */
export function podsyncInternalMount(rootDir: string, podUid: string): (hostPath: string) => boolean {
  const pod = [...normalizeHostPath(rootDir).split("/").filter(Boolean), "pods", podUid];
  const claims = normalizeHostPath(claimsDir(rootDir)).split("/").filter(Boolean);
  return (hostPath) => {
    const parts = hostPath.split("/").filter(Boolean);
    if (!hostPath.startsWith("/") || parts.some((p) => p === "." || p === "..")) return false;
    // A persistentVolumeClaim's directory, <rootDir>/volumes/pvc/<namespace>/<claim>: any pod may name any claim
    // (as at pod level, where Pod Security admits persistentVolumeClaim at every level).
    if (parts.length === claims.length + 2 && claims.every((p, i) => parts[i] === p)) return true;
    if (pod.some((p, i) => parts[i] !== p)) return false;
    const [kind, a, ...rest] = parts.slice(pod.length);
    if (kind === "volumes") return a === "kubernetes.io~empty-dir" && rest.length === 1;
    if (kind === "containers") return a !== undefined && rest.length === 1;
    if (kind === "volume-subpaths") return a !== undefined && rest.length === 2;
    if (kind === "etc-hosts") return a === undefined;
    return false;
  };
}

interface CriCheck<T> {
  id: string;
  level: PolicyLevel;
  overrides?: readonly string[];
  check: (config: T, policy: NodePolicy, ctx: CriPolicyContext) => CheckResult | undefined;
}

const fail = (reason: string, detail: string, paths: string[]): CheckResult => ({ reason, detail, paths });
const SC = "config.linux.securityContext";
const capName = (c: string): string => c.toUpperCase().replace(/^CAP_/, "");
const unconfined = (p: SecurityProfile | undefined, path: string): boolean =>
  p?.profileType === SecurityProfile_ProfileType.Unconfined || path === "unconfined";

/** hostNamespaces: NODE mode is what the kubelet sends for hostNetwork / hostPID / hostIPC. With `sandbox`
 * (a container's check), a NODE mode of the sandbox it joins counts too, named by the sandbox's status field. */
function hostNamespaces(ns: NamespaceOption | undefined, sandbox?: NamespaceOption): CheckResult | undefined {
  const data: string[] = [];
  const paths: string[] = [];
  for (const [field, name] of [
    ["network", "hostNetwork"],
    ["pid", "hostPID"],
    ["ipc", "hostIPC"],
  ] as const)
    if (ns?.[field] === NamespaceMode.NODE) {
      data.push(`${name}=true`);
      paths.push(`${SC}.namespaceOptions.${field}`);
    } else if (sandbox?.[field] === NamespaceMode.NODE) {
      data.push(`${name}=true (the pod sandbox's)`);
      paths.push(`sandbox.linux.namespaces.options.${field}`);
    }
  return data.length ? fail("host namespaces", data.join(", "), paths) : undefined;
}

function seLinux(o: SELinuxOption | undefined, setter: string): CheckResult | undefined {
  if (!o) return undefined;
  const data: string[] = [];
  const paths: string[] = [];
  if (!SELINUX_ALLOWED_TYPES.has(o.type)) {
    data.push(`type ${joinQuote([o.type])}`);
    paths.push(`${SC}.selinuxOptions.type`);
  }
  if (o.user) data.push("user may not be set"), paths.push(`${SC}.selinuxOptions.user`);
  if (o.role) data.push("role may not be set"), paths.push(`${SC}.selinuxOptions.role`);
  return data.length
    ? fail("seLinuxOptions", `${setter} set forbidden securityContext.seLinuxOptions: ${data.join("; ")}`, paths)
    : undefined;
}

function appArmor(
  sc: LinuxContainerSecurityContext | LinuxSandboxSecurityContext | undefined,
  setter: string,
): CheckResult | undefined {
  const legacy = sc && "apparmorProfile" in sc ? sc.apparmorProfile : "";
  if (!unconfined(sc?.apparmor, legacy)) return undefined;
  return fail("forbidden AppArmor profile", `${setter} must not set AppArmor profile type to "Unconfined"`, [
    `${SC}.apparmor`,
  ]);
}

function seccompBaseline(
  sc: LinuxContainerSecurityContext | LinuxSandboxSecurityContext | undefined,
  setter: string,
): CheckResult | undefined {
  if (!unconfined(sc?.seccomp, sc?.seccompProfilePath ?? "")) return undefined;
  return fail("seccompProfile", `${setter} must not set securityContext.seccompProfile.type to "Unconfined"`, [
    `${SC}.seccomp`,
  ]);
}

const runAsRoot = (
  sc: { runAsUser?: { value: bigint } | undefined } | undefined,
  setter: string,
): CheckResult | undefined =>
  sc?.runAsUser?.value === 0n
    ? fail("runAsUser=0", `${setter} must not set runAsUser=0`, [`${SC}.runAsUser`])
    : undefined;

/** Mounts outside podsync's own directories and, when `allowList`, outside the node allow-list. */
function foreignMounts(c: ContainerConfig, policy: NodePolicy, ctx: CriPolicyContext, allowList: boolean) {
  const bad: string[] = [];
  const paths: string[] = [];
  c.mounts.forEach((m, i) => {
    if (ctx.isInternalMount(m.hostPath)) return;
    if (allowList && isUnderAny(m.hostPath, policy.hostPathAllow)) return;
    bad.push(m.hostPath);
    paths.push(`config.mounts[${i}].hostPath`);
  });
  return { bad, paths };
}

const nameOf = (c: ContainerConfig): string => containersPhrase([c.metadata?.name ?? ""]);

export const CONTAINER_CHECKS: readonly CriCheck<ContainerConfig>[] = [
  {
    id: "hostPathAllowList",
    level: "privileged",
    check: (c, policy, ctx) => {
      if (!policy.hostPathAllow.length) return undefined;
      const { bad, paths } = foreignMounts(c, policy, ctx, true);
      return bad.length
        ? fail(
            "hostPath outside the node allow-list",
            `${nameOf(c)} must not mount ${joinQuote(bad)}: use a path under ${joinQuote([...policy.hostPathAllow])}`,
            paths,
          )
        : undefined;
    },
  },
  { id: "appArmorProfile", level: "baseline", check: (c) => appArmor(c.linux?.securityContext, nameOf(c)) },
  {
    id: "capabilities_baseline",
    level: "baseline",
    check: (c) => {
      const caps = c.linux?.securityContext?.capabilities;
      const bad = sortedSet(
        [...(caps?.addCapabilities ?? []), ...(caps?.addAmbientCapabilities ?? [])]
          .map(capName)
          .filter((x) => !BASELINE_CAPABILITIES.has(x)),
      );
      return bad.length
        ? fail(
            "non-default capabilities",
            `${nameOf(c)} must not include ${joinQuote(bad)} in securityContext.capabilities.add`,
            [`${SC}.capabilities.addCapabilities`],
          )
        : undefined;
    },
  },
  {
    id: "hostNamespaces",
    level: "baseline",
    check: (c, _policy, ctx) => hostNamespaces(c.linux?.securityContext?.namespaceOptions, ctx.sandboxNamespaces),
  },
  {
    id: "hostPathVolumes",
    level: "baseline",
    overrides: ["hostPathAllowList"],
    check: (c, policy, ctx) => {
      const { bad, paths } = foreignMounts(c, policy, ctx, true);
      return bad.length
        ? fail(
            "hostPath volumes",
            `${nameOf(c)} must not mount ${pluralize("hostPath", "hostPaths", bad.length)} ${joinQuote(bad)}`,
            paths,
          )
        : undefined;
    },
  },
  {
    id: "privileged",
    level: "baseline",
    check: (c) =>
      c.linux?.securityContext?.privileged
        ? fail("privileged", `${nameOf(c)} must not set securityContext.privileged=true`, [`${SC}.privileged`])
        : undefined,
  },
  {
    // The kubelet sends the default masked and read-only /proc paths unless procMount is Unmasked (or privileged).
    id: "procMount",
    level: "baseline",
    check: (c) => {
      const sc = c.linux?.securityContext;
      if (sc?.privileged) return undefined;
      const masked = new Set(sc?.maskedPaths ?? []);
      const ro = new Set(sc?.readonlyPaths ?? []);
      const paths = [
        ...(DEFAULT_MASKED_PATHS.every((p) => masked.has(p)) ? [] : [`${SC}.maskedPaths`]),
        ...(DEFAULT_READONLY_PATHS.every((p) => ro.has(p)) ? [] : [`${SC}.readonlyPaths`]),
      ];
      return paths.length
        ? fail("procMount", `${nameOf(c)} must not set securityContext.procMount to "Unmasked"`, paths)
        : undefined;
    },
  },
  {
    id: "seLinuxOptions",
    level: "baseline",
    check: (c) => seLinux(c.linux?.securityContext?.selinuxOptions, nameOf(c)),
  },
  {
    id: "seccompProfile_baseline",
    level: "baseline",
    check: (c) => seccompBaseline(c.linux?.securityContext, nameOf(c)),
  },
  {
    id: "windowsHostProcess",
    level: "baseline",
    check: (c) =>
      c.windows?.securityContext?.hostProcess
        ? fail("hostProcess", `${nameOf(c)} must not set securityContext.windowsOptions.hostProcess=true`, [
            "config.windows.securityContext.hostProcess",
          ])
        : undefined,
  },
  {
    id: "devices",
    level: "baseline",
    check: (c) => {
      const paths = [
        ...c.devices.map((_, i) => `config.devices[${i}]`),
        ...c.CDIDevices.map((_, i) => `config.CDIDevices[${i}]`),
      ];
      return paths.length ? fail("host devices", `${nameOf(c)} must not add host devices`, paths) : undefined;
    },
  },
  {
    id: "mountPropagation",
    level: "baseline",
    check: (c) => {
      const paths = c.mounts.flatMap((m, i) =>
        m.propagation === MountPropagation.PROPAGATION_BIDIRECTIONAL ? [`config.mounts[${i}].propagation`] : [],
      );
      return paths.length
        ? fail(
            "mount propagation",
            `${nameOf(c)} must not use Bidirectional mount propagation (privileged containers only)`,
            paths,
          )
        : undefined;
    },
  },
  {
    id: "namespaceTarget",
    level: "baseline",
    check: (c) => {
      const ns = c.linux?.securityContext?.namespaceOptions;
      return ns && (ns.pid === NamespaceMode.TARGET || ns.targetId)
        ? fail("namespace target", `${nameOf(c)} must not join another container's PID namespace`, [
            `${SC}.namespaceOptions.targetId`,
          ])
        : undefined;
    },
  },
  {
    id: "logPath",
    level: "baseline",
    check: (c) =>
      c.logPath.split("/").includes("..")
        ? fail("log path", `${nameOf(c)} must not log outside the pod's log directory`, ["config.logPath"])
        : undefined,
  },
  {
    id: "allowPrivilegeEscalation",
    level: "restricted",
    check: (c) =>
      c.linux?.securityContext?.noNewPrivs
        ? undefined
        : fail(
            "allowPrivilegeEscalation != false",
            `${nameOf(c)} must set securityContext.allowPrivilegeEscalation=false`,
            [`${SC}.noNewPrivs`],
          ),
  },
  {
    id: "capabilities_restricted",
    level: "restricted",
    overrides: ["capabilities_baseline"],
    check: (c) => {
      const caps = c.linux?.securityContext?.capabilities;
      const details: string[] = [];
      const paths: string[] = [];
      if (!(caps?.dropCapabilities ?? []).map(capName).includes(CAPABILITY_ALL)) {
        details.push(`${nameOf(c)} must set securityContext.capabilities.drop=["ALL"]`);
        paths.push(`${SC}.capabilities.dropCapabilities`);
      }
      const added = sortedSet(
        [...(caps?.addCapabilities ?? []), ...(caps?.addAmbientCapabilities ?? [])]
          .map(capName)
          .filter((x) => x !== CAPABILITY_NET_BIND_SERVICE),
      );
      if (added.length) {
        details.push(`${nameOf(c)} must not include ${joinQuote(added)} in securityContext.capabilities.add`);
        paths.push(`${SC}.capabilities.addCapabilities`);
      }
      return details.length ? fail("unrestricted capabilities", details.join("; "), paths) : undefined;
    },
  },
  {
    id: "restrictedVolumes",
    level: "restricted",
    overrides: ["hostPathVolumes", "hostPathAllowList"],
    check: (c, policy, ctx) => {
      const { bad, paths } = foreignMounts(c, policy, ctx, true);
      return bad.length
        ? fail(
            "restricted volume types",
            `${nameOf(c)} must not mount ${pluralize("hostPath", "hostPaths", bad.length)} ${joinQuote(bad)}`,
            paths,
          )
        : undefined;
    },
  },
  {
    id: "runAsNonRoot",
    level: "restricted",
    check: (c) =>
      c.linux?.securityContext?.runAsUser
        ? undefined
        : fail(
            "runAsNonRoot != true",
            `${nameOf(c)} must set a non-zero runAsUser (the runtime cannot check runAsNonRoot against the image)`,
            [`${SC}.runAsUser`],
          ),
  },
  { id: "runAsUser", level: "restricted", check: (c) => runAsRoot(c.linux?.securityContext, nameOf(c)) },
  {
    id: "seccompProfile_restricted",
    level: "restricted",
    overrides: ["seccompProfile_baseline"],
    check: (c) => {
      const sc = c.linux?.securityContext;
      const legacy = sc?.seccompProfilePath ?? "";
      const confined = sc?.seccomp
        ? sc.seccomp.profileType !== SecurityProfile_ProfileType.Unconfined
        : legacy !== "" && legacy !== "unconfined";
      if (confined) return undefined;
      const explicit = sc?.seccomp || legacy === "unconfined";
      return explicit
        ? fail("seccompProfile", `${nameOf(c)} must not set securityContext.seccompProfile.type to "Unconfined"`, [
            `${SC}.seccomp`,
          ])
        : fail(
            "seccompProfile",
            `pod or ${nameOf(c)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`,
            [`${SC}.seccomp`],
          );
    },
  },
];

const SB = "config.linux.securityContext";
export const SANDBOX_CHECKS: readonly CriCheck<PodSandboxConfig>[] = [
  { id: "appArmorProfile", level: "baseline", check: (s) => appArmor(s.linux?.securityContext, "pod") },
  { id: "hostNamespaces", level: "baseline", check: (s) => hostNamespaces(s.linux?.securityContext?.namespaceOptions) },
  {
    id: "hostPorts",
    level: "baseline",
    check: (s, policy) => {
      const paths: string[] = [];
      const ports: string[] = [];
      // The node owner's known list (PODSYNC_POLICY_HOSTPORT_ALLOW), as for pods (pod-security-checks.ts).
      const allowed = (port: number) => (policy.hostPortAllow ?? []).some(([lo, hi]) => port >= lo && port <= hi);
      s.portMappings.forEach((p, i) => {
        if (!p.hostPort || allowed(p.hostPort)) return;
        ports.push(String(p.hostPort));
        paths.push(`config.portMappings[${i}].hostPort`);
      });
      const list = sortedSet(ports);
      return paths.length
        ? fail("hostPort", `pod uses ${pluralize("hostPort", "hostPorts", list.length)} ${list.join(", ")}`, paths)
        : undefined;
    },
  },
  {
    // podsync (like the kubelet) marks the sandbox privileged when any container is.
    id: "privileged",
    level: "baseline",
    check: (s) =>
      s.linux?.securityContext?.privileged
        ? fail("privileged", "pod sandbox must not set privileged=true", [`${SB}.privileged`])
        : undefined,
  },
  { id: "seLinuxOptions", level: "baseline", check: (s) => seLinux(s.linux?.securityContext?.selinuxOptions, "pod") },
  { id: "seccompProfile_baseline", level: "baseline", check: (s) => seccompBaseline(s.linux?.securityContext, "pod") },
  // At restricted the pod's own Unconfined is refused under the restricted rule's id, as at pod level; a
  // sandbox without a profile is not (each container is checked for one).
  {
    id: "seccompProfile_restricted",
    level: "restricted",
    overrides: ["seccompProfile_baseline"],
    check: (s) => seccompBaseline(s.linux?.securityContext, "pod"),
  },
  {
    id: "sysctls",
    level: "baseline",
    check: (s) => {
      const bad = Object.keys(s.linux?.sysctls ?? {}).filter((k) => !sysctlAllowed(k));
      return bad.length
        ? fail(
            "forbidden sysctls",
            bad.join(", "),
            bad.map((k) => `config.linux.sysctls[${k}]`),
          )
        : undefined;
    },
  },
  {
    id: "windowsHostProcess",
    level: "baseline",
    check: (s) =>
      s.windows?.securityContext?.hostProcess
        ? fail("hostProcess", "pod must not set securityContext.windowsOptions.hostProcess=true", [
            "config.windows.securityContext.hostProcess",
          ])
        : undefined,
  },
  {
    id: "logPath",
    level: "baseline",
    check: (s, _policy, ctx) =>
      ctx.podLogsDir !== undefined && !isUnderPrefix(s.logDirectory, ctx.podLogsDir)
        ? fail("log path", `pod must log under ${joinQuote([ctx.podLogsDir])}`, ["config.logDirectory"])
        : undefined,
  },
  { id: "runAsUser", level: "restricted", check: (s) => runAsRoot(s.linux?.securityContext, "pod") },
];

function run<T>(
  checks: readonly CriCheck<T>[],
  config: T | undefined,
  policy: NodePolicy,
  ctx: CriPolicyContext,
): Violation[] {
  if (config === undefined) return [{ rule: "config", path: "config", message: "config is required" }];
  return checksFor(checks, policy.level).flatMap((def) => {
    const r = def.check(config, policy, ctx);
    return r ? r.paths.map((path) => ({ rule: def.id, path, message: `${r.reason} (${r.detail})` })) : [];
  });
}

/** Violations of the node policy by a RunPodSandbox request; empty when it may pass. */
export function checkRunPodSandbox(req: RunPodSandboxRequest, policy: NodePolicy, ctx: CriPolicyContext): Violation[] {
  return run(SANDBOX_CHECKS, req.config, policy, ctx);
}

/** Violations of the node policy by a CreateContainer request's config. Its sandboxConfig is a copy the caller
 * sends, and containerd reads parts of it (privileged, cgroup parent): hold it to checkRunPodSandbox as well
 * (cri-proxy's policy-gate.ts does). */
export function checkCreateContainer(
  req: CreateContainerRequest,
  policy: NodePolicy,
  ctx: CriPolicyContext,
): Violation[] {
  return run(CONTAINER_CHECKS, req.config, policy, ctx);
}
