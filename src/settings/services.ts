// The Services data plane's settings (src/services/): the nftables proxier and the cluster DNS. Node only: a
// Worker cannot program a node's kernel. PODSYNC_CLUSTER_DNS and PODSYNC_CLUSTER_DOMAIN are common settings.
import { isIP } from "node:net";
import { z } from "zod";
import { list } from "./common.js";

const cidr = z.string().refine((c) => {
  const [ip, bits, ...rest] = c.split("/");
  const max = isIP(ip ?? "") === 4 ? 32 : isIP(ip ?? "") === 6 ? 128 : 0;
  return rest.length === 0 && max > 0 && /^\d+$/.test(bits ?? "") && Number(bits) <= max;
}, "must be a CIDR such as 10.96.0.0/16");

const upstream = z.string().refine((u) => {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(u) ?? (isIP(u) ? [u, u] : /^([^:]+):(\d+)$/.exec(u));
  return !!m && isIP(m[1] ?? "") !== 0 && (m[2] === undefined || (Number(m[2]) > 0 && Number(m[2]) < 65536));
}, "must be host[:port] with an IP address (e.g. 192.0.2.53 or 192.0.2.53:5353)");

export const serviceDataplaneSettingsShape = {
  /** The Services data plane on this node: the nftables table `inet podsync` and the cluster DNS. */
  PODSYNC_SERVICE_DATAPLANE: z.enum(["on", "off"], { error: "allowed: on, off" }).default("off"),
  /** ClusterIPs come from these; traffic to an unallocated one is dropped (kube-proxy's cluster-ips-check). */
  PODSYNC_SERVICE_CIDR: list.pipe(z.array(cidr)).default(["10.96.0.0/16"]),
  /** Where the cluster DNS forwards names outside the cluster domain; unset: the node's /etc/resolv.conf. */
  PODSYNC_DNS_UPSTREAM: list.pipe(z.array(upstream)).optional(),
  /** The CNI configuration containerd uses: the pod bridge, its gateway (the default cluster DNS address) and the
   * pods' subnet are read from it. */
  PODSYNC_CNI_CONF_DIR: z.string().startsWith("/", "must be an absolute path").default("/etc/cni/net.d"),
};
