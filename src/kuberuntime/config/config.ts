// Package kuberuntime/config/ — a pod's CRI sandbox and container config: mounts, env, DNS, /etc/hosts, security,
// resources. Imports container/, volumemanager/, lifecycle/ and below; never the rest of kuberuntime/ or status/.
//
// PodSpec → PodSandboxConfig / ContainerConfig, the way kubelet's generatePodSandboxConfig and
// generateContainerConfig build them (kuberuntime_sandbox.go, kuberuntime_container.go, labels.go).
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ContainerConfigSchema,
  NamespaceMode,
  PodSandboxConfigSchema,
  Protocol,
  type ContainerConfig,
  type PodSandboxConfig,
  MountPropagation,
  type Mount,
  type MountSchema,
} from "../../gen/runtime/v1/api_pb.js";
import type { Container, Pod } from "../../pod/schema.js";
import { hashContainer, specHash } from "../../container/hash.js";
import * as L from "../../container/labels.js";
import type { NodeConfig } from "../../container/node-config.js";
import { podDNS } from "./dns.js";
import { containerEnv, expand, toKeyValues, type EnvResolver } from "../../container/expansion.js";
import { filePlugin } from "../../volumemanager/object-volumes.js";
import { usesEnvSources } from "../../container/env-sources.js";
import { linuxResources } from "./resources.js";
import {
  DEFAULT_MASKED_PATHS,
  DEFAULT_READONLY_PATHS,
  appArmorProfile,
  seccompProfile,
  seLinuxOptions,
} from "./security.js";
import { canonicalCapability } from "../../pod/capabilities.js";
import { volumeHostPath } from "../../volumemanager/volumes.js";
import { sysctlDots } from "../../lifecycle/node-admission.js";

/** BuildPodLogsDirectory */
export function podLogsDirectory(node: NodeConfig, pod: Pod): string {
  return `${node.podLogsDir}/${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`;
}

/** newPodLabels: the pod's labels plus the kubelet's identifying ones. */
export function podLabels(pod: Pod): Record<string, string> {
  return {
    ...pod.metadata.labels,
    [L.POD_NAME_LABEL]: pod.metadata.name,
    [L.POD_NAMESPACE_LABEL]: pod.metadata.namespace,
    [L.POD_UID_LABEL]: pod.metadata.uid,
    [L.KUBERNETES_MANAGED_LABEL]: L.MANAGED_BY,
  };
}

/** newContainerLabels */
export function containerLabels(container: Container, pod: Pod): Record<string, string> {
  return {
    [L.POD_NAME_LABEL]: pod.metadata.name,
    [L.POD_NAMESPACE_LABEL]: pod.metadata.namespace,
    [L.POD_UID_LABEL]: pod.metadata.uid,
    [L.CONTAINER_NAME_LABEL]: container.name,
    [L.KUBERNETES_MANAGED_LABEL]: L.MANAGED_BY,
  };
}

/** newContainerAnnotations */
export function containerAnnotations(container: Container, pod: Pod, restartCount: number): Record<string, string> {
  const a: Record<string, string> = {
    [L.CONTAINER_HASH_ANNOTATION]: hashContainer(container),
    [L.CONTAINER_SPEC_HASH_ANNOTATION]: specHash(container),
    [L.CONTAINER_RESTART_COUNT_ANNOTATION]: String(restartCount),
    [L.CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION]: container.terminationMessagePath,
    [L.CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION]: container.terminationMessagePolicy,
    [L.POD_TERMINATION_GRACE_PERIOD_ANNOTATION]: String(pod.spec.terminationGracePeriodSeconds),
    [L.CONTAINER_IMAGE_ANNOTATION]: container.image,
  };
  if (container.ports?.length) a[L.CONTAINER_PORTS_ANNOTATION] = JSON.stringify(container.ports);
  if (container.lifecycle?.preStop)
    a[L.CONTAINER_PRESTOP_HANDLER_ANNOTATION] = JSON.stringify(container.lifecycle.preStop);
  const mounted = new Set((container.volumeMounts ?? []).map((m) => m.name));
  const claims = [
    ...new Set(
      (pod.spec.volumes ?? []).flatMap((v) =>
        "persistentVolumeClaim" in v && mounted.has(v.name) ? [v.persistentVolumeClaim.claimName] : [],
      ),
    ),
  ];
  if (claims.length) a[L.CONTAINER_CLAIMS_ANNOTATION] = claims.join(",");
  return a;
}

/** GeneratePodHostNameAndDomain: spec.hostname or the pod name, cut to 63; the domain when the pod has a
 * subdomain (`<subdomain>.<namespace>.svc.<clusterDomain>`). */
export function podHostnameAndDomain(pod: Pod, node: Pick<NodeConfig, "clusterDomain">): [string, string] {
  const name = pod.spec.hostname ?? pod.metadata.name;
  const hostname = name.length <= 63 ? name : name.slice(0, 63).replace(/[-.]+$/, "");
  return [
    hostname,
    pod.spec.subdomain ? `${pod.spec.subdomain}.${pod.metadata.namespace}.svc.${node.clusterDomain}` : "",
  ];
}

/** GetNodenameForKernel: the hostname, or with setHostnameAsFQDN and a domain the FQDN, which must fit the
 * kernel's 64 characters (kubelet's error otherwise, at sandbox creation). */
export function podHostname(pod: Pod, node: Pick<NodeConfig, "clusterDomain">): string {
  const [hostname, domain] = podHostnameAndDomain(pod, node);
  if (!domain || !pod.spec.setHostnameAsFQDN) return hostname;
  const fqdn = `${hostname}.${domain}`;
  if (fqdn.length > 64)
    throw new Error(
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, ${fqdn.length} characters requested)`,
    );
  return fqdn;
}

const PROTOCOL: Record<string, Protocol> = { TCP: Protocol.TCP, UDP: Protocol.UDP, SCTP: Protocol.SCTP };

function namespaceOptions(pod: Pod) {
  return {
    network: pod.spec.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
    // PidNamespaceForPod: the node's, the pod's (shareProcessNamespace), or each container's own.
    pid: pod.spec.hostPID
      ? NamespaceMode.NODE
      : pod.spec.shareProcessNamespace
        ? NamespaceMode.POD
        : NamespaceMode.CONTAINER,
    ipc: pod.spec.hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
  };
}

export function generatePodSandboxConfig(pod: Pod, attempt: number, node: NodeConfig): PodSandboxConfig {
  const sc = pod.spec.securityContext;
  const dns = podDNS(pod, node);
  const anyPrivileged = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some(
    (c) => c.securityContext?.privileged,
  );
  return create(PodSandboxConfigSchema, {
    metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid, attempt },
    // A hostNetwork sandbox gets no hostname: runc cannot set one without a private UTS namespace.
    hostname: pod.spec.hostNetwork ? "" : podHostname(pod, node),
    logDirectory: podLogsDirectory(node, pod),
    dnsConfig: dns,
    portMappings: pod.spec.containers.flatMap((c) =>
      (c.ports ?? [])
        .filter((p) => p.hostPort !== undefined)
        .map((p) => ({
          protocol: PROTOCOL[p.protocol]!,
          containerPort: p.containerPort,
          hostPort: p.hostPort!,
          hostIp: p.hostIP ?? "",
        })),
    ),
    labels: podLabels(pod),
    annotations: { ...pod.metadata.annotations },
    linux: {
      cgroupParent: node.cgroupParent,
      securityContext: {
        namespaceOptions: namespaceOptions(pod),
        privileged: anyPrivileged,
        runAsUser: sc?.runAsUser !== undefined ? { value: BigInt(sc.runAsUser) } : undefined,
        runAsGroup: sc?.runAsGroup !== undefined ? { value: BigInt(sc.runAsGroup) } : undefined,
        supplementalGroups: [...(sc?.supplementalGroups ?? []), ...(sc?.fsGroup !== undefined ? [sc.fsGroup] : [])].map(
          BigInt,
        ),
        // generatePodSandboxLinuxConfig: the pod-level profile (or the node default) for the sandbox.
        seccomp: seccompProfile(pod, undefined, node),
        selinuxOptions: seLinuxOptions(sc?.seLinuxOptions),
      },
      sysctls: Object.fromEntries((sc?.sysctls ?? []).map((s) => [sysctlDots(s.name), s.value])),
    },
  });
}

/** translateMountPropagation */
const PROPAGATION = {
  None: MountPropagation.PROPAGATION_PRIVATE,
  HostToContainer: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
  Bidirectional: MountPropagation.PROPAGATION_BIDIRECTIONAL,
} as const;

/** makeMounts for the volume kinds podsync supports (hostPath, emptyDir, persistentVolumeClaim, and the file
 * volumes: configMap, secret, downwardAPI, projected). A claim's readOnly makes every mount of it read-only, as
 * the PVC volume plugin does; the file volumes are always read-only (their plugins' ReadOnly attribute). A
 * subPath mount's hostPath here is the plain join; SyncPod replaces it with the safe bind (subpath.ts) before
 * the runtime sees it. */
export function containerMounts(
  pod: Pod,
  container: Container,
  node: NodeConfig,
): MessageInitShape<typeof MountSchema>[] {
  const volumes = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v] as const));
  return (container.volumeMounts ?? []).map((m) => {
    const v = volumes.get(m.name)!;
    const base = volumeHostPath(pod, v, node);
    const hostPath = m.subPath ? `${base.replace(/\/$/, "")}/${m.subPath}` : base;
    const readonly =
      m.readOnly || ("persistentVolumeClaim" in v && v.persistentVolumeClaim.readOnly) || filePlugin(v) !== undefined;
    return {
      containerPath: m.mountPath,
      hostPath,
      readonly,
      selinuxRelabel: false,
      propagation: PROPAGATION[m.mountPropagation ?? "None"],
    } satisfies Partial<Mount>;
  });
}

export function generateContainerConfig(
  pod: Pod,
  container: Container,
  restartCount: number,
  imageRef: string,
  node: NodeConfig,
  /** Env from the pod's objects and the downward API; required when the container uses them. */
  env?: EnvResolver,
  /** The Service variables of the pod's namespace (container/service-env.ts). */
  serviceEnv?: ReadonlyMap<string, string>,
): ContainerConfig {
  if (!env && usesEnvSources(container))
    throw new Error(
      `container ${container.name} takes env from valueFrom/envFrom, and no ConfigMaps, Secrets or downward API values were given`,
    );
  const vars = containerEnv(container, env, serviceEnv);
  const csc = container.securityContext;
  const psc = pod.spec.securityContext;
  const runAsUser = csc?.runAsUser ?? psc?.runAsUser;
  const runAsGroup = csc?.runAsGroup ?? psc?.runAsGroup;
  const privileged = csc?.privileged ?? false;
  return create(ContainerConfigSchema, {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: imageRef, userSpecifiedImage: container.image },
    command: (container.command ?? []).map((c) => expand(c, vars)),
    args: (container.args ?? []).map((a) => expand(a, vars)),
    workingDir: container.workingDir ?? "",
    envs: toKeyValues(vars),
    mounts: containerMounts(pod, container, node),
    labels: containerLabels(container, pod),
    annotations: containerAnnotations(container, pod, restartCount),
    logPath: `${container.name}/${restartCount}.log`,
    stdin: container.stdin,
    stdinOnce: container.stdinOnce,
    tty: container.tty,
    linux: {
      resources: linuxResources(pod, container, node),
      securityContext: {
        // kubelet passes the names through; podsync sends the form containerd reads (capabilities.ts).
        capabilities: {
          addCapabilities: (csc?.capabilities?.add ?? []).map(canonicalCapability),
          dropCapabilities: (csc?.capabilities?.drop ?? []).map(canonicalCapability),
        },
        privileged,
        namespaceOptions: namespaceOptions(pod),
        runAsUser: runAsUser !== undefined ? { value: BigInt(runAsUser) } : undefined,
        runAsGroup: runAsGroup !== undefined ? { value: BigInt(runAsGroup) } : undefined,
        readonlyRootfs: csc?.readOnlyRootFilesystem ?? false,
        supplementalGroups: [
          ...(psc?.supplementalGroups ?? []),
          ...(psc?.fsGroup !== undefined ? [psc.fsGroup] : []),
        ].map(BigInt),
        noNewPrivs: csc?.allowPrivilegeEscalation === false,
        // procMount is Default (Unmasked is refused by the schema): the default paths unless privileged.
        maskedPaths: privileged ? [] : DEFAULT_MASKED_PATHS,
        readonlyPaths: privileged ? [] : DEFAULT_READONLY_PATHS,
        seccomp: seccompProfile(pod, container, node),
        ...appArmorProfile(pod, container),
        // determineEffectiveSecurityContext: the container's options, else the pod's.
        selinuxOptions: seLinuxOptions(csc?.seLinuxOptions ?? psc?.seLinuxOptions),
      },
    },
  });
}
