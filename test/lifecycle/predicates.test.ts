// Admission against the node itself: kubelet's TestGeneralPredicates, TestRejectPodAdmissionBasedOnOSSelector
// and TestRejectPodAdmissionBasedOnOSField (pkg/kubelet/lifecycle/predicate_test.go) ported case for case,
// then the node selector operators, tolerations, host-port addresses and resource sums one rule at a time.
import { describe, expect, it } from "vitest";
import { admitInOrder, admitPod, type NodeInfo, type Taint } from "../../src/lifecycle/predicates.js";
import {
  NodeOverrides,
  nodeAdmissionSettingsShape,
  nodeInfoFrom,
  withNodeOverrides,
} from "../../src/settings/node-info.js";
import { Pod, type PodInput } from "../../src/pod/schema.js";
import { validatePod, type InvalidPodError } from "../../src/pod/validate.js";
import { z } from "zod";

let n = 0;
/** A pod through the real schema; `containers` default to one with no resources or ports. */
function pod(spec: Partial<PodInput["spec"]> = {}, meta: Partial<PodInput["metadata"]> = {}): Pod {
  return Pod.parse({
    metadata: { name: "p", uid: `adm-${n++}`, ...meta },
    spec: { containers: [{ name: "c", image: "busybox:1" }], ...spec },
  });
}
const requests = (cpu: string, memory: string) => ({
  containers: [{ name: "c", image: "busybox:1", resources: { requests: { cpu, memory } } }],
});
const withPort = (...hostPorts: number[]) => ({
  containers: [{ name: "c", image: "busybox:1", ports: hostPorts.map((p) => ({ containerPort: 8080, hostPort: p })) }],
});

/** kubelet's test node: machine1, allocatable 10 millicores, 20 bytes, 32 pods. */
const node = (o: Partial<NodeInfo> = {}): NodeInfo => ({
  name: "machine1",
  labels: { "kubernetes.io/hostname": "machine1", "kubernetes.io/os": "linux" },
  taints: [],
  allocatable: { milliCPU: 10, memory: 20, pods: 32 },
  ...o,
});
const reasons = (r: ReturnType<typeof admitPod>) => (r.admit ? [] : r.failures.map((f) => f.reason));
const affinityExists = (key: string) => ({
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key, operator: "Exists" as const }] }],
    },
  },
});

describe("kubelet's TestGeneralPredicates", () => {
  it("no resources/port/host requested always fits", () => {
    expect(admitPod(pod(), node(), [pod(requests("9m", "19"))])).toEqual({ admit: true });
  });

  it("not enough cpu and memory resource: OutOfcpu first, both reported with kubelet's InsufficientResourceError text", () => {
    const r = admitPod(pod(requests("8m", "10")), node(), [pod(requests("5m", "19"))]);
    expect(r).toEqual({
      admit: false,
      reason: "OutOfcpu",
      message: "Node didn't have enough resource: cpu, requested: 8, used: 5, capacity: 10",
      failures: [
        {
          reason: "OutOfcpu",
          message: "Node didn't have enough resource: cpu, requested: 8, used: 5, capacity: 10",
          path: "spec.containers[0].resources.requests.cpu",
        },
        {
          reason: "OutOfmemory",
          message: "Node didn't have enough resource: memory, requested: 10, used: 19, capacity: 20",
          path: "spec.containers[0].resources.requests.memory",
        },
      ],
    });
  });

  it("host not match: NodeName", () => {
    const r = admitPod(pod({ nodeName: "machine2" }), node(), []);
    expect(r).toMatchObject({
      admit: false,
      reason: "NodeName",
      message: "Predicate NodeName failed: node(s) didn't match the requested node name",
      failures: [{ path: "spec.nodeName" }],
    });
  });

  it("hostport conflict: NodePorts", () => {
    const other = pod(withPort(123), { name: "other", namespace: "web" });
    const r = admitPod(pod(withPort(123)), node(), [other]);
    expect(r).toMatchObject({
      admit: false,
      reason: "NodePorts",
      failures: [{ path: "spec.containers[0].ports[0].hostPort" }],
    });
    expect(r.admit || r.message).toBe(
      `Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports: TCP 0.0.0.0:123 is used by pod web/other (${other.metadata.uid})`,
    );
  });

  const fooBar: Taint[] = [
    { key: "foo", effect: "NoSchedule" },
    { key: "bar", effect: "NoExecute" },
  ];

  it("taint/toleration match", () => {
    expect(admitPod(pod({ tolerations: [{ key: "foo" }, { key: "bar" }] }), node({ taints: fooBar }), [])).toEqual({
      admit: true,
    });
  });

  it("NoSchedule taint/toleration not match: refused here (kubelet admits it: its scheduler already kept the pod off; podsync has none)", () => {
    const r = admitPod(pod(), node({ taints: [{ key: "foo", effect: "NoSchedule" }] }), []);
    expect(r).toMatchObject({
      admit: false,
      reason: "TaintToleration",
      message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate: {foo:NoSchedule}",
      failures: [{ path: "spec.tolerations" }],
    });
  });

  it("NoExecute taint/toleration not match: TaintToleration", () => {
    expect(reasons(admitPod(pod(), node({ taints: [{ key: "bar", effect: "NoExecute" }] }), []))).toEqual([
      "TaintToleration",
    ]);
  });

  it("PreferNoSchedule taint/toleration not match: admitted (a preference only ranks nodes)", () => {
    expect(admitPod(pod(), node({ taints: [{ key: "baz", effect: "PreferNoSchedule" }] }), [])).toEqual({
      admit: true,
    });
  });

  it("node affinity failure: NodeAffinity", () => {
    const r = admitPod(pod({ affinity: affinityExists("foo") }), node(), []);
    expect(r).toMatchObject({
      admit: false,
      reason: "NodeAffinity",
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
      failures: [{ path: "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution" }],
    });
  });

  it("node affinity failure and node name doesn't match: both reasons, affinity first", () => {
    expect(reasons(admitPod(pod({ nodeName: "some-node-name", affinity: affinityExists("foo") }), node(), []))).toEqual(
      ["NodeAffinity", "NodeName"],
    );
  });

  it("node affinity matches a node that has the label", () => {
    expect(admitPod(pod({ affinity: affinityExists("foo") }), node({ labels: { foo: "bar" } }), [])).toEqual({
      admit: true,
    });
  });
});

describe("kubelet's OS checks (run before the others, and alone)", () => {
  it("TestRejectPodAdmissionBasedOnOSSelector: the pod's kubernetes.io/os label must be the node's OS", () => {
    expect(admitPod(pod({}, { labels: { "kubernetes.io/os": "linux" } }), node(), [])).toEqual({ admit: true });
    // kubelet resets a node label that disagrees with runtime.GOOS: the node's OS is what counts.
    expect(
      admitPod(
        pod({}, { labels: { "kubernetes.io/os": "linux" } }),
        node({ labels: { "kubernetes.io/os": "dummyOS" } }),
        [],
      ),
    ).toEqual({ admit: true });
    expect(admitPod(pod({}, { labels: { "kubernetes.io/os": "dummyOS" } }), node(), [])).toEqual({
      admit: false,
      reason: "PodOSSelectorNodeLabelDoesNotMatch",
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
      failures: [
        {
          reason: "PodOSSelectorNodeLabelDoesNotMatch",
          message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
          path: "metadata.labels[kubernetes.io/os]",
        },
      ],
    });
    expect(admitPod(pod(), node({ labels: { "kubernetes.io/os": "dummyOS" } }), [])).toEqual({ admit: true });
  });

  it("TestRejectPodAdmissionBasedOnOSField: spec.os.name must be linux", () => {
    expect(admitPod(pod({ os: { name: "linux" } }), node(), [])).toEqual({ admit: true });
    expect(admitPod(pod({ os: { name: "windows" }, nodeName: "elsewhere" }), node(), [])).toMatchObject({
      admit: false,
      reason: "PodOSNotSupported",
      message: "Failed to admit pod as the OS field doesn't match node OS",
      failures: [{ path: "spec.os.name" }],
    });
  });
});

describe("nodeSelector and required node affinity (component-helpers nodeaffinity)", () => {
  const labelled = node({ labels: { "kubernetes.io/os": "linux", zone: "a", gen: "5", empty: "" } });
  const term = (
    key: string,
    operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt",
    values?: string[],
  ) => ({
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key, operator, ...(values ? { values } : {}) }] }],
      },
    },
  });
  const admits = (spec: Partial<PodInput["spec"]>, n: NodeInfo = labelled) => admitPod(pod(spec), n, []).admit;

  it("nodeSelector: every label equal; an empty value is a value", () => {
    expect(admits({ nodeSelector: { "kubernetes.io/os": "linux", zone: "a" } })).toBe(true);
    expect(admits({ nodeSelector: { empty: "" } })).toBe(true);
    expect(admits({ nodeSelector: { missing: "" } })).toBe(false);
    const r = admitPod(pod({ nodeSelector: { zone: "b" } }), labelled, []);
    expect(r).toMatchObject({ reason: "NodeAffinity", failures: [{ path: "spec.nodeSelector" }] });
  });

  it("In / NotIn / Exists / DoesNotExist", () => {
    expect(admits({ affinity: term("zone", "In", ["b", "a"]) })).toBe(true);
    expect(admits({ affinity: term("zone", "In", ["b"]) })).toBe(false);
    expect(admits({ affinity: term("missing", "In", ["a"]) })).toBe(false);
    expect(admits({ affinity: term("zone", "NotIn", ["b"]) })).toBe(true);
    expect(admits({ affinity: term("zone", "NotIn", ["a"]) })).toBe(false);
    expect(admits({ affinity: term("missing", "NotIn", ["a"]) })).toBe(true);
    expect(admits({ affinity: term("zone", "Exists") })).toBe(true);
    expect(admits({ affinity: term("missing", "Exists") })).toBe(false);
    expect(admits({ affinity: term("missing", "DoesNotExist") })).toBe(true);
    expect(admits({ affinity: term("zone", "DoesNotExist") })).toBe(false);
  });

  it("Gt / Lt compare integers; a missing or non-integer label never matches", () => {
    expect(admits({ affinity: term("gen", "Gt", ["4"]) })).toBe(true);
    expect(admits({ affinity: term("gen", "Gt", ["5"]) })).toBe(false);
    expect(admits({ affinity: term("gen", "Lt", ["6"]) })).toBe(true);
    expect(admits({ affinity: term("gen", "Lt", ["5"]) })).toBe(false);
    expect(admits({ affinity: term("zone", "Gt", ["1"]) })).toBe(false);
    expect(admits({ affinity: term("missing", "Lt", ["1"]) })).toBe(false);
  });

  it("terms are ORed, a term's expressions and fields ANDed, an empty term selects nothing", () => {
    const terms = (...t: object[]) => ({
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: t } },
    });
    expect(
      admits({
        affinity: terms(
          { matchExpressions: [{ key: "zone", operator: "In", values: ["b"] }] },
          { matchExpressions: [{ key: "gen", operator: "Exists" }] },
        ),
      }),
    ).toBe(true);
    expect(
      admits({
        affinity: terms({
          matchExpressions: [
            { key: "zone", operator: "Exists" },
            { key: "missing", operator: "Exists" },
          ],
        }),
      }),
    ).toBe(false);
    expect(admits({ affinity: terms({}) })).toBe(false);
    expect(admits({ affinity: terms({}, { matchExpressions: [{ key: "zone", operator: "Exists" }] }) })).toBe(true);
  });

  it("matchFields metadata.name, In and NotIn", () => {
    const field = (operator: "In" | "NotIn", name: string) => ({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name" as const, operator, values: [name] }] }],
        },
      },
    });
    expect(admits({ affinity: field("In", "machine1") })).toBe(true);
    expect(admits({ affinity: field("In", "machine2") })).toBe(false);
    expect(admits({ affinity: field("NotIn", "machine2") })).toBe(true);
    expect(admits({ affinity: field("NotIn", "machine1") })).toBe(false);
  });

  it("nodeSelector and affinity must both match; preferred affinity is inert", () => {
    expect(admits({ nodeSelector: { zone: "a" }, affinity: term("zone", "In", ["b"]) })).toBe(false);
    expect(
      admits({
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 1, preference: { matchExpressions: [{ key: "missing", operator: "Exists" }] } },
            ],
          },
        },
      }),
    ).toBe(true);
  });

  it("the API server's validation of requirements", () => {
    const errs = (affinity: unknown) => {
      try {
        validatePod({
          metadata: { name: "p", uid: "u" },
          spec: { containers: [{ name: "c", image: "i:1" }], affinity },
        });
        return [];
      } catch (e) {
        return (e as InvalidPodError).errors.map((x) => x.message);
      }
    };
    const req = (r: object) => ({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [r] }] },
      },
    });
    expect(errs(req({ key: "a", operator: "In" }))).toEqual(["must be specified when `operator` is 'In' or 'NotIn'"]);
    expect(errs(req({ key: "a", operator: "Exists", values: ["x"] }))).toEqual([
      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
    ]);
    expect(errs(req({ key: "a", operator: "Gt", values: ["1", "2"] }))).toEqual([
      "must be specified single value when `operator` is 'Lt' or 'Gt'",
    ]);
    expect(errs(req({ key: "a", operator: "Lt", values: ["x"] }))).toEqual([
      "must be an integer when `operator` is 'Lt' or 'Gt'",
    ]);
    expect(errs(req({ key: "a/b/c", operator: "Exists" }))[0]).toMatch(/invalid key/);
    expect(
      errs({ nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } } }),
    ).toEqual(["must have at least one node selector term"]);
    expect(
      errs({
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchFields: [{ key: "metadata.labels", operator: "In", values: ["x"] }] }],
          },
        },
      })[0],
    ).toMatch(/metadata\.name/);
    expect(
      errs({
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: ["x", "y"] }] }],
          },
        },
      }),
    ).toEqual(["must be only one value when `operator` is 'In' or 'NotIn' for node field selector"]);
  });
});

describe("taints and tolerations (v1.Toleration.ToleratesTaint)", () => {
  const admits = (tolerations: PodInput["spec"]["tolerations"], taints: Taint[]) =>
    admitPod(pod({ tolerations }), node({ taints }), []).admit;
  const dedicated: Taint[] = [{ key: "dedicated", value: "edge", effect: "NoSchedule" }];

  it("Equal (the default) needs the same value; Exists any value; an empty key with Exists tolerates everything", () => {
    expect(admits([{ key: "dedicated", value: "edge" }], dedicated)).toBe(true);
    expect(admits([{ key: "dedicated", operator: "Equal", value: "core" }], dedicated)).toBe(false);
    expect(admits([{ key: "dedicated", operator: "Exists" }], dedicated)).toBe(true);
    expect(admits([{ operator: "Exists" }], dedicated)).toBe(true);
    expect(admits([{ key: "other", operator: "Exists" }], dedicated)).toBe(false);
  });

  it("an effect must match unless empty; tolerationSeconds still tolerates a NoExecute taint at admission", () => {
    expect(admits([{ key: "dedicated", operator: "Exists", effect: "NoExecute" }], dedicated)).toBe(false);
    expect(admits([{ key: "dedicated", operator: "Exists", effect: "NoSchedule" }], dedicated)).toBe(true);
    expect(
      admits(
        [{ key: "gone", operator: "Exists", effect: "NoExecute", tolerationSeconds: 30 }],
        [{ key: "gone", effect: "NoExecute" }],
      ),
    ).toBe(true);
  });

  it("every NoSchedule and NoExecute taint must be tolerated; the first untolerated one is named", () => {
    const taints: Taint[] = [...dedicated, { key: "gpu", value: "true", effect: "NoExecute" }];
    const r = admitPod(pod({ tolerations: [{ key: "dedicated", operator: "Exists" }] }), node({ taints }), []);
    expect(r.admit || r.message).toBe(
      "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate: {gpu=true:NoExecute}",
    );
  });

  it("the API server's validation of tolerations", () => {
    const errs = (tolerations: unknown) => {
      try {
        validatePod({
          metadata: { name: "p", uid: "u" },
          spec: { containers: [{ name: "c", image: "i:1" }], tolerations },
        });
        return [];
      } catch (e) {
        return (e as InvalidPodError).errors.map((x) => `${x.path}: ${x.message}`);
      }
    };
    expect(errs([{ value: "x" }])).toEqual([
      'spec.tolerations[0].operator: operator must be Exists when `key` is empty, which means "match all values and all keys"',
    ]);
    expect(errs([{ key: "a", operator: "Exists", value: "x" }])).toEqual([
      "spec.tolerations[0].value: value must be empty when `operator` is 'Exists'",
    ]);
    expect(errs([{ key: "a", effect: "NoSchedule", tolerationSeconds: 5 }])).toEqual([
      "spec.tolerations[0].effect: effect must be 'NoExecute' when `tolerationSeconds` is set",
    ]);
    expect(errs([{ key: "a", effect: "Sometimes" }])[0]).toMatch(
      /effect must be NoSchedule, PreferNoSchedule or NoExecute/,
    );
  });
});

describe("host ports against the other desired pods (nodeports, HostPortInfo.CheckConflict)", () => {
  const port = (hostPort: number, extra: object = {}) => ({
    containers: [{ name: "c", image: "busybox:1", ports: [{ containerPort: 80, hostPort, ...extra }] }],
  });
  const admits = (a: Partial<PodInput["spec"]>, b: Partial<PodInput["spec"]>) =>
    admitPod(pod(a), node(), [pod(b)]).admit;

  it("0.0.0.0 (or no hostIP) clashes with any address on the same port and protocol; two distinct addresses do not", () => {
    expect(admits(port(8080), port(8080, { hostIP: "127.0.0.1" }))).toBe(false);
    expect(admits(port(8080, { hostIP: "127.0.0.1" }), port(8080))).toBe(false);
    expect(admits(port(8080, { hostIP: "127.0.0.1" }), port(8080, { hostIP: "127.0.0.2" }))).toBe(true);
    expect(admits(port(8080, { hostIP: "127.0.0.1" }), port(8080, { hostIP: "127.0.0.1" }))).toBe(false);
  });

  it("protocols are separate; other ports are free", () => {
    expect(admits(port(8080, { protocol: "UDP" }), port(8080))).toBe(true);
    expect(admits(port(8081), port(8080))).toBe(true);
  });

  it("with hostNetwork every container port is a host port (the API server defaults hostPort to it)", () => {
    const hostNet = {
      hostNetwork: true,
      containers: [{ name: "c", image: "busybox:1", ports: [{ containerPort: 9090 }] }],
    };
    expect(admits(hostNet, port(9090))).toBe(false);
    expect(admits(port(9090), hostNet)).toBe(false);
    expect(admits({ containers: [{ name: "c", image: "busybox:1", ports: [{ containerPort: 9090 }] }] }, hostNet)).toBe(
      true,
    );
  });

  it("the pod itself (same uid, a re-sync) is not another pod", () => {
    const p = pod(port(8080));
    expect(admitPod(p, node(), [p]).admit).toBe(true);
  });
});

describe("resources against allocatable, summed over the desired set (noderesources.Fits)", () => {
  const big = node({ allocatable: { milliCPU: 2000, memory: 2 ** 30, pods: 3 } });
  const c = (name: string, cpu?: string, memory?: string, where: "requests" | "limits" = "requests") => ({
    name,
    image: "busybox:1",
    resources: { [where]: { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) } },
  });

  it("app containers add up; the largest init container counts when it is more", () => {
    expect(admitPod(pod({ containers: [c("a", "1"), c("b", "1")] }), big, []).admit).toBe(true);
    const r = admitPod(pod({ containers: [c("a", "1"), c("b", "1001m")] }), big, []);
    expect(r.admit || r.message).toBe(
      "Node didn't have enough resource: cpu, requested: 2001, used: 0, capacity: 2000",
    );
    const init = admitPod(pod({ initContainers: [c("i", "2500m")], containers: [c("a", "100m")] }), big, []);
    expect(init).toMatchObject({
      reason: "OutOfcpu",
      failures: [{ path: "spec.initContainers[0].resources.requests.cpu" }],
    });
  });

  it("requests default to limits (API-server defaulting)", () => {
    const r = admitPod(pod({ containers: [c("a", undefined, "2Gi", "limits")] }), big, []);
    expect(r).toMatchObject({
      reason: "OutOfmemory",
      message: `Node didn't have enough resource: memory, requested: ${2 * 2 ** 30}, used: 0, capacity: ${2 ** 30}`,
    });
  });

  it("the other pods' requests are used; a pod that requests nothing always fits the resources", () => {
    const others = [pod({ containers: [c("a", "1500m", "512Mi")] })];
    expect(reasons(admitPod(pod({ containers: [c("a", "600m", "600Mi")] }), big, others))).toEqual([
      "OutOfcpu",
      "OutOfmemory",
    ]);
    expect(admitPod(pod({ containers: [c("a", "500m", "512Mi")] }), big, others).admit).toBe(true);
    expect(admitPod(pod(), node({ allocatable: { milliCPU: 0, memory: 0 } }), others).admit).toBe(true);
  });

  it("OutOfpods: at most max-pods pods", () => {
    const r = admitPod(pod(), big, [pod(), pod(), pod()]);
    expect(r).toMatchObject({
      reason: "OutOfpods",
      message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    });
  });

  it("a resource with no known allocatable is not checked (a Worker that was not told)", () => {
    expect(admitPod(pod({ containers: [c("a", "64", "1Ti")] }), node({ allocatable: {} }), []).admit).toBe(true);
  });
});

describe("the node from settings (kubelet's default labels, --node-labels, --register-with-taints)", () => {
  const Settings = z.object({ ...nodeAdmissionSettingsShape, PODSYNC_NODE_MEMORY_BYTES: z.coerce.number().optional() });
  const parse = (env: Record<string, string>) => Settings.safeParse(env);

  it("defaults: hostname = node name, os = linux, arch in Go's names; the machine's cpus and memory; 110 pods", () => {
    const s = parse({});
    expect(s.success).toBe(true);
    expect(nodeInfoFrom(s.data!, "edge-7", { arch: "x64", cpus: 4, memoryBytes: 8e9 })).toEqual({
      name: "edge-7",
      labels: { "kubernetes.io/hostname": "edge-7", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64" },
      taints: [],
      allocatable: { milliCPU: 4000, memory: 8e9, pods: 110 },
    });
    expect(nodeInfoFrom(s.data!, "edge-7", { arch: "arm64" }).labels["kubernetes.io/arch"]).toBe("arm64");
    // A Worker knows nothing of the machine: no arch label, cpu and memory unchecked.
    expect(nodeInfoFrom(s.data!, "edge-7", {})).toMatchObject({
      labels: { "kubernetes.io/hostname": "edge-7", "kubernetes.io/os": "linux" },
      allocatable: { milliCPU: undefined, memory: undefined },
    });
  });

  it("labels, taints, cpu, max pods and arch from the owner", () => {
    const s = parse({
      PODSYNC_NODE_LABELS: "site=berlin, node-role.kubernetes.io/edge=",
      PODSYNC_NODE_TAINTS: "dedicated=edge:NoSchedule,maintenance:NoExecute",
      PODSYNC_NODE_CPU: "3500m",
      PODSYNC_NODE_MAX_PODS: "20",
      PODSYNC_NODE_ARCH: "arm64",
      PODSYNC_NODE_MEMORY_BYTES: "1000",
    });
    expect(s.success, JSON.stringify(s.error?.issues)).toBe(true);
    expect(nodeInfoFrom(s.data!, "n", { arch: "x64", cpus: 8, memoryBytes: 5 })).toEqual({
      name: "n",
      labels: {
        "kubernetes.io/hostname": "n",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64",
        site: "berlin",
        "node-role.kubernetes.io/edge": "",
      },
      taints: [
        { key: "dedicated", value: "edge", effect: "NoSchedule" },
        { key: "maintenance", effect: "NoExecute" },
      ],
      allocatable: { milliCPU: 3500, memory: 1000, pods: 20 },
    });
  });

  it("one node's overrides (a Worker's PODSYNC_NODES entry) replace the shared values for that node", () => {
    const s = parse({ PODSYNC_NODE_LABELS: "fleet=a", PODSYNC_NODE_TAINTS: "shared:NoSchedule" });
    const o = NodeOverrides.parse({ labels: "site=edge", cpu: "2", memoryBytes: 1024, arch: "arm64" });
    expect(nodeInfoFrom(withNodeOverrides(s.data!, o), "edge-7", {})).toEqual({
      name: "edge-7",
      labels: {
        "kubernetes.io/hostname": "edge-7",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64",
        site: "edge",
      },
      taints: [{ key: "shared", effect: "NoSchedule" }],
      allocatable: { milliCPU: 2000, memory: 1024, pods: 110 },
    });
    expect(NodeOverrides.safeParse({ labels: "bad" }).success).toBe(false);
    expect(NodeOverrides.safeParse({ zone: "x" }).success).toBe(false);
  });

  it("bad values are refused naming the item", () => {
    const msgs = (env: Record<string, string>) =>
      parse(env).error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`) ?? [];
    expect(msgs({ PODSYNC_NODE_LABELS: "novalue" })).toEqual(['PODSYNC_NODE_LABELS: "novalue": must be key=value']);
    expect(msgs({ PODSYNC_NODE_LABELS: "kubernetes.io/os=windows" })[0]).toMatch(/kubernetes.io\/os is the node's own/);
    expect(msgs({ PODSYNC_NODE_LABELS: "a=b c" })[0]).toMatch(/the value must be/);
    expect(msgs({ PODSYNC_NODE_TAINTS: "a=b" })).toEqual([
      'PODSYNC_NODE_TAINTS: "a=b": must be key=value:Effect or key:Effect',
    ]);
    expect(msgs({ PODSYNC_NODE_TAINTS: "a=b:Never" })[0]).toMatch(
      /the effect must be one of NoSchedule, PreferNoSchedule, NoExecute/,
    );
    expect(msgs({ PODSYNC_NODE_CPU: "lots" })[0]).toMatch(/positive cpu quantity/);
    expect(msgs({ PODSYNC_NODE_ARCH: "x64" })[0]).toMatch(/must be one of amd64/);
  });
});

describe("a whole desired set, in order (kubelet's HandlePodAdditions)", () => {
  it("each pod against the ones admitted before it; a refused pod takes nothing from the ones after it", () => {
    const n = node({ allocatable: { milliCPU: 1000, memory: 2 ** 30, pods: 10 } });
    const cpu = (c: string, hostPort?: number) => ({
      containers: [
        {
          name: "c",
          image: "busybox:1",
          resources: { requests: { cpu: c } },
          ...(hostPort ? { ports: [{ containerPort: 80, hostPort }] } : {}),
        },
      ],
    });
    const refused = admitInOrder([pod(cpu("600m", 80)), pod(cpu("600m")), pod(cpu("400m", 80)), pod(cpu("400m"))], n);
    expect(refused.map((r) => [r.index, r.result.reason])).toEqual([
      [1, "OutOfcpu"],
      [2, "NodePorts"],
    ]);
  });
});

describe("the eviction manager's Admit under node conditions (eviction_manager.go)", () => {
  const guaranteed = {
    containers: [
      {
        name: "c",
        image: "busybox:1",
        resources: { requests: { cpu: "1m", memory: "1" }, limits: { cpu: "1m", memory: "1" } },
      },
    ],
  };
  const qosPods = () => [pod(guaranteed), pod(requests("1m", "1")), pod()];
  const pressed = node({ conditions: () => ["DiskPressure"] });

  it("TestAdmitUnderNodeConditions, the DiskPressure rows: every QoS class admitted without a condition, refused under DiskPressure with reason Evicted and nodeConditionMessageFmt", () => {
    expect(qosPods().map((p) => admitPod(p, node({ conditions: () => [] }), []).admit)).toEqual([true, true, true]);
    for (const p of qosPods())
      expect(admitPod(p, pressed, [])).toEqual({
        admit: false,
        reason: "Evicted",
        message: "The node had condition: [DiskPressure]. ",
        failures: [{ reason: "Evicted", message: "The node had condition: [DiskPressure]. ", path: "metadata.name" }],
      });
  });

  it("a critical pod (priority at least SystemCriticalPriority) is admitted under pressure (kubelettypes.IsCriticalPod)", () => {
    expect(admitPod(pod({ priority: 2_000_000_000 }), pressed, []).admit).toBe(true);
    expect(admitPod(pod({ priority: 1_999_999_999 }), pressed, []).admit).toBe(false);
  });

  it("the handler runs first and alone: a pod that would also fail a predicate is refused for the pressure only", () => {
    expect(reasons(admitPod(pod({ nodeName: "machine2" }), pressed, []))).toEqual(["Evicted"]);
  });

  it("a pod already admitted is not admitted again (HandlePodUpdates): a re-sync, or a PUT set that keeps it, passes; a new pod in the same set is refused", () => {
    const kept = pod();
    expect(admitPod(kept, pressed, [kept]).admit).toBe(true);
    const fresh = pod();
    expect(
      admitInOrder([kept, fresh], pressed, new Set([kept.metadata.uid])).map((r) => [r.index, r.result.reason]),
    ).toEqual([[1, "Evicted"]]);
  });
});
