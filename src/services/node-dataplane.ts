// The node agent's Services data plane, from its settings: the pod network read from the CNI configuration, the
// cluster DNS address (PODSYNC_CLUSTER_DNS, else the bridge's gateway) and its upstreams (PODSYNC_DNS_UPSTREAM, else
// the node's resolv.conf), and what start-up should say about them. src/node.ts calls it; it returns the cluster
// DNS address pods must be given (kubelet's --cluster-dns) when the setting left it to podsync.
import { holdDataplane } from "./dataplane-hold.js";
import { type ServiceDataplane, startServiceDataplane } from "./dataplane.js";
import { cniConfDirFromStatusInfo, DEFAULT_CNI_CONF_DIR, readPodNetwork, resolvConfServers } from "./node-network.js";
import type { ServiceSource } from "./types.js";

export interface NodeDataplaneOptions {
  source: ServiceSource;
  serviceCIDRs: string[];
  /** PODSYNC_CNI_CONF_DIR as set; unset: the runtime's (`runtimeStatusInfo`), else /etc/cni/net.d. */
  cniConfDir: string | undefined;
  /** The runtime's verbose CRI Status info (containerd reports its CNI directory there). */
  runtimeStatusInfo?: () => Promise<Record<string, string>>;
  /** PODSYNC_CLUSTER_DNS as set (may be empty). */
  clusterDNS: string[];
  clusterDomain: string;
  /** PODSYNC_DNS_UPSTREAM as set, or undefined. */
  upstreams: string[] | undefined;
  nodeName: string;
  log?: (rec: Record<string, unknown>) => void;
}

export async function startNodeDataplane(
  o: NodeDataplaneOptions,
): Promise<{ dataplane: ServiceDataplane; clusterDNS: string[]; lines: string[] }> {
  const cniConfDir = o.cniConfDir ?? (await runtimeCniConfDir(o.runtimeStatusInfo)) ?? DEFAULT_CNI_CONF_DIR;
  const net = readPodNetwork(cniConfDir);
  const lines: string[] = [];
  const dnsAddress = o.clusterDNS[0] ?? net?.gateway;
  // The cluster DNS must not forward to itself (a node whose resolv.conf names the gateway).
  const upstreams = (o.upstreams ?? resolvConfServers()).filter((u) => u !== dnsAddress);
  const dataplane = await startServiceDataplane({
    source: o.source,
    settings: {
      serviceCIDRs: o.serviceCIDRs,
      podCIDR: net?.subnet,
      nodeName: o.nodeName,
      clusterDomain: o.clusterDomain,
      dns: dnsAddress ? { address: dnsAddress, upstreams } : undefined,
    },
    ...(o.log ? { log: o.log } : {}),
    hold: () => holdDataplane("podsync", o.nodeName),
  });
  // The first bind is quick where the address exists: give it a moment so start-up says how it went. The timer is
  // not unref'd: with no runtime to talk to, it is what keeps node running until the port is open.
  await Promise.race([dataplane.dns?.ready(), new Promise((r) => setTimeout(r, 500))]);
  const h = dataplane.health();
  if (h.proxy?.available)
    lines.push(
      `  services: nftables table inet podsync (${h.proxy.nftVersion}); ClusterIPs from ${o.serviceCIDRs.join(",")}${net ? `, pods ${net.subnet} on ${net.bridge}` : ""}`,
    );
  else
    lines.push(
      `  warning: the Services data plane is unavailable: ${h.proxy?.reason ?? "unknown"}; Services are refused`,
    );
  if (!dnsAddress)
    lines.push(
      `  warning: no cluster DNS: PODSYNC_CLUSTER_DNS is unset and no bridge network was found in ${cniConfDir} (set PODSYNC_CNI_CONF_DIR); Services are refused`,
    );
  // No DNS server with an address: another node runs the machine's data plane (the warning above says which).
  else if (dataplane.dns)
    lines.push(
      `  dns:     ${o.clusterDomain} on ${dnsAddress}:53 (UDP, TCP)${h.dns?.listening ? "" : `, not yet: ${h.dns?.reason}`}; forwards to ${upstreams.join(", ") || "nothing (SERVFAIL): set PODSYNC_DNS_UPSTREAM"}`,
    );
  return { dataplane, clusterDNS: o.clusterDNS.length > 0 ? o.clusterDNS : dnsAddress ? [dnsAddress] : [], lines };
}

/** The runtime's CNI directory, asked once at start (a runtime not up yet, or slow, says nothing: 2 s at most). */
async function runtimeCniConfDir(info: NodeDataplaneOptions["runtimeStatusInfo"]): Promise<string | undefined> {
  if (!info) return undefined;
  const timeout = new Promise<undefined>((r) => setTimeout(() => r(undefined), 2000));
  return Promise.race([info().then(cniConfDirFromStatusInfo, () => undefined), timeout]);
}

/** Why the node refuses Services, if it does: the data plane was wanted (`on`, or `auto` as root) and is not running
 * or not available. With `off` the owner chose Services without kernel rules or DNS, so nothing is refused. */
export function servicesRefusalFor(
  mode: "auto" | "on" | "off",
  dataplane: Pick<ServiceDataplane, "health"> | undefined,
  serviceCIDR?: string,
): string | undefined {
  if (mode === "off") return undefined;
  // The proxier writes IPv4 maps only (the lab's bridge has no IPv6): an IPv6 ClusterIP would be kept, not routed.
  if (serviceCIDR?.includes(":"))
    return `Services need an IPv4 PODSYNC_SERVICE_CIDR: the data plane routes IPv4 only (${serviceCIDR} is IPv6; docs/services-dataplane.md), or set PODSYNC_SERVICE_DATAPLANE=off`;
  if (!dataplane)
    return "Services need the node's data plane (nftables rules and cluster DNS), which needs root: run podsync as root, or set PODSYNC_SERVICE_DATAPLANE=off to keep Services without kernel rules (docs/services-dataplane.md)";
  const h = dataplane.health();
  if (!h.proxy?.available)
    return `Services need the node's data plane, which is unavailable: ${h.proxy?.reason ?? "unknown"} (docs/services-dataplane.md)`;
  // Rules without names would be half of a Service: pods reach their peers by name.
  if (!h.dns)
    return "Services need the cluster DNS, which has no address: no bridge network in the runtime's CNI configuration and PODSYNC_CLUSTER_DNS unset (set PODSYNC_CNI_CONF_DIR or PODSYNC_CLUSTER_DNS; docs/services-dataplane.md)";
  return undefined;
}
