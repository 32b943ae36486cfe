// The proxier's decision, pure: Services + EndpointSlices + settings → the nftables objects podsync's table should
// hold. A port of kube-proxy's nftables proxier (pkg/proxy/nftables/proxier.go: setupNFTables, syncProxyRules,
// writeServiceToEndpointRules) for IPv4 in one `inet` table. Differences: the table is `inet podsync` (so DNAT is
// `dnat ip to`), NodePorts are accepted on every local address but loopback (nodePortAddresses unset), and there
// are no LoadBalancer or externalIPs (a node has no cloud load balancer).
import type { EndpointSlice, Service } from "../types.js";
import {
  CHAIN_PREFIX,
  servicePortChainNameBase,
  servicePortEndpointChainNameBase,
  servicePortNameString,
} from "./names.js";
import { categorizeEndpoints, endpointsByServicePort, endpointsKey, servicePorts } from "./service-ports.js";

export interface RulesetSettings {
  /** The table's name in the inet family: "podsync". */
  table: string;
  /** The Service CIDRs (PODSYNC_SERVICE_CIDR): traffic to an unallocated ClusterIP in them is dropped. */
  serviceCIDRs: string[];
  /** The pods' CIDR (kube-proxy's LocalTrafficDetector): ClusterIP traffic from elsewhere is masqueraded. */
  podCIDR?: string | undefined;
  /** The node's name: endpoints on it are local (externalTrafficPolicy/internalTrafficPolicy Local). */
  nodeName?: string | undefined;
  /** kube-proxy's --masquerade-bit (14): the mark is 1 << bit. */
  masqueradeBit?: number;
}

export interface NftChain {
  name: string;
  base?: {
    type: "filter" | "nat";
    hook: "prerouting" | "input" | "forward" | "output" | "postrouting";
    priority: number;
  };
  comment?: string;
  rules: string[];
}
export interface NftElement {
  value?: string;
  comment?: string;
}
export interface NftSet {
  name: string;
  kind: "set" | "map";
  type: string;
  flags?: string[];
  timeoutSeconds?: number;
  comment?: string;
  /** key → element. Undefined for a set the kernel fills (an affinity set): its elements are never written. */
  elements?: Map<string, NftElement>;
}
export interface NftRuleset {
  table: string;
  chains: Map<string, NftChain>;
  sets: Map<string, NftSet>;
}

const NAT_PREROUTING = -100; // knftables.DNATPriority
const NAT_POSTROUTING = 100; // knftables.SNATPriority

/** The fixed part of the table (setupNFTables). */
function baseRuleset(s: RulesetSettings, mark: string): NftRuleset {
  const chains = new Map<string, NftChain>();
  const chain = (name: string, base?: NftChain["base"], comment?: string) => {
    const c: NftChain = { name, rules: [], ...(base ? { base } : {}), ...(comment ? { comment } : {}) };
    chains.set(name, c);
    return c;
  };
  chain("filter-prerouting-pre-dnat", { type: "filter", hook: "prerouting", priority: NAT_PREROUTING - 10 });
  chain("filter-output-pre-dnat", { type: "filter", hook: "output", priority: NAT_PREROUTING - 10 });
  const fwd = chain("filter-forward", { type: "filter", hook: "forward", priority: 0 });
  const input = chain("filter-input", { type: "filter", hook: "input", priority: 0 });
  const output = chain("filter-output", { type: "filter", hook: "output", priority: 0 });
  const natPre = chain("nat-prerouting", { type: "nat", hook: "prerouting", priority: NAT_PREROUTING });
  const natOut = chain("nat-output", { type: "nat", hook: "output", priority: NAT_PREROUTING });
  const natPost = chain("nat-postrouting", { type: "nat", hook: "postrouting", priority: NAT_POSTROUTING });
  const check = chain("cluster-ips-check");
  const svcEpCheck = chain("service-endpoints-check");
  const npEpCheck = chain("nodeport-endpoints-check");
  chain("reject-chain", undefined, "helper for @no-endpoint-services / @no-endpoint-nodeports").rules.push("reject");
  const services = chain("services");
  chain("mark-for-masquerade").rules.push(`mark set mark or ${mark}`);
  chain("masquerading").rules.push(
    `mark and ${mark} == 0 return`,
    `mark set mark xor ${mark}`,
    "masquerade fully-random",
  );
  // nftablesJumpChains (no firewall-check: there are no LoadBalancerSourceRanges on a node).
  fwd.rules.push("ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check");
  input.rules.push("ct state new jump nodeport-endpoints-check", "ct state new jump service-endpoints-check");
  output.rules.push("ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check");
  natOut.rules.push("jump services");
  natPre.rules.push("jump services");
  natPost.rules.push("jump masquerading");
  check.rules.push('ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"');
  if (s.serviceCIDRs.length > 0)
    check.rules.push(`ip daddr { ${s.serviceCIDRs.join(", ")} } drop comment "Drop traffic to unallocated ClusterIPs"`);
  svcEpCheck.rules.push("ip daddr . meta l4proto . th dport vmap @no-endpoint-services");
  // nodePortAddresses "match all": every local address but loopback (localhost NodePorts are not supported).
  npEpCheck.rules.push("ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports");
  services.rules.push(
    "ip daddr . meta l4proto . th dport vmap @service-ips",
    "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports",
  );
  const sets = new Map<string, NftSet>();
  const set = (name: string, kind: "set" | "map", type: string, comment: string) =>
    sets.set(name, { name, kind, type, comment, elements: new Map() });
  set("cluster-ips", "set", "ipv4_addr", "Active ClusterIPs");
  set(
    "no-endpoint-nodeports",
    "map",
    "inet_proto . inet_service : verdict",
    "vmap to drop or reject packets to service nodeports with no endpoints",
  );
  set(
    "no-endpoint-services",
    "map",
    "ipv4_addr . inet_proto . inet_service : verdict",
    "vmap to drop or reject packets to services with no endpoints",
  );
  set(
    "service-ips",
    "map",
    "ipv4_addr . inet_proto . inet_service : verdict",
    "ClusterIP, ExternalIP and LoadBalancer IP traffic",
  );
  set("service-nodeports", "map", "inet_proto . inet_service : verdict", "NodePort traffic");
  return { table: s.table, chains, sets };
}

/** The whole desired table for these Services and EndpointSlices. */
export function desiredRuleset(
  services: readonly Service[],
  slices: readonly EndpointSlice[],
  s: RulesetSettings,
): NftRuleset {
  const mark = `0x${(1 << (s.masqueradeBit ?? 14)).toString(16).padStart(4, "0")}`;
  const rs = baseRuleset(s, mark);
  const el = (set: string, key: string, e: NftElement = {}) => rs.sets.get(set)!.elements!.set(key, e);
  const addChain = (name: string): NftChain => {
    const c = rs.chains.get(name) ?? { name, rules: [] };
    rs.chains.set(name, c);
    return c;
  };
  const endpoints = endpointsByServicePort(slices, s.nodeName);
  for (const svc of servicePorts(services)) {
    const base = servicePortChainNameBase(svc.name);
    const nameString = servicePortNameString(svc.name);
    const all = endpoints.get(endpointsKey(svc)) ?? [];
    const { cluster, local, reachable, hasAny } = categorizeEndpoints(all, svc);
    const epChain = (e: { ip: string; port: number }) =>
      CHAIN_PREFIX.endpoint + servicePortEndpointChainNameBase(svc.name, e.ip, e.port);
    const affinitySet = (e: { ip: string; port: number }) =>
      CHAIN_PREFIX.affinity + servicePortEndpointChainNameBase(svc.name, e.ip, e.port);
    const clusterChain = CHAIN_PREFIX.service + base;
    const localChain = CHAIN_PREFIX.local + base;
    const externalChain = CHAIN_PREFIX.external + base;
    const usesCluster =
      cluster.length > 0 && (!svc.internalPolicyLocal || (svc.externallyAccessible && !svc.externalPolicyLocal));
    const usesLocal = local.length > 0 && (svc.internalPolicyLocal || svc.externalPolicyLocal);
    const internalChain = svc.internalPolicyLocal ? localChain : clusterChain;
    const hasInternal = hasAny && (!svc.internalPolicyLocal || local.length > 0);
    const externalPolicyChain = svc.externalPolicyLocal ? localChain : clusterChain;
    const hasExternal = hasAny && (!svc.externalPolicyLocal || local.length > 0);
    const usesExternal = hasAny && svc.externallyAccessible;
    const internalVerdict = !hasAny ? "goto reject-chain" : "drop";
    const externalVerdict = internalVerdict;
    const key = `${svc.clusterIP} . ${svc.protocol} . ${svc.port}`;

    el("cluster-ips", svc.clusterIP);
    if (hasInternal) el("service-ips", key, { value: `goto ${internalChain}` });
    else el("no-endpoint-services", key, { value: internalVerdict, comment: nameString });
    if (svc.nodePort !== 0) {
      const npKey = `${svc.protocol} . ${svc.nodePort}`;
      if (hasAny) el("service-nodeports", npKey, { value: `goto ${externalChain}` });
      if (!hasExternal) el("no-endpoint-nodeports", npKey, { value: externalVerdict, comment: nameString });
    }
    if (hasInternal && s.podCIDR) {
      addChain(internalChain).rules.push(`ip daddr ${svc.clusterIP} ip saddr != ${s.podCIDR} jump mark-for-masquerade`);
    }
    if (usesExternal) {
      const ext = addChain(externalChain);
      if (!svc.externalPolicyLocal) ext.rules.push("jump mark-for-masquerade");
      else {
        if (s.podCIDR) ext.rules.push(`ip saddr ${s.podCIDR} goto ${clusterChain} comment "short-circuit pod traffic"`);
        ext.rules.push(
          'fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"',
          `fib saddr type local goto ${clusterChain} comment "short-circuit local traffic"`,
        );
      }
      if (hasExternal) ext.rules.push(`goto ${externalPolicyChain}`);
    }
    if (svc.stickyMaxAgeSeconds > 0)
      for (const e of reachable)
        rs.sets.set(affinitySet(e), {
          name: affinitySet(e),
          kind: "set",
          type: "ipv4_addr",
          flags: ["dynamic", "timeout"],
          timeoutSeconds: svc.stickyMaxAgeSeconds,
        });
    const toEndpoints = (chain: string, eps: readonly { ip: string; port: number }[]) => {
      const c = addChain(chain);
      if (svc.stickyMaxAgeSeconds > 0)
        for (const e of eps) c.rules.push(`ip saddr @${affinitySet(e)} goto ${epChain(e)}`);
      const vmap = eps.map((e, i) => `${i} : goto ${epChain(e)}`).join(" , ");
      c.rules.push(`numgen random mod ${eps.length} vmap { ${vmap} }`);
    };
    if (usesCluster) toEndpoints(clusterChain, cluster);
    if (usesLocal) toEndpoints(localChain, local);
    for (const e of reachable) {
      const c = addChain(epChain(e));
      c.rules.push(`ip saddr ${e.ip} jump mark-for-masquerade`);
      if (svc.stickyMaxAgeSeconds > 0) c.rules.push(`update @${affinitySet(e)} { ip saddr }`);
      c.rules.push(`meta l4proto ${svc.protocol} dnat ip to ${e.ip}:${e.port}`);
    }
  }
  return rs;
}
