// What the data plane needs to know of the node's pod network, read from the CNI configuration containerd uses:
// the bridge, its gateway address (the default cluster DNS address, reachable from every pod before the bridge
// even exists) and the pods' subnet (kube-proxy's LocalTrafficDetector by CIDR). The bridge plugin's defaults:
// bridge "cni0", and host-local's gateway is the subnet's first address.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface PodNetwork {
  bridge: string;
  gateway: string;
  subnet: string;
  /** The file it was read from. */
  file: string;
}

interface BridgePlugin {
  type?: string;
  bridge?: string;
  isGateway?: boolean;
  ipam?: { subnet?: string; gateway?: string; ranges?: { subnet?: string; gateway?: string }[][] };
}

const firstHost = (cidr: string): string | undefined => {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!m) return undefined;
  const n = ((+m[1]! << 24) | (+m[2]! << 16) | (+m[3]! << 8) | +m[4]!) >>> 0;
  const bits = +m[5]!;
  const net = bits === 0 ? 0 : (n & (~0 << (32 - bits))) >>> 0;
  const g = net + 1;
  return [g >>> 24, (g >>> 16) & 255, (g >>> 8) & 255, g & 255].join(".");
};

/** The first bridge network (lexical file order, as containerd picks its CNI config) with an IPv4 subnet. */
export function readPodNetwork(confDir: string): PodNetwork | undefined {
  let files: string[];
  try {
    files = readdirSync(confDir)
      .filter((f) => /\.(conflist|conf|json)$/.test(f))
      .sort();
  } catch {
    return undefined;
  }
  for (const f of files) {
    let conf: { plugins?: BridgePlugin[] } & BridgePlugin;
    try {
      conf = JSON.parse(readFileSync(join(confDir, f), "utf8")) as typeof conf;
    } catch {
      continue;
    }
    for (const p of conf.plugins ?? [conf]) {
      if (p.type !== "bridge") continue;
      const range = p.ipam?.ranges?.[0]?.[0];
      const subnet = range?.subnet ?? p.ipam?.subnet;
      if (!subnet || subnet.includes(":")) continue;
      const gateway = range?.gateway ?? p.ipam?.gateway ?? firstHost(subnet);
      if (!gateway) continue;
      return { bridge: p.bridge ?? "cni0", gateway, subnet, file: join(confDir, f) };
    }
  }
  return undefined;
}

/** The node's nameservers (for PODSYNC_DNS_UPSTREAM's default), from a resolv.conf. */
export function resolvConfServers(path = "/etc/resolv.conf"): string[] {
  try {
    return readFileSync(path, "utf8")
      .split("\n")
      .map((l) =>
        l
          .replace(/[#;].*$/, "")
          .trim()
          .split(/\s+/),
      )
      .filter((w) => w[0] === "nameserver" && w[1])
      .map((w) => w[1]!);
  } catch {
    return [];
  }
}

export const DEFAULT_CNI_CONF_DIR = "/etc/cni/net.d";

/** The CNI configuration directory the runtime uses, from its verbose CRI Status: containerd's CRI plugin reports
 * its config (`info.config`, JSON: `cni.confDir`), so a node on a containerd with its own CNI directory (the lab's)
 * finds the bridge with no setting. undefined when the runtime does not say. */
export function cniConfDirFromStatusInfo(info: Record<string, string> | undefined): string | undefined {
  try {
    const dir = (JSON.parse(info?.["config"] ?? "null") as { cni?: { confDir?: unknown } } | null)?.cni?.confDir;
    return typeof dir === "string" && dir.startsWith("/") ? dir : undefined;
  } catch {
    return undefined;
  }
}
