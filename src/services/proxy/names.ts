// nftables object names as kube-proxy's nftables proxier makes them (pkg/proxy/nftables/proxier.go:
// hashAndTruncate, servicePortChainNameBase, servicePortEndpointChainNameBase), so a reader of `nft list table`
// recognises "service-ULMVA6XW-ns1/svc1/tcp/p80" and "endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80".
import { createHash } from "node:crypto";

/** knftables.NameLengthMax (256) minus the longest prefix (16). */
const CHAIN_NAME_BASE_LENGTH_MAX = 256 - 16;
const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** The first 8 characters of base32.StdEncoding of the SHA-256 (40 bits: the first 5 bytes). */
function hash8(name: string): string {
  const h = createHash("sha256").update(name).digest();
  let bits = 0n;
  for (let i = 0; i < 5; i++) bits = (bits << 8n) | BigInt(h[i]!);
  let out = "";
  for (let i = 7; i >= 0; i--) out += BASE32[Number((bits >> BigInt(i * 5)) & 31n)];
  return out;
}

export function hashAndTruncate(name: string): string {
  const n = `${hash8(name)}-${name}`;
  return n.length > CHAIN_NAME_BASE_LENGTH_MAX ? `${n.slice(0, CHAIN_NAME_BASE_LENGTH_MAX - 3)}...` : n;
}

/** ServicePortName as kube-proxy writes it: "ns/name:port" (":port" only when the port has a name). */
export interface ServicePortName {
  namespace: string;
  name: string;
  port: string;
  protocol: string;
}
export const servicePortNameString = (s: ServicePortName) => `${s.namespace}/${s.name}${s.port ? `:${s.port}` : ""}`;

export function servicePortChainNameBase(s: ServicePortName): string {
  return hashAndTruncate(`${s.namespace}/${s.name}/${s.protocol.toLowerCase()}/${s.port}`);
}

/** endpoint is "ip:port" (IPv6 "[ip]:port"); an IPv6 address's colons become dots, as upstream does. */
export function servicePortEndpointChainNameBase(s: ServicePortName, ip: string, port: number): string {
  return hashAndTruncate(
    `${s.namespace}/${s.name}/${s.protocol.toLowerCase()}/${s.port}__${ip.replaceAll(":", ".")}/${port}`,
  );
}

export const CHAIN_PREFIX = {
  service: "service-",
  local: "local-",
  external: "external-",
  endpoint: "endpoint-",
  affinity: "affinity-",
} as const;

/** Chains named from a Service or endpoint always hold a "/"; the fixed chains never do (isServiceChainName). */
export const isServiceChainName = (chain: string) => chain.includes("/");
export const isAffinitySetName = (set: string) => set.startsWith(CHAIN_PREFIX.affinity);
