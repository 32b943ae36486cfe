// The downward API: a pod's own fields and its containers' resources as env values and volume files
// (kubelet_pods.go podFieldSelectorRuntimeValue, containerResourceRuntimeValue, defaultPodLimitsForDownwardAPI;
// pkg/fieldpath ExtractFieldPathAsString and FormatMap; pkg/api/v1/resource ExtractContainerResourceValue).
import type { Container, Pod } from "../pod/schema.js";
import { bytes, milliCPU, parseQuantity } from "../pod/quantity.js";
import { splitSubscript, type ResourceFieldSelector } from "../pod/sources.js";
import type { NodeConfig } from "./node-config.js";

/** What the downward API reads besides the pod itself. */
export interface DownwardInfo {
  node: NodeConfig;
  /** The node's addresses (status.hostIP(s)). */
  hostIPs: readonly string[];
  /** The pod's addresses (status.podIP(s)): the sandbox's, or the node's for a hostNetwork pod. */
  podIPs: readonly string[];
}

/** Go's strconv.Quote, which fmt's %q uses: the file format of labels and annotations. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\x07") out += "\\a";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (ch === "\v") out += "\\v";
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, "0")}`;
    else if ((c >= 0x80 && c < 0xa0) || c === 0xad) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** fieldpath.FormatMap: `key="value"` lines in key order, no trailing newline. */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${goQuote(m![k]!)}`)
    .join("\n");
}

/** podFieldSelectorRuntimeValue / ExtractFieldPathAsString for a (validated) fieldPath. */
export function fieldRefValue(pod: Pod, fieldPath: string, info: DownwardInfo): string {
  const sub = splitSubscript(fieldPath);
  if (sub) return (sub[0] === "metadata.labels" ? pod.metadata.labels : pod.metadata.annotations)?.[sub[1]] ?? "";
  switch (fieldPath) {
    case "metadata.name":
      return pod.metadata.name;
    case "metadata.namespace":
      return pod.metadata.namespace;
    case "metadata.uid":
      return pod.metadata.uid;
    case "metadata.labels":
      return formatMap(pod.metadata.labels);
    case "metadata.annotations":
      return formatMap(pod.metadata.annotations);
    case "spec.nodeName":
      // kubelet returns the scheduler's binding; here the pod is bound to this node (admission checks a
      // spec.nodeName against it), so its name is the value.
      return pod.spec.nodeName ?? info.node.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec.serviceAccountName ?? "";
    case "status.hostIP":
      return info.hostIPs[0] ?? "";
    case "status.hostIPs":
      return info.hostIPs.join(",");
    case "status.podIP":
      return info.podIPs[0] ?? "";
    case "status.podIPs":
      return info.podIPs.join(",");
  }
  return "";
}

/** ExtractContainerResourceValue over defaultPodLimitsForDownwardAPI: a limit not set is the node's
 * allocatable (podsync reserves nothing: allocatable is the capacity); a request not set is its limit when
 * one is set (API-server defaulting), else 0. Divided by the divisor and rounded up. */
export function resourceFieldValue(ref: ResourceFieldSelector, pod: Pod, self: Container, node: NodeConfig): string {
  const c = ref.containerName
    ? [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((x) => x.name === ref.containerName)
    : self;
  if (!c) return "";
  const [kind, res] = ref.resource.split(".") as ["limits" | "requests", "cpu" | "memory"];
  const lim = c.resources?.limits?.[res];
  const req = c.resources?.requests?.[res] ?? lim;
  const divisor = ref.divisor !== undefined ? (parseQuantity(ref.divisor) ?? 1) : 1;
  if (res === "cpu") {
    const capacity = Math.round((node.cpuCapacity ?? 1) * 1000);
    const milli =
      kind === "limits" ? (lim !== undefined ? milliCPU(lim) : capacity) : req !== undefined ? milliCPU(req) : 0;
    return String(Math.ceil(milli / Math.round(divisor * 1000)));
  }
  const b =
    kind === "limits" ? (lim !== undefined ? bytes(lim) : node.memoryCapacity) : req !== undefined ? bytes(req) : 0;
  return String(Math.ceil(b / divisor));
}
