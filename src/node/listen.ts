// The node's port: plain http, and with PODSYNC_TLS https on the same port (the owner's certificate, or a
// self-signed one kept in the state dir), its listen errors said as settings errors, and how it stops.
import { isIP, type Server } from "node:net";
import { join } from "node:path";
import { getRequestListener, serve, type ServerType } from "@hono/node-server";
import type { machineFacts } from "../host/node-facts.js";
import { type DualListener, dualListener } from "../host/serving/dual-listener.js";
import { loadOrMakeServingCert } from "../host/serving/serving-cert.js";
import { SettingsError, type Settings } from "../settings/node.js";
import { readSettingFile } from "./config.js";
import type { UpgradeHandler } from "./front.js";

export type ServingTls = { cert: string; key: string; certFile?: string | undefined };

/** The serving certificate (PODSYNC_TLS): the files given, else a self-signed one for the node's names and IPs. */
export function servingTls(
  s: Settings,
  hostIPs: readonly string[],
  machine: ReturnType<typeof machineFacts>,
  stateDir: string,
): { tls?: ServingTls; tlsWarning?: string } {
  if (!s.PODSYNC_TLS) return {};
  if (s.PODSYNC_TLS_CERT_FILE && s.PODSYNC_TLS_KEY_FILE)
    return {
      tls: {
        cert: readSettingFile(s.PODSYNC_TLS_CERT_FILE, "PODSYNC_TLS_CERT_FILE"),
        key: readSettingFile(s.PODSYNC_TLS_KEY_FILE, "PODSYNC_TLS_KEY_FILE"),
        certFile: s.PODSYNC_TLS_CERT_FILE,
      },
    };
  const ips = [
    ...new Set([
      "127.0.0.1",
      "::1",
      ...hostIPs,
      ...(isIP(s.PODSYNC_HOST) && !["0.0.0.0", "::"].includes(s.PODSYNC_HOST) ? [s.PODSYNC_HOST] : []),
    ]),
  ];
  const names = [
    ...new Set(["localhost", s.PODSYNC_NODE_NAME, machine.hostname, ...(isIP(s.PODSYNC_HOST) ? [] : [s.PODSYNC_HOST])]),
  ];
  const made = loadOrMakeServingCert(join(stateDir, "tls"), `${s.PODSYNC_NODE_NAME}@podsync`, names, ips);
  if (made.persisted) return { tls: made };
  return {
    tls: made,
    tlsWarning: `${join(stateDir, "tls")} cannot be written: the self-signed serving certificate is kept in memory and changes at every start`,
  };
}

/** A port in use or a host that is not this machine's: a settings problem, said in one line (no stack). */
function listenError(s: Settings, e: NodeJS.ErrnoException) {
  const where = `${s.PODSYNC_HOST}:${s.PODSYNC_PORT}`;
  if (e.code === "EADDRINUSE")
    return new SettingsError(
      `cannot listen on ${where}: the port is in use (another podsync? stop it, or set PODSYNC_PORT to a free port)`,
    );
  if (e.code === "EADDRNOTAVAIL" || e.code === "ENOTFOUND")
    return new SettingsError(`cannot listen on ${where}: PODSYNC_HOST is not an address of this machine`);
  if (e.code === "EACCES")
    return new SettingsError(
      `cannot listen on ${where}: not allowed (ports below 1024 need privileges; set PODSYNC_PORT)`,
    );
  return e;
}

export interface Listening {
  server: ServerType | Server;
  /** Stop taking connections (the port is free at once) and close the idle ones. */
  stopListening(): void;
  /** End the connections left: a watch or a log follow never ends by itself, and must not hold the stop. */
  closeConnections(): Promise<void>;
}

export async function listen(
  s: Settings,
  tls: ServingTls | undefined,
  fetch: (req: Request, env: object) => Promise<Response>,
  onUpgrade: UpgradeHandler,
): Promise<Listening> {
  let dual: DualListener | undefined;
  const server = await new Promise<ServerType | Server>((res, rej) => {
    if (tls) {
      dual = dualListener(getRequestListener(fetch), tls);
      dual.onUpgrade(onUpgrade);
      const srv = dual.server;
      srv.once("error", (e: NodeJS.ErrnoException) => rej(listenError(s, e)));
      srv.listen(s.PODSYNC_PORT, s.PODSYNC_HOST, () => res(srv));
      return;
    }
    const srv = serve({ fetch, hostname: s.PODSYNC_HOST, port: s.PODSYNC_PORT }, () => res(srv));
    srv.on("upgrade", onUpgrade);
    srv.once("error", (e: NodeJS.ErrnoException) => rej(listenError(s, e)));
  });
  return {
    server,
    stopListening: () => {
      if (dual) dual.stopListening();
      else {
        server.close();
        (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      }
    },
    closeConnections: () =>
      dual
        ? dual.close()
        : new Promise<void>((res) => {
            server.close(() => res());
            // As the dual listener does: a watch or a log follow never ends by itself, and must not hold the stop.
            (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          }),
  };
}

/** http://host:port (and https:// on the same port with TLS) as the node answers. */
export function addresses(s: Settings, server: ServerType | Server, tls: ServingTls | undefined) {
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : s.PODSYNC_PORT;
  const host = s.PODSYNC_HOST.includes(":") ? `[${s.PODSYNC_HOST}]` : s.PODSYNC_HOST;
  const url = `http://${host}:${port}`;
  const tlsInfo = tls && {
    url: `https://${host}:${port}`,
    caCert: tls.cert,
    ...(tls.certFile ? { certFile: tls.certFile } : {}),
  };
  return { url, tlsInfo };
}

/** The listener as a WebSocket origin this process can dial: a wildcard host is reached on loopback. */
export function loopbackOrigin(url: string): string {
  const u = new URL(url);
  if (u.hostname === "0.0.0.0") u.hostname = "127.0.0.1";
  else if (u.hostname === "[::]") u.hostname = "[::1]";
  return `ws://${u.host}`;
}
