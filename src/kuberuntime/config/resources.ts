// Container resources as Linux cgroup settings, and the QoS class and OOM score that follow from them
// (pkg/kubelet/cm/helpers_linux.go, pkg/kubelet/qos).
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Container, Pod } from "../../pod/schema.js";
import { bytes, milliCPU } from "../../pod/quantity.js";
import type { LinuxContainerResourcesSchema } from "../../gen/runtime/v1/api_pb.js";
import type { NodeConfig } from "../../container/node-config.js";

const MIN_SHARES = 2;
const QUOTA_PERIOD = 100_000;
const MIN_QUOTA = 1000;

export type QOSClass = "Guaranteed" | "Burstable" | "BestEffort";

/** v1qos.GetPodQOS over cpu and memory. Requests default to limits (API-server defaulting). */
export function podQOS(pod: Pod): QOSClass {
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  let any = false;
  let guaranteed = true;
  for (const c of all) {
    const lim = c.resources?.limits ?? {};
    const req = { ...lim, ...c.resources?.requests };
    for (const r of ["cpu", "memory"] as const) {
      const rq = req[r] !== undefined ? (r === "cpu" ? milliCPU(req[r]) : bytes(req[r])) : 0;
      const lm = lim[r] !== undefined ? (r === "cpu" ? milliCPU(lim[r]) : bytes(lim[r])) : 0;
      if (rq > 0 || lm > 0) any = true;
      if (lm === 0 || rq !== lm) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

/** qos.GetContainerOOMScoreAdjust */
export function oomScoreAdj(pod: Pod, container: Container, node: NodeConfig): number {
  const qos = podQOS(pod);
  if (qos === "Guaranteed") return -997;
  if (qos === "BestEffort") return 1000;
  const req = container.resources?.requests?.memory ?? container.resources?.limits?.memory;
  const memRequest = req !== undefined ? bytes(req) : 0;
  const adj = 1000 - Math.floor((1000 * memRequest) / node.memoryCapacity);
  return Math.min(999, Math.max(2, adj));
}

export function linuxResources(
  pod: Pod,
  container: Container,
  node: NodeConfig,
): MessageInitShape<typeof LinuxContainerResourcesSchema> {
  const lim = container.resources?.limits ?? {};
  const req = { ...lim, ...container.resources?.requests };
  const cpuReq = req.cpu !== undefined ? milliCPU(req.cpu) : 0;
  const cpuLim = lim.cpu !== undefined ? milliCPU(lim.cpu) : 0;
  const shares = cpuReq === 0 ? MIN_SHARES : Math.max(MIN_SHARES, Math.floor((cpuReq * 1024) / 1000));
  const quota = cpuLim === 0 ? 0 : Math.max(MIN_QUOTA, Math.floor((cpuLim * QUOTA_PERIOD) / 1000));
  return {
    cpuPeriod: BigInt(QUOTA_PERIOD),
    cpuQuota: BigInt(quota),
    cpuShares: BigInt(shares),
    memoryLimitInBytes: BigInt(lim.memory !== undefined ? bytes(lim.memory) : 0),
    oomScoreAdj: BigInt(oomScoreAdj(pod, container, node)),
  };
}
