// Forwarding what is not the cluster's to the upstream resolvers (PODSYNC_DNS_UPSTREAM), as CoreDNS's forward plugin:
// the query as it came, to each upstream in turn until one answers; UDP for UDP clients, TCP for TCP
// ones. No upstream answering is SERVFAIL (the server's, not this module's).
import { createSocket } from "node:dgram";
import { connect, isIPv6 } from "node:net";

export interface Upstream {
  host: string;
  port: number;
}

/** "host[:port]" or "[v6]:port" or a bare v6 address; port 53 by default. */
export function parseUpstream(s: string): Upstream {
  const t = s.trim();
  const b = /^\[([^\]]+)\](?::(\d+))?$/.exec(t);
  if (b) return { host: b[1]!, port: b[2] ? Number(b[2]) : 53 };
  if (isIPv6(t)) return { host: t, port: 53 };
  const i = t.lastIndexOf(":");
  if (i > 0) return { host: t.slice(0, i), port: Number(t.slice(i + 1)) };
  return { host: t, port: 53 };
}

export function queryUdp(u: Upstream, msg: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = createSocket(isIPv6(u.host) ? "udp6" : "udp4");
    const id = msg.readUInt16BE(0);
    const done = (e: Error | undefined, b?: Buffer) => {
      clearTimeout(timer);
      sock.close();
      if (e) reject(e);
      else resolve(b!);
    };
    const timer = setTimeout(() => done(new Error(`no answer from ${u.host}:${u.port} in ${timeoutMs} ms`)), timeoutMs);
    sock.on("error", (e) => done(e));
    // An answer for another id (a late one, or spoofed) is not ours.
    sock.on("message", (b) => b.length >= 2 && b.readUInt16BE(0) === id && done(undefined, b));
    sock.send(msg, u.port, u.host);
  });
}

export function queryTcp(u: Upstream, msg: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: u.host, port: u.port });
    let buf = Buffer.alloc(0);
    const done = (e: Error | undefined, b?: Buffer) => {
      clearTimeout(timer);
      sock.destroy();
      if (e) reject(e);
      else resolve(b!);
    };
    const timer = setTimeout(() => done(new Error(`no answer from ${u.host}:${u.port} in ${timeoutMs} ms`)), timeoutMs);
    sock.on("error", (e) => done(e));
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0))
        done(undefined, buf.subarray(2, 2 + buf.readUInt16BE(0)));
    });
    const len = Buffer.alloc(2);
    len.writeUInt16BE(msg.length);
    sock.write(Buffer.concat([len, msg]));
  });
}

/** The first upstream's answer that arrives, trying them in order; rejects when none answers. */
export async function forward(
  upstreams: readonly Upstream[],
  msg: Buffer,
  tcp: boolean,
  timeoutMs = 2000,
): Promise<Buffer> {
  let last: unknown = new Error("no upstream resolvers configured (PODSYNC_DNS_UPSTREAM)");
  for (const u of upstreams) {
    try {
      // A truncated UDP answer goes back as it is: the client asks again over TCP, and that is forwarded over TCP.
      return tcp ? await queryTcp(u, msg, timeoutMs) : await queryUdp(u, msg, timeoutMs);
    } catch (e) {
      last = e;
    }
  }
  throw last;
}
