// Intake of bodies with workloads: the kinds a node runs, the ones it skips with a warning, the ones it refuses;
// uid-less pods; cluster exports cleaned with warnings; bad workloads refused naming the field.
import { describe, expect, it } from "vitest";
import { bodyFromDocuments, bodyFromItems, setItems } from "../../../src/pod/bundle.js";
import { derivedUid, uuidv5 } from "../../../src/pod/workloads/uid.js";
import { InvalidPodError } from "../../../src/pod/validate.js";
import { errorsOf } from "../../support/pods.js";
import { nextAfter, parseSchedule } from "../../../src/pod/workloads/cron.js";

const node = { nodeName: "node-a", serviceAccountTokens: "drop" as const };
const container = { name: "c", image: "localhost/busybox:1" };
const deployment = (spec: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", ...meta },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: "web" } },
    template: { metadata: { labels: { app: "web" } }, spec: { containers: [container] } },
    ...spec,
  },
});

describe("uids", () => {
  it("RFC 9562 UUIDv5 (the RFC's example: DNS namespace, www.example.com)", () => {
    expect(uuidv5("6ba7b8109dad11d180b400c04fd430c8", "www.example.com")).toBe("2ed6657d-e927-568b-95e1-2665a8aea6a2");
  });
  it("a pod without metadata.uid gets one from node, namespace and name: the same every time, another per node", () => {
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec: { containers: [container] } };
    const a = bodyFromDocuments([pod], node).pods[0]!.pod.metadata.uid;
    expect(a).toBe(derivedUid("node-a", "default", "p"));
    expect(bodyFromDocuments([pod], node).pods[0]!.pod.metadata.uid).toBe(a);
    expect(bodyFromDocuments([pod], { ...node, nodeName: "node-b" }).pods[0]!.pod.metadata.uid).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe("kinds", () => {
  it("workloads, claims and Services are taken; Ingress, ServiceAccount, RBAC, Namespace, LimitRange, autoscaling/v1 Scale are skipped with a warning each", () => {
    const skipped = [
      { apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: { name: "web" } },
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "web" } },
      { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "web" } },
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "web" } },
      { apiVersion: "v1", kind: "LimitRange", metadata: { name: "web" } },
      { apiVersion: "autoscaling/v1", kind: "Scale", metadata: { name: "web" } },
    ];
    const claim = {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: "data" },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    };
    const job = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "once" },
      spec: { template: { spec: { containers: [container], restartPolicy: "Never" } } },
    };
    const service = { apiVersion: "v1", kind: "Service", metadata: { name: "web" }, spec: { ports: [{ port: 80 }] } };
    const b = bodyFromDocuments([deployment(), ...skipped, claim, job, service], node);
    expect(b.workloads.map((w) => w.workload.kind)).toEqual(["Deployment", "PersistentVolumeClaim", "Job", "Service"]);
    expect(b.warnings).toHaveLength(6);
    expect(b.warnings[0]).toBe(
      'documents[1]: networking.k8s.io/v1 Ingress "web" skipped: a node has no part in a Ingress (podsync runs Pods, Deployments, ReplicaSets, ReplicationControllers, StatefulSets, DaemonSets, Jobs, CronJobs, HorizontalPodAutoscalers and Services, and keeps ConfigMaps, Secrets, PersistentVolumeClaims and PodDisruptionBudgets)',
    );
    // A Job gets the API server's selector and labels (generateSelector).
    const j = b.workloads[2]!.workload as {
      metadata: { uid: string };
      spec: { selector: unknown; template: { metadata: { labels: unknown } } };
    };
    expect(j.spec.selector).toEqual({ matchLabels: { "batch.kubernetes.io/controller-uid": j.metadata.uid } });
    expect(j.spec.template.metadata.labels).toEqual({
      "job-name": "once",
      "batch.kubernetes.io/job-name": "once",
      "controller-uid": j.metadata.uid,
      "batch.kubernetes.io/controller-uid": j.metadata.uid,
    });
  });
  it("a custom resource is skipped with a warning; with PODSYNC_UNKNOWN_KINDS=refuse it is refused, naming it", () => {
    const cert = { apiVersion: "cert-manager.io/v1", kind: "Certificate", metadata: { name: "tls" } };
    expect(bodyFromDocuments([deployment(), cert], node).warnings).toEqual([
      expect.stringContaining('documents[1]: skipped: custom resource cert-manager.io/v1 Certificate "tls"'),
    ]);
    expect(errorsOf(() => bodyFromDocuments([deployment(), cert], { ...node, unknownKinds: "refuse" }))).toEqual([
      {
        path: "documents[1].kind",
        message: expect.stringContaining('cert-manager.io/v1 Certificate "tls" is not a Kubernetes kind podsync knows'),
      },
    ]);
  });
  it("a document without kind is refused with 400 naming it, except where its place makes it a Pod (a body that is one pod)", () => {
    const bare = { metadata: { name: "p" }, spec: { containers: [container] } };
    // A body that is one pod may leave out apiVersion and kind, as pod bodies always could (docs/pod-fields.md).
    expect(bodyFromDocuments([bare], node).pods[0]!.pod.metadata.name).toBe("p");
    // In a YAML stream, a v1.List or the payload's items, kind says what each document is.
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: {} };
    expect(errorsOf(() => bodyFromDocuments([cm, bare], node))).toEqual([
      {
        path: "documents[1].kind",
        message: expect.stringContaining(
          'the document "p" at documents[1] has no kind: in a body of several objects each names its kind',
        ),
      },
    ]);
    expect(errorsOf(() => bodyFromDocuments([{ apiVersion: "v1", kind: "List", items: [bare] }], node))).toEqual([
      { path: "items[0].kind", message: expect.stringContaining("has no kind") },
    ]);
    expect(errorsOf(() => bodyFromItems([{ input: bare, at: "items[0]" }], {}, node))).toEqual([
      { path: "items[0].kind", message: expect.stringContaining("has no kind") },
    ]);
    // The payload's `pod` and `pods` claims name their items Pods.
    expect(bodyFromItems([{ input: bare, at: "pod", podByPlace: true }], {}, node).pods).toHaveLength(1);
    expect(bodyFromItems(setItems([bare], "pods"), {}, node).pods).toHaveLength(1);
    expect(() => bodyFromItems(setItems([bare], "items"), {}, node)).toThrow(InvalidPodError);
    // Even alone, a kind-less document carrying a workload's spec is not read as a Pod.
    const { kind: _k, apiVersion: _a, ...kindless } = deployment();
    expect(errorsOf(() => bodyFromDocuments([kindless], node))).toEqual([
      {
        path: "kind",
        message: expect.stringContaining(
          'the document "web" has no kind, and its spec.template is a workload\'s field',
        ),
      },
    ]);
  });
});

describe("bad workloads are refused naming the field, nothing partial", () => {
  it("a template refused as a pod is refused under its workload path", () => {
    const bad = deployment({
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "c", image: "" }] } },
    });
    expect(errorsOf(() => bodyFromDocuments([bad], node))).toEqual([
      { path: "spec.template.spec.containers[0].image", message: "image is required" },
    ]);
  });
  it("replicas 0-1000; a selector that does not match the template; a duplicate name; an unparseable schedule", () => {
    expect(errorsOf(() => bodyFromDocuments([deployment({ replicas: 1001 })], node))).toEqual([
      { path: "spec.replicas", message: "replicas must be between 0 and 1000 (podsync's bound for one node)" },
    ]);
    expect(
      errorsOf(() => bodyFromDocuments([deployment({ selector: { matchLabels: { app: "other" } } })], node)),
    ).toEqual([{ path: "spec.selector", message: "`selector` does not match template `labels`" }]);
    expect(errorsOf(() => bodyFromDocuments([deployment(), deployment()], node))).toEqual([
      {
        path: "documents[1].metadata.name",
        message: "duplicate Deployment default/web (also documents[0]): a body holds each object once",
      },
    ]);
    const cron = {
      apiVersion: "batch/v1",
      kind: "CronJob",
      metadata: { name: "tick" },
      spec: {
        schedule: "61 * * * *",
        jobTemplate: { spec: { template: { spec: { containers: [container], restartPolicy: "Never" } } } },
      },
    };
    expect(errorsOf(() => bodyFromDocuments([cron], node))).toEqual([
      { path: "spec.schedule", message: 'minute: "61" is outside 0-59' },
    ]);
  });
  it("a Deployment's pods must restart Always; a Job's must not", () => {
    const d = deployment({
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [container], restartPolicy: "Never" } },
    });
    expect(errorsOf(() => bodyFromDocuments([d], node))).toEqual([
      { path: "spec.template.spec.restartPolicy", message: 'a Deployment\'s pods must have restartPolicy "Always"' },
    ]);
    const j = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "j" },
      spec: { template: { spec: { containers: [container] } } },
    };
    expect(errorsOf(() => bodyFromDocuments([j], node))).toEqual([
      {
        path: "spec.template.spec.restartPolicy",
        message: 'a Job\'s pods must have restartPolicy "OnFailure" or "Never"',
      },
    ]);
  });
  it("every error at once, across documents", () => {
    try {
      bodyFromDocuments(
        [
          deployment({ replicas: -1 }),
          { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec: { containers: [] } },
        ],
        node,
      );
      expect.unreachable();
    } catch (e) {
      expect((e as InvalidPodError).errors.map((x) => x.path).sort()).toEqual([
        "documents[0].spec.replicas",
        "documents[1].spec.containers",
      ]);
    }
  });
});

describe("cluster exports (kubectl get -o yaml)", () => {
  const exported = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "web-7d4b9c8f5-x2x9q",
      namespace: "default",
      uid: "5b1c8e2a-9d3f-4c3e-8a55-0f6e2d1c7b90",
      resourceVersion: "1",
      ownerReferences: [
        { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-7d4b9c8f5", uid: "x", controller: true },
      ],
    },
    spec: {
      containers: [
        {
          ...container,
          volumeMounts: [
            {
              name: "kube-api-access-7xk2p",
              mountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
              readOnly: true,
            },
          ],
        },
      ],
      nodeName: "node-a",
      serviceAccount: "default",
      serviceAccountName: "default",
      volumes: [
        {
          name: "kube-api-access-7xk2p",
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
              { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
              {
                downwardAPI: {
                  items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }],
                },
              },
            ],
          },
        },
      ],
    },
    status: { phase: "Running" },
  };
  it("runs as it is: the token volume and its mount, the default service account and the read-only fields dropped, each with a warning", () => {
    const b = bodyFromDocuments([exported], node);
    const pod = b.pods[0]!.pod;
    expect(pod.spec.volumes).toEqual([]);
    expect(pod.spec.containers[0]!.volumeMounts).toEqual([]);
    expect(pod.spec.serviceAccountName).toBeUndefined();
    expect(pod.metadata).not.toHaveProperty("ownerReferences");
    expect(pod.metadata.uid).toBe(exported.metadata.uid);
    expect(b.warnings).toEqual([
      "read-only field(s) ignored: metadata.resourceVersion, metadata.ownerReferences, status (set by a cluster's API server and controllers)",
      "spec.volumes: dropped kube-api-access-7xk2p (the API server's service account token volume) and its 1 mount(s): there is no API server on this node to issue the token",
      'spec.serviceAccountName: "default" dropped (the namespace\'s default service account; the pod runs without one)',
      'spec.serviceAccount: "default" dropped (the namespace\'s default service account; the pod runs without one)',
    ]);
  });
  it("a named service account runs without its token, with a warning; with `refuse` it is refused naming the field", () => {
    const named = { ...exported, spec: { ...exported.spec, serviceAccount: "builder", serviceAccountName: "builder" } };
    const b = bodyFromDocuments([named], node);
    expect(b.pods[0]!.pod.spec.automountServiceAccountToken).toBe(false);
    expect(b.warnings).toContainEqual(
      expect.stringContaining('spec.serviceAccountName: "builder" runs without a service account token'),
    );
    expect(
      errorsOf(() => bodyFromDocuments([named], { ...node, serviceAccountTokens: "refuse" })).map((e) => e.path),
    ).toEqual(["spec.serviceAccountName"]);
  });
});

describe("CronJob schedules (robfig/cron's ParseStandard)", () => {
  const at = (iso: string) => Date.parse(iso);
  const next = (spec: string, from: string, tz?: string) => {
    const s = parseSchedule(spec, tz);
    if (typeof s === "string") throw new Error(s);
    const t = nextAfter(s, at(from));
    return t === undefined ? undefined : new Date(t).toISOString();
  };
  it("five fields, names, steps, descriptors, day-of-month OR day-of-week", () => {
    expect(next("*/5 * * * *", "2026-01-01T00:02:30Z")).toBe("2026-01-01T00:05:00.000Z");
    expect(next("@hourly", "2026-01-01T00:00:00Z")).toBe("2026-01-01T01:00:00.000Z");
    expect(next("30 4 * * MON-FRI", "2026-01-03T00:00:00Z")).toBe("2026-01-05T04:30:00.000Z"); // Sat -> Mon
    expect(next("0 0 13 * 5", "2026-01-01T00:00:00Z")).toBe("2026-01-02T00:00:00.000Z"); // Friday the 2nd (either matches)
    expect(next("0 0 30 2 *", "2026-01-01T00:00:00Z")).toBeUndefined();
  });
  it("timeZone: the wall clock of the zone, across a DST change", () => {
    expect(next("0 9 * * *", "2026-03-28T12:00:00Z", "Europe/Berlin")).toBe("2026-03-29T07:00:00.000Z"); // CEST begins on the 29th
    expect(parseSchedule("0 9 * * *", "Mars/Olympus")).toBe(
      'unknown time zone "Mars/Olympus": give an IANA name such as "Europe/Berlin"',
    );
    expect(parseSchedule("TZ=UTC 0 9 * * *")).toContain("use spec.timeZone");
  });
});
