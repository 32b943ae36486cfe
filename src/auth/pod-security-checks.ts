// The Pod Security Standards checks, ported from kubernetes/kubernetes
// staging/src/k8s.io/pod-security-admission/policy/check_*.go (newest version of each). Reasons and details
// are upstream's wording; field paths follow upstream's field-error paths (paths.go, visitor.go).
//
// They read a loose structural view of the pod: every field is optional and compared with === so that a
// field podsync's schema does not (yet) accept simply never violates, and a field added later (seccomp,
// AppArmor, SELinux, probes, more volume types) is checked as soon as it reaches the pod.
import {
  APPARMOR_ANNOTATION_PREFIX,
  BASELINE_CAPABILITIES,
  CAPABILITY_ALL,
  CAPABILITY_NET_BIND_SERVICE,
  CONFINED_PROFILE_TYPES,
  SELINUX_ALLOWED_TYPES,
  appArmorAnnotationAllowed,
  containersPhrase,
  joinQuote,
  pluralize,
  sortedSet,
  sysctlAllowed,
} from "./pss-rules.js";

type Maybe<T> = T | null | undefined;
type Profile = Maybe<{ type?: Maybe<string> }>;
type Handler = Maybe<{ httpGet?: Maybe<{ host?: Maybe<string> }>; tcpSocket?: Maybe<{ host?: Maybe<string> }> }>;

export interface SecurityContextLike {
  privileged?: Maybe<boolean>;
  allowPrivilegeEscalation?: Maybe<boolean>;
  runAsUser?: Maybe<number>;
  runAsNonRoot?: Maybe<boolean>;
  procMount?: Maybe<string>;
  capabilities?: Maybe<{ add?: Maybe<readonly string[]>; drop?: Maybe<readonly string[]> }>;
  seLinuxOptions?: Maybe<{ user?: Maybe<string>; role?: Maybe<string>; type?: Maybe<string> }>;
  seccompProfile?: Profile;
  appArmorProfile?: Profile;
  windowsOptions?: Maybe<{ hostProcess?: Maybe<boolean> }>;
}

export interface ContainerLike {
  name?: Maybe<string>;
  ports?: Maybe<readonly { hostPort?: Maybe<number> }[]>;
  securityContext?: Maybe<SecurityContextLike>;
  livenessProbe?: Handler;
  readinessProbe?: Handler;
  startupProbe?: Handler;
  lifecycle?: Maybe<{ postStart?: Handler; preStop?: Handler }>;
}

export type VolumeLike = {
  name?: Maybe<string>;
  hostPath?: Maybe<{ path?: Maybe<string> }>;
  [source: string]: unknown;
};

export interface PodLike {
  metadata?: Maybe<{ annotations?: Maybe<Record<string, string>> }>;
  spec: {
    hostNetwork?: Maybe<boolean>;
    hostPID?: Maybe<boolean>;
    hostIPC?: Maybe<boolean>;
    securityContext?: Maybe<SecurityContextLike & { sysctls?: Maybe<readonly { name: string }[]> }>;
    initContainers?: Maybe<readonly ContainerLike[]>;
    containers?: Maybe<readonly ContainerLike[]>;
    ephemeralContainers?: Maybe<readonly ContainerLike[]>;
    volumes?: Maybe<readonly VolumeLike[]>;
  };
}

/** A failed check: upstream's ForbiddenReason / ForbiddenDetail and the offending field paths. */
export interface CheckResult {
  reason: string;
  detail: string;
  paths: string[];
}

export interface CheckContext {
  /** The node allow-list: hostPath volumes it admits are exempt from hostPathVolumes / restrictedVolumes. */
  hostPathAllowed: (path: string) => boolean;
  hostPathAllow: readonly string[];
  /** PODSYNC_POLICY_HOSTPORT_ALLOW: the "known list" of host ports baseline may allow (check_hostPorts.go). */
  hostPortAllowed?: (port: number) => boolean;
}

export type CheckFn = (pod: PodLike, ctx: CheckContext) => CheckResult | undefined;

/** visitor.go: init, regular, then ephemeral containers, each with its field path. */
function visit(pod: PodLike, fn: (c: ContainerLike, path: string, name: string) => void): void {
  for (const kind of ["initContainers", "containers", "ephemeralContainers"] as const)
    (pod.spec[kind] ?? []).forEach((c, i) => fn(c, `spec.${kind}[${i}]`, c.name ?? ""));
}

const fail = (reason: string, detail: string, paths: string[]): CheckResult => ({ reason, detail, paths });

/** check_hostNamespaces.go */
export const hostNamespaces: CheckFn = (pod) => {
  const data: string[] = [];
  const paths: string[] = [];
  for (const ns of ["hostNetwork", "hostPID", "hostIPC"] as const)
    if (pod.spec[ns] === true) {
      data.push(`${ns}=true`);
      paths.push(`spec.${ns}`);
    }
  return data.length ? fail("host namespaces", data.join(", "), paths) : undefined;
};

/** check_privileged.go */
export const privileged: CheckFn = (pod) => {
  const bad: string[] = [];
  const paths: string[] = [];
  visit(pod, (c, p, name) => {
    if (c.securityContext?.privileged === true) {
      bad.push(name);
      paths.push(`${p}.securityContext.privileged`);
    }
  });
  return bad.length
    ? fail("privileged", `${containersPhrase(bad)} must not set securityContext.privileged=true`, paths)
    : undefined;
};

/** check_capabilities_baseline.go */
export const capabilitiesBaseline: CheckFn = (pod) => {
  const bad: string[] = [];
  const caps: string[] = [];
  const paths: string[] = [];
  visit(pod, (c, p, name) => {
    const forbidden = (c.securityContext?.capabilities?.add ?? []).filter((cap) => !BASELINE_CAPABILITIES.has(cap));
    if (!forbidden.length) return;
    bad.push(name);
    caps.push(...forbidden);
    paths.push(`${p}.securityContext.capabilities.add`);
  });
  if (!bad.length) return undefined;
  return fail(
    "non-default capabilities",
    `${containersPhrase(bad)} must not include ${joinQuote(sortedSet(caps))} in securityContext.capabilities.add`,
    paths,
  );
};

/** check_hostPathVolumes.go, except volumes the node allow-list admits. */
export const hostPathVolumes: CheckFn = (pod, ctx) => {
  const bad: string[] = [];
  const paths: string[] = [];
  (pod.spec.volumes ?? []).forEach((v, i) => {
    if (v.hostPath == null || ctx.hostPathAllowed(String(v.hostPath.path ?? ""))) return;
    bad.push(v.name ?? "");
    paths.push(`spec.volumes[${i}].hostPath`);
  });
  return bad.length
    ? fail("hostPath volumes", `${pluralize("volume", "volumes", bad.length)} ${joinQuote(bad)}`, paths)
    : undefined;
};

/** podsync's own rule at every level: with an allow-list set, no hostPath outside it (even when privileged). */
export const hostPathAllowList: CheckFn = (pod, ctx) => {
  if (!ctx.hostPathAllow.length) return undefined;
  const bad: string[] = [];
  const paths: string[] = [];
  (pod.spec.volumes ?? []).forEach((v, i) => {
    if (v.hostPath == null || ctx.hostPathAllowed(String(v.hostPath.path ?? ""))) return;
    bad.push(v.name ?? "");
    paths.push(`spec.volumes[${i}].hostPath.path`);
  });
  if (!bad.length) return undefined;
  return fail(
    "hostPath outside the node allow-list",
    `${pluralize("volume", "volumes", bad.length)} ${joinQuote(bad)} must use a path under ${joinQuote([...ctx.hostPathAllow])}`,
    paths,
  );
};

/** check_hostPorts.go ("disallowed entirely or restricted to a known list"): the node owner's known list
 * (PODSYNC_POLICY_HOSTPORT_ALLOW) is allowed, any other host port is refused. */
export const hostPorts: CheckFn = (pod, ctx) => {
  const bad: string[] = [];
  const ports: string[] = [];
  const paths: string[] = [];
  visit(pod, (c, p, name) => {
    let found = false;
    (c.ports ?? []).forEach((port, j) => {
      if (!port.hostPort || ctx.hostPortAllowed?.(port.hostPort)) return;
      found = true;
      ports.push(String(port.hostPort));
      paths.push(`${p}.ports[${j}].hostPort`);
    });
    if (found) bad.push(name);
  });
  if (!bad.length) return undefined;
  const list = sortedSet(ports);
  return fail(
    "hostPort",
    `${containersPhrase(bad)} ${pluralize("uses", "use", bad.length)} ${pluralize("hostPort", "hostPorts", list.length)} ${list.join(", ")}`,
    paths,
  );
};

/** check_appArmorProfile.go (fields and the deprecated annotations). */
export const appArmorProfile: CheckFn = (pod) => {
  const setters: string[] = [];
  const values: string[] = [];
  const paths: string[] = [];
  const podProfile = pod.spec.securityContext?.appArmorProfile;
  if (podProfile != null && !CONFINED_PROFILE_TYPES.has(podProfile.type ?? "")) {
    setters.push("pod");
    values.push(podProfile.type ?? "");
    paths.push("spec.securityContext.appArmorProfile.type");
  }
  const bad: string[] = [];
  visit(pod, (c, p, name) => {
    const prof = c.securityContext?.appArmorProfile;
    if (prof == null || CONFINED_PROFILE_TYPES.has(prof.type ?? "")) return;
    bad.push(name);
    values.push(prof.type ?? "");
    paths.push(`${p}.securityContext.appArmorProfile.type`);
  });
  if (bad.length) setters.push(containersPhrase(bad));
  const annotations = pod.metadata?.annotations ?? {};
  const badKeys = sortedSet(
    Object.keys(annotations).filter(
      (k) => k.startsWith(APPARMOR_ANNOTATION_PREFIX) && !appArmorAnnotationAllowed(annotations[k]!),
    ),
  );
  const valueList = sortedSet(values);
  if (badKeys.length) {
    valueList.push(...badKeys.map((k) => `${k}=${JSON.stringify(annotations[k])}`));
    setters.push(pluralize("annotation", "annotations", badKeys.length));
    paths.push(...badKeys.map((k) => `metadata.annotations[${k}]`));
  }
  if (!setters.length) return undefined;
  return fail(
    pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", valueList.length),
    `${setters.join(" and ")} must not set AppArmor profile type to ${joinQuote(valueList)}`,
    paths,
  );
};

/** check_seLinuxOptions.go */
export const seLinuxOptions: CheckFn = (pod) => {
  const setters: string[] = [];
  const types: string[] = [];
  let setUser = false;
  let setRole = false;
  const paths: string[] = [];
  const valid = (o: NonNullable<SecurityContextLike["seLinuxOptions"]>, base: string): boolean => {
    let ok = true;
    if (!SELINUX_ALLOWED_TYPES.has(o.type ?? "")) {
      ok = false;
      types.push(o.type ?? "");
      paths.push(`${base}.seLinuxOptions.type`);
    }
    if (o.user) {
      ok = false;
      setUser = true;
      paths.push(`${base}.seLinuxOptions.user`);
    }
    if (o.role) {
      ok = false;
      setRole = true;
      paths.push(`${base}.seLinuxOptions.role`);
    }
    return ok;
  };
  const podOpts = pod.spec.securityContext?.seLinuxOptions;
  if (podOpts != null && !valid(podOpts, "spec.securityContext")) setters.push("pod");
  const bad: string[] = [];
  visit(pod, (c, p, name) => {
    const o = c.securityContext?.seLinuxOptions;
    if (o != null && !valid(o, `${p}.securityContext`)) bad.push(name);
  });
  if (bad.length) setters.push(containersPhrase(bad));
  if (!setters.length) return undefined;
  const data: string[] = [];
  const typeList = sortedSet(types);
  if (typeList.length) data.push(`${pluralize("type", "types", typeList.length)} ${joinQuote(typeList)}`);
  if (setUser) data.push("user may not be set");
  if (setRole) data.push("role may not be set");
  return fail(
    "seLinuxOptions",
    `${setters.join(" and ")} set forbidden securityContext.seLinuxOptions: ${data.join("; ")}`,
    paths,
  );
};

/** check_procMount.go (newest: procMount_1_35; no user-namespace relaxation, which is off by default). */
export const procMount: CheckFn = (pod) => {
  const bad: string[] = [];
  const types: string[] = [];
  const paths: string[] = [];
  visit(pod, (c, p, name) => {
    const pm = c.securityContext?.procMount;
    if (pm == null || pm === "Default") return;
    bad.push(name);
    types.push(pm);
    paths.push(`${p}.securityContext.procMount`);
  });
  return bad.length
    ? fail(
        "procMount",
        `${containersPhrase(bad)} must not set securityContext.procMount to ${joinQuote(sortedSet(types))}`,
        paths,
      )
    : undefined;
};

/** Pod and containers that explicitly set seccompProfile.type outside RuntimeDefault/Localhost. */
function badSeccompSetters(pod: PodLike) {
  const setters: string[] = [];
  const values: string[] = [];
  const paths: string[] = [];
  const podProfile = pod.spec.securityContext?.seccompProfile;
  if (podProfile != null && !CONFINED_PROFILE_TYPES.has(podProfile.type ?? "")) {
    setters.push("pod");
    values.push(podProfile.type ?? "");
    paths.push("spec.securityContext.seccompProfile.type");
  }
  const bad: string[] = [];
  const implicit: string[] = [];
  const implicitPaths: string[] = [];
  const podSet = podProfile != null && CONFINED_PROFILE_TYPES.has(podProfile.type ?? "");
  visit(pod, (c, p, name) => {
    const prof = c.securityContext?.seccompProfile;
    if (prof != null) {
      if (CONFINED_PROFILE_TYPES.has(prof.type ?? "")) return;
      bad.push(name);
      values.push(prof.type ?? "");
      paths.push(`${p}.securityContext.seccompProfile.type`);
    } else if (!podSet) {
      implicit.push(name);
      implicitPaths.push(`${p}.securityContext.seccompProfile.type`);
    }
  });
  if (bad.length) setters.push(containersPhrase(bad));
  return { setters, values, paths, implicit, implicitPaths };
}

const seccompExplicit = (s: ReturnType<typeof badSeccompSetters>): CheckResult =>
  fail(
    "seccompProfile",
    `${s.setters.join(" and ")} must not set securityContext.seccompProfile.type to ${joinQuote(sortedSet(s.values))}`,
    s.paths,
  );

/** check_seccompProfile_baseline.go (1.19+: the fields; unset is allowed). */
export const seccompProfileBaseline: CheckFn = (pod) => {
  const s = badSeccompSetters(pod);
  return s.setters.length ? seccompExplicit(s) : undefined;
};

/** check_seccompProfile_restricted.go: also required, on the pod or on every container. */
export const seccompProfileRestricted: CheckFn = (pod) => {
  const s = badSeccompSetters(pod);
  if (s.setters.length) return seccompExplicit(s);
  if (!s.implicit.length) return undefined;
  return fail(
    "seccompProfile",
    `pod or ${containersPhrase(s.implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`,
    s.implicitPaths,
  );
};

/** check_sysctls.go */
export const sysctls: CheckFn = (pod) => {
  const bad: string[] = [];
  const paths: string[] = [];
  (pod.spec.securityContext?.sysctls ?? []).forEach((s, i) => {
    if (sysctlAllowed(s.name)) return;
    bad.push(s.name);
    paths.push(`spec.securityContext.sysctls[${i}].name`);
  });
  return bad.length ? fail("forbidden sysctls", bad.join(", "), paths) : undefined;
};

/** check_windowsHostProcess.go */
export const windowsHostProcess: CheckFn = (pod) => {
  const setters: string[] = [];
  const paths: string[] = [];
  const bad: string[] = [];
  const containerPaths: string[] = [];
  visit(pod, (c, p, name) => {
    if (c.securityContext?.windowsOptions?.hostProcess !== true) return;
    bad.push(name);
    containerPaths.push(`${p}.securityContext.windowsOptions.hostProcess`);
  });
  if (pod.spec.securityContext?.windowsOptions?.hostProcess === true) {
    setters.push("pod");
    paths.push("spec.securityContext.windowsOptions.hostProcess");
  }
  if (bad.length) setters.push(containersPhrase(bad));
  paths.push(...containerPaths);
  return setters.length
    ? fail(
        "hostProcess",
        `${setters.join(" and ")} must not set securityContext.windowsOptions.hostProcess=true`,
        paths,
      )
    : undefined;
};

/** check_hostProbesAndhostLifecycle.go (1.34+) */
export const hostProbesAndHostLifecycle: CheckFn = (pod) => {
  const bad: string[] = [];
  const hosts: string[] = [];
  const paths: string[] = [];
  visit(pod, (c, p, name) => {
    const handlers: [string, Handler][] = [
      ["livenessProbe", c.livenessProbe],
      ["readinessProbe", c.readinessProbe],
      ["startupProbe", c.startupProbe],
      ["lifecycle.postStart", c.lifecycle?.postStart],
      ["lifecycle.preStop", c.lifecycle?.preStop],
    ];
    for (const [field, h] of handlers)
      for (const kind of ["httpGet", "tcpSocket"] as const) {
        const host = h?.[kind]?.host;
        if (!host) continue;
        bad.push(name);
        hosts.push(host);
        paths.push(`${p}.${field}.${kind}.host`);
      }
  });
  if (!bad.length) return undefined;
  const names = sortedSet(bad);
  const hostList = sortedSet(hosts);
  return fail(
    "probe or lifecycle host",
    `${containersPhrase(names)} ${pluralize("uses", "use", names.length)} ${pluralize("probe or lifecycle host", "probe or lifecycle hosts", hostList.length)} ${joinQuote(hostList)}`,
    paths,
  );
};

/** check_restrictedVolumes.go (volume types in upstream's order), except hostPaths the allow-list admits. */
const ALLOWED_VOLUME_SOURCES = [
  "configMap",
  "csi",
  "downwardAPI",
  "emptyDir",
  "ephemeral",
  "persistentVolumeClaim",
  "projected",
  "secret",
];
const RESTRICTED_VOLUME_TYPES = [
  "hostPath",
  "gcePersistentDisk",
  "awsElasticBlockStore",
  "gitRepo",
  "nfs",
  "iscsi",
  "glusterfs",
  "rbd",
  "flexVolume",
  "cinder",
  "cephfs",
  "flocker",
  "fc",
  "azureFile",
  "vsphereVolume",
  "quobyte",
  "azureDisk",
  "photonPersistentDisk",
  "portworxVolume",
  "scaleIO",
  "storageos",
];
export const restrictedVolumes: CheckFn = (pod, ctx) => {
  const bad: string[] = [];
  const types: string[] = [];
  const paths: string[] = [];
  (pod.spec.volumes ?? []).forEach((v, i) => {
    if (ALLOWED_VOLUME_SOURCES.some((s) => v[s] != null)) return;
    if (v.hostPath != null && ctx.hostPathAllowed(String(v.hostPath.path ?? ""))) return;
    const type = RESTRICTED_VOLUME_TYPES.find((t) => v[t] != null) ?? "unknown";
    bad.push(v.name ?? "");
    types.push(type);
    paths.push(`spec.volumes[${i}].${type}`);
  });
  if (!bad.length) return undefined;
  const typeList = sortedSet(types);
  return fail(
    "restricted volume types",
    `${pluralize("volume", "volumes", bad.length)} ${joinQuote(bad)} ${pluralize("uses", "use", bad.length)} ${pluralize("restricted volume type", "restricted volume types", typeList.length)} ${joinQuote(typeList)}`,
    paths,
  );
};

/** check_allowPrivilegeEscalation.go. Upstream's exemption for spec.os.name=windows is not ported: this is a
 * Linux node, and the exemption would let a pod claim Windows to skip the check. */
export const allowPrivilegeEscalation: CheckFn = (pod) => {
  const bad: string[] = [];
  const paths: string[] = [];
  visit(pod, (c, p, name) => {
    if (c.securityContext?.allowPrivilegeEscalation === false) return;
    bad.push(name);
    paths.push(`${p}.securityContext.allowPrivilegeEscalation`);
  });
  return bad.length
    ? fail(
        "allowPrivilegeEscalation != false",
        `${containersPhrase(bad)} must set securityContext.allowPrivilegeEscalation=false`,
        paths,
      )
    : undefined;
};

/** check_runAsNonRoot.go */
export const runAsNonRoot: CheckFn = (pod) => {
  const setters: string[] = [];
  const paths: string[] = [];
  const podValue = pod.spec.securityContext?.runAsNonRoot;
  if (podValue === false) {
    setters.push("pod");
    paths.push("spec.securityContext.runAsNonRoot");
  }
  const explicit: string[] = [];
  const implicit: string[] = [];
  const implicitPaths: string[] = [];
  visit(pod, (c, p, name) => {
    const v = c.securityContext?.runAsNonRoot;
    if (v != null) {
      if (v) return;
      explicit.push(name);
      paths.push(`${p}.securityContext.runAsNonRoot`);
    } else if (podValue !== true) {
      implicit.push(name);
      implicitPaths.push(`${p}.securityContext.runAsNonRoot`);
    }
  });
  if (explicit.length) setters.push(containersPhrase(explicit));
  if (setters.length)
    return fail(
      "runAsNonRoot != true",
      `${setters.join(" and ")} must not set securityContext.runAsNonRoot=false`,
      paths,
    );
  if (!implicit.length) return undefined;
  return fail(
    "runAsNonRoot != true",
    `pod or ${containersPhrase(implicit)} must set securityContext.runAsNonRoot=true`,
    implicitPaths,
  );
};

/** check_runAsUser.go */
export const runAsUser: CheckFn = (pod) => {
  const setters: string[] = [];
  const paths: string[] = [];
  if (pod.spec.securityContext?.runAsUser === 0) {
    setters.push("pod");
    paths.push("spec.securityContext.runAsUser");
  }
  const bad: string[] = [];
  visit(pod, (c, p, name) => {
    if (c.securityContext?.runAsUser !== 0) return;
    bad.push(name);
    paths.push(`${p}.securityContext.runAsUser`);
  });
  if (bad.length) setters.push(containersPhrase(bad));
  return setters.length ? fail("runAsUser=0", `${setters.join(" and ")} must not set runAsUser=0`, paths) : undefined;
};

/** check_capabilities_restricted.go (Windows exemption not ported, as for allowPrivilegeEscalation). */
export const capabilitiesRestricted: CheckFn = (pod) => {
  const missingDrop: string[] = [];
  const adding: string[] = [];
  const caps: string[] = [];
  const paths: string[] = [];
  visit(pod, (c, p, name) => {
    const capabilities = c.securityContext?.capabilities;
    if (!(capabilities?.drop ?? []).includes(CAPABILITY_ALL)) {
      missingDrop.push(name);
      paths.push(`${p}.securityContext.capabilities.drop`);
    }
    const forbidden = (capabilities?.add ?? []).filter((cap) => cap !== CAPABILITY_NET_BIND_SERVICE);
    if (forbidden.length) {
      adding.push(name);
      caps.push(...forbidden);
      paths.push(`${p}.securityContext.capabilities.add`);
    }
  });
  const details: string[] = [];
  if (missingDrop.length)
    details.push(`${containersPhrase(missingDrop)} must set securityContext.capabilities.drop=["ALL"]`);
  if (adding.length)
    details.push(
      `${containersPhrase(adding)} must not include ${joinQuote(sortedSet(caps))} in securityContext.capabilities.add`,
    );
  return details.length ? fail("unrestricted capabilities", details.join("; "), paths) : undefined;
};
