// kubelet's GetPodDNS (pkg/kubelet/network/dns/dns.go): the resolver config a sandbox gets for its dnsPolicy.
import type { Pod } from "../../pod/schema.js";
import type { NodeConfig } from "../../container/node-config.js";

/** validation.MaxDNSNameservers, and the ExpandedDNSConfig limits (GA): MaxDNSSearchPathsExpanded,
 * MaxDNSSearchListCharsExpanded; a search path longer than DNS1123SubdomainMaxLength is dropped. */
const MAX_DNS_NAMESERVERS = 3;
const MAX_DNS_SEARCHES = 32;
const MAX_DNS_SEARCH_LIST_CHARS = 2048;
const MAX_SEARCH_LENGTH = 253;

type DNSConfig = { servers: string[]; searches: string[]; options: string[] };

const omitDuplicates = (xs: string[]) => [...new Set(xs)];

/** getPodDNSType: ClusterFirst on the host's network is Default; ClusterFirstWithHostNet is ClusterFirst. */
function podDNSType(pod: Pod): "cluster" | "host" | "none" {
  switch (pod.spec.dnsPolicy) {
    case "None":
      return "none";
    case "ClusterFirstWithHostNet":
      return "cluster";
    case "Default":
      return "host";
    default:
      return pod.spec.hostNetwork ? "host" : "cluster";
  }
}

/** GetPodDNS for the dnsPolicy values kubelet supports. */
export function podDNS(pod: Pod, node: NodeConfig): DNSConfig {
  let dns: DNSConfig;
  const type = podDNSType(pod);
  if (type === "none") dns = { servers: [], searches: [], options: [] };
  else if (type === "cluster" && node.clusterDNS.length > 0) {
    // The cluster DNS is the only nameserver: it forwards what is not the cluster's (generateSearchesForDNSClusterFirst).
    const d = node.clusterDomain;
    const ns = pod.metadata.namespace;
    dns = {
      servers: [...node.clusterDNS],
      searches: d
        ? omitDuplicates([`${ns}.svc.${d}`, `svc.${d}`, d, ...node.hostDNS.searches])
        : [...node.hostDNS.searches],
      options: ["ndots:5"],
    };
  } else {
    // Default, and ClusterFirst without a cluster DNS (kubelet records MissingClusterDNS and falls through).
    dns = {
      servers: [...node.hostDNS.servers],
      searches: [...node.hostDNS.searches],
      options: [...node.hostDNS.options],
    };
  }
  const cfg = pod.spec.dnsConfig;
  if (cfg) {
    dns.servers = omitDuplicates([...dns.servers, ...(cfg.nameservers ?? [])]);
    dns.searches = omitDuplicates([...dns.searches, ...(cfg.searches ?? [])]);
    dns.options = mergeDNSOptions(dns.options, cfg.options ?? []);
  }
  return fitsLimits(dns);
}

/** mergeDNSOptions: by name, the pod's winning; an empty value is written as the bare name. */
function mergeDNSOptions(existing: string[], fromPod: { name: string; value?: string | undefined }[]): string[] {
  const m = new Map<string, string>();
  for (const op of existing) {
    const i = op.indexOf(":");
    if (i === -1) m.set(op, "");
    else m.set(op.slice(0, i), op.slice(i + 1));
  }
  for (const op of fromPod) m.set(op.name, op.value ?? "");
  return [...m].map(([k, v]) => (v === "" ? k : `${k}:${v}`));
}

/** formDNSConfigFitsLimits: at most 3 nameservers; search paths within the count and length limits (the last ones
 * cut first). kubelet also records a DNSConfigForming event; podsync's engine has none to record here. */
function fitsLimits(dns: DNSConfig): DNSConfig {
  const servers = dns.servers.slice(0, MAX_DNS_NAMESERVERS);
  let searches = dns.searches.slice(0, MAX_DNS_SEARCHES).filter((s) => s.length <= MAX_SEARCH_LENGTH);
  while (searches.length > 0 && searches.join(" ").length > MAX_DNS_SEARCH_LIST_CHARS) searches = searches.slice(0, -1);
  return { servers, searches, options: dns.options };
}
