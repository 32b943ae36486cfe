// Package kubeapi/metrics/ — metrics.k8s.io (kubectl top) on the stats/ sampler.
// Imports ../ (watch hub, selectors, status) and stats/; never the runtime directly or an entry point.
//
// metrics.k8s.io/v1beta1, as metrics-server serves it (pkg/api: PodMetrics per container, NodeMetrics), from the
// node's resource sampler (src/stats/resource-metrics.ts): `kubectl top pod` and `kubectl top node`. Pods are the
// node's desired pods (their labels for -l); a pod with no rate yet (started since the last sample) is left out,
// as metrics-server leaves it out until it has two points. Read-only: get and list.
import type { Context, Hono } from "hono";
import type { ContainerUsage, NodeUsage } from "../../stats/resource-metrics.js";
import type { V1Pod } from "../../status/api-status.js";
import type { V1Node } from "../node-object.js";
import { parseLabelSelector, SelectorError } from "../selectors.js";
import { badRequest, KubeStatusError, notFound } from "../status.js";
import type { WatchHub } from "../watch-hub.js";

export interface MetricsSource {
  read(): Promise<{ containers: ContainerUsage[]; node?: NodeUsage }>;
}

const API_VERSION = "metrics.k8s.io/v1beta1";
const GROUP = "metrics.k8s.io";

/** A CPU quantity as resource.NewScaledQuantity(nanocores, -9) serialises: `1234n`, `5m`, `0`. */
export function cpuQuantity(nanoCores: number): string {
  if (nanoCores === 0) return "0";
  if (nanoCores % 1e9 === 0) return String(nanoCores / 1e9);
  if (nanoCores % 1e6 === 0) return `${nanoCores / 1e6}m`;
  if (nanoCores % 1e3 === 0) return `${nanoCores / 1e3}u`;
  return `${nanoCores}n`;
}

/** A memory quantity as resource.NewQuantity(bytes, BinarySI) serialises: a binary suffix when exact, else bytes. */
export function memoryQuantity(bytes: number): string {
  if (bytes < 1024) return String(bytes);
  for (const [suffix, unit] of [
    ["Ti", 1024 ** 4],
    ["Gi", 1024 ** 3],
    ["Mi", 1024 ** 2],
    ["Ki", 1024],
  ] as const)
    if (bytes % unit === 0) return `${bytes / unit}${suffix}`;
  return String(bytes);
}

const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
const windowOf = (ms: number) => `${Math.round(ms) / 1000}s`;

export interface MetricsRoutesOptions {
  source: MetricsSource | undefined;
  pods: WatchHub<V1Pod>;
  node: WatchHub<V1Node>;
  /** Before answering about pods (their first feed), and about the node. */
  load: () => Promise<void>;
  loadNode: () => Promise<void>;
  now?: () => number;
}

export function registerMetrics<E extends object>(app: Hono<E>, o: MetricsRoutesOptions): void {
  const now = o.now ?? Date.now;
  const base = `/apis/${GROUP}/v1beta1`;
  const read = async () => {
    if (!o.source)
      throw new KubeStatusError(503, "ServiceUnavailable", "the Metrics API is not collected here (no CRI stats)", {});
    await o.load();
    return o.source.read();
  };
  const podMetrics = (pod: V1Pod, usage: readonly ContainerUsage[]) => {
    const mine = usage.filter((u) => u.podUid === pod.metadata.uid);
    if (mine.length === 0) return undefined;
    return {
      kind: "PodMetrics",
      apiVersion: API_VERSION,
      metadata: {
        name: pod.metadata.name,
        namespace: pod.metadata.namespace,
        creationTimestamp: iso(now()),
        ...(pod.metadata.labels ? { labels: pod.metadata.labels } : {}),
      },
      timestamp: iso(Math.max(...mine.map((u) => u.at))),
      window: windowOf(Math.max(...mine.map((u) => u.windowMs))),
      containers: mine.map((u) => ({
        name: u.container,
        usage: { cpu: cpuQuantity(u.nanoCores), memory: memoryQuantity(u.memoryBytes) },
      })),
    };
  };
  const labelFilter = (c: Context) => {
    try {
      return parseLabelSelector(c.req.query("labelSelector"));
    } catch (e) {
      if (e instanceof SelectorError) throw badRequest(e.message);
      throw e;
    }
  };
  const listPods = async (c: Context, ns: string | undefined) => {
    const sel = labelFilter(c);
    const { containers } = await read();
    const items = o.pods
      .list()
      .filter((p) => (ns === undefined || p.metadata.namespace === ns) && sel.matches(p.metadata.labels))
      .flatMap((p) => podMetrics(p, containers) ?? []);
    return c.json({ kind: "PodMetricsList", apiVersion: API_VERSION, metadata: {}, items });
  };
  app.get(`${base}/pods`, (c) => listPods(c, undefined));
  app.get(`${base}/namespaces/:ns/pods`, (c) => listPods(c, c.req.param("ns")));
  app.get(`${base}/namespaces/:ns/pods/:name`, async (c) => {
    const { containers } = await read();
    const pod = o.pods
      .list()
      .find((p) => p.metadata.namespace === c.req.param("ns") && p.metadata.name === c.req.param("name"));
    const m = pod && podMetrics(pod, containers);
    if (!m) throw notFound("pods", c.req.param("name"), GROUP);
    return c.json(m);
  });
  const nodeMetrics = (n: V1Node, u: NodeUsage) => ({
    kind: "NodeMetrics",
    apiVersion: API_VERSION,
    metadata: { name: n.metadata.name, creationTimestamp: iso(now()), labels: n.metadata.labels },
    timestamp: iso(u.at),
    window: windowOf(u.windowMs),
    usage: { cpu: cpuQuantity(u.nanoCores), memory: memoryQuantity(u.memoryBytes) },
  });
  app.get(`${base}/nodes`, async (c) => {
    const sel = labelFilter(c);
    await o.loadNode();
    const { node } = await read();
    const items = node
      ? o.node
          .list()
          .filter((n) => sel.matches(n.metadata.labels))
          .map((n) => nodeMetrics(n, node))
      : [];
    return c.json({ kind: "NodeMetricsList", apiVersion: API_VERSION, metadata: {}, items });
  });
  app.get(`${base}/nodes/:name`, async (c) => {
    await o.loadNode();
    const { node } = await read();
    const n = o.node.list().find((x) => x.metadata.name === c.req.param("name"));
    if (!n || !node) throw notFound("nodes", c.req.param("name"), GROUP);
    return c.json(nodeMetrics(n, node));
  });
}
