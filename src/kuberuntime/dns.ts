// kubelet's GetPodDNS (pkg/kubelet/network/dns): the resolver config a sandbox gets for its dnsPolicy.
import type { Pod } from "../pod/schema.js";
import type { NodeConfig } from "../container/node-config.js";

const MAX_DNS_SEARCHES = 32;

/** GetPodDNS for the dnsPolicy values kubelet supports. */
export function podDNS(pod: Pod, node: NodeConfig): { servers: string[]; searches: string[]; options: string[] } {
  let policy = pod.spec.dnsPolicy;
  if (policy === "ClusterFirst" && pod.spec.hostNetwork) policy = "Default";
  if (policy === "ClusterFirstWithHostNet") policy = "ClusterFirst";
  if (policy === "ClusterFirst" && node.clusterDNS.length === 0) policy = "Default";
  let dns: { servers: string[]; searches: string[]; options: string[] };
  switch (policy) {
    case "None":
      dns = { servers: [], searches: [], options: [] };
      break;
    case "ClusterFirst": {
      const ns = pod.metadata.namespace;
      const d = node.clusterDomain;
      dns = {
        servers: [...node.clusterDNS],
        searches: [`${ns}.svc.${d}`, `svc.${d}`, d, ...node.hostDNS.searches],
        options: ["ndots:5"],
      };
      break;
    }
    default:
      dns = {
        servers: [...node.hostDNS.servers],
        searches: [...node.hostDNS.searches],
        options: [...node.hostDNS.options],
      };
  }
  const cfg = pod.spec.dnsConfig;
  if (cfg) {
    dns.servers = [...new Set([...dns.servers, ...(cfg.nameservers ?? [])])];
    dns.searches = [...new Set([...dns.searches, ...(cfg.searches ?? [])])];
    const opts = new Map(dns.options.map((o) => [o.split(":")[0]!, o] as const));
    for (const o of cfg.options ?? []) opts.set(o.name, o.value === undefined ? o.name : `${o.name}:${o.value}`);
    dns.options = [...opts.values()];
  }
  dns.searches = dns.searches.slice(0, MAX_DNS_SEARCHES);
  return dns;
}
