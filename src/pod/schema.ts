// Package pod/ — the object model: zod schemas and the types they give (Pod, ConfigMap/Secret, sources), validation with field paths, quantities.
// Imports only zod and the generated proto; nothing of podsync's.
//
// The v1.Pod subset podsync supports, as zod schemas. They are the single source of the pod types the
// engine uses (z.output), of validation (with API-server defaulting applied), and of /openapi.json.
// Objects are strict: an unknown field is an error naming it, never silently ignored, because a field
// we drop would be a field the caller thinks is in force on the node.
import { z } from "zod";
import { parseQuantity } from "./quantity.js";
import { expansionIssues } from "./env-size.js";
import {
  ConfigMapVolumeSource,
  DownwardAPIVolumeSource,
  EnvFromSource,
  EnvVarSource,
  NEEDS_API_SERVER_TOKEN,
  ProjectedVolumeSource,
  SecretVolumeSource,
  sourceIssues,
} from "./sources.js";
import { isCapabilityName } from "./capabilities.js";
import { dns1123Label, dns1123Subdomain, labels, validQualifiedKey } from "./names.js";
import { schedulingFields } from "./scheduling.js";

/** The longest grace period podsync honours (24 h). The API only asks for an int64 >= 0, but a kill waits
 * out the grace inside one request and one CRI deadline; a day covers any real shutdown and keeps every
 * deadline far inside what timers and gRPC can hold. */
export const MAX_GRACE_PERIOD_SECONDS = 86_400;

const C_IDENTIFIER_ENV = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

const annotations = z.record(z.string(), z.string()).superRefine((rec, ctx) => {
  let size = 0;
  for (const [k, v] of Object.entries(rec)) {
    const bad = validQualifiedKey(k);
    if (bad) ctx.addIssue({ code: "custom", path: [k], message: `invalid annotation key: ${bad}` });
    size += k.length + v.length;
  }
  if (size > 256 * 1024) ctx.addIssue({ code: "custom", message: "annotations must total 256 KiB or less" });
});

const port = (what: string) =>
  z
    .number()
    .int(`${what} must be an integer`)
    .min(1, `${what} must be between 1 and 65535`)
    .max(65535, `${what} must be between 1 and 65535`);

// Resource values become int64 CRI fields (bytes; cpu shares and quota in µs): bounded so they always fit.
const quantity = (fits: (v: number) => boolean, bound: string) =>
  z
    .union([z.string(), z.number()])
    .refine((q) => parseQuantity(q) !== undefined, "must be a quantity such as 500m, 2, 128Mi or 1G")
    .refine((q) => fits(parseQuantity(q) ?? 0), bound);
// Other resource names are refused with the reason a node without kubelet's managers cannot give them.
const resourceList = z
  .object({
    cpu: quantity((v) => v <= 1e6, "cpu must be at most 1000000 cores").optional(),
    memory: quantity((v) => v < 2 ** 63, "memory must be less than 8Ei (an int64 number of bytes)").optional(),
    // Counted at admission (requests) and held by the eviction manager (limits: src/eviction/).
    "ephemeral-storage": quantity((v) => v < 2 ** 53, "ephemeral-storage must be less than 8Pi").optional(),
  })
  .catchall(z.unknown())
  .superRefine((list, ctx) => {
    for (const name of Object.keys(list)) {
      if (name === "cpu" || name === "memory" || name === "ephemeral-storage") continue;
      ctx.addIssue({ code: "custom", path: [name], message: unsupportedResource(name) });
    }
  })
  .transform(({ cpu, memory, "ephemeral-storage": es }) => ({
    ...(cpu !== undefined ? { cpu } : {}),
    ...(memory !== undefined ? { memory } : {}),
    ...(es !== undefined ? { "ephemeral-storage": es } : {}),
  }));

/** Why a resource other than cpu, memory and ephemeral-storage is refused. */
export function unsupportedResource(name: string): string {
  if (name.startsWith("hugepages-"))
    return `${name} is refused: huge pages need the node's hugetlb accounting and kubelet's pre-allocated pool, which podsync does not manage`;
  if (name.includes("/"))
    return `${name} is an extended resource: kubelet gives these only through a device plugin (which allocates the device and adds it to the container), and podsync runs no device plugins`;
  return `unknown resource "${name}": podsync supports cpu, memory and ephemeral-storage`;
}

// Names are kept as written (Pod Security admission compares them exactly, as upstream does); config.ts sends
// the runtime their canonical form (capabilities.ts).
const capabilityName = z
  .string()
  .refine(
    isCapabilityName,
    "not a Linux capability: use a name from capabilities(7) such as NET_ADMIN (any case, CAP_ prefix optional) or ALL",
  );
const capabilities = z.strictObject({
  add: z.array(capabilityName).optional(),
  drop: z.array(capabilityName).optional(),
});

const uid = z
  .number()
  .int()
  .min(0)
  .max(2 ** 32 - 1);

// seccompProfile / appArmorProfile with the API server's field validation (validateSeccompProfileField,
// validateAppArmorProfileField): localhostProfile is required for Localhost and forbidden otherwise.
const profileFields = <T extends string>(types: readonly [T, ...T[]], what: string) =>
  z
    .strictObject({
      type: z.enum(types, { error: `${what}.type must be one of ${types.map((t) => `"${t}"`).join(", ")}` }),
      localhostProfile: z.string().optional(),
    })
    .superRefine((p, ctx) => {
      if (p.type === "Localhost") {
        if (!p.localhostProfile?.trim())
          ctx.addIssue({
            code: "custom",
            path: ["localhostProfile"],
            message: `${what}.localhostProfile must be set when type is "Localhost"`,
          });
        else if (
          what === "seccompProfile" &&
          (p.localhostProfile.startsWith("/") || p.localhostProfile.split("/").includes(".."))
        )
          ctx.addIssue({
            code: "custom",
            path: ["localhostProfile"],
            message: "must be a relative path without '..' (it is resolved under the node's seccomp profile directory)",
          });
        else if (p.localhostProfile.length > 4095)
          ctx.addIssue({ code: "custom", path: ["localhostProfile"], message: "must be at most 4095 characters" });
      } else if (p.localhostProfile !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["localhostProfile"],
          message: `can only be set if ${what}.type is "Localhost"`,
        });
    });
export const SeccompProfile = profileFields(["RuntimeDefault", "Localhost", "Unconfined"], "seccompProfile");
export const AppArmorProfile = profileFields(["RuntimeDefault", "Localhost", "Unconfined"], "appArmorProfile");
export const SELinuxOptions = z.strictObject({
  user: z.string().optional(),
  role: z.string().optional(),
  type: z.string().optional(),
  level: z.string().optional(),
});

export const ContainerSecurityContext = z.strictObject({
  runAsUser: uid.optional(),
  runAsGroup: uid.optional(),
  runAsNonRoot: z.boolean().optional(),
  privileged: z.boolean().optional(),
  readOnlyRootFilesystem: z.boolean().optional(),
  allowPrivilegeEscalation: z.boolean().optional(),
  capabilities: capabilities.optional(),
  seccompProfile: SeccompProfile.optional(),
  appArmorProfile: AppArmorProfile.optional(),
  seLinuxOptions: SELinuxOptions.optional(),
  // API validation: Unmasked needs `hostUsers: false` (a user namespace), which podsync does not offer.
  procMount: z
    .enum(["Default", "Unmasked"], { error: 'procMount must be "Default" or "Unmasked"' })
    .refine(
      (v) => v === "Default",
      "`hostUsers` must be false to use `Unmasked` (kubelet's validation), and podsync runs no pod in a user namespace: use Default",
    )
    .optional(),
});

export const ContainerPort = z.strictObject({
  name: z
    .string()
    .max(15)
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "port name must be an IANA_SVC_NAME")
    .optional(),
  containerPort: port("containerPort"),
  // 0 is what the API server stores for "no host port" (kubectl exports it): read as unset.
  hostPort: z.union([z.literal(0).transform(() => undefined), port("hostPort")]).optional(),
  protocol: z.enum(["TCP", "UDP", "SCTP"]).default("TCP"),
  hostIP: z.union([z.ipv4(), z.ipv6()]).optional(),
});

export const EnvVar = z.strictObject({
  name: z
    .string()
    .min(1)
    .regex(
      C_IDENTIFIER_ENV,
      "env name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
    ),
  value: z.string().default(""),
  valueFrom: EnvVarSource.optional(),
});

export const VolumeMount = z.strictObject({
  name: dns1123Label("volume name"),
  mountPath: z.string().startsWith("/", "mountPath must be absolute"),
  readOnly: z.boolean().default(false),
  subPath: z
    .string()
    .refine(
      (p) => !p.startsWith("/") && !p.split("/").includes(".."),
      "subPath must be relative and must not contain '..'",
    )
    .optional(),
  // Expanded from the container's env when it starts (kubelet's ExpandContainerVolumeMounts); the result is
  // checked again there. Exclusive with subPath (checked in Pod's superRefine).
  subPathExpr: z
    .string()
    .refine(
      (p) => !p.startsWith("/") && !p.split("/").includes(".."),
      "subPathExpr must be relative and must not contain '..'",
    )
    .optional(),
  // Bidirectional is for privileged containers only (checked with the container in Pod's superRefine).
  mountPropagation: z
    .enum(["None", "HostToContainer", "Bidirectional"], {
      error: 'mountPropagation must be "None", "HostToContainer" or "Bidirectional"',
    })
    .optional(),
});

// Probes (core/v1 Probe) with the API server's defaults (SetDefaults_Probe: timeout 1 s, period 10 s,
// success 1, failure 3; SetDefaults_HTTPGetAction: path "/", scheme HTTP; 0 means "default" as in the API)
// and its validation (validateProbe, validateHandler: exactly one handler; thresholds non-negative;
// probe-level terminationGracePeriodSeconds > 0). Container-level rules are in Pod's superRefine.
const nonNegative = (what: string) =>
  z
    .number()
    .int(`${what} must be an integer`)
    .min(0, `${what} must be greater than or equal to 0`)
    .max(2 ** 31 - 1);
const orDefault = (what: string, d: number) =>
  nonNegative(what)
    .default(0)
    .transform((v) => v || d);
const IANA_SVC_NAME = /^(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const portOrName = (what: string) =>
  z.union(
    [
      port(what),
      z
        .string()
        .max(15, `${what} name must be no more than 15 characters`)
        .regex(
          IANA_SVC_NAME,
          `${what} must be a number between 1 and 65535 or an IANA_SVC_NAME (a named container port)`,
        ),
    ],
    {
      error: `${what} must be a number between 1 and 65535 or a port name`,
    },
  );
const HTTP_HEADER_NAME = /^[-A-Za-z0-9!#$%&'*+.^_`|~]+$/;

export const ExecAction = z.strictObject({ command: z.array(z.string()).min(1, "exec.command is required") });
export const HTTPGetAction = z.strictObject({
  path: z
    .string()
    .default("/")
    .transform((p) => p || "/"),
  port: portOrName("httpGet.port"),
  host: z.string().min(1).optional(),
  scheme: z.enum(["HTTP", "HTTPS"], { error: 'httpGet.scheme must be "HTTP" or "HTTPS"' }).default("HTTP"),
  httpHeaders: z
    .array(
      z.strictObject({
        name: z.string().regex(HTTP_HEADER_NAME, "must be a valid HTTP header name"),
        value: z.string(),
      }),
    )
    .optional(),
});
export const TCPSocketAction = z.strictObject({
  port: portOrName("tcpSocket.port"),
  host: z.string().min(1).optional(),
});
export const GRPCAction = z.strictObject({ port: port("grpc.port"), service: z.string().default("") });

export const Probe = z
  .strictObject({
    exec: ExecAction.optional(),
    httpGet: HTTPGetAction.optional(),
    tcpSocket: TCPSocketAction.optional(),
    grpc: GRPCAction.optional(),
    initialDelaySeconds: nonNegative("initialDelaySeconds").default(0),
    timeoutSeconds: orDefault("timeoutSeconds", 1),
    periodSeconds: orDefault("periodSeconds", 10),
    successThreshold: orDefault("successThreshold", 1),
    failureThreshold: orDefault("failureThreshold", 3),
    terminationGracePeriodSeconds: z
      .number()
      .int()
      .min(1, "terminationGracePeriodSeconds must be greater than 0")
      .optional(),
  })
  .superRefine((p, ctx) => {
    const n = [p.exec, p.httpGet, p.tcpSocket, p.grpc].filter((h) => h !== undefined).length;
    if (n === 0)
      ctx.addIssue({ code: "custom", message: "must specify a handler type (exec, httpGet, tcpSocket or grpc)" });
    if (n > 1) ctx.addIssue({ code: "custom", message: "may not specify more than 1 handler type" });
  });

// Lifecycle hooks (core/v1 Lifecycle, LifecycleHandler) with the API server's validation (validateLifecycle,
// validateHandler: exactly one handler). tcpSocket is refused: the API keeps it only for backward compatibility
// and kubelet fails such a hook at run time ("invalid handler"). A sleep longer than the pod's grace period is
// refused in Pod's superRefine (validateSleepAction, PodLifecycleSleepActionAllowZero on: 0 is allowed).
export const SleepAction = z.strictObject({
  seconds: z.number().int("sleep.seconds must be an integer").min(0, "must be non-negative"),
});
export const LifecycleHandler = z
  .strictObject({
    exec: ExecAction.optional(),
    httpGet: HTTPGetAction.optional(),
    tcpSocket: z.unknown().optional(),
    sleep: SleepAction.optional(),
  })
  .superRefine((h, ctx) => {
    if (h.tcpSocket !== undefined)
      ctx.addIssue({
        code: "custom",
        path: ["tcpSocket"],
        message:
          "tcpSocket is not supported as a lifecycle handler (the API keeps the field only for backward compatibility; kubelet fails such a hook when it runs): use exec, httpGet or sleep",
      });
    const set = (["exec", "httpGet", "sleep"] as const).filter((k) => h[k] !== undefined);
    if (set.length === 0 && h.tcpSocket === undefined)
      ctx.addIssue({ code: "custom", message: "must specify a handler type" });
    for (const k of set.slice(1))
      ctx.addIssue({ code: "custom", path: [k], message: "may not specify more than 1 handler type" });
  })
  .transform(({ tcpSocket: _t, ...h }) => h);
export const Lifecycle = z.strictObject({
  postStart: LifecycleHandler.optional(),
  preStop: LifecycleHandler.optional(),
  // ContainerStopSignals (alpha in v1.33): CRI's ContainerConfig.stop_signal, which containerd 1.6 (the runtime
  // podsync is tested on) does not read, so podsync could not put it in force.
  stopSignal: z
    .string()
    .optional()
    .refine(
      (v) => v === undefined,
      "stopSignal is refused: it is alpha in Kubernetes v1.33 (ContainerStopSignals, off by default) and needs a runtime that reads CRI's ContainerConfig.stop_signal (containerd 2.1+); containerd 1.6 ignores it and would stop the container with the image's STOPSIGNAL. Set STOPSIGNAL in the image instead",
    ),
});
export type LifecycleHandler = z.output<typeof LifecycleHandler>;

export const PROBE_KINDS = ["livenessProbe", "readinessProbe", "startupProbe"] as const;
export type ProbeKind = (typeof PROBE_KINDS)[number];
export const PROBE_HANDLERS = ["exec", "httpGet", "tcpSocket", "grpc"] as const;
export type ProbeHandler = (typeof PROBE_HANDLERS)[number];

export const Container = z.strictObject({
  name: dns1123Label("container name"),
  image: z
    .string()
    .min(1, "image is required")
    .refine((s) => !/\s/.test(s), "image must not contain whitespace"),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  workingDir: z.string().startsWith("/", "workingDir must be absolute").optional(),
  ports: z.array(ContainerPort).optional(),
  env: z.array(EnvVar).optional(),
  envFrom: z.array(EnvFromSource).optional(),
  resources: z.strictObject({ limits: resourceList.optional(), requests: resourceList.optional() }).optional(),
  volumeMounts: z.array(VolumeMount).optional(),
  imagePullPolicy: z.enum(["Always", "IfNotPresent", "Never"]).optional(),
  securityContext: ContainerSecurityContext.optional(),
  terminationMessagePath: z.string().startsWith("/").default("/dev/termination-log"),
  terminationMessagePolicy: z.enum(["File", "FallbackToLogsOnError"]).default("File"),
  stdin: z.boolean().default(false),
  stdinOnce: z.boolean().default(false),
  tty: z.boolean().default(false),
  livenessProbe: Probe.optional(),
  readinessProbe: Probe.optional(),
  startupProbe: Probe.optional(),
  lifecycle: Lifecycle.optional(),
  // Sidecar containers (KEP-753): an init container with restartPolicy Always. Only init containers take it
  // (validateContainers: "may not be set for non-init containers", in Pod's superRefine).
  restartPolicy: z
    .enum(["Always"], { error: (i) => `Unsupported value: ${JSON.stringify(i.input)}: supported values: "Always"` })
    .optional(),
});

// Volumes podsync can honour on the node itself (kubelet's host_path.go, empty_dir.go; PVCs as podman kube
// play makes them). Host I/O (type checks, tmpfs mounts, claim directories) happens at sync through the
// engine's VolumeHost; a deployment without one (Workers) refuses the kinds that need it (volumes.ts).
export const HOST_PATH_TYPES = [
  "",
  "DirectoryOrCreate",
  "Directory",
  "FileOrCreate",
  "File",
  "Socket",
  "CharDevice",
  "BlockDevice",
] as const;
export const Volume = z.union([
  z.strictObject({
    name: dns1123Label("volume name"),
    hostPath: z.strictObject({
      path: z.string().startsWith("/", "hostPath.path must be absolute"),
      type: z
        .enum(HOST_PATH_TYPES, {
          error: `hostPath.type must be one of ${HOST_PATH_TYPES.map((t) => `"${t}"`).join(", ")}`,
        })
        .default(""),
    }),
  }),
  z.strictObject({
    name: dns1123Label("volume name"),
    emptyDir: z.strictObject({
      medium: z
        .enum(["", "Memory"], {
          error: 'emptyDir.medium must be "" (the node\'s disk) or "Memory" (a tmpfs); HugePages are not supported',
        })
        .default(""),
      // Memory: the tmpfs's size; on disk: held by the eviction manager (src/eviction/).
      sizeLimit: quantity((v) => v > 0 && v < 2 ** 53, "sizeLimit must be a positive size such as 64Mi").optional(),
    }),
  }),
  z.strictObject({
    name: dns1123Label("volume name"),
    persistentVolumeClaim: z.strictObject({
      claimName: dns1123Subdomain("claimName"),
      readOnly: z.boolean().default(false),
    }),
  }),
  // Files from the ConfigMaps and Secrets signed with the pod, and from the pod itself (see sources.ts).
  z.strictObject({ name: dns1123Label("volume name"), configMap: ConfigMapVolumeSource }),
  z.strictObject({ name: dns1123Label("volume name"), secret: SecretVolumeSource }),
  z.strictObject({ name: dns1123Label("volume name"), downwardAPI: DownwardAPIVolumeSource }),
  z.strictObject({ name: dns1123Label("volume name"), projected: ProjectedVolumeSource }),
]);

/** Registry credentials: inline (the `.dockerconfigjson` shape), or only a `name`: a
 * `kubernetes.io/dockerconfigjson` Secret signed with the pod (see references.ts). */
export const PullSecret = z.strictObject({
  name: z.string().min(1).optional(),
  auths: z
    .record(
      z.string().min(1),
      z.strictObject({
        username: z.string().optional(),
        password: z.string().optional(),
        auth: z.string().optional(),
        identitytoken: z.string().optional(),
        registrytoken: z.string().optional(),
      }),
    )
    .optional(),
});

export const PodSecurityContext = z.strictObject({
  runAsUser: uid.optional(),
  runAsGroup: uid.optional(),
  runAsNonRoot: z.boolean().optional(),
  supplementalGroups: z.array(uid).optional(),
  fsGroup: uid.optional(),
  /** When the volume ownership for fsGroup is applied: Always (the default), or only when the volume's root
   * lacks it (OnRootMismatch). */
  fsGroupChangePolicy: z
    .enum(["OnRootMismatch", "Always"], { error: 'fsGroupChangePolicy must be "OnRootMismatch" or "Always"' })
    .optional(),
  seccompProfile: SeccompProfile.optional(),
  appArmorProfile: AppArmorProfile.optional(),
  seLinuxOptions: SELinuxOptions.optional(),
  sysctls: z
    .array(
      z.strictObject({
        name: z
          .string()
          .regex(/^[a-z0-9]([-_a-z0-9]*[a-z0-9])?([./][a-z0-9]([-_a-z0-9]*[a-z0-9])?)*$/, "invalid sysctl name"),
        value: z.string(),
      }),
    )
    .optional(),
});

export const PodSpec = z.strictObject({
  initContainers: z.array(Container).optional(),
  containers: z.array(Container).min(1, "at least one container is required"),
  volumes: z.array(Volume).optional(),
  restartPolicy: z.enum(["Always", "OnFailure", "Never"]).default("Always"),
  terminationGracePeriodSeconds: z
    .number()
    .int("terminationGracePeriodSeconds must be an integer")
    .min(0, "terminationGracePeriodSeconds must not be negative")
    .max(
      MAX_GRACE_PERIOD_SECONDS,
      `terminationGracePeriodSeconds must be at most ${MAX_GRACE_PERIOD_SECONDS} (podsync's limit: a kill waits this long inside one request)`,
    )
    .default(30),
  /** kubelet's activeDeadlineHandler: active this long on the node, the pod is killed and Failed
   * (DeadlineExceeded). The API server's bound: a positive int64; podsync's: what a timer can hold. */
  activeDeadlineSeconds: z
    .number()
    .int("activeDeadlineSeconds must be an integer")
    .min(1, "must be greater than or equal to 1")
    .max(2 ** 31 - 1)
    .optional(),
  hostNetwork: z.boolean().default(false),
  hostPID: z.boolean().default(false),
  hostIPC: z.boolean().default(false),
  hostname: dns1123Label("hostname").optional(),
  subdomain: dns1123Label("subdomain").optional(),
  /** The kernel hostname is the pod's FQDN (hostname.subdomain.namespace.svc.clusterDomain) when it has a
   * subdomain (GetNodenameForKernel). */
  setHostnameAsFQDN: z.boolean().optional(),
  /** Extra /etc/hosts entries (kubelet's hostsEntriesFromHostAliases); validateHostAliases: an IP address and
   * DNS-1123 subdomain hostnames. */
  hostAliases: z
    .array(
      z.strictObject({
        ip: z.union([z.ipv4(), z.ipv6()], { error: "must be a valid IP address" }),
        hostnames: z.array(dns1123Subdomain("hostname")).optional(),
      }),
    )
    .optional(),
  /** One PID namespace for the pod's containers (the sandbox's, NamespaceMode POD). */
  shareProcessNamespace: z.boolean().optional(),
  dnsPolicy: z.enum(["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]).default("ClusterFirst"),
  dnsConfig: z
    .strictObject({
      nameservers: z
        .array(z.union([z.ipv4(), z.ipv6()]))
        .max(3, "at most 3 nameservers")
        .optional(),
      searches: z.array(z.string().min(1)).max(32, "at most 32 search domains").optional(),
      options: z.array(z.strictObject({ name: z.string().min(1), value: z.string().optional() })).optional(),
    })
    .optional(),
  securityContext: PodSecurityContext.optional(),
  imagePullSecrets: z.array(PullSecret).optional(),
  ...schedulingFields,
  // Service accounts: only the name, and only without a token (there is no API server to issue one; see
  // Pod's superRefine). serviceAccount is the deprecated alias, defaulted into serviceAccountName.
  serviceAccountName: dns1123Subdomain("serviceAccountName").optional(),
  serviceAccount: dns1123Subdomain("serviceAccount").optional(),
  automountServiceAccountToken: z.boolean().optional(),
  /** Inert: service links are env vars for the Services of the pod's namespace, and without an API server
   * there are none. */
  enableServiceLinks: z.boolean().optional(),
});

/** ObjectMeta fields the API server and its controllers set, printed by `kubectl get pod -o yaml`: they record
 * the object's history in a cluster (versions, owners, timestamps, field managers), say nothing about what
 * should run, and are dropped after validation. uid is not among them: it names the pod on the node. */
export const READ_ONLY_METADATA = [
  "resourceVersion",
  "creationTimestamp",
  "managedFields",
  "ownerReferences",
  "generation",
  "selfLink",
  "generateName",
  "finalizers",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
] as const;
function readOnly<K extends string>(keys: readonly K[]) {
  return Object.fromEntries(
    keys.map((k) => [k, z.unknown().optional().describe("read-only: accepted and ignored")]),
  ) as Record<K, z.ZodOptional<z.ZodUnknown>>;
}

/** metav1.OwnerReference. Sent ones are dropped at intake with the other read-only fields (a cluster's owners are
 * not this node's); the node's own controllers set them on the pods they make, and the store keeps them. */
export const OwnerReference = z.strictObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  name: z.string().min(1),
  uid: z.string().min(1),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});
export type OwnerReference = z.output<typeof OwnerReference>;
/** The read-only fields a pod's schema drops: all but ownerReferences (see OwnerReference). */
const POD_READ_ONLY = READ_ONLY_METADATA.filter(
  (k): k is Exclude<(typeof READ_ONLY_METADATA)[number], "ownerReferences"> => k !== "ownerReferences",
);

export const PodMetadata = z.strictObject({
  name: dns1123Subdomain("metadata.name"),
  namespace: dns1123Label("metadata.namespace").default("default"),
  // UIDs are normally UUIDs; static-pod style hashes are accepted too. They are label values in CRI.
  uid: z
    .string()
    .min(1, "metadata.uid is required")
    .max(128)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "metadata.uid must be alphanumerics, '-', '_' or '.'"),
  labels: labels.optional(),
  annotations: annotations.optional(),
  ownerReferences: z.array(OwnerReference).optional(),
  ...readOnly(POD_READ_ONLY),
});

export const Pod = z
  .strictObject({
    apiVersion: z.literal("v1").optional(),
    kind: z.literal("Pod").optional(),
    metadata: PodMetadata,
    spec: PodSpec,
    /** Written by kubelet, not by whoever wants the pod: ignored (a `kubectl get -o yaml` export carries it). */
    status: z.unknown().optional().describe("read-only: accepted and ignored"),
  })
  .superRefine((pod, ctx) => {
    const seen = new Map<string, string>();
    const volumes = new Set((pod.spec.volumes ?? []).map((v) => v.name));
    const vseen = new Set<string>();
    (pod.spec.volumes ?? []).forEach((v, i) => {
      if (vseen.has(v.name))
        ctx.addIssue({
          code: "custom",
          path: ["spec", "volumes", i, "name"],
          message: `duplicate volume name "${v.name}"`,
        });
      vseen.add(v.name);
    });
    const hostPorts = new Set<string>();
    for (const kind of ["initContainers", "containers"] as const) {
      (pod.spec[kind] ?? []).forEach((c, i) => {
        const prev = seen.get(c.name);
        if (prev !== undefined)
          ctx.addIssue({
            code: "custom",
            path: ["spec", kind, i, "name"],
            message: `duplicate container name "${c.name}" (also in spec.${prev}); names must be unique across init and app containers`,
          });
        seen.set(c.name, `${kind}`);
        for (const issue of expansionIssues(c))
          ctx.addIssue({ code: "custom", path: ["spec", kind, i, ...issue.path], message: issue.message });
        (c.volumeMounts ?? []).forEach((m, j) => {
          if (!volumes.has(m.name))
            ctx.addIssue({
              code: "custom",
              path: ["spec", kind, i, "volumeMounts", j, "name"],
              message: `volume "${m.name}" is not in spec.volumes`,
            });
          if (m.subPath !== undefined && m.subPath !== "" && m.subPathExpr !== undefined && m.subPathExpr !== "")
            ctx.addIssue({
              code: "custom",
              path: ["spec", kind, i, "volumeMounts", j, "subPathExpr"],
              message: "subPathExpr and subPath are mutually exclusive",
            });
          if (m.mountPropagation === "Bidirectional" && c.securityContext?.privileged !== true)
            ctx.addIssue({
              code: "custom",
              path: ["spec", kind, i, "volumeMounts", j, "mountPropagation"],
              message: "Bidirectional mount propagation is available only to privileged containers",
            });
        });
        probeRules(kind, i, c, ctx);
        lifecycleRules(kind, i, c, pod.spec.terminationGracePeriodSeconds, ctx);
        for (const r of ["cpu", "memory"] as const) {
          const req = c.resources?.requests?.[r];
          const lim = c.resources?.limits?.[r];
          if (req !== undefined && lim !== undefined && parseQuantity(req)! > parseQuantity(lim)!)
            ctx.addIssue({
              code: "custom",
              path: ["spec", kind, i, "resources", "requests", r],
              message: `must be less than or equal to the ${r} limit`,
            });
        }
        (c.ports ?? []).forEach((p, j) => {
          if (p.hostPort === undefined) return;
          const key = `${p.protocol}/${p.hostIP ?? ""}/${p.hostPort}`;
          if (hostPorts.has(key))
            ctx.addIssue({
              code: "custom",
              path: ["spec", kind, i, "ports", j, "hostPort"],
              message: `hostPort ${p.hostPort}/${p.protocol} is already used in this pod`,
            });
          hostPorts.add(key);
          if (pod.spec.hostNetwork && p.hostPort !== p.containerPort)
            ctx.addIssue({
              code: "custom",
              path: ["spec", kind, i, "ports", j, "hostPort"],
              message: "with hostNetwork, hostPort must equal containerPort",
            });
        });
      });
    }
    for (const issue of sourceIssues(pod)) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
    (pod.spec.imagePullSecrets ?? []).forEach((s, i) => {
      if (!s.auths && !s.name)
        ctx.addIssue({
          code: "custom",
          path: ["spec", "imagePullSecrets", i],
          message: "give the credentials inline (auths) or the name of a Secret signed with the pod",
        });
    });
    serviceAccountRules(pod.spec, ctx);
    if (pod.spec.shareProcessNamespace && pod.spec.hostPID)
      ctx.addIssue({
        code: "custom",
        path: ["spec", "shareProcessNamespace"],
        message: "ShareProcessNamespace and HostPID cannot both be enabled",
      });
    if (pod.spec.dnsPolicy === "None" && !pod.spec.dnsConfig?.nameservers?.length)
      ctx.addIssue({
        code: "custom",
        path: ["spec", "dnsConfig", "nameservers"],
        message: 'dnsPolicy "None" needs at least one nameserver in dnsConfig',
      });
  })
  .transform((pod) => {
    // API-server defaulting: imagePullPolicy is Always for `:latest` or untagged images, else IfNotPresent.
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers])
      c.imagePullPolicy ??= defaultPullPolicy(c.image);
    // The deprecated alias, as the API server's conversion fills it in.
    if (pod.spec.serviceAccount !== undefined) pod.spec.serviceAccountName ??= pod.spec.serviceAccount;
    const { status: _status, ...rest } = pod;
    return { ...rest, metadata: withoutReadOnly(pod.metadata) };
  });

function withoutReadOnly<M extends Record<string, unknown>>(meta: M): Omit<M, (typeof POD_READ_ONLY)[number]> {
  const out: Record<string, unknown> = { ...meta };
  for (const k of POD_READ_ONLY) delete out[k];
  return out as Omit<M, (typeof POD_READ_ONLY)[number]>;
}

/** The message a pod gets when it would need a service account token (defined with the projected source). */
export { NEEDS_API_SERVER_TOKEN };

/** A named service account means a token mounted into every container unless automount is off; podsync has no
 * API server to issue one, so such a pod is refused, naming the field (kubelet would mount the token the
 * ServiceAccount admission plugin added). Without a name (or with automount off) there is nothing to issue. */
function serviceAccountRules(spec: z.output<typeof PodSpec>, ctx: z.RefinementCtx): void {
  if (spec.automountServiceAccountToken === false) return;
  const field =
    spec.serviceAccountName !== undefined
      ? "serviceAccountName"
      : spec.serviceAccount !== undefined
        ? "serviceAccount"
        : undefined;
  if (field === undefined) return;
  ctx.addIssue({
    code: "custom",
    path: ["spec", field],
    message: `${field} "${spec[field]}" ${NEEDS_API_SERVER_TOKEN}; set automountServiceAccountToken: false to run the pod without one`,
  });
}

/** kubelet's IsRestartableInitContainer (pkg/api/v1/pod, kubelet/types): an init container with
 * restartPolicy Always, a sidecar. */
export function isRestartableInitContainer(c: Pick<Container, "restartPolicy">): boolean {
  return c.restartPolicy === "Always";
}

/** validateContainers / validateInitContainers rules for restartPolicy and lifecycle: restartPolicy only on init
 * containers; lifecycle hooks only on app containers and sidecars; a sleep hook no longer than the pod's grace
 * period (validateSleepAction); a named httpGet port must be one of the container's ports (podsync's rule, as for
 * probes). */
function lifecycleRules(
  kind: "initContainers" | "containers",
  i: number,
  c: Container,
  grace: number,
  ctx: z.RefinementCtx,
): void {
  if (kind === "containers" && c.restartPolicy !== undefined)
    ctx.addIssue({
      code: "custom",
      path: ["spec", kind, i, "restartPolicy"],
      message: "may not be set for non-init containers",
    });
  if (!c.lifecycle) return;
  const path = ["spec", kind, i, "lifecycle"];
  if (kind === "initContainers" && !isRestartableInitContainer(c)) {
    ctx.addIssue({ code: "custom", path, message: "may not be set for init containers without restartPolicy=Always" });
    return;
  }
  for (const hook of ["postStart", "preStop"] as const) {
    const h = c.lifecycle[hook];
    const seconds = h?.sleep?.seconds;
    if (seconds !== undefined && seconds > grace)
      ctx.addIssue({
        code: "custom",
        path: [...path, hook, "sleep", "seconds"],
        message: `must be non-negative and less than terminationGracePeriodSeconds (${grace})`,
      });
    const port = h?.httpGet?.port;
    if (typeof port === "string" && !(c.ports ?? []).some((cp) => cp.name === port))
      ctx.addIssue({
        code: "custom",
        path: [...path, hook, "httpGet", "port"],
        message: `port name "${port}" is not one of the container's ports`,
      });
  }
}

/** validateContainers / validateInitContainers probe rules: no probes on init containers other than sidecars;
 * liveness and startup successThreshold must be 1; readiness takes no terminationGracePeriodSeconds. podsync
 * adds one: a named port must be one of the container's ports (kubelet would fail that probe forever; here it
 * is refused up front). */
function probeRules(kind: "initContainers" | "containers", i: number, c: Container, ctx: z.RefinementCtx): void {
  for (const k of PROBE_KINDS) {
    const p = c[k];
    if (!p) continue;
    const path = ["spec", kind, i, k];
    if (kind === "initContainers" && !isRestartableInitContainer(c)) {
      ctx.addIssue({
        code: "custom",
        path,
        message: "may not be set for init containers without restartPolicy=Always",
      });
      continue;
    }
    if (k !== "readinessProbe" && p.successThreshold !== 1)
      ctx.addIssue({ code: "custom", path: [...path, "successThreshold"], message: "must be 1" });
    if (k === "readinessProbe" && p.terminationGracePeriodSeconds !== undefined)
      ctx.addIssue({
        code: "custom",
        path: [...path, "terminationGracePeriodSeconds"],
        message: "must not be set for readinessProbes",
      });
    for (const h of ["httpGet", "tcpSocket"] as const) {
      const port = p[h]?.port;
      if (typeof port === "string" && !(c.ports ?? []).some((cp) => cp.name === port))
        ctx.addIssue({
          code: "custom",
          path: [...path, h, "port"],
          message: `port name "${port}" is not one of the container's ports`,
        });
    }
  }
}

export function defaultPullPolicy(image: string): "Always" | "IfNotPresent" {
  if (image.includes("@")) return "IfNotPresent";
  const lastSlash = image.lastIndexOf("/");
  const colon = image.indexOf(":", lastSlash + 1);
  const tag = colon >= 0 ? image.slice(colon + 1) : "";
  return tag === "" || tag === "latest" ? "Always" : "IfNotPresent";
}

export type Pod = z.output<typeof Pod>;
export type PodInput = z.input<typeof Pod>;
export type Container = z.output<typeof Container>;
export type PodSpec = z.output<typeof PodSpec>;
export type Volume = z.output<typeof Volume>;
export type PullSecret = z.output<typeof PullSecret>;
export type Probe = z.output<typeof Probe>;
