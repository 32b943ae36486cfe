// Package services/dns/ — the cluster DNS: CoreDNS kubernetes-plugin records, cache, forwarding, UDP/TCP server.
// Imports ../types.js, node: modules and dns-packet; never the runtime, HTTP or an entry point.
//
// The cluster DNS server: UDP and TCP on one node-local address (never a wildcard, so it is no open resolver).
// When the address does not exist yet (the pod bridge comes with the first pod), start-up says so and the server
// binds as soon as the address appears (checked every second).
import { createSocket, type Socket } from "node:dgram";
import { createServer, isIP, type Server, type Socket as TcpSocket } from "node:net";
import { networkInterfaces } from "node:os";
import type { Answerer } from "./answer.js";

export interface DnsServerHealth {
  listening: boolean;
  address: string;
  port: number;
  /** Why it is not listening (waiting for the address, or a bind error). */
  reason?: string;
}

export interface DnsServer {
  health(): DnsServerHealth;
  /** Resolves once both sockets are bound. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** A TCP client may keep its connection for several queries; an idle one is closed (RFC 7766's advice). */
const TCP_IDLE_MS = 10_000;
const TCP_MAX_PENDING = 64 * 1024;

const hasAddress = (a: string) =>
  Object.values(networkInterfaces()).some((l) => (l ?? []).some((i) => i.address === a));

export function startDnsServer(o: {
  address: string;
  port: number;
  answerer: Answerer;
  log?: (rec: Record<string, unknown>) => void;
  /** How often to look for a missing address (ms). */
  pollMs?: number;
}): DnsServer {
  const log = o.log ?? (() => undefined);
  if (!isIP(o.address) || o.address === "0.0.0.0" || o.address === "::")
    throw new Error(`PODSYNC_CLUSTER_DNS: ${o.address} is not one node-local address (a wildcard is refused)`);
  const health: DnsServerHealth = { listening: false, address: o.address, port: o.port };
  let udp: Socket | undefined;
  let tcp: Server | undefined;
  const conns = new Set<TcpSocket>();
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let readyResolve!: () => void;
  const ready = new Promise<void>((r) => (readyResolve = r));

  const onUdp = (msg: Buffer, rinfo: { address: string; port: number }) => {
    void o.answerer.answer(msg, false).then((out) => {
      if (out && udp) udp.send(out, rinfo.port, rinfo.address);
    });
  };
  const onTcp = (sock: TcpSocket) => {
    conns.add(sock);
    sock.setTimeout(TCP_IDLE_MS, () => sock.destroy());
    sock.on("close", () => conns.delete(sock));
    sock.on("error", () => sock.destroy());
    let buf = Buffer.alloc(0);
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length > TCP_MAX_PENDING) {
        sock.destroy();
        return;
      }
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + msg.length);
        void o.answerer.answer(Buffer.from(msg), true).then((out) => {
          if (!out || sock.destroyed) return;
          const len = Buffer.alloc(2);
          len.writeUInt16BE(out.length);
          sock.write(Buffer.concat([len, out]));
        });
      }
    });
  };

  const bind = async (): Promise<void> => {
    const family = o.address.includes(":") ? "udp6" : "udp4";
    const u = createSocket({ type: family, reuseAddr: false });
    u.on("message", onUdp);
    await new Promise<void>((res, rej) => {
      u.once("error", rej);
      u.bind(o.port, o.address, () => (u.off("error", rej), res()));
    });
    u.on("error", (e) => log({ dns: "udp error", error: e.message }));
    const t = createServer(onTcp);
    await new Promise<void>((res, rej) => {
      t.once("error", rej);
      t.listen(o.port, o.address, () => (t.off("error", rej), res()));
    }).catch((e: unknown) => {
      u.close();
      throw e;
    });
    udp = u;
    tcp = t;
  };

  const attempt = () => {
    if (closed) return;
    if (!hasAddress(o.address)) {
      if (health.reason === undefined)
        log({ dns: "waiting", address: o.address, note: "the address does not exist yet; binding when it appears" });
      health.reason = `${o.address} is not an address of this node yet (binding when it appears)`;
      timer = setTimeout(attempt, o.pollMs ?? 1000);
      timer.unref?.();
      return;
    }
    bind().then(
      () => {
        if (closed) {
          udp?.close();
          tcp?.close();
          return;
        }
        health.listening = true;
        delete health.reason;
        log({ dns: "listening", address: o.address, port: o.port });
        readyResolve();
      },
      (e: NodeJS.ErrnoException) => {
        health.reason = `cannot listen on ${o.address}:${o.port}: ${e.code ?? e.message}`;
        log({ dns: "bind failed", error: health.reason });
        timer = setTimeout(attempt, o.pollMs ?? 1000);
        timer.unref?.();
      },
    );
  };
  attempt();

  return {
    health: () => ({ ...health }),
    ready: () => ready,
    /** Idempotent: a second close finds nothing to close. */
    async close() {
      closed = true;
      clearTimeout(timer);
      for (const c of conns) c.destroy();
      const [u, t] = [udp, tcp];
      udp = undefined;
      tcp = undefined;
      await Promise.all([
        new Promise<void>((r) => (u ? u.close(() => r()) : r())),
        new Promise<void>((r) => (t ? t.close(() => r()) : r())),
      ]);
      health.listening = false;
    },
  };
}
