// The node agent's Service settings (docs/services.md): the ClusterIP range, the NodePort range and the node
// owner's NodePort policy. Node only: a Worker refuses Services (it cannot program the node's kernel).
import { z } from "zod";
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
