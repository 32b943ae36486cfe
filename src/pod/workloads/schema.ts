// Package pod/workloads/ — the workload kinds' schemas and intake (model layer): zod, defaults, bounds, selectors.
// Imports only pod/; nothing above the model.
//
// The workload kinds a node runs with its own controllers (apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet;
// batch/v1 Job, CronJob) and v1 PersistentVolumeClaim, as zod schemas with the API server's defaults
// (pkg/apis/apps/v1/defaults.go, pkg/apis/batch/v1/defaults.go) and the validation that matters on one node
// (pkg/apis/apps/validation, pkg/apis/batch/validation). The pod template is kept as sent (after the export
// clean-up, src/pod/workloads/export.ts) and validated as a pod separately (template.ts), so its errors name the
// field under the workload (`spec.template.spec.containers[0].image`) and its hash is over what was sent.
import { z } from "zod";
import { dns1123Label, dns1123Subdomain, labels } from "../names.js";
import { READ_ONLY_METADATA } from "../schema.js";
import { LabelSelector } from "./selector.js";
import { parseSchedule } from "./cron.js";
import { Service } from "./service.js";

export const MAX_REPLICAS = 1000;
/** int32, the type of every count and limit in the apps and batch APIs. */
export const MAX_INT32 = 2 ** 31 - 1;
/** pkg/apis/batch/validation: maxParallelismForIndexedJob (and completionsSoftLimit, the bound on an Indexed Job's
 * completions that podsync applies always: its completed and failed indexes are kept as intervals, yet a node
 * keeps every finished pod, so an Indexed Job beyond it could never finish on one node). */
export const MAX_INDEXED_JOB_COMPLETIONS = 100_000;
/** The history a controller keeps (old ReplicaSets, a CronJob's finished Jobs): podsync's bound, each kept one is a
 * stored workload (upstream: any int32). */
export const MAX_HISTORY_LIMIT = 1000;

const readOnly = Object.fromEntries(READ_ONLY_METADATA.map((k) => [k, z.unknown().optional()])) as Record<
  (typeof READ_ONLY_METADATA)[number],
  z.ZodOptional<z.ZodUnknown>
>;
const annotations = z.record(z.string(), z.string());

const metadata = (maxName = 253) =>
  z.strictObject({
    name: dns1123Subdomain("metadata.name").max(
      maxName,
      `metadata.name must be no more than ${maxName} characters (the controller makes names and labels from it)`,
    ),
    namespace: dns1123Label("metadata.namespace").default("default"),
    uid: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "metadata.uid must be alphanumerics, '-', '_' or '.'")
      .optional(),
    labels: labels.optional(),
    annotations: annotations.optional(),
    ...readOnly,
  });

const int = (what: string, min: number, max = 2 ** 31 - 1) =>
  z
    .number()
    .int(`${what} must be an integer`)
    .min(min, `${what} must be at least ${min}`)
    .max(max, `${what} must be at most ${max}`);
const replicas = z
  .number()
  .int("replicas must be an integer")
  .min(0, "replicas must be between 0 and 1000")
  .max(MAX_REPLICAS, `replicas must be between 0 and ${MAX_REPLICAS} (podsync's bound for one node)`);
/** An int or a percentage ("25%"), as intstr.IntOrString in maxSurge/maxUnavailable: an int32, or a percentage
 * of at most 100 (ValidatePositiveIntOrPercent, IsNotMoreThan100Percent; upstream allows more than 100% for
 * maxSurge, podsync does not: 100% already doubles a rollout). What it resolves to against replicas is bounded by
 * the node (bounds.ts). */
const intOrPercent = z.union([
  z
    .number()
    .int('must be a whole number or a percentage such as "25%"')
    .min(0, "must be at least 0")
    .max(MAX_INT32, `must be at most ${MAX_INT32}`),
  z
    .string()
    .regex(/^[0-9]+%$/, 'must be a whole number or a percentage such as "25%"')
    .refine((v) => Number(v.slice(0, -1)) <= 100, "must be a percentage of at most 100%"),
]);
const history = (what: string, dflt: number) => int(what, 0, MAX_HISTORY_LIMIT).default(dflt);

/** v1.PodTemplateSpec: metadata (labels, annotations) and the pod spec, validated as a pod in template.ts. */
export const PodTemplate = z.strictObject({
  metadata: z
    .strictObject({
      name: z.string().optional(),
      namespace: z.string().optional(),
      labels: labels.optional(),
      annotations: annotations.optional(),
      ...readOnly,
    })
    .default({}),
  spec: z.record(z.string(), z.unknown()),
});
export type PodTemplate = z.output<typeof PodTemplate>;

const status = z.unknown().optional();

export const Deployment = z.strictObject({
  apiVersion: z.literal("apps/v1"),
  kind: z.literal("Deployment"),
  metadata: metadata(),
  spec: z.strictObject({
    replicas: replicas.default(1),
    selector: LabelSelector,
    template: PodTemplate,
    strategy: z
      .strictObject({
        type: z
          .enum(["RollingUpdate", "Recreate"], { error: 'strategy.type must be "RollingUpdate" or "Recreate"' })
          .default("RollingUpdate"),
        rollingUpdate: z
          .strictObject({ maxSurge: intOrPercent.optional(), maxUnavailable: intOrPercent.optional() })
          .optional(),
      })
      .default({ type: "RollingUpdate" }),
    minReadySeconds: int("minReadySeconds", 0).default(0),
    revisionHistoryLimit: history("revisionHistoryLimit", 10),
    progressDeadlineSeconds: int("progressDeadlineSeconds", 1).default(600),
    paused: z.boolean().default(false),
  }),
  status,
});

export const ReplicaSet = z.strictObject({
  apiVersion: z.literal("apps/v1"),
  kind: z.literal("ReplicaSet"),
  metadata: metadata(),
  spec: z.strictObject({
    replicas: replicas.default(1),
    selector: LabelSelector,
    template: PodTemplate,
    minReadySeconds: int("minReadySeconds", 0).default(0),
  }),
  status,
});

export const PersistentVolumeClaim = z.strictObject({
  apiVersion: z.literal("v1"),
  kind: z.literal("PersistentVolumeClaim"),
  metadata: metadata(),
  // A node-local claim is a directory under the node's root dir (src/kuberuntime/claims.ts): the request and the
  // class are accepted and say nothing on one node (docs/pod-fields.md).
  spec: z
    .strictObject({
      accessModes: z.array(z.enum(["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"])).optional(),
      resources: z
        .strictObject({
          requests: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
          limits: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
        })
        .optional(),
      storageClassName: z.string().nullable().optional(),
      volumeMode: z
        .enum(["Filesystem"], { error: 'volumeMode must be "Filesystem" (a node-local claim is a directory)' })
        .optional(),
      volumeName: z.string().optional(),
      selector: LabelSelector.optional(),
    })
    .default({}),
  status,
});

const claimTemplate = PersistentVolumeClaim.omit({ apiVersion: true, kind: true }).extend({
  apiVersion: z.literal("v1").optional(),
  kind: z.literal("PersistentVolumeClaim").optional(),
  metadata: z.strictObject({
    name: dns1123Label("volumeClaimTemplates[].metadata.name"),
    labels: labels.optional(),
    annotations: annotations.optional(),
    ...readOnly,
  }),
});

export const StatefulSet = z.strictObject({
  apiVersion: z.literal("apps/v1"),
  kind: z.literal("StatefulSet"),
  metadata: metadata(63),
  spec: z.strictObject({
    replicas: replicas.default(1),
    selector: LabelSelector,
    template: PodTemplate,
    /** Inert: the headless Service gives pods DNS names in a cluster; a node has no cluster DNS. */
    serviceName: z.string().optional(),
    podManagementPolicy: z
      .enum(["OrderedReady", "Parallel"], { error: 'podManagementPolicy must be "OrderedReady" or "Parallel"' })
      .default("OrderedReady"),
    updateStrategy: z
      .strictObject({
        type: z
          .enum(["RollingUpdate", "OnDelete"], { error: 'updateStrategy.type must be "RollingUpdate" or "OnDelete"' })
          .default("RollingUpdate"),
        rollingUpdate: z
          .strictObject({ partition: int("partition", 0).optional(), maxUnavailable: intOrPercent.optional() })
          .optional(),
      })
      .default({ type: "RollingUpdate" }),
    volumeClaimTemplates: z.array(claimTemplate).optional(),
    revisionHistoryLimit: history("revisionHistoryLimit", 10),
    minReadySeconds: int("minReadySeconds", 0).default(0),
    persistentVolumeClaimRetentionPolicy: z
      .strictObject({
        whenDeleted: z
          .enum(["Retain"], { error: 'whenDeleted must be "Retain": node-local claims outlive their pods' })
          .optional(),
        whenScaled: z
          .enum(["Retain"], { error: 'whenScaled must be "Retain": node-local claims outlive their pods' })
          .optional(),
      })
      .optional(),
    ordinals: z.strictObject({ start: int("ordinals.start", 0).default(0) }).optional(),
  }),
  status,
});

export const DaemonSet = z.strictObject({
  apiVersion: z.literal("apps/v1"),
  kind: z.literal("DaemonSet"),
  metadata: metadata(),
  spec: z.strictObject({
    selector: LabelSelector,
    template: PodTemplate,
    updateStrategy: z
      .strictObject({
        type: z
          .enum(["RollingUpdate", "OnDelete"], { error: 'updateStrategy.type must be "RollingUpdate" or "OnDelete"' })
          .default("RollingUpdate"),
        rollingUpdate: z
          .strictObject({ maxSurge: intOrPercent.optional(), maxUnavailable: intOrPercent.optional() })
          .optional(),
      })
      .default({ type: "RollingUpdate" }),
    minReadySeconds: int("minReadySeconds", 0).default(0),
    revisionHistoryLimit: history("revisionHistoryLimit", 10),
  }),
  status,
});

const PodFailurePolicyRule = z.strictObject({
  action: z.enum(["FailJob", "FailIndex", "Ignore", "Count"], {
    error: "action must be FailJob, FailIndex, Ignore or Count",
  }),
  onExitCodes: z
    .strictObject({
      containerName: z.string().optional(),
      operator: z.enum(["In", "NotIn"], { error: "operator must be In or NotIn" }),
      values: z.array(z.number().int()).min(1, "at least one exit code").max(255),
    })
    .optional(),
  onPodConditions: z
    .array(z.strictObject({ type: z.string().min(1), status: z.enum(["True", "False", "Unknown"]).default("True") }))
    .optional(),
});

export const JobSpec = z
  .strictObject({
    parallelism: int("parallelism", 0, MAX_REPLICAS).default(1),
    completions: int("completions", 0).optional(),
    activeDeadlineSeconds: int("activeDeadlineSeconds", 1).optional(),
    // Defaulted below: 6, or (with backoffLimitPerIndex) MaxInt32, as the API server defaults it.
    backoffLimit: int("backoffLimit", 0).optional(),
    backoffLimitPerIndex: int("backoffLimitPerIndex", 0).optional(),
    maxFailedIndexes: int("maxFailedIndexes", 0).optional(),
    podFailurePolicy: z.strictObject({ rules: z.array(PodFailurePolicyRule).max(20) }).optional(),
    successPolicy: z
      .strictObject({
        rules: z
          .array(
            z.strictObject({
              succeededIndexes: z
                .string()
                .regex(
                  /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/,
                  'succeededIndexes must be indexes and ranges such as "0,2-4"',
                )
                .optional(),
              succeededCount: int("succeededCount", 1).optional(),
            }),
          )
          .min(1, "successPolicy.rules must have at least one rule")
          .max(20, "successPolicy.rules must have at most 20 rules"),
      })
      .optional(),
    selector: LabelSelector.optional(),
    manualSelector: z.boolean().optional(),
    template: PodTemplate,
    ttlSecondsAfterFinished: int("ttlSecondsAfterFinished", 0).optional(),
    completionMode: z
      .enum(["NonIndexed", "Indexed"], { error: 'completionMode must be "NonIndexed" or "Indexed"' })
      .default("NonIndexed"),
    suspend: z.boolean().default(false),
    podReplacementPolicy: z.enum(["TerminatingOrFailed", "Failed"]).optional(),
  })
  .superRefine((s, ctx) => {
    if (s.completionMode === "Indexed" && s.completions === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["completions"],
        message: "when completion mode is Indexed, completions is required",
      });
    if (s.completionMode === "Indexed" && (s.completions ?? 0) > MAX_INDEXED_JOB_COMPLETIONS)
      ctx.addIssue({
        code: "custom",
        path: ["completions"],
        message: `must be at most ${MAX_INDEXED_JOB_COMPLETIONS} when completion mode is Indexed`,
      });
    const rp = s.template.spec["restartPolicy"];
    if (rp !== "Never" && rp !== "OnFailure")
      ctx.addIssue({
        code: "custom",
        path: ["template", "spec", "restartPolicy"],
        message: 'a Job\'s pods must have restartPolicy "OnFailure" or "Never"',
      });
    if (s.podFailurePolicy && rp !== "Never")
      ctx.addIssue({
        code: "custom",
        path: ["podFailurePolicy"],
        message: 'only allowed with the template\'s restartPolicy "Never"',
      });
    // pkg/apis/batch/validation: the per-index fields of Indexed Jobs.
    const indexed = s.completionMode === "Indexed";
    if (s.backoffLimitPerIndex !== undefined && !indexed)
      ctx.addIssue({ code: "custom", path: ["backoffLimitPerIndex"], message: "requires indexed completion mode" });
    if (s.maxFailedIndexes !== undefined) {
      if (s.backoffLimitPerIndex === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["maxFailedIndexes"],
          message: "cannot be set when backoffLimitPerIndex is not set",
        });
      else if (s.completions !== undefined && s.maxFailedIndexes > s.completions)
        ctx.addIssue({
          code: "custom",
          path: ["maxFailedIndexes"],
          message: "must be less than or equal to completions",
        });
      if (s.maxFailedIndexes > 100_000)
        ctx.addIssue({ code: "custom", path: ["maxFailedIndexes"], message: "must be less than or equal to 100000" });
    }
    if (s.backoffLimitPerIndex !== undefined && (s.completions ?? 0) > 100_000)
      ctx.addIssue({
        code: "custom",
        path: ["completions"],
        message: "must be less than or equal to 100000 when backoffLimitPerIndex is set",
      });
    (s.podFailurePolicy?.rules ?? []).forEach((r, i) => {
      if (r.action === "FailIndex" && s.backoffLimitPerIndex === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["podFailurePolicy", "rules", i, "action"],
          message: "FailIndex is only allowed when backoffLimitPerIndex is set",
        });
    });
    if (s.successPolicy) {
      if (!indexed)
        ctx.addIssue({ code: "custom", path: ["successPolicy"], message: "requires indexed completion mode" });
      s.successPolicy.rules.forEach((r, i) => {
        if (r.succeededIndexes === undefined && r.succeededCount === undefined)
          ctx.addIssue({
            code: "custom",
            path: ["successPolicy", "rules", i],
            message: "at least one of succeededCount or succeededIndexes must be specified",
          });
        if (r.succeededCount !== undefined && s.completions !== undefined && r.succeededCount > s.completions)
          ctx.addIssue({
            code: "custom",
            path: ["successPolicy", "rules", i, "succeededCount"],
            message: `must be less than or equal to ${s.completions} (completions)`,
          });
        const bad = (r.succeededIndexes ?? "")
          .split(",")
          .filter(Boolean)
          .find((part) => {
            const [a, b] = part.split("-").map(Number);
            return (b !== undefined && b < a!) || (s.completions !== undefined && (b ?? a!) >= s.completions);
          });
        if (bad !== undefined)
          ctx.addIssue({
            code: "custom",
            path: ["successPolicy", "rules", i, "succeededIndexes"],
            message: `"${bad}" is not an ordered range of indexes below completions`,
          });
      });
    }
  })
  .transform((s) => ({
    ...s,
    backoffLimit: s.backoffLimit ?? (s.backoffLimitPerIndex !== undefined ? 2 ** 31 - 1 : 6),
  }));

export const Job = z.strictObject({
  apiVersion: z.literal("batch/v1"),
  kind: z.literal("Job"),
  // The name is the value of the batch.kubernetes.io/job-name label: at most 63 characters.
  metadata: metadata(63),
  spec: JobSpec,
  status,
});

export const CronJob = z.strictObject({
  apiVersion: z.literal("batch/v1"),
  kind: z.literal("CronJob"),
  // Jobs are `<name>-<minutes>` (11 more characters) and their names label pods: at most 52 (the API server's limit).
  metadata: metadata(52),
  spec: z
    .strictObject({
      schedule: z.string().min(1, "schedule is required"),
      timeZone: z.string().optional(),
      startingDeadlineSeconds: int("startingDeadlineSeconds", 0).optional(),
      concurrencyPolicy: z
        .enum(["Allow", "Forbid", "Replace"], { error: 'concurrencyPolicy must be "Allow", "Forbid" or "Replace"' })
        .default("Allow"),
      suspend: z.boolean().default(false),
      jobTemplate: z.strictObject({
        metadata: z
          .strictObject({ labels: labels.optional(), annotations: annotations.optional(), ...readOnly })
          .default({}),
        spec: JobSpec,
      }),
      successfulJobsHistoryLimit: history("successfulJobsHistoryLimit", 3),
      failedJobsHistoryLimit: history("failedJobsHistoryLimit", 1),
    })
    .superRefine((s, ctx) => {
      const err = parseSchedule(s.schedule, s.timeZone);
      if (typeof err === "string")
        ctx.addIssue({
          code: "custom",
          path: [s.timeZone !== undefined && err.startsWith("unknown time zone") ? "timeZone" : "schedule"],
          message: err,
        });
    }),
  status,
});

/** v1 ReplicationController (pkg/apis/core/v1/defaults.go SetDefaults_ReplicationController: a selector left out
 * is the template's labels, and so are the controller's own labels; replicas 1). Its selector is equality-based
 * (a map), which is a LabelSelector's matchLabels: upstream runs it with the ReplicaSet controller through that
 * conversion (pkg/controller/replication/conversion.go). */
export const ReplicationController = z
  .strictObject({
    apiVersion: z.literal("v1"),
    kind: z.literal("ReplicationController"),
    metadata: metadata(),
    spec: z.strictObject({
      replicas: replicas.default(1),
      selector: labels.optional(),
      template: PodTemplate,
      minReadySeconds: int("minReadySeconds", 0).default(0),
    }),
    status,
  })
  .transform((rc) => {
    const tl = rc.spec.template.metadata.labels ?? {};
    const selector = rc.spec.selector && Object.keys(rc.spec.selector).length ? rc.spec.selector : tl;
    const meta =
      rc.metadata.labels && Object.keys(rc.metadata.labels).length ? rc.metadata : { ...rc.metadata, labels: tl };
    return { ...rc, metadata: meta, spec: { ...rc.spec, selector } };
  });

/** autoscaling/v2 MetricTarget. */
const MetricTarget = z.strictObject({
  type: z.enum(["Utilization", "Value", "AverageValue"], {
    error: 'target.type must be "Utilization", "Value" or "AverageValue"',
  }),
  averageUtilization: int("averageUtilization", 1).optional(),
  averageValue: z.union([z.string(), z.number()]).optional(),
  value: z.union([z.string(), z.number()]).optional(),
});
/** autoscaling/v2 HPAScalingRules (pkg/apis/autoscaling/v2/defaults.go gives the defaults in the controller). */
const ScalingRules = z.strictObject({
  stabilizationWindowSeconds: int("stabilizationWindowSeconds", 0, 3600).optional(),
  selectPolicy: z
    .enum(["Max", "Min", "Disabled"], { error: 'selectPolicy must be "Max", "Min" or "Disabled"' })
    .optional(),
  policies: z
    .array(
      z.strictObject({
        type: z.enum(["Pods", "Percent"], { error: 'policies[].type must be "Pods" or "Percent"' }),
        value: int("value", 1),
        periodSeconds: int("periodSeconds", 1, 1800),
      }),
    )
    .optional(),
  tolerance: z.union([z.string(), z.number()]).optional(),
});
/** autoscaling/v2 HorizontalPodAutoscaler: scales a Deployment, ReplicaSet, ReplicationController or StatefulSet
 * on this node from the CPU and memory the runtime reports (Resource and ContainerResource metrics; the others
 * need a metrics API a node does not have, and are refused naming the field). */
export const HorizontalPodAutoscaler = z.strictObject({
  apiVersion: z.literal("autoscaling/v2"),
  kind: z.literal("HorizontalPodAutoscaler"),
  metadata: metadata(),
  spec: z
    .strictObject({
      scaleTargetRef: z.strictObject({
        apiVersion: z.string().optional(),
        kind: z.enum(["Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"], {
          error: "scaleTargetRef.kind must be Deployment, ReplicaSet, ReplicationController or StatefulSet",
        }),
        name: z.string().min(1, "scaleTargetRef.name is required"),
      }),
      minReplicas: int("minReplicas", 1, MAX_REPLICAS).default(1),
      maxReplicas: int("maxReplicas", 1, MAX_REPLICAS),
      metrics: z
        .array(
          z.union([
            z.strictObject({
              type: z.literal("Resource"),
              resource: z.strictObject({ name: z.enum(["cpu", "memory"]), target: MetricTarget }),
            }),
            z.strictObject({
              type: z.literal("ContainerResource"),
              containerResource: z.strictObject({
                name: z.enum(["cpu", "memory"]),
                container: z.string().min(1),
                target: MetricTarget,
              }),
            }),
          ]),
        )
        .optional(),
      behavior: z.strictObject({ scaleUp: ScalingRules.optional(), scaleDown: ScalingRules.optional() }).optional(),
    })
    .superRefine((s, ctx) => {
      if (s.maxReplicas < s.minReplicas)
        ctx.addIssue({
          code: "custom",
          path: ["maxReplicas"],
          message: "must be greater than or equal to minReplicas",
        });
      (s.metrics ?? []).forEach((m, i) => {
        const t = m.type === "Resource" ? m.resource.target : m.containerResource.target;
        if (t.type === "Value")
          ctx.addIssue({
            code: "custom",
            path: ["metrics", i, "target", "type"],
            message: "a resource metric's target must be Utilization or AverageValue",
          });
        if (t.type === "Utilization" && t.averageUtilization === undefined)
          ctx.addIssue({
            code: "custom",
            path: ["metrics", i, "target", "averageUtilization"],
            message: "Required value",
          });
        if (t.type === "AverageValue" && t.averageValue === undefined)
          ctx.addIssue({ code: "custom", path: ["metrics", i, "target", "averageValue"], message: "Required value" });
      });
    })
    // SetDefaults_HorizontalPodAutoscaler: no metrics is 80 % CPU utilization.
    .transform((s) => ({
      ...s,
      metrics: s.metrics?.length
        ? s.metrics
        : [
            {
              type: "Resource" as const,
              resource: { name: "cpu" as const, target: { type: "Utilization" as const, averageUtilization: 80 } },
            },
          ],
    })),
  status,
});

/** policy/v1 PodDisruptionBudget: stored, its status computed as the disruption controller does. */
export const PodDisruptionBudget = z.strictObject({
  apiVersion: z.literal("policy/v1"),
  kind: z.literal("PodDisruptionBudget"),
  metadata: metadata(),
  spec: z
    .strictObject({
      minAvailable: intOrPercent.optional(),
      maxUnavailable: intOrPercent.optional(),
      selector: LabelSelector.optional(),
      unhealthyPodEvictionPolicy: z
        .enum(["IfHealthyBudget", "AlwaysAllow"], {
          error: 'unhealthyPodEvictionPolicy must be "IfHealthyBudget" or "AlwaysAllow"',
        })
        .optional(),
    })
    .superRefine((s, ctx) => {
      if (s.minAvailable !== undefined && s.maxUnavailable !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["minAvailable"],
          message: "minAvailable and maxUnavailable cannot be both set",
        });
    }),
  status,
});

export type Deployment = z.output<typeof Deployment>;
export type ReplicaSet = z.output<typeof ReplicaSet>;
export type StatefulSet = z.output<typeof StatefulSet>;
export type DaemonSet = z.output<typeof DaemonSet>;
export type Job = z.output<typeof Job>;
export type JobSpec = z.output<typeof JobSpec>;
export type CronJob = z.output<typeof CronJob>;
export type PersistentVolumeClaim = z.output<typeof PersistentVolumeClaim>;
export type ReplicationController = z.output<typeof ReplicationController>;
export type HorizontalPodAutoscaler = z.output<typeof HorizontalPodAutoscaler>;
export type PodDisruptionBudget = z.output<typeof PodDisruptionBudget>;
export type { Service } from "./service.js";
/** The desired objects a node keeps beside its pods: the workload kinds, claims, and Services (v1, src/services/). */
export type Workload =
  | Deployment
  | ReplicaSet
  | StatefulSet
  | DaemonSet
  | Job
  | CronJob
  | PersistentVolumeClaim
  | Service
  | ReplicationController
  | HorizontalPodAutoscaler
  | PodDisruptionBudget;
export type WorkloadKind = Workload["kind"];

export const WORKLOAD_SCHEMAS = {
  Deployment,
  ReplicaSet,
  StatefulSet,
  DaemonSet,
  Job,
  CronJob,
  PersistentVolumeClaim,
  Service,
  ReplicationController,
  HorizontalPodAutoscaler,
  PodDisruptionBudget,
} as const;
export const WORKLOAD_API_VERSIONS: Record<WorkloadKind, string> = {
  Deployment: "apps/v1",
  ReplicaSet: "apps/v1",
  StatefulSet: "apps/v1",
  DaemonSet: "apps/v1",
  Job: "batch/v1",
  CronJob: "batch/v1",
  PersistentVolumeClaim: "v1",
  Service: "v1",
  ReplicationController: "v1",
  HorizontalPodAutoscaler: "autoscaling/v2",
  PodDisruptionBudget: "policy/v1",
};
export const isWorkloadKind = (k: unknown): k is WorkloadKind =>
  typeof k === "string" && Object.hasOwn(WORKLOAD_SCHEMAS, k);

/** The pod template a workload runs (CronJob: its Job template's), or none (a claim, a Service). */
export function templateOf(w: Workload): PodTemplate | undefined {
  switch (w.kind) {
    case "CronJob":
      return w.spec.jobTemplate.spec.template;
    case "PersistentVolumeClaim":
    case "Service":
    case "HorizontalPodAutoscaler":
    case "PodDisruptionBudget":
      return undefined;
    default:
      return w.spec.template;
  }
}
