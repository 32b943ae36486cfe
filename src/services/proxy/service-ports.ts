// The proxier's view of Services and their endpoints, from the Service and EndpointSlice objects: kube-proxy's
// ServicePort map (pkg/proxy/servicechangetracker.go serviceToServiceMap, serviceport.go newBaseServiceInfo), its
// endpoints map (endpointslicecache.go) and CategorizeEndpoints (topology.go), for one IP family (IPv4). Pure.
import { isIPv4 } from "node:net";
import type { EndpointSlice, Service } from "../types.js";
import { LABEL_SERVICE_NAME } from "../types.js";
import type { ServicePortName } from "./names.js";

/** v1.DefaultClientIPServiceAffinitySeconds. */
export const DEFAULT_AFFINITY_SECONDS = 10800;

export interface ServicePortInfo {
  name: ServicePortName;
  clusterIP: string;
  port: number;
  nodePort: number;
  /** lower case: tcp, udp, sctp */
  protocol: string;
  /** seconds; 0 = no affinity */
  stickyMaxAgeSeconds: number;
  externalPolicyLocal: boolean;
  internalPolicyLocal: boolean;
  /** NodePort or LoadBalancer: reachable from outside (ExternallyAccessible). */
  externallyAccessible: boolean;
}

export interface EndpointInfo {
  ip: string;
  port: number;
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  isLocal: boolean;
}

const portKey = (ns: string, name: string, port: string, protocol: string) => `${ns}/${name}:${port}/${protocol}`;

/** utilproxy.ShouldSkipService: ExternalName and headless Services have no rules. IPv4 ClusterIPs only. */
export function servicePorts(services: readonly Service[]): ServicePortInfo[] {
  const out: ServicePortInfo[] = [];
  for (const svc of services) {
    const spec = svc.spec;
    if (spec.type === "ExternalName") continue;
    const ip = [spec.clusterIP, ...(spec.clusterIPs ?? [])].find((a) => a && a !== "None" && isIPv4(a));
    if (!ip) continue;
    const affinity =
      spec.sessionAffinity === "ClientIP"
        ? (spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? DEFAULT_AFFINITY_SECONDS)
        : 0;
    const externallyAccessible = spec.type === "NodePort" || spec.type === "LoadBalancer";
    for (const p of spec.ports ?? []) {
      const protocol = (p.protocol ?? "TCP").toLowerCase();
      out.push({
        name: { namespace: svc.metadata.namespace, name: svc.metadata.name, port: p.name ?? "", protocol },
        clusterIP: ip,
        port: p.port,
        nodePort: externallyAccessible ? (p.nodePort ?? 0) : 0,
        protocol,
        stickyMaxAgeSeconds: affinity,
        externalPolicyLocal: externallyAccessible && spec.externalTrafficPolicy === "Local",
        internalPolicyLocal: spec.internalTrafficPolicy === "Local",
        externallyAccessible,
      });
    }
  }
  return out;
}

/** endpointslicecache.go: the endpoints of each service port, deduplicated by ip:port, from IPv4 slices. Local
 * means the endpoint's nodeName is this node's, as upstream has it (the slices must carry nodeName).
 * Conditions as upstream reads them: ready unset = ready; serving unset = ready; terminating unset = false. */
export function endpointsByServicePort(
  slices: readonly EndpointSlice[],
  nodeName: string | undefined,
): Map<string, EndpointInfo[]> {
  const out = new Map<string, Map<string, EndpointInfo>>();
  for (const slice of slices) {
    const svcName = slice.metadata.labels?.[LABEL_SERVICE_NAME];
    if (!svcName || slice.addressType !== "IPv4") continue;
    for (const port of slice.ports ?? []) {
      if (port.port === undefined || port.port === null) continue;
      const key = portKey(slice.metadata.namespace, svcName, port.name ?? "", (port.protocol ?? "TCP").toLowerCase());
      const eps = out.get(key) ?? new Map<string, EndpointInfo>();
      out.set(key, eps);
      for (const ep of slice.endpoints) {
        const ip = ep.addresses[0];
        if (!ip || !isIPv4(ip)) continue;
        const ready = ep.conditions?.ready ?? true;
        const id = `${ip}:${port.port}`;
        if (eps.has(id)) continue;
        eps.set(id, {
          ip,
          port: port.port,
          ready,
          serving: ep.conditions?.serving ?? ready,
          terminating: ep.conditions?.terminating ?? false,
          isLocal: nodeName !== undefined && ep.nodeName === nodeName,
        });
      }
    }
  }
  // Sorted as the proxier sorts them (by endpoint string), so the numgen vmap is stable.
  return new Map(
    [...out].map(([k, v]) => [k, [...v.values()].sort((a, b) => cmp(`${a.ip}:${a.port}`, `${b.ip}:${b.port}`))]),
  );
}
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export const endpointsKey = (s: ServicePortInfo) => portKey(s.name.namespace, s.name.name, s.name.port, s.protocol);

/** topology.go CategorizeEndpoints, on one node with no topology hints: ready endpoints, else the serving and
 * terminating ones (ProxyTerminatingEndpoints); the local ones for a Local traffic policy. */
export function categorizeEndpoints(
  eps: readonly EndpointInfo[],
  svc: ServicePortInfo,
): { cluster: EndpointInfo[]; local: EndpointInfo[]; reachable: EndpointInfo[]; hasAny: boolean } {
  const usable = (list: readonly EndpointInfo[]) => {
    const ready = list.filter((e) => e.ready);
    return ready.length > 0 ? ready : list.filter((e) => e.serving && e.terminating);
  };
  const usesCluster = !svc.internalPolicyLocal || (svc.externallyAccessible && !svc.externalPolicyLocal);
  const usesLocal = svc.internalPolicyLocal || svc.externalPolicyLocal;
  const cluster = usesCluster ? usable(eps) : [];
  let hasAny = cluster.length > 0;
  const local = usesLocal ? usable(eps.filter((e) => e.isLocal)) : [];
  if (!usesCluster) hasAny = usable(eps).length > 0;
  const seen = new Set<string>();
  const reachable = [...cluster, ...local].filter((e) => {
    const k = `${e.ip}:${e.port}`;
    return seen.has(k) ? false : (seen.add(k), true);
  });
  reachable.sort((a, b) => cmp(`${a.ip}:${a.port}`, `${b.ip}:${b.port}`));
  return { cluster, local, reachable, hasAny };
}
