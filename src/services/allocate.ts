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
  const a: Alloc = { net, ips: new Map(), ports: new Map(), out: { invalid: [], policy: [] } };
  for (const s of kept) {
    if (hasClusterIP(s) && s.spec.clusterIP) a.ips.set(s.spec.clusterIP, key(s));
    for (const p of s.spec.ports) if (p.nodePort !== undefined) a.ports.set(p.nodePort, key(s));
  }
  // First every requested address and port, so a pick for another Service never takes one asked for.
  const pending = incoming.map(({ svc, at }) => ({
    svc,
    at,
    ip: claimClusterIP(a, svc, at),
    ports: claimNodePorts(a, svc, at),
  }));
  if (a.out.invalid.length || a.out.policy.length) return a.out;
  for (const { svc, at, ip, ports } of pending) {
    const prev = previous.get(key(svc));
    if (ip) pickClusterIP(a, svc, at, prev);
    else if (hasClusterIP(svc) && svc.spec.clusterIP) svc.spec.clusterIPs = [svc.spec.clusterIP];
    for (const i of ports) pickNodePort(a, svc, at, i, prev);
  }
  return a.out;
}

/** One allocation's state: the addresses and ports held (by Service key) and the errors so far. */
interface Alloc {
  net: ServiceNetwork;
  ips: Map<string, string>;
  ports: Map<number, string>;
  out: AllocationErrors;
}

const path = (at: string, f: string) => (at ? `${at}.${f}` : f);
const inRange = (c: ServiceCidr, n: bigint) => n > c.base && n < c.base + c.size - (c.family === "IPv4" ? 1n : 0n);
const reserved = (c: ServiceCidr, n: bigint) => n === c.base + 1n;

/** The family checks and a requested clusterIP; true when one is to be picked. */
function claimClusterIP(a: Alloc, svc: Service, at: string): boolean {
  const { cidr } = a.net;
  if (wantsNodePorts(svc) && a.net.nodePortPolicy === "forbid")
    a.out.policy.push({
      path: path(at, "spec.type"),
      message: `${svc.spec.type} Services are forbidden by the node owner's policy (PODSYNC_POLICY_NODEPORTS=forbid): use type ClusterIP`,
    });
  if (svc.spec.type === "ExternalName") {
    delete svc.spec.ipFamilies;
    return false;
  }
  // Upstream bails out on a family error before the address is looked at.
  if (!initIPFamilies(a, svc, at) || !hasClusterIP(svc)) return false;
  const asked = svc.spec.clusterIP;
  if (!asked) return true;
  const ip = parseIP(asked);
  const held = a.ips.get(asked);
  const f = path(at, "spec.clusterIP");
  if (!ip) a.out.invalid.push({ path: f, message: `"${asked}" is not a valid IP address` });
  else if (ip.family !== cidr.family || !inRange(cidr, ip.n) || reserved(cidr, ip.n))
    a.out.invalid.push({
      path: f,
      message: `failed to allocate IP ${asked}: provided IP is not in the valid range; the range of valid IPs is ${cidr.text} (less its network, first and broadcast addresses)`,
    });
  else if (held !== undefined && held !== key(svc))
    a.out.invalid.push({
      path: f,
      message: `failed to allocate IP ${asked}: provided IP is already allocated (to Service ${held})`,
    });
  else a.ips.set(asked, key(svc));
  return false;
}

/** alloc.go initIPFamilyFields on a node with one Service family (PODSYNC_SERVICE_CIDR's): RequireDualStack and
 * other families refused at their field, PreferDualStack served single-stack, ipFamilies inferred from a requested
 * clusterIP, else the node's family. A headless Service without a selector is upstream's exception: it may list
 * both families (its addresses are its endpoints') and defaults to RequireDualStack (service.ts). */
function initIPFamilies(a: Alloc, svc: Service, at: string): boolean {
  const { cidr } = a.net;
  const policy = svc.spec.ipFamilyPolicy ?? "SingleStack";
  const families = [...(svc.spec.ipFamilies ?? [])];
  const err = (f: string, message: string) => a.out.invalid.push({ path: path(at, f), message });
  const notHere = `this node's Services are ${cidr.family} only (PODSYNC_SERVICE_CIDR ${cidr.text})`;
  const before = a.out.invalid.length;
  if (policy === "SingleStack" && families.length === 2)
    err(
      "spec.ipFamilyPolicy",
      "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
    );
  const ips = svc.spec.clusterIPs ?? (svc.spec.clusterIP ? [svc.spec.clusterIP] : []);
  for (const [i, ip] of ips.entries()) {
    if (ip === "None") break;
    const fam = parseIP(ip)?.family;
    if (!fam || i < families.length) continue;
    if (fam !== cidr.family) err(`spec.clusterIPs[${i}]`, `${fam} is not configured on this node: ${notHere}`);
    else families.push(fam);
  }
  if (a.out.invalid.length > before) return false;
  if (svc.spec.clusterIP === "None" && Object.keys(svc.spec.selector ?? {}).length === 0) {
    if (families.length === 0) families.push(cidr.family);
    if (families.length < 2 && policy !== "SingleStack") families.push(families[0] === "IPv4" ? "IPv6" : "IPv4");
    svc.spec.ipFamilies = families;
    return true;
  }
  if (policy === "RequireDualStack")
    err("spec.ipFamilyPolicy", `this node is not configured for dual-stack services: ${notHere}`);
  families.forEach((f, i) => {
    if (f !== cidr.family) err(`spec.ipFamilies[${i}]`, `${f} is not configured on this node: ${notHere}`);
  });
  if (a.out.invalid.length > before) return false;
  svc.spec.ipFamilies = families.length ? families : [cidr.family];
  return true;
}

/** Requested nodePorts; the indexes of the ports that need one picked. */
function claimNodePorts(a: Alloc, svc: Service, at: string): number[] {
  if (!wantsNodePorts(svc)) return [];
  const { min, max } = a.net.nodePorts;
  const need: number[] = [];
  svc.spec.ports.forEach((p, i) => {
    if (p.nodePort === undefined) {
      need.push(i);
      return;
    }
    const held = a.ports.get(p.nodePort);
    const f = path(at, `spec.ports[${i}].nodePort`);
    if (p.nodePort < min || p.nodePort > max)
      a.out.invalid.push({
        path: f,
        message: `failed to allocate port ${p.nodePort}: provided port is not in the valid range; the range of valid ports is ${min}-${max} (PODSYNC_NODEPORT_RANGE)`,
      });
    else if (held !== undefined && held !== key(svc))
      a.out.invalid.push({
        path: f,
        message: `failed to allocate port ${p.nodePort}: provided port is already allocated (to Service ${held})`,
      });
    else a.ports.set(p.nodePort, key(svc));
  });
  return need;
}

/** The address the Service had, or the first free one from its point of the upper band. */
function pickClusterIP(a: Alloc, svc: Service, at: string, prev: Service | undefined): void {
  const { cidr } = a.net;
  const k = key(svc);
  const had = prev?.spec.clusterIP;
  const hadN = had ? parseIP(had) : undefined;
  let pick: string | undefined;
  if (had && hadN && hadN.family === cidr.family && inRange(cidr, hadN.n) && !reserved(cidr, hadN.n) && !a.ips.has(had))
    pick = had;
  else {
    // The upper band: the range less its lower sixteenth (at least 16, at most 256 addresses), as KEP-3070.
    const low = BigInt(Math.min(256, Math.max(16, Number(cidr.size / 16n))));
    const band = cidr.size - low;
    const start = startOf(k, band > 0n ? band : cidr.size);
    for (let i = 0n; i < cidr.size && pick === undefined; i++) {
      const n = cidr.base + ((low + start + i) % cidr.size);
      const text = formatIP(cidr.family, n);
      if (inRange(cidr, n) && !reserved(cidr, n) && !a.ips.has(text)) pick = text;
    }
  }
  if (pick === undefined) {
    a.out.invalid.push({
      path: path(at, "spec.clusterIP"),
      message: `failed to allocate a service IP: the range ${cidr.text} is full`,
    });
    return;
  }
  a.ips.set(pick, k);
  svc.spec.clusterIP = pick;
  svc.spec.clusterIPs = [pick];
}

/** The node port the Service's port had, or the first free one from its point of the range. */
function pickNodePort(a: Alloc, svc: Service, at: string, i: number, prev: Service | undefined): void {
  const { min, max } = a.net.nodePorts;
  const p = svc.spec.ports[i]!;
  const had = prev?.spec.ports.find((q) => q.port === p.port && q.protocol === p.protocol)?.nodePort;
  let pick: number | undefined;
  if (had !== undefined && had >= min && had <= max && !a.ports.has(had)) pick = had;
  else {
    const n = max - min + 1;
    const start = Number(startOf(`${key(svc)}/${p.port}/${p.protocol}`, BigInt(n)));
    for (let j = 0; j < n && pick === undefined; j++) {
      const c = min + ((start + j) % n);
      if (!a.ports.has(c)) pick = c;
    }
  }
  if (pick === undefined) {
    a.out.invalid.push({
      path: path(at, `spec.ports[${i}].nodePort`),
      message: `failed to allocate a node port: the range ${min}-${max} is full`,
    });
    return;
  }
  a.ports.set(pick, key(svc));
  p.nodePort = pick;
}
