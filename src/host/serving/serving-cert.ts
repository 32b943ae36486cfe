// Package host/serving/ — what the Node server needs of the machine: its TLS certificate, one port for http and
// https, the open-file limit. Imports only node: modules and layers below; never agent, HTTP or entry points.
//
// The Node server's TLS serving certificate when the owner gives none: a self-signed one kept in the state
// directory, as kubelet makes one in its cert dir when --tls-cert-file is unset (pkg/kubelet/kubelet.go,
// client-go's cert.GenerateSelfSignedCertKey). It is made with node:crypto alone: a P-256 key, and the
// certificate's DER written here (a few dozen lines of ASN.1), so no library and no openssl binary is needed.
// It is its own CA (basicConstraints CA:TRUE): `podsync kubeconfig` embeds it as certificate-authority-data.
// SANs: the node name, the host name, localhost, 127.0.0.1, ::1 and the node's addresses. Valid one year;
// made again when missing, unreadable, expired, or when it does not name a SAN it should.
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync, renameSync } from "node:fs";
import { isIPv4, isIPv6 } from "node:net";
import { join } from "node:path";

const len = (n: number): number[] =>
  n < 0x80
    ? [n]
    : n < 0x100
      ? [0x81, n]
      : n < 0x10000
        ? [0x82, n >> 8, n & 0xff]
        : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
const tlv = (tag: number, body: Uint8Array | number[]): Buffer => Buffer.from([tag, ...len(body.length), ...body]);
const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const explicit = (n: number, inner: Buffer) => tlv(0xa0 + n, inner);
const octets = (b: Uint8Array) => tlv(0x04, b);
const bits = (b: Uint8Array, unused = 0) => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const bool = (v: boolean) => tlv(0x01, [v ? 0xff : 0]);
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, "utf8"));

function integer(b: Uint8Array): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0 && b[i + 1]! < 0x80) i++;
  const v = b.subarray(i);
  return tlv(0x02, v[0]! >= 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split(".").map(Number);
  const out = [a! * 40 + b!];
  for (const n of rest) {
    const chunk = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, out);
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
function time(d: Date): Buffer {
  const iso = `${d.toISOString().replace(/[-:T]/g, "").slice(0, 14)}Z`;
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split(".").map(Number));
  const [head, tail] = ip.split("::") as [string, string | undefined];
  const groups = (s: string | undefined) => (s ? s.split(":") : []);
  const h = groups(head);
  const t = groups(tail);
  const all = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill("0"), ...t];
  return Buffer.from(all.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

const ext = (id: string, critical: boolean, value: Buffer) =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

export interface ServingCert {
  cert: string;
  key: string;
}

/** A self-signed P-256 serving certificate for these names and addresses. */
export function selfSignedCert(
  commonName: string,
  dnsNames: readonly string[],
  ips: readonly string[],
  now = new Date(),
  days = 365,
): ServingCert {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const spki = publicKey.export({ type: "spki", format: "der" });
  const name = seq(set(seq(oid("2.5.4.3"), utf8(commonName))));
  const ecdsaSha256 = seq(oid("1.2.840.10045.4.3.2"));
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  const san = seq(
    ...dnsNames.map((d) => tlv(0x82, Buffer.from(d, "ascii"))),
    ...ips.filter((i) => isIPv4(i) || isIPv6(i)).map((i) => tlv(0x87, ipBytes(i))),
  );
  // The SPKI's BIT STRING content (after its unused-bits byte) is the public key the key id hashes.
  const keyId = createHash("sha1")
    .update(spki.subarray(spki.length - 65))
    .digest();
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    ecdsaSha256,
    name,
    seq(time(new Date(now.getTime() - 60_000)), time(new Date(now.getTime() + days * 86_400_000))),
    name,
    spki,
    explicit(
      3,
      seq(
        ext("2.5.29.15", true, bits(Buffer.from([0x84]), 2)), // keyUsage: digitalSignature, keyCertSign
        ext("2.5.29.37", false, seq(oid("1.3.6.1.5.5.7.3.1"))), // extKeyUsage: serverAuth
        ext("2.5.29.19", true, seq(bool(true))), // basicConstraints: CA
        ext("2.5.29.14", false, octets(keyId)),
        ext("2.5.29.17", false, san),
      ),
    ),
  );
  const signature = sign("sha256", tbs, privateKey);
  const der = seq(tbs, ecdsaSha256, bits(signature));
  const pem = (label: string, b: Buffer) =>
    `-----BEGIN ${label}-----\n${b.toString("base64").replace(/.{64}/g, "$&\n").replace(/\n?$/, "\n")}-----END ${label}-----\n`;
  return { cert: pem("CERTIFICATE", der), key: privateKey.export({ type: "pkcs8", format: "pem" }) as string };
}

/** Whether `cert` is usable now (not expired, the key matches) and names every SAN wanted. */
function stillGood(c: ServingCert, dnsNames: readonly string[], ips: readonly string[], now: Date): boolean {
  try {
    const x = new X509Certificate(c.cert);
    const key: KeyObject = createPrivateKey(c.key);
    if (!x.checkPrivateKey(key)) return false;
    if (Date.parse(x.validTo) <= now.getTime() + 86_400_000) return false;
    const sans = x.subjectAltName ?? "";
    return dnsNames.every((d) => sans.includes(`DNS:${d}`)) && ips.every((i) => x.checkIP(i) !== undefined);
  } catch {
    return false;
  }
}

/** The state dir's serving.crt/serving.key, made (again) when needed. Files 0600 (the key) and 0644. A
 * directory that cannot be written does not stop the server: the certificate is then kept in memory only
 * (`persisted: false`) and a new one is made at the next start. */
export function loadOrMakeServingCert(
  dir: string,
  commonName: string,
  dnsNames: readonly string[],
  ips: readonly string[],
  now = new Date(),
): ServingCert & { made: boolean; certFile?: string; persisted: boolean } {
  const certFile = join(dir, "serving.crt");
  const keyFile = join(dir, "serving.key");
  try {
    const c = { cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8") };
    if (stillGood(c, dnsNames, ips, now)) return { ...c, made: false, certFile, persisted: true };
  } catch {
    // missing or unreadable: made below
  }
  const c = selfSignedCert(commonName, dnsNames, ips, now);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(`${keyFile}.tmp`, c.key, { mode: 0o600 });
    writeFileSync(`${certFile}.tmp`, c.cert, { mode: 0o644 });
    renameSync(`${keyFile}.tmp`, keyFile);
    renameSync(`${certFile}.tmp`, certFile);
  } catch {
    return { ...c, made: true, persisted: false };
  }
  return { ...c, made: true, certFile, persisted: true };
}
