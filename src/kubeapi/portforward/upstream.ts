// The runtime's side of a SPDY stream (kubectl port-forward, and exec for kubectl 1.27–1.29): an HTTP/1.1 upgrade
// to the URL CRI answered (containerd's streaming server on loopback), as kubelet's own proxy makes it
// (apimachinery util/proxy UpgradeAwareHandler, which kubelet's server.go proxyStream uses for CRI streaming URLs):
// the client's `X-Stream-Protocol-Version` offers are passed on, the runtime picks one, and from its 101 on the
// socket carries SPDY/3.1 frames both ways.
import { connect, type Socket } from "node:net";

export interface UpstreamUpgrade {
  socket: Socket;
  status: number;
  /** The response head as received (status line and headers, through the blank line). */
  head: Buffer;
  /** The protocol the runtime chose (`X-Stream-Protocol-Version`). */
  protocol: string;
  /** Bytes read past the head: the first SPDY frames. */
  rest: Buffer;
}

/** A response head longer than this is no streaming server's. */
const MAX_HEAD_BYTES = 16 * 1024;

export function dialUpgrade(
  url: string,
  method: "GET" | "POST",
  protocols: readonly string[],
  timeoutMs = 10_000,
): Promise<UpstreamUpgrade> {
  const u = new URL(url);
  if (u.protocol !== "http:")
    return Promise.reject(new Error(`the runtime's streaming URL is not http: ${u.protocol}`));
  return new Promise((resolve, reject) => {
    const socket = connect({ host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || 80) });
    const fail = (e: Error) => (socket.destroy(), reject(e));
    socket.setTimeout(timeoutMs, () => fail(new Error("no answer to the upgrade")));
    socket.once("error", fail);
    socket.once("connect", () => {
      const lines = [
        `${method} ${u.pathname}${u.search} HTTP/1.1`,
        `Host: ${u.host}`,
        "Connection: Upgrade",
        "Upgrade: SPDY/3.1",
        ...protocols.map((p) => `X-Stream-Protocol-Version: ${p}`),
        "Content-Length: 0",
      ];
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    });
    let got = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) {
        if (got.length > MAX_HEAD_BYTES) fail(new Error("the upgrade's answer has no end of headers"));
        return;
      }
      socket.off("data", onData);
      socket.pause();
      socket.setTimeout(0);
      socket.off("error", fail);
      const head = got.subarray(0, end + 4);
      const text = head.toString("latin1");
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      const protocol = /\r\nx-stream-protocol-version:[ \t]*([^\r]*)/i.exec(text)?.[1]?.trim() ?? "";
      resolve({ socket, status, head, protocol, rest: got.subarray(end + 4) });
    };
    socket.on("data", onData);
  });
}
