// The pod schema for what a spec written for a cluster carries: scheduler-only fields accepted as inert,
// `kubectl get pod -o yaml` exports accepted with their read-only fields dropped, service accounts accepted
// only without a token. Unknown fields stay errors.
import { describe, expect, it } from "vitest";
import { validatePod, InvalidPodError, type FieldError } from "../../src/pod/validate.js";
import { NEEDS_API_SERVER_TOKEN } from "../../src/pod/schema.js";

const base = (spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}) => ({
  metadata: { name: "web", uid: "u-1", ...metadata },
  spec: { containers: [{ name: "c", image: "busybox:1" }], ...spec },
});
function errors(input: unknown): FieldError[] {
  try {
    validatePod(input);
    return [];
  } catch (e) {
    if (e instanceof InvalidPodError) return e.errors;
    throw e;
  }
}

describe("scheduler-only fields: accepted, kept, and inert", () => {
  it("preferred node affinity, pod (anti-)affinity, topology spread, priority, schedulerName, preemptionPolicy, enableServiceLinks", () => {
    const term = {
      labelSelector: {
        matchLabels: { app: "web" },
        matchExpressions: [{ key: "tier", operator: "In", values: ["fe"] }],
      },
      topologyKey: "kubernetes.io/hostname",
    };
    const spec = {
      affinity: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 10, preference: { matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }] } },
          ],
        },
        podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] },
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 100, podAffinityTerm: { ...term, namespaces: ["web"], matchLabelKeys: ["pod-template-hash"] } },
          ],
        },
      },
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: "topology.kubernetes.io/zone",
          whenUnsatisfiable: "ScheduleAnyway",
          labelSelector: { matchLabels: { app: "web" } },
          minDomains: 2,
          nodeAffinityPolicy: "Honor",
          nodeTaintsPolicy: "Ignore",
        },
      ],
      priorityClassName: "system-node-critical",
      priority: 2000001000,
      schedulerName: "my-scheduler",
      preemptionPolicy: "Never",
      enableServiceLinks: false,
    };
    const pod = validatePod(base(spec));
    expect(pod.spec).toMatchObject(spec);
  });

  it("their shapes are still checked, and unknown fields are still errors", () => {
    expect(
      errors(
        base({ topologySpreadConstraints: [{ maxSkew: 0, topologyKey: "zone", whenUnsatisfiable: "Maybe" }] }),
      ).map((e) => e.path),
    ).toEqual(["spec.topologySpreadConstraints[0].maxSkew", "spec.topologySpreadConstraints[0].whenUnsatisfiable"]);
    expect(
      errors(
        base({
          affinity: {
            podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: "zone", weight: 3 }] },
          },
        }),
      ),
    ).toEqual([
      {
        path: "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].weight",
        message: 'unknown field "weight" (not supported by podsync; remove it)',
      },
    ]);
    expect(errors(base({ preemptionPolicy: "Always" }))[0]!.message).toMatch(/PreemptLowerPriority or Never/);
    expect(errors(base({ schedulingGates: [{ name: "x" }] }))).toEqual([
      {
        path: "spec.schedulingGates",
        message: 'unknown field "schedulingGates" (not supported by podsync; remove it)',
      },
    ]);
  });
});

describe("read-only fields are no intent (kubectl get pod -o yaml)", () => {
  // A pod as `kubectl get pod -o yaml --show-managed-fields` prints it (a ReplicaSet's pod, trimmed to what
  // podsync supports apart from the read-only fields).
  const exported = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      annotations: { "kubectl.kubernetes.io/restartedAt": "2024-05-01T10:00:00Z" },
      creationTimestamp: "2024-05-01T10:00:05Z",
      generateName: "web-7d4b9c8f5-",
      generation: 1,
      labels: { app: "web", "pod-template-hash": "7d4b9c8f5" },
      managedFields: [
        {
          apiVersion: "v1",
          fieldsType: "FieldsV1",
          fieldsV1: { "f:metadata": {} },
          manager: "kube-controller-manager",
          operation: "Update",
          time: "2024-05-01T10:00:05Z",
        },
      ],
      name: "web-7d4b9c8f5-x2x9q",
      namespace: "default",
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          blockOwnerDeletion: true,
          controller: true,
          kind: "ReplicaSet",
          name: "web-7d4b9c8f5",
          uid: "0c3b1b7e-5f3a-4a54-9c43-7e1f0b6a1d11",
        },
      ],
      resourceVersion: "123456",
      selfLink: "/api/v1/namespaces/default/pods/web-7d4b9c8f5-x2x9q",
      finalizers: ["example.com/keep"],
      uid: "5b1c8e2a-9d3f-4c3e-8a55-0f6e2d1c7b90",
    },
    spec: {
      containers: [
        {
          image: "nginx:1.25",
          imagePullPolicy: "IfNotPresent",
          name: "nginx",
          ports: [{ containerPort: 80, protocol: "TCP" }],
          resources: {},
          terminationMessagePath: "/dev/termination-log",
          terminationMessagePolicy: "File",
        },
      ],
      dnsPolicy: "ClusterFirst",
      enableServiceLinks: true,
      preemptionPolicy: "PreemptLowerPriority",
      priority: 0,
      restartPolicy: "Always",
      schedulerName: "default-scheduler",
      securityContext: {},
      terminationGracePeriodSeconds: 30,
      tolerations: [
        { effect: "NoExecute", key: "node.kubernetes.io/not-ready", operator: "Exists", tolerationSeconds: 300 },
        { effect: "NoExecute", key: "node.kubernetes.io/unreachable", operator: "Exists", tolerationSeconds: 300 },
      ],
    },
    status: {
      conditions: [{ lastProbeTime: null, lastTransitionTime: "2024-05-01T10:00:05Z", status: "True", type: "Ready" }],
      containerStatuses: [
        { name: "nginx", ready: true, restartCount: 0, state: { running: { startedAt: "2024-05-01T10:00:06Z" } } },
      ],
      hostIP: "10.0.0.7",
      phase: "Running",
      podIP: "10.244.1.5",
      qosClass: "BestEffort",
      startTime: "2024-05-01T10:00:05Z",
    },
  };

  it("is accepted; status and the read-only metadata are dropped; uid, labels and annotations stay", () => {
    // ownerReferences stay in the pod model (the node's own controllers set them); a body's are dropped at intake,
    // with a warning (test/pod/workloads/workloads-intake.test.ts).
    const pod = validatePod(exported);
    expect(pod.metadata).toEqual({
      name: "web-7d4b9c8f5-x2x9q",
      namespace: "default",
      uid: "5b1c8e2a-9d3f-4c3e-8a55-0f6e2d1c7b90",
      labels: { app: "web", "pod-template-hash": "7d4b9c8f5" },
      annotations: { "kubectl.kubernetes.io/restartedAt": "2024-05-01T10:00:00Z" },
      ownerReferences: exported.metadata.ownerReferences,
    });
    expect(pod).not.toHaveProperty("status");
    expect(pod.spec.tolerations).toHaveLength(2);
  });

  it("deletionTimestamp and deletionGracePeriodSeconds are read-only too; other unknown metadata is an error", () => {
    expect(
      errors({
        ...exported,
        metadata: { ...exported.metadata, deletionTimestamp: "2024-05-01T11:00:00Z", deletionGracePeriodSeconds: 30 },
      }),
    ).toEqual([]);
    expect(errors({ ...exported, metadata: { ...exported.metadata, clusterName: "x" } })).toEqual([
      { path: "metadata.clusterName", message: 'unknown field "clusterName" (not supported by podsync; remove it)' },
    ]);
    expect(errors({ ...exported, extra: 1 })).toEqual([
      { path: "extra", message: 'unknown field "extra" (not supported by podsync; remove it)' },
    ]);
  });
});

describe("service accounts: a name only without a token", () => {
  it("a name with automount left on is refused, naming the field and why", () => {
    expect(errors(base({ serviceAccountName: "builder" }))).toEqual([
      {
        path: "spec.serviceAccountName",
        message: `serviceAccountName "builder" ${NEEDS_API_SERVER_TOKEN}; set automountServiceAccountToken: false to run the pod without one`,
      },
    ]);
    expect(errors(base({ serviceAccount: "builder", automountServiceAccountToken: true }))).toEqual([
      {
        path: "spec.serviceAccount",
        message: `serviceAccount "builder" ${NEEDS_API_SERVER_TOKEN}; set automountServiceAccountToken: false to run the pod without one`,
      },
    ]);
    expect(NEEDS_API_SERVER_TOKEN).toBe("needs a Kubernetes API server to issue a service account token");
  });

  it("with automountServiceAccountToken: false the name is accepted (the deprecated alias fills serviceAccountName)", () => {
    expect(
      validatePod(base({ serviceAccountName: "builder", automountServiceAccountToken: false })).spec.serviceAccountName,
    ).toBe("builder");
    expect(
      validatePod(base({ serviceAccount: "builder", automountServiceAccountToken: false })).spec.serviceAccountName,
    ).toBe("builder");
    expect(validatePod(base({ automountServiceAccountToken: true })).spec.serviceAccountName).toBeUndefined();
  });

  it("the name is a DNS-1123 subdomain", () => {
    expect(errors(base({ serviceAccountName: "Bad_Name", automountServiceAccountToken: false }))[0]!.path).toBe(
      "spec.serviceAccountName",
    );
  });
});
