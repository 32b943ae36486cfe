// One port, two protocols: a connection whose first byte is a TLS handshake record (0x16) is served over TLS,
// any other as plain HTTP. kubectl sends credentials only over https, while loopback curl and the existing
// clients keep using http:// on the same address. Both servers run the same request handler.
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import { createServer as createHttpServer, type IncomingMessage, type RequestListener } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Duplex } from "node:stream";

const TLS_HANDSHAKE = 0x16;
/** A connection that sends nothing is closed after this long (the HTTP servers' own timeouts start only once
 * they have the socket). */
const FIRST_BYTE_TIMEOUT_MS = 60_000;

export interface DualListener {
  /** The listening socket (address(), close()). */
  server: Server;
  /** Run for an HTTP Upgrade on either protocol. */
  onUpgrade(fn: (req: IncomingMessage, socket: Duplex, head: Buffer) => void): void;
  /** Stop taking connections (the port is free at once) and close the idle kept-alive ones; open ones go on. */
  stopListening(): void;
  close(): Promise<void>;
}

export function dualListener(handler: RequestListener, tls: { cert: string; key: string }): DualListener {
  const plain = createHttpServer(handler);
  const secure = createHttpsServer({ cert: tls.cert, key: tls.key }, handler);
  const server = createNetServer((socket: Socket) => {
    socket.setTimeout(FIRST_BYTE_TIMEOUT_MS, () => socket.destroy());
    socket.once("data", (first: Buffer) => {
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(first);
      (first[0] === TLS_HANDSHAKE ? secure : plain).emit("connection", socket);
      process.nextTick(() => socket.resume());
    });
    socket.on("error", () => socket.destroy());
  });
  return {
    server,
    onUpgrade(fn) {
      plain.on("upgrade", fn);
      secure.on("upgrade", fn);
    },
    stopListening() {
      if (server.listening) server.close();
      plain.closeIdleConnections();
      secure.closeIdleConnections();
    },
    close: () =>
      new Promise<void>((res) => {
        plain.closeAllConnections();
        secure.closeAllConnections();
        server.close(() => res());
      }),
  };
}
