// Where a pod may run: the v1.PodSpec fields the scheduler reads, with the API server's validation
// (pkg/apis/core/validation: ValidateNodeSelector, validateTolerations, validateAffinity, ...).
//
// podsync has no scheduler: the signer picked this node by naming it in the token's `aud`. So, as kubelet's
// admission does (pkg/kubelet/lifecycle/predicate.go), the node checks what it can check about itself:
// nodeName, nodeSelector, required node affinity, taints against tolerations (src/kuberuntime/predicates.ts).
// What only ranks nodes or relates pods across a cluster (preferred node affinity, pod (anti-)affinity,
// topology spread, priority, schedulerName, preemptionPolicy) is accepted and inert: one node has nothing to
// rank and no other nodes to spread to. docs/pod-fields.md says so.
import { z } from "zod";
import { dns1123Subdomain, labels, qualifiedName } from "./names.js";
import { LabelSelector } from "./workloads/selector.js";

const int32 = (what: string, min: number, max = 2 ** 31 - 1) =>
  z
    .number()
    .int(`${what} must be an integer`)
    .min(min, `${what} must be at least ${min}`)
    .max(max, `${what} must be at most ${max}`);

const INTEGER = /^[+-]?[0-9]+$/;

/** A node label requirement (v1.NodeSelectorRequirement), validated as ValidateNodeSelectorRequirement does. */
export const NodeSelectorRequirement = z
  .strictObject({
    key: qualifiedName("key"),
    operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"], {
      error: "operator must be In, NotIn, Exists, DoesNotExist, Gt or Lt",
    }),
    values: z.array(z.string()).optional(),
  })
  .superRefine((r, ctx) => {
    const n = r.values?.length ?? 0;
    const issue = (message: string) => ctx.addIssue({ code: "custom", path: ["values"], message });
    if ((r.operator === "In" || r.operator === "NotIn") && n === 0)
      issue("must be specified when `operator` is 'In' or 'NotIn'");
    if ((r.operator === "Exists" || r.operator === "DoesNotExist") && n > 0)
      issue("may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    if (r.operator === "Gt" || r.operator === "Lt") {
      if (n !== 1) issue("must be specified single value when `operator` is 'Lt' or 'Gt'");
      // The API server leaves this to the matcher, which then never matches; podsync refuses it up front.
      else if (!INTEGER.test(r.values![0]!)) issue("must be an integer when `operator` is 'Lt' or 'Gt'");
    }
  });

/** v1.NodeSelectorRequirement under matchFields: only metadata.name, In or NotIn, one value. */
export const NodeFieldSelectorRequirement = z
  .strictObject({
    key: z.literal("metadata.name", {
      error: 'matchFields key must be "metadata.name" (the only node field a selector can name)',
    }),
    operator: z.enum(["In", "NotIn"], { error: "operator must be In or NotIn for a node field selector" }),
    values: z.array(z.string()).optional(),
  })
  .superRefine((r, ctx) => {
    if (r.values?.length !== 1)
      ctx.addIssue({
        code: "custom",
        path: ["values"],
        message: "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
      });
  });

export const NodeSelectorTerm = z.strictObject({
  matchExpressions: z.array(NodeSelectorRequirement).optional(),
  matchFields: z.array(NodeFieldSelectorRequirement).optional(),
});

export const NodeSelector = z.strictObject({
  nodeSelectorTerms: z.array(NodeSelectorTerm).min(1, "must have at least one node selector term"),
});

const weight = int32("weight", 1, 100);

export const NodeAffinity = z.strictObject({
  requiredDuringSchedulingIgnoredDuringExecution: NodeSelector.optional(),
  /** Inert: a preference ranks nodes, and this is the only one. */
  preferredDuringSchedulingIgnoredDuringExecution: z
    .array(z.strictObject({ weight, preference: NodeSelectorTerm }))
    .optional(),
});

const PodAffinityTerm = z.strictObject({
  labelSelector: LabelSelector.optional(),
  namespaceSelector: LabelSelector.optional(),
  namespaces: z.array(z.string()).optional(),
  topologyKey: qualifiedName("topologyKey"),
  matchLabelKeys: z.array(z.string()).optional(),
  mismatchLabelKeys: z.array(z.string()).optional(),
});

/** Inert: pod (anti-)affinity relates pods across a cluster's topology, which needs the scheduler's view. */
const PodAffinity = z.strictObject({
  requiredDuringSchedulingIgnoredDuringExecution: z.array(PodAffinityTerm).optional(),
  preferredDuringSchedulingIgnoredDuringExecution: z
    .array(z.strictObject({ weight, podAffinityTerm: PodAffinityTerm }))
    .optional(),
});

export const Affinity = z.strictObject({
  nodeAffinity: NodeAffinity.optional(),
  podAffinity: PodAffinity.optional(),
  podAntiAffinity: PodAffinity.optional(),
});

export const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;
export type TaintEffect = (typeof TAINT_EFFECTS)[number];

/** v1.Toleration, validated as validateTolerations does. */
export const Toleration = z
  .strictObject({
    key: qualifiedName("toleration key").optional(),
    operator: z.enum(["Exists", "Equal"], { error: 'operator must be "Exists" or "Equal"' }).optional(),
    value: z.string().optional(),
    effect: z.enum(TAINT_EFFECTS, { error: "effect must be NoSchedule, PreferNoSchedule or NoExecute" }).optional(),
    tolerationSeconds: z.number().int("tolerationSeconds must be an integer").optional(),
  })
  .superRefine((t, ctx) => {
    if (!t.key && t.operator !== "Exists")
      ctx.addIssue({
        code: "custom",
        path: ["operator"],
        message: 'operator must be Exists when `key` is empty, which means "match all values and all keys"',
      });
    if (t.tolerationSeconds !== undefined && t.effect !== "NoExecute")
      ctx.addIssue({
        code: "custom",
        path: ["effect"],
        message: "effect must be 'NoExecute' when `tolerationSeconds` is set",
      });
    if (t.operator === "Exists" && t.value)
      ctx.addIssue({ code: "custom", path: ["value"], message: "value must be empty when `operator` is 'Exists'" });
  });

/** Inert: spreading needs other nodes. */
export const TopologySpreadConstraint = z.strictObject({
  maxSkew: int32("maxSkew", 1),
  topologyKey: qualifiedName("topologyKey"),
  whenUnsatisfiable: z.enum(["DoNotSchedule", "ScheduleAnyway"], {
    error: "whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway",
  }),
  labelSelector: LabelSelector.optional(),
  minDomains: int32("minDomains", 1).optional(),
  nodeAffinityPolicy: z.enum(["Honor", "Ignore"]).optional(),
  nodeTaintsPolicy: z.enum(["Honor", "Ignore"]).optional(),
  matchLabelKeys: z.array(z.string()).optional(),
});

/** The scheduling fields of v1.PodSpec, spread into PodSpec. */
export const schedulingFields = {
  /** Checked against this node's name (kubelet's NodeName predicate). */
  nodeName: dns1123Subdomain("nodeName").optional(),
  nodeSelector: labels.optional(),
  affinity: Affinity.optional(),
  tolerations: z.array(Toleration).optional(),
  /** Checked: a pod for another OS is refused (kubelet's PodOSNotSupported). */
  os: z
    .strictObject({ name: z.enum(["linux", "windows"], { error: 'os.name must be "linux" or "windows"' }) })
    .optional(),
  topologySpreadConstraints: z.array(TopologySpreadConstraint).optional(),
  schedulerName: z.string().min(1).optional(),
  priorityClassName: dns1123Subdomain("priorityClassName").optional(),
  priority: z.number().int("priority must be an integer").optional(),
  preemptionPolicy: z
    .enum(["PreemptLowerPriority", "Never"], { error: "preemptionPolicy must be PreemptLowerPriority or Never" })
    .optional(),
};

export type NodeSelectorRequirement = z.output<typeof NodeSelectorRequirement>;
export type NodeSelectorTerm = z.output<typeof NodeSelectorTerm>;
export type Toleration = z.output<typeof Toleration>;
