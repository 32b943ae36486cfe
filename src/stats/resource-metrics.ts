// Package stats/ — resource metrics as metrics-server computes them, sampled from CRI stats (agent layer).
// Imports cri/ only; never HTTP or an entry point (kubeapi/metrics/ reads it).
//
// Resource metrics as metrics-server computes them (pkg/storage: a rate between two points of the cumulative CPU
// counter, the latest memory working set), from CRI stats sampled on a timer, never on the sync path. The sampler
// asks the runtime once per interval (ListPodSandboxStats, which carries each pod's containers, as kubelet's
// PodAndContainerStatsFromCRI; where the runtime cannot answer it, ListContainerStats, from then on), and keeps the
// last two samples. It runs only while someone reads the metrics: the first read takes two samples a second apart,
// and the timer stops once nobody has read for `idleStopMs`. The rate is pure (usage below).
import type { CriClient } from "../cri/client.js";

/** cAdvisor's housekeeping interval (kubelet's --housekeeping-interval default): how often stats are taken. */
export const SAMPLE_EVERY_MS = 10_000;

export interface ContainerPoint {
  podUid: string;
  namespace: string;
  pod: string;
  container: string;
  /** Cumulative CPU time (ns) and when it was read (ns since the epoch). */
  cpuNs: number;
  cpuAtNs: number;
  memoryWorkingSetBytes: number;
}

export interface NodePoint {
  cpuNs: number;
  atNs: number;
  memoryWorkingSetBytes: number;
}

export interface Sample {
  containers: ContainerPoint[];
  node?: NodePoint | undefined;
}

export interface ContainerUsage {
  podUid: string;
  namespace: string;
  pod: string;
  container: string;
  nanoCores: number;
  memoryBytes: number;
  /** The later point's time (ms) and the window between the points (ms). */
  at: number;
  windowMs: number;
}
export interface NodeUsage {
  nanoCores: number;
  memoryBytes: number;
  at: number;
  windowMs: number;
}

/** metrics-server's rate: (cpu₂ − cpu₁) / (t₂ − t₁) per container present in both samples; a counter that went
 * back (the container restarted) gives no point this time, as metrics-server drops it. */
export function usage(prev: Sample, cur: Sample): { containers: ContainerUsage[]; node?: NodeUsage } {
  const before = new Map(prev.containers.map((c) => [`${c.podUid}/${c.container}`, c]));
  const containers: ContainerUsage[] = [];
  for (const c of cur.containers) {
    const p = before.get(`${c.podUid}/${c.container}`);
    if (!p || c.cpuAtNs <= p.cpuAtNs || c.cpuNs < p.cpuNs) continue;
    const windowNs = c.cpuAtNs - p.cpuAtNs;
    containers.push({
      podUid: c.podUid,
      namespace: c.namespace,
      pod: c.pod,
      container: c.container,
      nanoCores: Math.round(((c.cpuNs - p.cpuNs) / windowNs) * 1e9),
      memoryBytes: c.memoryWorkingSetBytes,
      at: Math.floor(c.cpuAtNs / 1e6),
      windowMs: Math.round(windowNs / 1e6),
    });
  }
  const a = prev.node;
  const b = cur.node;
  const node =
    a && b && b.atNs > a.atNs && b.cpuNs >= a.cpuNs
      ? {
          nanoCores: Math.round(((b.cpuNs - a.cpuNs) / (b.atNs - a.atNs)) * 1e9),
          memoryBytes: b.memoryWorkingSetBytes,
          at: Math.floor(b.atNs / 1e6),
          windowMs: Math.round((b.atNs - a.atNs) / 1e6),
        }
      : undefined;
  return { containers, ...(node ? { node } : {}) };
}

type StatsCri = Pick<CriClient, "listContainerStats" | "listPodSandboxStats">;
type ContainerStat = Awaited<ReturnType<CriClient["listContainerStats"]>>["stats"][number];

function point(s: ContainerStat): ContainerPoint | undefined {
  const l = s.attributes?.labels ?? {};
  const podUid = l["io.kubernetes.pod.uid"];
  if (!podUid || !s.cpu?.usageCoreNanoSeconds) return undefined;
  return {
    podUid,
    namespace: l["io.kubernetes.pod.namespace"] ?? "",
    pod: l["io.kubernetes.pod.name"] ?? "",
    container: l["io.kubernetes.container.name"] ?? s.attributes?.metadata?.name ?? "",
    cpuNs: Number(s.cpu.usageCoreNanoSeconds.value),
    cpuAtNs: Number(s.cpu.timestamp),
    memoryWorkingSetBytes: Number(s.memory?.workingSetBytes?.value ?? 0n),
  };
}

export interface SamplerOptions {
  cri: StatsCri;
  /** The node's own counters (root cgroup / procfs), read with each sample. */
  node?: () => NodePoint | undefined;
  everyMs?: number;
  idleStopMs?: number;
  /** Told once when ListPodSandboxStats is refused and ListContainerStats is used instead. */
  onFallback?: (why: string) => void;
}

export interface ResourceSampler {
  /** The usage between the last two samples (the first read waits for two). */
  read(): Promise<{ containers: ContainerUsage[]; node?: NodeUsage }>;
  stop(): void;
}

export function createResourceSampler(o: SamplerOptions): ResourceSampler {
  const everyMs = o.everyMs ?? SAMPLE_EVERY_MS;
  const idleStopMs = o.idleStopMs ?? 10 * 60_000;
  let sandboxStats = true;
  let prev: Sample | undefined;
  let cur: Sample | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let lastRead = 0;
  let first: Promise<void> | undefined;

  const take = async (): Promise<Sample> => {
    let stats: ContainerStat[];
    if (sandboxStats) {
      try {
        const r = await o.cri.listPodSandboxStats({ filter: {} });
        stats = r.stats.flatMap((p) => p.linux?.containers ?? []);
      } catch (e) {
        sandboxStats = false;
        o.onFallback?.(String((e as Error)?.message ?? e).slice(0, 300));
        stats = (await o.cri.listContainerStats({ filter: {} })).stats;
      }
    } else stats = (await o.cri.listContainerStats({ filter: {} })).stats;
    return { containers: stats.flatMap((s) => point(s) ?? []), node: o.node?.() };
  };
  const tick = async () => {
    if (Date.now() - lastRead > idleStopMs) {
      clearInterval(timer);
      timer = undefined;
      first = undefined;
      prev = cur = undefined;
      return;
    }
    const s = await take();
    prev = cur;
    cur = s;
  };
  const start = async () => {
    prev = await take();
    await new Promise((r) => setTimeout(r, 1000));
    cur = await take();
    timer = setInterval(() => void tick().catch(() => undefined), everyMs);
    timer.unref?.();
  };
  return {
    async read() {
      lastRead = Date.now();
      await (first ??= start().catch((e: unknown) => {
        first = undefined;
        throw e;
      }));
      return prev && cur ? usage(prev, cur) : { containers: [] };
    },
    stop() {
      clearInterval(timer);
    },
  };
}
