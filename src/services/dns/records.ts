// The cluster DNS's answers, pure: a query name and type against the Services and EndpointSlices, as CoreDNS's
// kubernetes plugin gives them (plugin/kubernetes/kubernetes.go Records/findServices, parse.go parseRequest,
// handler.go, plugin/backend_lookup.go) after the cluster DNS specification (kubernetes/dns docs/specification.md):
//   <svc>.<ns>.svc.<zone>                 A: the ClusterIP; headless: every ready endpoint's address
//   <host>.<svc>.<ns>.svc.<zone>          A: a headless Service's endpoint, by its hostname or its dashed IP
//   _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV for a named port (headless: one per endpoint)
//   <a-b-c-d>.<ns>.pod.<zone>             A (CoreDNS's `pods insecure`, kubeadm's default)
//   d.c.b.a.in-addr.arpa                  PTR for ClusterIPs and headless endpoints; other addresses are forwarded
//   ExternalName Services                 CNAME to spec.externalName
//   dns-version.<zone>                    TXT "1.1.0"
// Anything else inside the zone is NXDOMAIN (NOERROR without answers where the name exists), with the zone's SOA
// in the authority section. TTL 5 s, CoreDNS's default.
import { isIPv4, isIPv6 } from "node:net";
import type { Answer, RecordType } from "dns-packet";
import type { EndpointSlice, Service, ServiceSnapshot } from "../types.js";
import { LABEL_SERVICE_NAME } from "../types.js";

export const TTL = 5;
/** The DNS schema version the specification asks for at dns-version.<zone>. */
const SCHEMA_VERSION = "1.1.0";

export interface Lookup {
  rcode: "NOERROR" | "NXDOMAIN";
  answers: Answer[];
  authorities: Answer[];
  additionals: Answer[];
}

interface SvcEntry {
  svc: Service;
  /** Ready endpoint addresses with their DNS name (hostname or dashed IP), deduplicated. */
  endpoints: { ip: string; host: string }[];
  /** Named ports: from the Service (ClusterIP) or the slices (headless). */
  ports: { name: string; protocol: string; port: number }[];
}

export interface DnsIndex {
  zone: string;
  /** "<svc>.<ns>" → entry */
  services: Map<string, SvcEntry>;
  namespaces: Set<string>;
  /** IP → PTR target names */
  reverse: Map<string, string[]>;
  serial: number;
}

const lower = (s: string) => {
  const l = s.toLowerCase();
  return l.endsWith(".") ? l.slice(0, -1) : l;
};
const dashed = (ip: string) => (isIPv4(ip) ? ip.replaceAll(".", "-") : ip.replaceAll(":", "-"));
const headless = (s: Service) => !s.spec.clusterIP || s.spec.clusterIP === "None";
const clusterIPs = (s: Service) =>
  [...new Set([s.spec.clusterIP, ...(s.spec.clusterIPs ?? [])])].filter(
    (ip): ip is string => !!ip && ip !== "None" && (isIPv4(ip) || isIPv6(ip)),
  );

/** The index the lookups read, built once per change of the source. */
export function buildIndex(snap: ServiceSnapshot, zone: string, serial = Math.floor(Date.now() / 1000)): DnsIndex {
  const z = lower(zone);
  const slicesBySvc = new Map<string, EndpointSlice[]>();
  for (const sl of snap.endpointSlices) {
    const name = sl.metadata.labels?.[LABEL_SERVICE_NAME];
    if (!name) continue;
    const k = `${name}.${sl.metadata.namespace}`;
    slicesBySvc.set(k, [...(slicesBySvc.get(k) ?? []), sl]);
  }
  const services = new Map<string, SvcEntry>();
  const namespaces = new Set<string>();
  const reverse = new Map<string, string[]>();
  const ptr = (ip: string, name: string) => {
    const k = reverseKey(ip);
    if (k) reverse.set(k, [...(reverse.get(k) ?? []), name]);
  };
  for (const svc of snap.services) {
    const key = lower(`${svc.metadata.name}.${svc.metadata.namespace}`);
    namespaces.add(lower(svc.metadata.namespace));
    const fqdn = `${key}.svc.${z}`;
    const entry: SvcEntry = { svc, endpoints: [], ports: [] };
    services.set(key, entry);
    if (svc.spec.type === "ExternalName") continue;
    if (!headless(svc)) {
      for (const ip of clusterIPs(svc)) ptr(ip, fqdn);
      for (const p of svc.spec.ports ?? [])
        if (p.name) entry.ports.push({ name: p.name, protocol: p.protocol ?? "TCP", port: p.port });
      continue;
    }
    const seen = new Set<string>();
    for (const sl of slicesBySvc.get(key) ?? []) {
      if (sl.addressType === "FQDN") continue;
      for (const p of sl.ports ?? [])
        if (p.name && p.port && !entry.ports.some((x) => x.name === p.name && x.protocol === (p.protocol ?? "TCP")))
          entry.ports.push({ name: p.name, protocol: p.protocol ?? "TCP", port: p.port });
      for (const ep of sl.endpoints) {
        // CoreDNS answers with ready addresses only; publishNotReadyAddresses makes the slice say ready.
        if (ep.conditions?.ready === false && !svc.spec.publishNotReadyAddresses) continue;
        for (const ip of ep.addresses) {
          if (seen.has(ip)) continue;
          seen.add(ip);
          const host = lower(ep.hostname ?? dashed(ip));
          entry.endpoints.push({ ip, host });
          if (ep.hostname) ptr(ip, `${host}.${fqdn}`);
        }
      }
    }
  }
  return { zone: z, services, namespaces, reverse, serial };
}

/** Whether a name is the zone's (answered here) or a reverse name this index knows; otherwise forwarded. */
export function isLocal(index: DnsIndex, name: string): boolean {
  const n = lower(name);
  if (n === index.zone || n.endsWith(`.${index.zone}`)) return true;
  const ip = reverseToIP(n);
  return ip !== undefined && index.reverse.has(ip);
}

/** The reverse map's key of an address: IPv4 as written, IPv6 as its 32 hex digits (RFC 3596's nibbles). */
function reverseKey(ip: string): string | undefined {
  if (isIPv4(ip)) return ip;
  if (!isIPv6(ip) || ip.includes(".")) return undefined; // an IPv4-mapped form is no Service's or pod's
  const [head = "", tail] = ip.split("::");
  const hs = head ? head.split(":") : [];
  const ts = tail ? tail.split(":") : [];
  const groups = [...hs, ...Array(tail === undefined ? 0 : 8 - hs.length - ts.length).fill("0"), ...ts];
  return groups
    .map((g) => g.padStart(4, "0"))
    .join("")
    .toLowerCase();
}

/** d.c.b.a.in-addr.arpa → a.b.c.d; the 32 nibbles of an ip6.arpa name → the IPv6 key (reverseKey). */
function reverseToIP(n: string): string | undefined {
  if (n.endsWith(".ip6.arpa")) {
    const nib = n.slice(0, -".ip6.arpa".length).split(".");
    return nib.length === 32 && nib.every((d) => /^[0-9a-f]$/.test(d)) ? nib.reverse().join("") : undefined;
  }
  if (!n.endsWith(".in-addr.arpa")) return undefined;
  const ip = n.slice(0, -".in-addr.arpa".length).split(".").reverse().join(".");
  return isIPv4(ip) ? ip : undefined;
}

export function soa(index: DnsIndex): Answer {
  return {
    name: index.zone,
    type: "SOA",
    ttl: TTL,
    data: {
      mname: `ns.dns.${index.zone}`,
      rname: `hostmaster.${index.zone}`,
      serial: index.serial,
      refresh: 7200,
      retry: 1800,
      expire: 86400,
      minimum: TTL,
    },
  };
}

const addr = (name: string, ip: string): Answer =>
  isIPv4(ip) ? { name, type: "A", ttl: TTL, data: ip } : { name, type: "AAAA", ttl: TTL, data: ip };

/** The answer for one question inside the zone (or a known reverse name). */
export function lookup(index: DnsIndex, qname: string, qtype: RecordType): Lookup {
  const n = lower(qname);
  const z = index.zone;
  const ok = (answers: Answer[], additionals: Answer[] = []): Lookup => ({
    rcode: "NOERROR",
    answers,
    authorities: answers.length ? [] : [soa(index)],
    additionals,
  });
  const nx: Lookup = { rcode: "NXDOMAIN", answers: [], authorities: [soa(index)], additionals: [] };
  const typed = (records: Answer[], additionals: Answer[] = []) =>
    ok(
      records.filter((r) => r.type === qtype || qtype === ("ANY" as RecordType)).map((r) => ({ ...r, name: qname })),
      additionals,
    );

  const ip = reverseToIP(n);
  if (ip !== undefined) {
    const names = index.reverse.get(ip);
    if (!names) return nx;
    return typed(names.map((t) => ({ name: qname, type: "PTR", ttl: TTL, data: t }) as Answer));
  }
  if (n === z) return typed([soa(index), { name: z, type: "NS", ttl: TTL, data: `ns.dns.${z}` }]);
  if (n === `dns-version.${z}`) return typed([{ name: n, type: "TXT", ttl: TTL, data: [SCHEMA_VERSION] }]);
  const rel = n.slice(0, -(z.length + 1)).split(".");
  // rel: [..., ns, "svc"] or [..., ns, "pod"]
  const kind = rel.at(-1);
  if (kind === "pod") return podLookup(index, rel, typed, nx, ok);
  if (kind !== "svc") return nx;
  if (rel.length === 1) return ok([]);
  const ns = rel.at(-2)!;
  if (rel.length === 2) return index.namespaces.has(ns) ? ok([]) : nx;
  const svcName = rel.at(-3)!;
  const entry = index.services.get(`${svcName}.${ns}`);
  if (!entry) return nx;
  const fqdn = `${svcName}.${ns}.svc.${z}`;
  const spec = entry.svc.spec;
  const rest = rel.slice(0, -3);
  if (rest.length === 0) {
    if (spec.type === "ExternalName") {
      // A CNAME whatever the type asked (the server follows it for A and AAAA, as CoreDNS does).
      const target = spec.externalName ? lower(spec.externalName) : undefined;
      return ok(target ? [{ name: qname, type: "CNAME", ttl: TTL, data: target }] : []);
    }
    const ips = headless(entry.svc) ? entry.endpoints.map((e) => e.ip) : clusterIPs(entry.svc);
    if (qtype === "SRV") return srv(entry, fqdn, qname, ok, undefined);
    return typed(ips.map((i) => addr(n, i)));
  }
  if (rest.length === 1) {
    // <host>.<svc>.<ns>.svc: a headless Service's endpoint.
    const eps = headless(entry.svc) ? entry.endpoints.filter((e) => e.host === rest[0]) : [];
    if (eps.length === 0) return nx;
    return typed(eps.map((e) => addr(n, e.ip)));
  }
  if (rest.length === 2 && rest[0]!.startsWith("_") && rest[1]!.startsWith("_")) {
    const port = rest[0]!.slice(1);
    const proto = rest[1]!.slice(1);
    const r = srv(entry, fqdn, qname, ok, { port, proto });
    if (r.answers.length === 0) return nx;
    return qtype === "SRV" ? r : ok([]);
  }
  return nx;
}

function srv(
  entry: SvcEntry,
  fqdn: string,
  qname: string,
  ok: (a: Answer[], add?: Answer[]) => Lookup,
  only: { port: string; proto: string } | undefined,
): Lookup {
  const ports = entry.ports.filter(
    (p) => !only || (p.name.toLowerCase() === only.port && p.protocol.toLowerCase() === only.proto),
  );
  const answers: Answer[] = [];
  const additionals: Answer[] = [];
  const targets = headless(entry.svc)
    ? entry.endpoints.map((e) => ({ target: `${e.host}.${fqdn}`, ip: e.ip }))
    : clusterIPs(entry.svc).map((ip) => ({ target: fqdn, ip }));
  const n = targets.length * Math.max(ports.length, 1);
  // plugin/backend_lookup.go SRV: priority 0, weights summing to about 100 across the answers.
  const weight = Math.floor(100 / Math.max(n, 1));
  for (const p of ports)
    for (const t of targets) {
      answers.push({
        name: qname,
        type: "SRV",
        ttl: TTL,
        data: { priority: 0, weight, port: p.port, target: t.target },
      });
      if (!additionals.some((a) => a.name === t.target && "data" in a && a.data === t.ip))
        additionals.push(addr(t.target, t.ip));
    }
  return ok(answers, additionals);
}

function podLookup(
  index: DnsIndex,
  rel: string[],
  typed: (r: Answer[]) => Lookup,
  nx: Lookup,
  ok: (a: Answer[]) => Lookup,
): Lookup {
  // <a-b-c-d>.<ns>.pod: CoreDNS's `pods insecure` answers the address the name spells, unchecked.
  if (rel.length === 2) return ok([]);
  if (rel.length !== 3) return nx;
  const name = `${rel.join(".")}.${index.zone}`;
  const v4 = rel[0]!.replaceAll("-", ".");
  if (isIPv4(v4)) return typed([addr(name, v4)]);
  const v6 = rel[0]!.replaceAll("-", ":");
  if (isIPv6(v6)) return typed([addr(name, v6)]);
  return nx;
}
