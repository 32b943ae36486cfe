// Package lifecycle/ (kubelet's pkg/kubelet/lifecycle) — node admission: predicates and the node-level checks a pod must pass.
// Pure; imports pod/ and container/ only.
//
// Admission against the node itself, as kubelet's predicate admit handler does it before a pod may start
// (pkg/kubelet/lifecycle/predicate.go: Admit, generalFilter; the scheduler's AdmissionCheck in
// pkg/scheduler/schedule_one.go with the noderesources, nodeaffinity, nodename and nodeports plugins, and
// component-helpers/scheduling/corev1 for node selectors and tolerations). Pure: the pod, what the node is,
// and the other pods it has been given; no I/O.
//
// One difference, podsync's own: kubelet checks only NoExecute taints, because a scheduler has already kept
// pods off NoSchedule taints. podsync has no scheduler in front of it (the signer names the node), so it also
// applies the scheduler's TaintToleration filter: NoSchedule taints must be tolerated too. PreferNoSchedule
// only ranks nodes and is not checked, as in both.
import { isRestartableInitContainer, type Container, type Pod } from "../pod/schema.js";
import type { NodeSelectorRequirement, NodeSelectorTerm, TaintEffect, Toleration } from "../pod/scheduling.js";
import { bytes, milliCPU } from "../pod/quantity.js";
import { admitUnderPressure, type PressureCondition } from "./pressure-admission.js";

export interface Taint {
  key: string;
  value?: string | undefined;
  effect: TaintEffect;
}

/** What the node says about itself: kubelet's v1.Node, as far as admission reads it. */
export interface NodeInfo {
  name: string;
  /** kubelet's default labels (hostname, os, arch) plus the owner's. */
  labels: Readonly<Record<string, string>>;
  taints: readonly Taint[];
  /** Allocatable resources; an unknown one (undefined) is not checked. */
  allocatable: {
    milliCPU?: number | undefined;
    memory?: number | undefined;
    pods?: number | undefined;
    ephemeralStorage?: number | undefined;
  };
  /** The eviction manager's node conditions now (DiskPressure), read at each admission; none when unset. */
  conditions?: (() => readonly PressureCondition[]) | undefined;
}

/** One failed predicate: kubelet's reason and message, and the pod field it is about. */
export interface AdmissionFailure {
  reason: string;
  message: string;
  path: string;
}

export type AdmitResult =
  | { admit: true }
  | { admit: false; reason: string; message: string; failures: AdmissionFailure[] };

// The scheduler plugins' names and reasons, as kubelet reports them (PredicateFailureError.Error()).
const predicate = (name: string, desc: string) => ({ reason: name, message: `Predicate ${name} failed: ${desc}` });
export const NODE_AFFINITY = predicate("NodeAffinity", "node(s) didn't match Pod's node affinity/selector");
export const NODE_NAME = predicate("NodeName", "node(s) didn't match the requested node name");
export const NODE_PORTS = predicate("NodePorts", "node(s) didn't have free ports for the requested pod ports");
export const TAINT_TOLERATION = predicate("TaintToleration", "node(s) had taints that the pod didn't tolerate");
export const OS_SELECTOR = {
  reason: "PodOSSelectorNodeLabelDoesNotMatch",
  message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
};
export const OS_NOT_SUPPORTED = {
  reason: "PodOSNotSupported",
  message: "Failed to admit pod as the OS field doesn't match node OS",
};

export const LABEL_HOSTNAME = "kubernetes.io/hostname";
export const LABEL_OS = "kubernetes.io/os";
export const LABEL_ARCH = "kubernetes.io/arch";
/** The node OS: podsync runs Linux containers only (kubelet compares with runtime.GOOS). */
export const NODE_OS = "linux";

/**
 * kubelet's Admit: the eviction manager's handler first (pressure-admission.ts: under DiskPressure a pod not
 * yet admitted is refused for that alone), then the predicates: the OS checks, then generalFilter (resources,
 * node affinity and selector, node name, host ports, taints). kubelet reports the first failure; every
 * predicate failure is returned here, the first one as the reason, so a caller fixes them all at once.
 * `admitted`: the pod is already on the node (by default, when `others` holds its uid).
 */
export function admitPod(
  pod: Pod,
  node: NodeInfo,
  others: readonly Pod[],
  admitted = others.some((p) => p.metadata.uid === pod.metadata.uid),
): AdmitResult {
  const pressure = admitted ? undefined : admitUnderPressure(pod, node.conditions?.() ?? []);
  if (pressure) return { admit: false, ...pressure, failures: [{ ...pressure, path: "metadata.name" }] };
  const failures: AdmissionFailure[] = [];
  const os = pod.metadata.labels?.[LABEL_OS];
  if (os !== undefined && os !== NODE_OS) failures.push({ ...OS_SELECTOR, path: `metadata.labels[${LABEL_OS}]` });
  if (pod.spec.os && pod.spec.os.name !== NODE_OS) failures.push({ ...OS_NOT_SUPPORTED, path: "spec.os.name" });
  // kubelet returns here before generalFilter: a pod for another OS is refused for that alone.
  if (failures.length === 0) {
    const rest = others.filter((p) => p.metadata.uid !== pod.metadata.uid);
    failures.push(...insufficientResources(pod, node, rest));
    if (!matchesNodeSelectorAndAffinity(pod, node)) failures.push({ ...NODE_AFFINITY, path: affinityPath(pod, node) });
    if (pod.spec.nodeName !== undefined && pod.spec.nodeName !== node.name)
      failures.push({ ...NODE_NAME, path: "spec.nodeName" });
    failures.push(...portConflicts(pod, rest));
    const taint = untoleratedTaint(node.taints, pod.spec.tolerations ?? []);
    if (taint)
      failures.push({
        ...TAINT_TOLERATION,
        message: `${TAINT_TOLERATION.message}: {${taint.key}${taint.value ? `=${taint.value}` : ""}:${taint.effect}}`,
        path: "spec.tolerations",
      });
  }
  if (failures.length === 0) return { admit: true };
  return { admit: false, reason: failures[0]!.reason, message: failures[0]!.message, failures };
}

/** A whole desired set (PUT /v1/node/pods), as kubelet's HandlePodAdditions admits pods: one at a time, in the
 * given order, each against the pods admitted before it; `onNode`: the uids already on the node (the desired
 * set before), which node pressure does not refuse. Returns each refused pod's index and result. */
export function admitInOrder(
  pods: readonly Pod[],
  node: NodeInfo,
  onNode: ReadonlySet<string> = new Set(),
): { index: number; result: Extract<AdmitResult, { admit: false }> }[] {
  const admitted: Pod[] = [];
  const refused: { index: number; result: Extract<AdmitResult, { admit: false }> }[] = [];
  pods.forEach((p, index) => {
    const r = admitPod(p, node, admitted, onNode.has(p.metadata.uid));
    if (r.admit) admitted.push(p);
    else refused.push({ index, result: r });
  });
  return refused;
}

// ---- resources (noderesources.Fits) ----

type Requests = { milliCPU: number; memory: number; ephemeralStorage: number };
const NONE: Requests = { milliCPU: 0, memory: 0, ephemeralStorage: 0 };

/** A container's requests, defaulting to its limits as the API server does. */
function containerRequests(c: Container): Requests {
  const r = { ...c.resources?.limits, ...c.resources?.requests };
  const es = r["ephemeral-storage"];
  return {
    milliCPU: r.cpu !== undefined ? milliCPU(r.cpu) : 0,
    memory: r.memory !== undefined ? bytes(r.memory) : 0,
    ephemeralStorage: es !== undefined ? bytes(es) : 0,
  };
}

const add = (a: Requests, b: Requests): Requests => ({
  milliCPU: a.milliCPU + b.milliCPU,
  memory: a.memory + b.memory,
  ephemeralStorage: a.ephemeralStorage + b.ephemeralStorage,
});
const max = (a: Requests, b: Requests): Requests => ({
  milliCPU: Math.max(a.milliCPU, b.milliCPU),
  memory: Math.max(a.memory, b.memory),
  ephemeralStorage: Math.max(a.ephemeralStorage, b.ephemeralStorage),
});

/** computePodResourceRequest (resourcehelper.PodRequests, with sidecars): the app containers' sum plus the
 * sidecars' (they run beside them), or, if more, the largest of what runs during initialization: each init
 * container with the sidecars started before it. podsync has no pod overhead. */
export function podRequests(pod: Pod): Requests {
  let reqs = NONE;
  for (const c of pod.spec.containers) reqs = add(reqs, containerRequests(c));
  let sidecars = NONE;
  let init = NONE;
  for (const c of pod.spec.initContainers ?? []) {
    const r = containerRequests(c);
    if (isRestartableInitContainer(c)) {
      reqs = add(reqs, r);
      sidecars = add(sidecars, r);
      init = max(init, sidecars);
    } else init = max(init, add(r, sidecars));
  }
  return max(reqs, init);
}

const insufficient = (
  resource: string,
  requested: number,
  used: number,
  capacity: number,
  path: string,
): AdmissionFailure => ({
  // kubelet: OutOfcpu, OutOfmemory, OutOfpods; InsufficientResourceError.Error() for the message.
  reason: `OutOf${resource}`,
  message: `Node didn't have enough resource: ${resource}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
  path,
});

function insufficientResources(pod: Pod, node: NodeInfo, others: readonly Pod[]): AdmissionFailure[] {
  const out: AdmissionFailure[] = [];
  const { pods, milliCPU: cpu, memory, ephemeralStorage } = node.allocatable;
  if (pods !== undefined && others.length + 1 > pods)
    out.push(insufficient("pods", 1, others.length, pods, "metadata.uid"));
  const want = podRequests(pod);
  if (want.milliCPU === 0 && want.memory === 0 && want.ephemeralStorage === 0) return out;
  const used = others.reduce((u, p) => add(u, podRequests(p)), NONE);
  if (cpu !== undefined && want.milliCPU > 0 && want.milliCPU > cpu - used.milliCPU)
    out.push(insufficient("cpu", want.milliCPU, used.milliCPU, cpu, requestPath(pod, "cpu")));
  if (memory !== undefined && want.memory > 0 && want.memory > memory - used.memory)
    out.push(insufficient("memory", want.memory, used.memory, memory, requestPath(pod, "memory")));
  if (
    ephemeralStorage !== undefined &&
    want.ephemeralStorage > 0 &&
    want.ephemeralStorage > ephemeralStorage - used.ephemeralStorage
  )
    out.push(
      insufficient(
        "ephemeral-storage",
        want.ephemeralStorage,
        used.ephemeralStorage,
        ephemeralStorage,
        requestPath(pod, "ephemeral-storage"),
      ),
    );
  return out;
}

/** The field to name for a resource: the container that requests the most of it. */
function requestPath(pod: Pod, r: "cpu" | "memory" | "ephemeral-storage"): string {
  let best = { path: "spec.containers", value: 0 };
  for (const kind of ["containers", "initContainers"] as const)
    (pod.spec[kind] ?? []).forEach((c, i) => {
      const v = containerRequests(c)[r === "cpu" ? "milliCPU" : r === "memory" ? "memory" : "ephemeralStorage"];
      if (v > best.value) best = { path: `spec.${kind}[${i}].resources.requests.${r}`, value: v };
    });
  return best.path;
}

// ---- node selector and required node affinity (component-helpers nodeaffinity.GetRequiredNodeAffinity) ----

/** The field to name: nodeSelector when it is what fails, else the required node affinity. */
function affinityPath(pod: Pod, node: NodeInfo): string {
  return pod.spec.nodeSelector && !matchesNodeSelector(pod.spec.nodeSelector, node.labels)
    ? "spec.nodeSelector"
    : "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
}

const matchesNodeSelector = (selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>) =>
  Object.entries(selector).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);

/** nodeSelector (every label equal) and the required node affinity (any term) must both match. */
export function matchesNodeSelectorAndAffinity(pod: Pod, node: NodeInfo): boolean {
  if (pod.spec.nodeSelector && !matchesNodeSelector(pod.spec.nodeSelector, node.labels)) return false;
  const required = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  return required.nodeSelectorTerms.some((t) => matchesTerm(t, node));
}

/** A term ANDs its expressions and fields; an empty term selects nothing (nodeSelectorTerms.Match). */
export function matchesTerm(term: NodeSelectorTerm, node: NodeInfo): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  return (
    exprs.every((r) => matchesRequirement(r, node.labels)) &&
    fields.every((f) => (f.operator === "In") === (f.values ?? []).includes(node.name))
  );
}

/** labels.Requirement.Matches for the node selector operators. */
export function matchesRequirement(r: NodeSelectorRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case "In":
      return has && values.includes(value!);
    case "NotIn":
      return !has || !values.includes(value!);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "Gt":
    case "Lt": {
      if (!has || !/^[+-]?[0-9]+$/.test(value!)) return false;
      const a = BigInt(value!);
      const b = BigInt(values[0]!);
      return r.operator === "Gt" ? a > b : a < b;
    }
  }
}

// ---- host ports (nodeports.Fits, HostPortInfo.CheckConflict) ----

interface HostPort {
  ip: string;
  protocol: string;
  port: number;
  path: string;
}

const ANY_IP = "0.0.0.0";

/** The pod's host ports. With hostNetwork every container port is one: the API server defaults hostPort to
 * containerPort there (SetDefaults_Pod). Only app containers count, as in the scheduler's nodeports. */
export function hostPorts(pod: Pod): HostPort[] {
  const out: HostPort[] = [];
  pod.spec.containers.forEach((c, i) =>
    (c.ports ?? []).forEach((p, j) => {
      const port = p.hostPort ?? (pod.spec.hostNetwork ? p.containerPort : undefined);
      if (port !== undefined)
        out.push({
          ip: p.hostIP || ANY_IP,
          protocol: p.protocol,
          port,
          path: `spec.containers[${i}].ports[${j}].hostPort`,
        });
    }),
  );
  return out;
}

/** 0.0.0.0 conflicts with every address on the same protocol and port; any other address with itself and 0.0.0.0. */
const conflicts = (a: HostPort, b: HostPort) =>
  a.protocol === b.protocol && a.port === b.port && (a.ip === ANY_IP || b.ip === ANY_IP || a.ip === b.ip);

function portConflicts(pod: Pod, others: readonly Pod[]): AdmissionFailure[] {
  const used = others.flatMap((p) => hostPorts(p).map((hp) => ({ ...hp, owner: p.metadata })));
  const out: AdmissionFailure[] = [];
  for (const want of hostPorts(pod)) {
    const clash = used.find((u) => conflicts(want, u));
    if (clash)
      out.push({
        ...NODE_PORTS,
        message: `${NODE_PORTS.message}: ${want.protocol} ${want.ip}:${want.port} is used by pod ${clash.owner.namespace}/${clash.owner.name} (${clash.owner.uid})`,
        path: want.path,
      });
  }
  return out;
}

// ---- taints and tolerations (v1.Toleration.ToleratesTaint, FindMatchingUntoleratedTaint) ----

/** An empty effect or key matches any; operator Exists matches any value, Equal (the default) the same value. */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  return t.operator === "Exists" ? true : (t.value ?? "") === (taint.value ?? "");
}

/** The first NoSchedule or NoExecute taint no toleration tolerates (see the header for why NoSchedule too). */
export function untoleratedTaint(taints: readonly Taint[], tolerations: readonly Toleration[]): Taint | undefined {
  return taints.find(
    (taint) =>
      (taint.effect === "NoSchedule" || taint.effect === "NoExecute") &&
      !tolerations.some((t) => toleratesTaint(t, taint)),
  );
}
