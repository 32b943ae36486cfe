// ClusterIPs and NodePorts for a body's Services, pure: the API server's allocators
// (pkg/registry/core/service/ipallocator and portallocator, called from the Service REST storage's
// alloc.go allocateCreate/allocateUpdate) on one node. A requested address or port inside the range is honoured
// unless another Service holds it; one outside the range, or taken, is an error naming the field. A Service sent
// again without one keeps the one it had (kubectl apply leaves spec.clusterIP to the server the same way), and
// a new one gets a free one. The result is written into the Service's spec, which is stored: stable across
// restarts, gone with the Service.
//
// Where an address is picked: upstream picks at random, preferring the upper band of the range (KEP-3070: the
// lower band is kept for requested addresses). Here the pick starts at a point of the upper band derived from
// the Service's namespace and name and goes up to the first free one, so a Service removed and sent again
// usually gets its address back, and tests can say which one. The network and broadcast addresses are never
// given, nor the range's first address (a cluster's `kubernetes` Service; podsync has none, but clients expect
// it not to be a Service of theirs).
import type { FieldError } from "../pod/validate.js";
import type { Service } from "../pod/workloads/service.js";

export interface ServiceCidr {
  /** The range as written: `10.96.0.0/16`. */
  text: string;
  family: "IPv4" | "IPv6";
  /** First address and size of the range (addresses as bigints, IPv4 in the low 32 bits). */
  base: bigint;
  size: bigint;
}

export interface ServiceNetwork {
  cidr: ServiceCidr;
  /** PODSYNC_NODEPORT_RANGE, inclusive. */
  nodePorts: { min: number; max: number };
  /** PODSYNC_POLICY_NODEPORTS: forbid refuses NodePort and LoadBalancer Services (403 policy). */
  nodePortPolicy: "allow" | "forbid";
}

/** The node owner's refusals (403 policy) apart from bad input (400). */
export interface AllocationErrors {
  invalid: FieldError[];
  policy: FieldError[];
}

function parseIPv4(s: string): bigint | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return parts.reduce((a, p) => (a << 8n) | BigInt(p), 0n);
}

function parseIPv6(s: string): bigint | undefined {
  if (!/^[0-9a-fA-F:]+$/.test(s) || s.split("::").length > 2) return undefined;
  const [head, tail] = s.split("::") as [string, string | undefined];
  const hs = head ? head.split(":") : [];
  const ts = tail ? tail.split(":") : [];
  const fill = 8 - hs.length - ts.length;
  if ((tail === undefined && fill !== 0) || fill < 0) return undefined;
  const groups = [...hs, ...Array(tail === undefined ? 0 : fill).fill("0"), ...ts];
  if (groups.length !== 8 || groups.some((g) => g.length === 0 || g.length > 4)) return undefined;
  return groups.reduce((a, g) => (a << 16n) | BigInt(parseInt(g, 16)), 0n);
}

export const parseIP = (s: string): { family: "IPv4" | "IPv6"; n: bigint } | undefined => {
  const v4 = parseIPv4(s);
  if (v4 !== undefined) return { family: "IPv4", n: v4 };
  const v6 = parseIPv6(s);
  return v6 !== undefined ? { family: "IPv6", n: v6 } : undefined;
};

function formatIP(family: "IPv4" | "IPv6", n: bigint): string {
  if (family === "IPv4") return [24n, 16n, 8n, 0n].map((sh) => String((n >> sh) & 255n)).join(".");
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((sh) => ((n >> sh) & 0xffffn).toString(16));
  // The longest run of zero groups as "::" (RFC 5952).
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== "0") {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > best.len && j - i > 1) best = { at: i, len: j - i };
    i = j;
  }
  if (best.at < 0) return groups.join(":");
  return `${groups.slice(0, best.at).join(":")}::${groups.slice(best.at + best.len).join(":")}`;
}

/** PODSYNC_SERVICE_CIDR: an IPv4 or IPv6 network in CIDR form; an error message when it is not one. */
export function parseServiceCidr(text: string): ServiceCidr | string {
  const [addr, bitsText, extra] = text.split("/");
  const ip = addr ? parseIP(addr) : undefined;
  const bits = Number(bitsText);
  const width = ip?.family === "IPv6" ? 128 : 32;
  if (!ip || extra !== undefined || !/^\d+$/.test(bitsText ?? "") || bits > width)
    return `"${text}" is not a network in CIDR form (such as 10.96.0.0/16)`;
  // The allocator's limits: at least 8 addresses, at most a /12 (IPv4) or /108 (IPv6) (ipallocator's bitmap).
  if (width - bits < 3 || width - bits > 20)
    return `"${text}": a service range holds between 8 and 2^20 addresses (a /12 to a /29 for IPv4, /108 to /125 for IPv6)`;
  const size = 1n << BigInt(width - bits);
  const base = (ip.n / size) * size;
  if (base !== ip.n) return `"${text}" has host bits set: the network is ${formatIP(ip.family, base)}/${bits}`;
  return { text, family: ip.family, base, size };
}

/** PODSYNC_NODEPORT_RANGE: `min-max`, inclusive, inside 1-65535. */
export function parseNodePortRange(text: string): { min: number; max: number } | string {
  const m = /^(\d+)-(\d+)$/.exec(text.trim());
  const min = Number(m?.[1]);
  const max = Number(m?.[2]);
  if (!m || min < 1 || max > 65535 || min > max) return `"${text}" is not a port range such as 30000-32767`;
  return { min, max };
}

const key = (s: Service) => `${s.metadata.namespace}/${s.metadata.name}`;
const wantsNodePorts = (s: Service) =>
  s.spec.type === "NodePort" || (s.spec.type === "LoadBalancer" && s.spec.allocateLoadBalancerNodePorts !== false);
const hasClusterIP = (s: Service) => s.spec.type !== "ExternalName" && s.spec.clusterIP !== "None";

/** A start point in [0, n) from a Service's identity (FNV-1a). */
function startOf(id: string, n: bigint): bigint {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return BigInt(h) % n;
}

/**
 * Give each incoming Service its ClusterIP and NodePorts, in place. `kept`: the node's Services that stay beside
 * them (their addresses and ports are taken); `previous`: what the node held before, by namespace/name (a Service
 * sent again without an address keeps its own).
 */
export function allocateServices(
  incoming: readonly { svc: Service; at: string }[],
  kept: readonly Service[],
  previous: ReadonlyMap<string, Service>,
  net: ServiceNetwork,
): AllocationErrors {
  const out: AllocationErrors = { invalid: [], policy: [] };
  const path = (at: string, f: string) => (at ? `${at}.${f}` : f);
  const { cidr } = net;
  const ips = new Map<string, string>();
  const ports = new Map<number, string>();
  for (const s of kept) {
    if (hasClusterIP(s) && s.spec.clusterIP) ips.set(s.spec.clusterIP, key(s));
    for (const p of s.spec.ports) if (p.nodePort !== undefined) ports.set(p.nodePort, key(s));
  }
  const inRange = (n: bigint) => n > cidr.base && n < cidr.base + cidr.size - (cidr.family === "IPv4" ? 1n : 0n);
  const reserved = (n: bigint) => n === cidr.base + 1n;
  const rangeText = `the range of valid IPs is ${cidr.text}`;
  const portRange = `the range of valid ports is ${net.nodePorts.min}-${net.nodePorts.max}`;

  // First every requested address and port, so a pick for another Service never takes one asked for.
  const pending: { svc: Service; at: string; ip: boolean; ports: number[] }[] = [];
  for (const { svc, at } of incoming) {
    const k = key(svc);
    const want = { svc, at, ip: false, ports: [] as number[] };
    if (wantsNodePorts(svc) && net.nodePortPolicy === "forbid")
      out.policy.push({
        path: path(at, "spec.type"),
        message: `${svc.spec.type} Services are forbidden by the node owner's policy (PODSYNC_POLICY_NODEPORTS=forbid): use type ClusterIP`,
      });
    if (hasClusterIP(svc)) {
      const fam = svc.spec.ipFamilies?.[0];
      if (fam !== undefined && fam !== cidr.family)
        out.invalid.push({
          path: path(at, "spec.ipFamilies[0]"),
          message: `this node's Services are ${cidr.family} (PODSYNC_SERVICE_CIDR ${cidr.text}): ${fam} is not served`,
        });
      svc.spec.ipFamilies = [cidr.family];
      const asked = svc.spec.clusterIP;
      if (asked) {
        const ip = parseIP(asked);
        const held = ips.get(asked);
        if (!ip)
          out.invalid.push({ path: path(at, "spec.clusterIP"), message: `"${asked}" is not a valid IP address` });
        else if (ip.family !== cidr.family || !inRange(ip.n) || reserved(ip.n))
          out.invalid.push({
            path: path(at, "spec.clusterIP"),
            message: `failed to allocate IP ${asked}: provided IP is not in the valid range; ${rangeText} (less its network, first and broadcast addresses)`,
          });
        else if (held !== undefined && held !== k)
          out.invalid.push({
            path: path(at, "spec.clusterIP"),
            message: `failed to allocate IP ${asked}: provided IP is already allocated (to Service ${held})`,
          });
        else ips.set(asked, k);
      } else want.ip = true;
    } else if (svc.spec.type === "ExternalName") delete svc.spec.ipFamilies;
    svc.spec.ports.forEach((p, i) => {
      if (!wantsNodePorts(svc)) return;
      if (p.nodePort === undefined) {
        want.ports.push(i);
        return;
      }
      const held = ports.get(p.nodePort);
      const f = path(at, `spec.ports[${i}].nodePort`);
      if (p.nodePort < net.nodePorts.min || p.nodePort > net.nodePorts.max)
        out.invalid.push({
          path: f,
          message: `failed to allocate port ${p.nodePort}: provided port is not in the valid range; ${portRange} (PODSYNC_NODEPORT_RANGE)`,
        });
      else if (held !== undefined && held !== k)
        out.invalid.push({
          path: f,
          message: `failed to allocate port ${p.nodePort}: provided port is already allocated (to Service ${held})`,
        });
      else ports.set(p.nodePort, k);
    });
    pending.push(want);
  }
  if (out.invalid.length || out.policy.length) return out;

  for (const { svc, at, ip, ports: need } of pending) {
    const k = key(svc);
    const prev = previous.get(k);
    if (ip) {
      const had = prev?.spec.clusterIP;
      const hadN = had ? parseIP(had) : undefined;
      let pick: string | undefined;
      if (had && hadN && hadN.family === cidr.family && inRange(hadN.n) && !reserved(hadN.n) && !ips.has(had))
        pick = had;
      else {
        // The upper band: the range less its lower sixteenth (at least 16, at most 256 addresses), as KEP-3070.
        const low = BigInt(Math.min(256, Math.max(16, Number(cidr.size / 16n))));
        const band = cidr.size - low;
        const start = startOf(k, band > 0n ? band : cidr.size);
        for (let i = 0n; i < cidr.size && pick === undefined; i++) {
          const n = cidr.base + ((low + start + i) % cidr.size);
          const text = formatIP(cidr.family, n);
          if (inRange(n) && !reserved(n) && !ips.has(text)) pick = text;
        }
      }
      if (pick === undefined)
        out.invalid.push({
          path: path(at, "spec.clusterIP"),
          message: `failed to allocate a service IP: the range ${cidr.text} is full`,
        });
      else {
        ips.set(pick, k);
        svc.spec.clusterIP = pick;
        svc.spec.clusterIPs = [pick];
      }
    } else if (hasClusterIP(svc) && svc.spec.clusterIP) svc.spec.clusterIPs = [svc.spec.clusterIP];
    for (const i of need) {
      const p = svc.spec.ports[i]!;
      const had = prev?.spec.ports.find((q) => q.port === p.port && q.protocol === p.protocol)?.nodePort;
      let pick: number | undefined;
      if (had !== undefined && had >= net.nodePorts.min && had <= net.nodePorts.max && !ports.has(had)) pick = had;
      else {
        const n = net.nodePorts.max - net.nodePorts.min + 1;
        const start = Number(startOf(`${k}/${p.port}/${p.protocol}`, BigInt(n)));
        for (let j = 0; j < n && pick === undefined; j++) {
          const c = net.nodePorts.min + ((start + j) % n);
          if (!ports.has(c)) pick = c;
        }
      }
      if (pick === undefined)
        out.invalid.push({
          path: path(at, `spec.ports[${i}].nodePort`),
          message: `failed to allocate a node port: the range ${net.nodePorts.min}-${net.nodePorts.max} is full`,
        });
      else {
        ports.set(pick, k);
        p.nodePort = pick;
      }
    }
  }
  return out;
}
