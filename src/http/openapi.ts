// /openapi.json: the pod schema is generated from the zod schema the server validates with, so the
// document cannot drift from what is accepted.
import { z } from "zod";
import { Pod } from "../pod/schema.js";
import { ConfigMap, Secret } from "../pod/objects.js";
import { PROBLEM_BASE, PROBLEMS, type ProblemSlug } from "../usecases/problems.js";

let cached: object | undefined;

const problem = { $ref: "#/components/schemas/Problem" };

/** Error responses from the problem catalogue: one entry per status, listing every problem type it can carry. */
function errors(...slugs: ProblemSlug[]) {
  const byStatus = new Map<number, ProblemSlug[]>();
  for (const s of [...slugs, ...COMMON])
    byStatus.set(PROBLEMS[s].status, [...(byStatus.get(PROBLEMS[s].status) ?? []), s]);
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      String(status),
      {
        description: list.map((s) => `${PROBLEMS[s].title} (\`${PROBLEM_BASE}${s}\`)`).join("; "),
        content: { "application/problem+json": { schema: problem } },
      },
    ]),
  );
}
// Any route, once the node is stopping (SIGTERM): it takes nothing new while it finishes what runs.
const COMMON: ProblemSlug[] = ["internal", "shutting-down"];
const RUNTIME: ProblemSlug[] = ["runtime-error", "runtime-unavailable", "runtime-timeout"];
const AUTH: ProblemSlug[] = ["unauthorized", "wrong-node", "keys-unavailable"];
// A token that acts is recorded before it does (state-unavailable when that cannot be written).
const SIGNED_BODY: ProblemSlug[] = [
  "bad-request",
  "bad-json",
  "bad-yaml",
  "invalid-pod",
  ...AUTH,
  "replayed",
  "state-unavailable",
  "body-too-large",
  "unsupported-media-type",
  ...RUNTIME,
];
// A pod is held to the owner's policy and to kubelet's admission against the node before any runtime call.
const ADMISSION: ProblemSlug[] = ["policy", "admission"];
const signedBody = {
  required: true,
  content: {
    "application/jose": {
      schema: {
        type: "string",
        description:
          "Compact JWS whose payload has iss, aud, exp, iat, jti, act and pod and/or items (Kubernetes objects: workloads, claims, ConfigMaps, Secrets; other Kubernetes kinds skipped with a warning), and optionally configMaps and secrets (arrays of ConfigMap and Secret)",
      },
    },
    "application/json": {
      schema: {
        oneOf: [
          { type: "object", required: ["jws"], additionalProperties: false, properties: { jws: { type: "string" } } },
          {
            $ref: "#/components/schemas/Pod",
            description: "with a Podsync-Signature header whose token has body_sha256",
          },
          {
            type: "object",
            required: ["apiVersion", "kind", "items"],
            description: "a v1 List of one Pod and its ConfigMaps and Secrets, with a Podsync-Signature header",
            properties: {
              apiVersion: { const: "v1" },
              kind: { const: "List" },
              items: {
                type: "array",
                items: {
                  oneOf: [
                    { $ref: "#/components/schemas/Pod" },
                    { $ref: "#/components/schemas/ConfigMap" },
                    { $ref: "#/components/schemas/Secret" },
                  ],
                },
              },
            },
          },
        ],
      },
    },
    "application/yaml": {
      schema: {
        $ref: "#/components/schemas/Pod",
        description:
          "or a YAML stream (---) of at most one Pod, workloads (Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet, Job, CronJob, HorizontalPodAutoscaler, PodDisruptionBudget), Services, PersistentVolumeClaims, ConfigMaps and Secrets, or a v1 List of them; other Kubernetes kinds and custom resources are skipped with a warning (the body's warnings and Warning: 299 headers)",
      },
    },
  },
};
const bearer = [{ signedToken: [] }];

export function openApiDocument(): object {
  return (cached ??= {
    openapi: "3.1.0",
    info: { title: "podsync", version: "1", description: "Signed pod specs in, kubelet-style SyncPod over CRI out." },
    paths: {
      ...podPaths(),
      ...nodePaths(),
    },
    components: {
      securitySchemes: {
        signedToken: { type: "http", scheme: "bearer", bearerFormat: "JWS (act, uid, aud, iss, exp, iat, jti)" },
      },
      schemas: {
        Pod: z.toJSONSchema(Pod, { io: "input", unrepresentable: "any" }),
        ConfigMap: z.toJSONSchema(ConfigMap, { io: "input", unrepresentable: "any" }),
        Secret: z.toJSONSchema(Secret, { io: "input", unrepresentable: "any" }),
        Problem: {
          type: "object",
          required: ["type", "title", "status"],
          properties: {
            type: { type: "string" },
            title: { type: "string" },
            status: { type: "integer" },
            detail: { type: "string" },
            instance: { type: "string" },
            errors: {
              type: "array",
              items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } } },
            },
            grpcCode: { type: "string" },
          },
        },
      },
    },
  });
}

/** The pods' paths: sync, reads, the node's set, plan, delete. */
function podPaths(): Record<string, object> {
  return {
    "/v1/pods/sync": {
      post: {
        summary: "Verify, validate, store in the node's desired state, read CRI status, computePodActions + SyncPod",
        requestBody: signedBody,
        responses: {
          "200": { description: "All steps succeeded" },
          "207": { description: "Some steps failed; body has ok:false and the failing steps" },
          ...errors(...SIGNED_BODY, ...ADMISSION, "pod-busy", "uid-conflict", "stale-generation"),
        },
      },
    },
    "/v1/pods": {
      get: {
        summary: "The node's desired pods with their status, and the orphans",
        description:
          "Bearer token with act status and no uid. A v1.PodList: metadata.resourceVersion is the node's generation (the last PUT /v1/node/pods), items are the desired pods as v1.Pod (spec as stored, status as kubelet's generateAPIPodStatus makes it; a pod the runtime holds nothing of is Pending). One field beyond v1.PodList: `orphans`, the pods podsync made (its managed-by label) that this node's store does not hold, as v1.Pod without spec; nothing acts on them but an explicit DELETE.",
        security: bearer,
        responses: {
          "200": { description: "v1.PodList with the extra field orphans (v1.Pod[])" },
          ...errors(...AUTH, "state-unavailable", ...RUNTIME),
        },
      },
    },
    "/v1/node/pods": nodePodsPath(),
    "/v1/pods/plan": {
      post: {
        summary: "computePodActions only (dry run)",
        requestBody: signedBody,
        responses: {
          "200": {
            description:
              "The actions a sync would take; for workloads, `workloads` (created, updated, unchanged) and `pods`: the pods their controllers would make and delete, each with its action (create, delete, keep), its maker and its name (`<generateName><random>` where the API server would add random characters; docs/workloads.md)",
          },
          ...errors(...SIGNED_BODY, ...ADMISSION, "uid-conflict"),
        },
      },
    },
    "/v1/pods/{uid}/runtime": {
      get: {
        summary: "The pod's status as read from CRI (debugging)",
        security: bearer,
        parameters: [{ name: "uid", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "Status" },
          ...errors("bad-request", ...AUTH, "pod-not-found", ...RUNTIME),
        },
      },
    },
    "/v1/pods/{uid}/status": {
      get: {
        summary: "Alias of /v1/pods/{uid}/runtime (the CRI-level view)",
        security: bearer,
        parameters: [{ name: "uid", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "Status" },
          ...errors("bad-request", ...AUTH, "pod-not-found", ...RUNTIME),
        },
      },
    },
    "/v1/pods/{uid}": {
      get: {
        summary:
          "The v1.Pod: spec as last given (absent when only the runtime knows the pod) and status as kubelet's generateAPIPodStatus makes it",
        security: bearer,
        parameters: [{ name: "uid", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "v1.Pod" },
          ...errors("bad-request", ...AUTH, "pod-not-found", ...RUNTIME),
        },
      },
      delete: {
        summary: "Kill the pod and remove its containers and sandboxes",
        security: bearer,
        parameters: [{ name: "uid", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "Deleted (or, for a pod only the desired state held, forgotten)" },
          "207": { description: "Some steps failed" },
          ...errors(
            "bad-request",
            ...AUTH,
            "replayed",
            "state-unavailable",
            "pod-not-found",
            "stale-generation",
            "pod-busy",
            ...RUNTIME,
          ),
        },
      },
    },
  };
}

/** PUT /v1/node/pods: the node's whole desired set. */
function nodePodsPath(): object {
  return {
    put: {
      summary: "Replace the node's desired set: sync every listed pod, delete every stored pod the set leaves out",
      description:
        "Token act apply with an integer generation above the node's (else 409 stale-generation; a refused PUT does not use up its generation). Every item is validated and admitted before anything changes (errors name pods[i] or items[i] and the field); two pods with one uid or one namespace/name are refused, and so is an item whose uid belongs to another pod on the node (409 uid-conflict naming pods[i]). Then the set is stored (503 state-unavailable: nothing changed), then each pod is synced and each dropped pod deleted. An empty set drains the node. Response: {ok, generation, pods: [{ok, pod, actions, steps, status}], removed: [{ok, pod, steps, deleted}], workloads: [{kind, namespace, name, uid, action: created|updated|unchanged}], removedWorkloads: [{kind, namespace, name, uid}]}; a pod that failed carries error (a problem); a pod a later request changed (or put back) while the PUT ran is left to that request and carries superseded (a note).",
      requestBody: {
        required: true,
        content: {
          "application/jose": {
            schema: {
              type: "string",
              description:
                "Compact JWS whose payload has iss, aud, exp, iat, jti, act: apply, generation and pods: [Pod], and optionally configMaps and secrets (each pod sees those of its namespace and those that name none)",
            },
          },
          "application/json": {
            schema: {
              oneOf: [
                {
                  type: "object",
                  required: ["jws"],
                  additionalProperties: false,
                  properties: { jws: { type: "string" } },
                },
                {
                  type: "object",
                  description:
                    "a v1.List of pods and their ConfigMaps and Secrets, with a Podsync-Signature header whose token has act apply, generation and body_sha256",
                  required: ["kind", "items"],
                  properties: {
                    apiVersion: { const: "v1" },
                    kind: { const: "List" },
                    items: {
                      type: "array",
                      items: {
                        oneOf: [
                          { $ref: "#/components/schemas/Pod" },
                          { $ref: "#/components/schemas/ConfigMap" },
                          { $ref: "#/components/schemas/Secret" },
                        ],
                      },
                    },
                  },
                },
              ],
            },
          },
          "application/yaml": {
            schema: {
              type: "string",
              description:
                "A YAML stream of pods and their ConfigMaps and Secrets (one per document), with a Podsync-Signature header",
            },
          },
        },
      },
      responses: {
        "200": { description: "Stored, and every pod synced or deleted" },
        "207": { description: "Stored; some pods' steps failed (the loop keeps at them)" },
        ...errors(...SIGNED_BODY, ...ADMISSION, "uid-conflict", "stale-generation"),
      },
    },
  };
}

/** The node's other paths: volumes, workloads, health, metrics, readiness. */
function nodePaths(): Record<string, object> {
  return {
    "/v1/node/volumes": {
      get: {
        summary: "The node's persistentVolumeClaim directories and the pods using each (token: act status, no uid)",
        security: bearer,
        responses: {
          "200": { description: "{volumes: [{name, path, usedBy}]}" },
          ...errors(...AUTH, "unsupported", ...RUNTIME),
        },
      },
    },
    "/v1/node/volumes/{name}": {
      delete: {
        summary: "Remove a claim's directory and data (token: act delete, volume = name); refused while a pod uses it",
        security: bearer,
        parameters: [{ name: "name", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "Removed" },
          ...errors(
            "bad-request",
            ...AUTH,
            "replayed",
            "state-unavailable",
            "volume-not-found",
            "volume-in-use",
            "unsupported",
            ...RUNTIME,
          ),
        },
      },
    },
    "/v1/workloads": {
      get: {
        summary:
          "The node's workloads (Deployments, ReplicaSets, ReplicationControllers, StatefulSets, DaemonSets, Jobs, CronJobs, HorizontalPodAutoscalers, PodDisruptionBudgets, PersistentVolumeClaims, Services) with their status",
        description:
          "Bearer token with act status and no uid. A v1 List of the stored objects as the Kubernetes API shows them: metadata.generation, creationTimestamp, ownerReferences (for those the node's controllers made), and status as the upstream controllers shape it. `?kind=Deployment` lists one kind. Sync, plan and PUT /v1/node/pods take these kinds in their bodies; the node's controllers make their pods (docs/workloads.md).",
        security: bearer,
        parameters: [{ name: "kind", in: "query", required: false, schema: { type: "string" } }],
        responses: { "200": { description: "v1 List" }, ...errors("bad-request", ...AUTH, "state-unavailable") },
      },
    },
    "/v1/workloads/{uid}": {
      delete: {
        summary:
          "Forget a workload (token: act delete, uid = the workload's): its controller's pods, and the workloads it made, go at the controllers' next pass; claims stay",
        security: bearer,
        parameters: [{ name: "uid", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "Forgotten" },
          ...errors(...AUTH, "replayed", "state-unavailable", "not-found"),
        },
      },
    },
    "/healthz": { get: { summary: "Process up", responses: { "200": { description: "ok" } } } },
    "/metrics": {
      get: {
        summary:
          "Prometheus text format (Node only; PODSYNC_METRICS: loopback peers without a token, others with a Bearer token whose act is metrics; off: 404)",
        security: [{}, ...bearer],
        responses: { "200": { description: "text/plain; version=0.0.4" }, ...errors(...AUTH, "not-found") },
      },
    },
    "/readyz": {
      get: {
        summary: "Container runtime reachable and RuntimeReady (CRI Version + Status)",
        responses: { "200": { description: "ready" }, ...errors("runtime-not-ready", ...RUNTIME) },
      },
    },
  };
}
