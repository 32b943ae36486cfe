// The pods' CPU and memory as metrics-server would give them to the HPA (resource metrics API), read from the
// runtime: one CRI ListContainerStats for the node's managed containers. CPU is the rate of the cumulative
// usage_core_nano_seconds between this sample and the container's previous one (metrics-server's rate over its
// window), or the runtime's usage_nano_cores for a container seen the first time; memory is the working set.
// A container with no usable sample yet has no metric (the HPA counts its pod as missing).
import type { CriClient } from "../../cri/client.js";
import { CONTAINER_NAME_LABEL, KUBERNETES_MANAGED_LABEL, MANAGED_BY, POD_UID_LABEL } from "../../container/labels.js";
import type { PodUsage } from "./horizontal.js";

export type PodUsageSource = () => Promise<PodUsage>;

export function criPodUsage(cri: Pick<CriClient, "listContainerStats">): PodUsageSource {
  const previous = new Map<string, { ns: bigint; at: bigint }>();
  return async () => {
    const { stats } = await cri.listContainerStats({
      filter: { labelSelector: { [KUBERNETES_MANAGED_LABEL]: MANAGED_BY } },
    });
    const out = new Map<
      string,
      { timestamp: number; windowMs: number; containers: Map<string, { cpu: number; memory: number }> }
    >();
    const seen = new Set<string>();
    for (const s of stats) {
      const id = s.attributes?.id ?? "";
      const labels = s.attributes?.labels ?? {};
      const uid = labels[POD_UID_LABEL];
      const name = labels[CONTAINER_NAME_LABEL];
      const cum = s.cpu?.usageCoreNanoSeconds?.value;
      const at = s.cpu?.timestamp;
      if (!uid || !name || cum === undefined || !at) continue;
      seen.add(id);
      const prev = previous.get(id);
      previous.set(id, { ns: cum, at });
      let milli: number | undefined;
      let windowMs = 0;
      if (prev && at > prev.at && cum >= prev.ns) {
        milli = Math.round((Number(cum - prev.ns) / Number(at - prev.at)) * 1000);
        windowMs = Number(at - prev.at) / 1e6;
      } else if (s.cpu?.usageNanoCores?.value !== undefined && s.cpu.usageNanoCores.value > 0n) {
        milli = Math.round(Number(s.cpu.usageNanoCores.value) / 1e6);
      }
      if (milli === undefined) continue;
      const entry = out.get(uid) ?? { timestamp: Number(at / 1_000_000n), windowMs, containers: new Map() };
      entry.containers.set(name, { cpu: milli, memory: Number(s.memory?.workingSetBytes?.value ?? 0n) });
      out.set(uid, entry);
    }
    for (const id of [...previous.keys()]) if (!seen.has(id)) previous.delete(id);
    return out;
  };
}
