// The node agent's Service settings (docs/services.md): the ClusterIP range, the NodePort range and the node
// owner's NodePort policy. Node only: a Worker refuses Services (it cannot program the node's kernel).
import { isIP } from "node:net";
import { z } from "zod";
import { list } from "./common.js";
import { parseNodePortRange, parseServiceCidr, type ServiceNetwork } from "../services/allocate.js";

export const DEFAULT_SERVICE_CIDR = "10.96.0.0/16";
export const DEFAULT_NODEPORT_RANGE = "30000-32767";

export const serviceSettingsShape = {
  /** ClusterIPs are given from this range (kube-apiserver's --service-cluster-ip-range). */
  PODSYNC_SERVICE_CIDR: z
    .string()
    .default(DEFAULT_SERVICE_CIDR)
    .transform((s, ctx) => {
      const r = parseServiceCidr(s.trim());
      if (typeof r === "string") {
        ctx.addIssue({ code: "custom", message: r });
        return z.NEVER;
      }
      return r;
    }),
  /** NodePorts are given from this range (kube-apiserver's --service-node-port-range); the owner narrows it here. */
  PODSYNC_NODEPORT_RANGE: z
    .string()
    .default(DEFAULT_NODEPORT_RANGE)
    .transform((s, ctx) => {
      const r = parseNodePortRange(s);
      if (typeof r === "string") {
        ctx.addIssue({ code: "custom", message: r });
        return z.NEVER;
      }
      return r;
    }),
  /** forbid: NodePort and LoadBalancer Services are refused (403 policy); allow (default): they are served. */
  PODSYNC_POLICY_NODEPORTS: z.enum(["allow", "forbid"], { error: "allowed: allow, forbid" }).default("allow"),
};

export function serviceNetworkFrom(s: {
  PODSYNC_SERVICE_CIDR: ServiceNetwork["cidr"];
  PODSYNC_NODEPORT_RANGE: ServiceNetwork["nodePorts"];
  PODSYNC_POLICY_NODEPORTS: ServiceNetwork["nodePortPolicy"];
}): ServiceNetwork {
  return {
    cidr: s.PODSYNC_SERVICE_CIDR,
    nodePorts: s.PODSYNC_NODEPORT_RANGE,
    nodePortPolicy: s.PODSYNC_POLICY_NODEPORTS,
  };
}

// The Services data plane's settings (src/services/proxy, src/services/dns): the nftables proxier and the cluster
// DNS. PODSYNC_CLUSTER_DNS and PODSYNC_CLUSTER_DOMAIN are common settings; PODSYNC_SERVICE_CIDR is above.

const upstream = z.string().refine((u) => {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(u) ?? (isIP(u) ? [u, u] : /^([^:]+):(\d+)$/.exec(u));
  return !!m && isIP(m[1] ?? "") !== 0 && (m[2] === undefined || (Number(m[2]) > 0 && Number(m[2]) < 65536));
}, "must be host[:port] with an IP address (e.g. 192.0.2.53 or 192.0.2.53:5353)");

export const serviceDataplaneSettingsShape = {
  /** The Services data plane on this node: the nftables table `inet podsync` and the cluster DNS. */
  // auto (default): on when podsync may program nftables (root), else Services are refused with the reason. on: the
  // proxier and the DNS run, and Services are refused if they cannot. off: Services are kept and served
  // (EndpointSlices, env vars, kubectl) with no kernel rules and no DNS, which start-up says; the test suite sets it
  // (one table and one DNS address per machine, many test nodes at once).
  PODSYNC_SERVICE_DATAPLANE: z.enum(["auto", "on", "off"], { error: "allowed: auto, on, off" }).default("auto"),
  /** Where the cluster DNS forwards names outside the cluster domain; unset: the node's /etc/resolv.conf. */
  PODSYNC_DNS_UPSTREAM: list.pipe(z.array(upstream)).optional(),
  /** The CNI configuration containerd uses: the pod bridge, its gateway (the default cluster DNS address) and the
   * pods' subnet are read from it. Unset: the directory the runtime reports (CRI Status, verbose), else
   * /etc/cni/net.d. */
  PODSYNC_CNI_CONF_DIR: z.string().startsWith("/", "must be an absolute path").optional(),
};
