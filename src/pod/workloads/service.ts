// v1.Service as a zod schema: the subset a node serves (ClusterIP, headless, NodePort, LoadBalancer as NodePort,
// ExternalName), with the API server's defaults (pkg/apis/core/v1/defaults.go SetDefaults_Service) and the checks
// of ValidateService (pkg/apis/core/validation/validation.go) that need nothing but the object. What needs the
// node (the ClusterIP and NodePort ranges, what is taken, the owner's policy) is src/services/allocate.ts.
// podsync's own rule beyond upstream: a selector on an ExternalName Service is refused (upstream ignores it; here
// it would make EndpointSlices nobody uses).
import { z } from "zod";
import { DNS1123_LABEL, DNS1123_SUBDOMAIN, labels } from "../names.js";
import { READ_ONLY_METADATA } from "../schema.js";
import type { FieldError } from "../validate.js";

const readOnly = Object.fromEntries(READ_ONLY_METADATA.map((k) => [k, z.unknown().optional()])) as Record<
  (typeof READ_ONLY_METADATA)[number],
  z.ZodOptional<z.ZodUnknown>
>;

/** ValidateServiceName: a DNS-1035 label (starts with a letter), so it makes env var names and DNS names. */
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** validation.IsValidPortName (IANA_SVC_NAME): at most 15 lower-case alphanumerics or '-', one letter at least,
 * no leading, trailing or doubled '-'. */
export function validPortName(s: string): boolean {
  return s.length <= 15 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s) && /[a-z]/.test(s) && !s.includes("--");
}

const portNumber = (what: string) =>
  z
    .number({ error: `${what} must be a number` })
    .int(`${what} must be an integer`)
    .min(1, `${what} must be between 1 and 65535, inclusive`)
    .max(65535, `${what} must be between 1 and 65535, inclusive`);

export const ServicePort = z.strictObject({
  name: z.string().optional(),
  protocol: z.enum(["TCP", "UDP"], { error: 'protocol must be "TCP" or "UDP" (podsync has no SCTP)' }).default("TCP"),
  appProtocol: z.string().optional(),
  port: portNumber("port"),
  // intstr: a number, or an IANA_SVC_NAME resolved against each pod's container ports. 0 or "" (as exported):
  // defaulted to port below.
  targetPort: z.union([z.number().int(), z.string()]).optional(),
  // 0 (as exported) means none: allocated or refused in src/services/allocate.ts.
  nodePort: z
    .number()
    .int("nodePort must be an integer")
    .optional()
    .transform((n) => (n === 0 ? undefined : n)),
});

const SERVICE_TYPES = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"] as const;

/** The longest ClientIP affinity (core.MaxClientIPServiceAffinitySeconds) and its default (10800). */
export const MAX_AFFINITY_SECONDS = 86400;
export const DEFAULT_AFFINITY_SECONDS = 10800;

const ServiceSpec = z.strictObject({
  type: z.enum(SERVICE_TYPES, { error: "type must be ClusterIP, NodePort, LoadBalancer or ExternalName" }).optional(),
  ports: z.array(ServicePort).optional(),
  selector: labels.optional(),
  clusterIP: z.string().optional(),
  clusterIPs: z.array(z.string()).optional(),
  externalName: z.string().optional(),
  sessionAffinity: z.enum(["None", "ClientIP"], { error: 'sessionAffinity must be "None" or "ClientIP"' }).optional(),
  sessionAffinityConfig: z
    .strictObject({
      clientIP: z
        .strictObject({
          timeoutSeconds: z
            .number()
            .int()
            .min(1, `timeoutSeconds must be between 1 and ${MAX_AFFINITY_SECONDS}`)
            .max(MAX_AFFINITY_SECONDS, `timeoutSeconds must be between 1 and ${MAX_AFFINITY_SECONDS}`)
            .optional(),
        })
        .optional(),
    })
    .optional(),
  publishNotReadyAddresses: z.boolean().optional(),
  ipFamilies: z
    .array(z.enum(["IPv4", "IPv6"]))
    .max(2, "ipFamilies may hold at most two entries (IPv4 and IPv6)")
    .refine((f) => f.length < 2 || f[0] !== f[1], "ipFamilies may not list a family twice")
    .optional(),
  // RequireDualStack and families other than the node's are refused at allocation (allocate.ts initIPFamilies),
  // where the node's family is known.
  ipFamilyPolicy: z.enum(["SingleStack", "PreferDualStack", "RequireDualStack"]).optional(),
  externalTrafficPolicy: z.enum(["Cluster", "Local"]).optional(),
  internalTrafficPolicy: z.enum(["Cluster", "Local"]).optional(),
  allocateLoadBalancerNodePorts: z.boolean().optional(),
});

/** ValidateService's object-only rules (ports, names, types, ExternalName), each issue at its field. */
function serviceRules(spec: z.output<typeof ServiceSpec>, ctx: z.core.$RefinementCtx): void {
  const issue = (path: (string | number)[], message: string) =>
    ctx.addIssue({ code: "custom", path: ["spec", ...path], message });
  const type = spec.type ?? "ClusterIP";
  const ports = spec.ports ?? [];
  const headless = spec.clusterIP === "None";
  if (type === "ExternalName") {
    if (!spec.externalName) issue(["externalName"], "required for an ExternalName Service");
    else if (spec.externalName.length > 253 || !DNS1123_SUBDOMAIN.test(spec.externalName.replace(/\.$/, "")))
      issue(["externalName"], "must be a lower-case RFC 1123 hostname (a DNS-1123 subdomain)");
    if (spec.clusterIP !== undefined && spec.clusterIP !== "")
      issue(["clusterIP"], "may not be set for an ExternalName Service");
    if (spec.selector && Object.keys(spec.selector).length)
      issue(
        ["selector"],
        "may not be set for an ExternalName Service: it names a host, not pods (remove the selector, or use type ClusterIP)",
      );
  } else if (spec.externalName) issue(["externalName"], `may not be set when type is ${type}`);
  if (ports.length === 0 && !headless && type !== "ExternalName") issue(["ports"], "required");
  if (headless && (type === "NodePort" || type === "LoadBalancer"))
    issue(["clusterIP"], `may not be "None" for a ${type} Service`);
  const names = new Map<string, number>();
  const pairs = new Map<string, number>();
  ports.forEach((p, i) => {
    if (ports.length > 1 && !p.name) issue(["ports", i, "name"], "required when a Service has more than one port");
    if (p.name) {
      if (p.name.length > 63 || !DNS1123_LABEL.test(p.name))
        issue(["ports", i, "name"], "must be a DNS-1123 label: lower case alphanumerics or '-'");
      const dup = names.get(p.name);
      if (dup !== undefined) issue(["ports", i, "name"], `duplicate port name "${p.name}" (also spec.ports[${dup}])`);
      else names.set(p.name, i);
    }
    const pair = `${p.port}/${p.protocol}`;
    const dupPair = pairs.get(pair);
    if (dupPair !== undefined) issue(["ports", i], `duplicate port ${pair} (also spec.ports[${dupPair}])`);
    else pairs.set(pair, i);
    const t = p.targetPort;
    if (typeof t === "number" && t !== 0 && (t < 1 || t > 65535))
      issue(["ports", i, "targetPort"], "must be between 1 and 65535, inclusive");
    if (typeof t === "string" && t !== "" && !validPortName(t))
      issue(
        ["ports", i, "targetPort"],
        "must be a port number or an IANA_SVC_NAME (at most 15 lower-case alphanumerics or '-', with a letter)",
      );
    if (p.nodePort !== undefined) {
      if (type === "ClusterIP" || type === "ExternalName")
        issue(["ports", i, "nodePort"], `may not be used when type is '${type}'`);
      else if (p.nodePort < 1 || p.nodePort > 65535)
        issue(["ports", i, "nodePort"], "must be between 1 and 65535, inclusive");
    }
  });
  if (spec.sessionAffinity !== "ClientIP" && spec.sessionAffinityConfig?.clientIP)
    issue(["sessionAffinityConfig"], 'must not be set when sessionAffinity is "None"');
  if (spec.clusterIPs?.length && spec.clusterIP !== undefined && spec.clusterIPs[0] !== spec.clusterIP)
    issue(["clusterIPs", 0], "must match spec.clusterIP");
  if (spec.clusterIPs && spec.clusterIPs.length > 1)
    issue(["clusterIPs"], "podsync's Services are single-stack: at most one address");
}

/** SetDefaults_Service, and the registry's single-stack defaults; the addresses themselves come later. */
function withDefaults(spec: z.output<typeof ServiceSpec>) {
  const type = spec.type ?? "ClusterIP";
  const ports = (spec.ports ?? []).map((p) => ({
    ...p,
    targetPort: p.targetPort === undefined || p.targetPort === 0 || p.targetPort === "" ? p.port : p.targetPort,
  }));
  const affinity = spec.sessionAffinity ?? "None";
  const external = type === "NodePort" || type === "LoadBalancer";
  // clusterIPs follows clusterIP (the registry keeps them in step).
  const clusterIP = spec.clusterIP ?? spec.clusterIPs?.[0];
  return {
    ...spec,
    type,
    ports,
    sessionAffinity: affinity,
    ...(affinity === "ClientIP"
      ? {
          sessionAffinityConfig: {
            clientIP: {
              timeoutSeconds: spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? DEFAULT_AFFINITY_SECONDS,
            },
          },
        }
      : {}),
    ...(clusterIP !== undefined && clusterIP !== "" ? { clusterIP, clusterIPs: [clusterIP] } : {}),
    ...(type !== "ExternalName"
      ? {
          // alloc.go: a headless Service without a selector defaults to RequireDualStack, the rest to SingleStack.
          ipFamilyPolicy:
            spec.ipFamilyPolicy ??
            (clusterIP === "None" && Object.keys(spec.selector ?? {}).length === 0
              ? "RequireDualStack"
              : "SingleStack"),
          internalTrafficPolicy: spec.internalTrafficPolicy ?? "Cluster",
        }
      : {}),
    ...(external ? { externalTrafficPolicy: spec.externalTrafficPolicy ?? "Cluster" } : {}),
    ...(type === "LoadBalancer" ? { allocateLoadBalancerNodePorts: spec.allocateLoadBalancerNodePorts ?? true } : {}),
  };
}

export const Service = z
  .strictObject({
    apiVersion: z.literal("v1"),
    kind: z.literal("Service"),
    metadata: z.strictObject({
      name: z
        .string()
        .max(63, "metadata.name must be no more than 63 characters")
        .regex(
          DNS1035_LABEL,
          "metadata.name must be a DNS-1035 label: lower case alphanumerics or '-', starting with a letter and ending with an alphanumeric",
        ),
      namespace: z
        .string()
        .max(63)
        .regex(DNS1123_LABEL, "metadata.namespace must be a DNS-1123 label")
        .default("default"),
      uid: z
        .string()
        .min(1)
        .max(128)
        .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "metadata.uid must be alphanumerics, '-', '_' or '.'")
        .optional(),
      labels: labels.optional(),
      annotations: z.record(z.string(), z.string()).optional(),
      ...readOnly,
    }),
    spec: ServiceSpec.default({}),
    // What a cluster export carries (status.loadBalancer): dropped; the node says its own.
    status: z.unknown().optional(),
  })
  .superRefine((s, ctx) => serviceRules(s.spec, ctx))
  .transform((s) => {
    const { status: _, ...rest } = s;
    return { ...rest, spec: withDefaults(s.spec) };
  });
export type Service = z.output<typeof Service>;
export type ServicePort = Service["spec"]["ports"][number];

/** v1helper.IsServiceIPSet: a ClusterIP that is neither empty nor "None". */
export const isServiceIPSet = (s: { spec: { clusterIP?: string | undefined } }) =>
  s.spec.clusterIP !== undefined && s.spec.clusterIP !== "" && s.spec.clusterIP !== "None";

/** A pod as the named-port check reads it: a body's pod, or a workload's template as a pod. */
interface PortedPod {
  metadata: { namespace: string; labels?: Record<string, string> | undefined };
  spec: {
    containers: readonly {
      ports?: readonly { name?: string | undefined; containerPort: number; protocol: string }[];
    }[];
    initContainers?:
      | readonly {
          restartPolicy?: string | undefined;
          ports?: readonly { name?: string | undefined; containerPort: number; protocol: string }[];
        }[]
      | undefined;
  };
}

/**
 * podsync's rule for a named targetPort (upstream's FindPort silently takes the first match): in one pod the
 * Service selects, the name must resolve to one port. A pod whose containers (and sidecars) give the name to
 * different port numbers would send the Service's traffic to whichever container comes first, so the Service
 * is refused naming its targetPort and the pod. Checked against the pods and pod templates of the same body.
 */
export function namedTargetPortErrors(
  services: readonly { svc: Service; at: string }[],
  pods: readonly { pod: PortedPod; at: string }[],
): FieldError[] {
  const errors: FieldError[] = [];
  for (const { svc, at } of services) {
    const sel = svc.spec.selector;
    if (!sel) continue;
    svc.spec.ports.forEach((sp, i) => {
      if (typeof sp.targetPort !== "string") return;
      for (const { pod, at: podAt } of pods) {
        if (pod.metadata.namespace !== svc.metadata.namespace) continue;
        if (!Object.entries(sel).every(([k, v]) => pod.metadata.labels?.[k] === v)) continue;
        const all = [
          ...pod.spec.containers,
          ...(pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === "Always"),
        ].flatMap((c) => c.ports ?? []);
        const numbers = new Set(
          all.filter((p) => p.name === sp.targetPort && p.protocol === sp.protocol).map((p) => p.containerPort),
        );
        if (numbers.size > 1) {
          errors.push({
            path: `${at ? `${at}.` : ""}spec.ports[${i}].targetPort`,
            message: `"${sp.targetPort}" resolves to different ports (${[...numbers].join(", ")}) in the pod at ${podAt || "the body"}: give each container port its own name`,
          });
          return;
        }
      }
    });
  }
  return errors;
}
