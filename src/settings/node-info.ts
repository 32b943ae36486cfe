// The node as admission sees it (src/kuberuntime/predicates.ts): its labels, taints and allocatable
// resources, from settings the node owner sets (Node and Workers read the same names).
import { z } from "zod";
import { LABEL_ARCH, LABEL_HOSTNAME, LABEL_OS, NODE_OS, type NodeInfo, type Taint } from "../lifecycle/predicates.js";
import { LABEL_VALUE_RULE, validLabelValue, validQualifiedKey } from "../pod/names.js";
import { TAINT_EFFECTS, type TaintEffect } from "../pod/scheduling.js";
import { milliCPU, parseQuantity } from "../pod/quantity.js";

const items = z.string().transform((s) =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean),
);

/** `k=v,k2=v2`, as kubelet's --node-labels. kubernetes.io/os and /arch are facts about the node, not settings. */
const nodeLabels = items.transform((list, ctx) => {
  const out: Record<string, string> = {};
  for (const item of list) {
    const eq = item.indexOf("=");
    const [k, v] = eq < 0 ? [item, ""] : [item.slice(0, eq), item.slice(eq + 1)];
    const bad =
      eq < 0
        ? "must be key=value"
        : (validQualifiedKey(k) ?? (validLabelValue(v) ? undefined : `the value must be ${LABEL_VALUE_RULE}`));
    if (bad) ctx.addIssue({ code: "custom", message: `"${item}": ${bad}` });
    else if (k === LABEL_OS || k === LABEL_ARCH)
      ctx.addIssue({
        code: "custom",
        message: `"${item}": ${k} is the node's own (${LABEL_OS} is always ${NODE_OS}; set PODSYNC_NODE_ARCH for the arch)`,
      });
    else out[k] = v;
  }
  return out;
});

/** `key=value:Effect` or `key:Effect`, as kubelet's --register-with-taints. */
const nodeTaints = items.transform((list, ctx) => {
  const out: Taint[] = [];
  for (const item of list) {
    const m = /^([^=:]+)(?:=([^:]*))?:([A-Za-z]+)$/.exec(item);
    const bad = !m
      ? "must be key=value:Effect or key:Effect"
      : (validQualifiedKey(m[1]!) ??
        (m[2] && !validLabelValue(m[2]) ? `the value must be ${LABEL_VALUE_RULE}` : undefined) ??
        ((TAINT_EFFECTS as readonly string[]).includes(m[3]!)
          ? undefined
          : `the effect must be one of ${TAINT_EFFECTS.join(", ")}`));
    if (bad) ctx.addIssue({ code: "custom", message: `"${item}": ${bad}` });
    else out.push({ key: m![1]!, ...(m![2] ? { value: m![2] } : {}), effect: m![3] as TaintEffect });
  }
  return out;
});

/** Go's GOARCH names, which kubelet puts in kubernetes.io/arch. */
export const GO_ARCH: Readonly<Record<string, string>> = {
  x64: "amd64",
  arm64: "arm64",
  arm: "arm",
  ia32: "386",
  ppc64: "ppc64le",
  s390x: "s390x",
  riscv64: "riscv64",
  loong64: "loong64",
  mips: "mips",
  mipsel: "mipsle",
};

export const nodeAdmissionSettingsShape = {
  /** Labels beyond kubelet's defaults (kubernetes.io/hostname = the node name, /os = linux, /arch). */
  PODSYNC_NODE_LABELS: nodeLabels.default({}),
  /** Taints pods must tolerate (NoSchedule and NoExecute are checked). */
  PODSYNC_NODE_TAINTS: nodeTaints.default([]),
  /** Allocatable cpu (a quantity: 4, 3500m); Node reads the machine's cores when unset, Workers do not check cpu. */
  PODSYNC_NODE_CPU: z
    .string()
    .refine(
      (q) => parseQuantity(q) !== undefined && parseQuantity(q)! > 0,
      "must be a positive cpu quantity such as 4 or 3500m",
    )
    .transform((q) => milliCPU(q))
    .optional(),
  /** kubelet's --max-pods. */
  PODSYNC_NODE_MAX_PODS: z.coerce
    .number()
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(100_000, "must be at most 100000")
    .default(110),
  /** The pods this node holds (kubelet's maxPods, 110): admission's allocatable pods, and the most pods one
   * workload may ask for (src/pod/workloads/bounds.ts). Unset: PODSYNC_NODE_MAX_PODS, the earlier name. */
  PODSYNC_MAX_PODS: z.coerce
    .number()
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(100_000, "must be at most 100000")
    .optional(),
  /** The workloads a node stores as sent to it (Deployments, Jobs, ...; not the ReplicaSets and Jobs its
   * controllers make): a sync or apply beyond it is refused (400 naming the bound). */
  PODSYNC_MAX_WORKLOADS: z.coerce
    .number()
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(100_000, "must be at most 100000")
    .default(1000),
  /** The node's ephemeral-storage allocatable (bytes) for admission; Node: the root dir's filesystem size when
   * unset; Workers: unchecked when unset. */
  PODSYNC_NODE_EPHEMERAL_STORAGE_BYTES: z.coerce
    .number()
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(Number.MAX_SAFE_INTEGER)
    .optional(),
  /** kubernetes.io/arch (Go's names): Node reads its own; a Worker cannot see the node's, so it sets no arch label without this. */
  PODSYNC_NODE_ARCH: z
    .enum([...new Set(Object.values(GO_ARCH))] as [string, ...string[]], {
      error: `must be one of ${[...new Set(Object.values(GO_ARCH))].join(", ")}`,
    })
    .optional(),
};

/** Per-node values where one deployment fronts several nodes (a Worker's PODSYNC_NODES entries): the same forms
 * as the settings above, each replacing the shared one for that node. */
export const NodeOverrides = z.strictObject({
  labels: nodeAdmissionSettingsShape.PODSYNC_NODE_LABELS.unwrap().optional(),
  taints: nodeAdmissionSettingsShape.PODSYNC_NODE_TAINTS.unwrap().optional(),
  cpu: nodeAdmissionSettingsShape.PODSYNC_NODE_CPU.unwrap().optional(),
  memoryBytes: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  maxPods: z.number().int().min(1).max(100_000).optional(),
  arch: nodeAdmissionSettingsShape.PODSYNC_NODE_ARCH.unwrap().optional(),
});
export type NodeOverrides = z.output<typeof NodeOverrides>;

/** The shared settings with one node's overrides applied. */
export function withNodeOverrides<S extends NodeAdmissionSettings>(s: S, o: NodeOverrides = {}): S {
  return {
    ...s,
    ...(o.labels !== undefined ? { PODSYNC_NODE_LABELS: o.labels } : {}),
    ...(o.taints !== undefined ? { PODSYNC_NODE_TAINTS: o.taints } : {}),
    ...(o.cpu !== undefined ? { PODSYNC_NODE_CPU: o.cpu } : {}),
    ...(o.memoryBytes !== undefined ? { PODSYNC_NODE_MEMORY_BYTES: o.memoryBytes } : {}),
    ...(o.maxPods !== undefined ? { PODSYNC_NODE_MAX_PODS: o.maxPods, PODSYNC_MAX_PODS: o.maxPods } : {}),
    ...(o.arch !== undefined ? { PODSYNC_NODE_ARCH: o.arch } : {}),
  };
}

type NodeAdmissionSettings = z.output<z.ZodObject<typeof nodeAdmissionSettingsShape>> & {
  PODSYNC_NODE_MEMORY_BYTES?: number | undefined;
};

/** The node as admission sees it. `host` is what the entry point knows of the machine (Workers: nothing). */
export function nodeInfoFrom(
  s: NodeAdmissionSettings,
  name: string,
  host: { arch?: string; cpus?: number; memoryBytes?: number; ephemeralStorageBytes?: number },
): NodeInfo {
  const arch = s.PODSYNC_NODE_ARCH ?? (host.arch !== undefined ? (GO_ARCH[host.arch] ?? host.arch) : undefined);
  return {
    name,
    // kubelet's initialNode: its defaults, then --node-labels over them.
    labels: {
      [LABEL_HOSTNAME]: name,
      [LABEL_OS]: NODE_OS,
      ...(arch ? { [LABEL_ARCH]: arch } : {}),
      ...s.PODSYNC_NODE_LABELS,
    },
    taints: s.PODSYNC_NODE_TAINTS,
    allocatable: {
      milliCPU: s.PODSYNC_NODE_CPU ?? (host.cpus !== undefined ? host.cpus * 1000 : undefined),
      memory: s.PODSYNC_NODE_MEMORY_BYTES ?? host.memoryBytes,
      pods: s.PODSYNC_MAX_PODS ?? s.PODSYNC_NODE_MAX_PODS,
      ephemeralStorage: s.PODSYNC_NODE_EPHEMERAL_STORAGE_BYTES ?? host.ephemeralStorageBytes,
    },
  };
}
