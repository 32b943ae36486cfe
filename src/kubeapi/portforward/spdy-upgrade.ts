// kubectl's SPDY/3.1 streams: port-forward (plain SPDY for kubectl 1.30 and earlier, SPDY tunnelled through a
// WebSocket for 1.31+: client-go tools/portforward tunneling_dialer.go, subprotocol `SPDY/3.1+portforward.k8s.io`,
// each binary message a run of the SPDY connection's bytes), and exec for kubectl 1.27–1.29 (plain SPDY, the
// `v4.channel.k8s.io` family). As kubelet does for a CRI streaming URL (server.go proxyStream ->
// UpgradeAwareHandler), the upgrade is checked here (the token, the node owner's gate, the pod), the runtime is
// asked for its streaming URL (CRI PortForward or Exec), an upgrade to that URL is made (upstream.ts), and the
// connection is then joined byte for byte: the runtime's streaming server (containerd's, with moby/spdystream)
// ends the SPDY session, answers each stream pair (`streamType` data/error, `port`, `requestID`) and dials the
// port inside the pod's network namespace. The frames are read on the way (spdy/inspect.ts) to log the ports
// asked for and to hold each session to `maxStreams` open streams; a frame is never changed.
// Flow control: SPDY/3.1's per-stream windows are the two ends' (64 KiB initial, spdystream's); here each
// direction is a piped socket with back-pressure, so a client that stops reading stops its own session's
// runtime socket (TCP's window) and holds at most `bufferBytes` here, never another session's.
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { verifyReadToken } from "../../auth/read-token.js";
import type { PodRuntime } from "../../kubelet/pod-runtime.js";
import { parseBool } from "../apiserver/query.js";
import { checkExec, checkPortForward, EXEC_PATH, PORT_FORWARD_PATH } from "../exec-check.js";
import { type ExecStreamOptions, refuse, sha256hex } from "../exec-stream.js";
import { badRequest, KubeStatusError, notFound, toKubeStatus } from "../status.js";
import { SpdyInspector } from "./spdy/inspect.js";
import { upgradeLog } from "../upgrade-log.js";
import { dialUpgrade, type UpstreamUpgrade } from "./upstream.js";

/** kubectl's tunnelling subprotocol (apimachinery util/portforward constants: WebsocketsSPDYTunnelingPrefix). */
export const TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io";
const PORT_FORWARD_PROTOCOL = "portforward.k8s.io";
/** ws parses Sec-WebSocket-Protocol as RFC 7230 tokens, which have no "/" (gorilla/websocket, the API server's,
 * takes any): the offer is handed to ws under this name, and the answer's line is given the real one back. */
const TUNNEL_ALIAS = "podsync-spdy-tunnel";
/** What kubelet's streaming server (remotecommand) speaks over SPDY, newest first. */
const EXEC_PROTOCOLS = ["v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"];

/** Open client streams per session: kubectl holds about one per forwarded connection (its error stream's side
 * closes at once), so 128 leaves room for 64 connections at once through one `kubectl port-forward`, each with a
 * data and an error stream; neither kubelet nor spdystream caps them. */
export const MAX_SESSION_STREAMS = 128;

export interface SpdyUpgradeOptions extends Omit<ExecStreamOptions, "runtime"> {
  runtime: Pick<PodRuntime, "execStream" | "portForwardStream">;
  /** The node owner's PODSYNC_ALLOW_PORT_FORWARD. */
  allowPortForward: boolean;
  /** Streams one session's client may hold open at once (MAX_SESSION_STREAMS by default). */
  maxStreams?: number | undefined;
}

const header = (req: IncomingMessage, name: string): string[] => {
  const v = req.headers[name];
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).flatMap((s) => s.split(",").map((p) => p.trim()));
};

/** The one call to the runtime's exec (kept thin so it can be pointed at another exec entry point). */
const runtimeExecUrl = (
  o: SpdyUpgradeOptions,
  uid: string,
  req: Parameters<ExecStreamOptions["runtime"]["execStream"]>[1],
) => o.runtime.execStream(uid, req);

interface Target {
  kind: "exec" | "portforward";
  ns: string;
  name: string;
}

function target(path: string): Target {
  const ex = EXEC_PATH.exec(path);
  if (ex) return { kind: "exec", ns: ex[1]!, name: ex[2]! };
  const pf = PORT_FORWARD_PATH.exec(path);
  if (pf) return { kind: "portforward", ns: pf[1]!, name: pf[2]! };
  throw new KubeStatusError(404, "NotFound", "the server could not find the requested resource", {});
}

/** The protocols offered to the runtime; a refusal when the client offers none it speaks. */
function protocols(req: IncomingMessage, t: Target, tunnel: boolean): string[] {
  if (t.kind === "portforward") {
    if (tunnel) {
      if (!header(req, "sec-websocket-protocol").includes(TUNNEL_PROTOCOL))
        throw badRequest(
          `port-forward over WebSocket needs the subprotocol ${TUNNEL_PROTOCOL} (kubectl 1.31 or later); earlier kubectl upgrades to SPDY/3.1`,
        );
      return [PORT_FORWARD_PROTOCOL];
    }
    if (!header(req, "x-stream-protocol-version").includes(PORT_FORWARD_PROTOCOL))
      throw badRequest(`port-forward over SPDY needs X-Stream-Protocol-Version: ${PORT_FORWARD_PROTOCOL}`);
    return [PORT_FORWARD_PROTOCOL];
  }
  const offered = header(req, "x-stream-protocol-version").filter((p) => EXEC_PROTOCOLS.includes(p));
  if (offered.length === 0)
    throw badRequest(`exec over SPDY needs X-Stream-Protocol-Version, one of ${EXEC_PROTOCOLS.join(", ")}`);
  return offered;
}

export function spdyUpgrade(o: SpdyUpgradeOptions): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const now = o.now ?? Date.now;
  const bufferBytes = o.bufferBytes ?? 1024 * 1024;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: Math.max(64 * 1024, bufferBytes),
    handleProtocols: (offered) => (offered.has(TUNNEL_ALIAS) ? TUNNEL_ALIAS : false),
  });
  wss.on("headers", (lines) => {
    const i = lines.indexOf(`Sec-WebSocket-Protocol: ${TUNNEL_ALIAS}`);
    if (i >= 0) lines[i] = `Sec-WebSocket-Protocol: ${TUNNEL_PROTOCOL}`;
  });
  return (req, socket, head) => {
    const { rec, done } = upgradeLog(o.log, now, req.method ?? "GET", "");
    let release = () => undefined as void;
    void (async () => {
      const url = new URL(req.url ?? "/", "http://node");
      const t = target(url.pathname);
      rec.route = `/api/v1/namespaces/:ns/pods/:name/${t.kind}`;
      const scope = await verifyReadToken(o.verifier, req.headers.authorization);
      rec.jti = scope.token.payload.jti;
      rec.iss = scope.token.payload.iss;
      const tunnel = String(req.headers.upgrade ?? "").toLowerCase() === "websocket";
      if (t.kind === "exec") checkExec(scope, o.allowExec, t.name);
      else checkPortForward(scope, o.allowPortForward, t.name);
      if (!tunnel && String(req.headers.upgrade ?? "").toLowerCase() !== "spdy/3.1")
        throw badRequest(`${t.kind} needs an upgrade to SPDY/3.1 or WebSocket`);
      const offered = protocols(req, t, tunnel);
      const command = url.searchParams.getAll("command");
      if (t.kind === "exec" && command.length === 0) throw badRequest("you must specify at least 1 command");
      const pod = o.pods.list().find((p) => p.metadata.namespace === t.ns && p.metadata.name === t.name);
      if (!pod) throw notFound("pods", t.name);
      rec.podUid = pod.metadata.uid;
      if (t.kind === "exec") rec.commandSha256 = await sha256hex(JSON.stringify(command));
      release = o.streams?.take(`${rec.iss}\0${rec.jti}`, "exec") ?? (() => undefined);
      const q = (k: string) => parseBool(url.searchParams.get(k) ?? undefined);
      const r =
        t.kind === "exec"
          ? await runtimeExecUrl(o, pod.metadata.uid, {
              container: url.searchParams.get("container") ?? pod.spec?.containers[0]?.name,
              command,
              tty: q("tty"),
              stdin: q("stdin"),
              stdout: q("stdout"),
              stderr: q("stderr"),
            })
          : await o.runtime.portForwardStream(
              pod.metadata.uid,
              url.searchParams
                .getAll("ports")
                .flatMap((p) => p.split(",").map(Number))
                .filter(Number.isInteger),
            );
      rec.criCalls = r.criCalls;
      const up = await dialUpgrade(r.url, tunnel ? "GET" : req.method === "POST" ? "POST" : "GET", offered).catch(
        (e: Error) => {
          throw new KubeStatusError(502, "InternalError", `the runtime's streaming server: ${e.message}`);
        },
      );
      if (up.status !== 101) {
        up.socket.destroy();
        throw new KubeStatusError(
          502,
          "InternalError",
          `the runtime's streaming server answered ${up.status} to the upgrade`,
        );
      }
      const inspector = new SpdyInspector({
        maxStreams: o.maxStreams ?? MAX_SESSION_STREAMS,
        onPort: (port) => {
          rec.ports = [...new Set([...(rec.ports ?? []), port])];
        },
      });
      // Logged when the session ends: its length, the ports, and why podsync cut it if it did.
      const end = () => {
        release();
        void inspector.close().then(() => done(101, inspector.broken?.message));
      };
      if (!tunnel) return joinRaw(socket, head, up, inspector, end);
      req.headers["sec-websocket-protocol"] = TUNNEL_ALIAS;
      // ws answers a handshake it refuses itself and never calls back: the socket's close frees what was taken.
      let joined = false;
      socket.once("close", () => {
        if (joined) return;
        up.socket.destroy();
        void inspector.close();
        release();
        done(400, "the WebSocket handshake was refused");
      });
      wss.handleUpgrade(req, socket, head, (down) => {
        joined = true;
        joinTunnel(down, up, inspector, bufferBytes, end);
      });
    })().catch((e: unknown) => {
      release();
      const s = toKubeStatus(e);
      done(s.code, s.message);
      refuse(socket, s);
    });
  };
}

/** Client → runtime bytes pass the inspector first: a session over its stream cap is cut (both sockets). */
function toRuntime(inspector: SpdyInspector, up: Socket, chunk: Buffer, cut: () => void): boolean {
  const err = inspector.push(chunk);
  if (err) {
    cut();
    return true;
  }
  return up.write(chunk);
}

/** Plain SPDY: the runtime's 101 goes to the client as it came, then each socket is piped to the other. */
function joinRaw(client: Duplex, head: Buffer, up: UpstreamUpgrade, inspector: SpdyInspector, end: () => void): void {
  const cut = () => (client.destroy(), up.socket.destroy());
  client.write(up.head);
  if (up.rest.length) client.write(up.rest);
  if (head.length) toRuntime(inspector, up.socket, head, cut);
  client.on("data", (chunk: Buffer) => {
    if (!toRuntime(inspector, up.socket, chunk, cut)) {
      client.pause();
      up.socket.once("drain", () => client.resume());
    }
  });
  up.socket.pipe(client);
  up.socket.resume();
  client.on("end", () => up.socket.end());
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    cut();
    end();
  };
  client.on("close", close);
  up.socket.on("close", close);
  client.on("error", close);
  up.socket.on("error", close);
}

/** SPDY in WebSocket messages: each binary message's bytes go to the runtime's socket and its bytes come back as
 * binary messages, with back-pressure both ways (the runtime's socket is paused while the client's WebSocket holds
 * more than `bufferBytes` unsent; the client's is paused until the runtime's socket drains). */
function joinTunnel(
  down: WebSocket,
  up: UpstreamUpgrade,
  inspector: SpdyInspector,
  bufferBytes: number,
  end: () => void,
): void {
  const cut = () => (down.terminate(), up.socket.destroy());
  const low = Math.floor(bufferBytes / 4);
  let paused = false;
  const flushed = () => {
    if (paused && down.bufferedAmount <= low) {
      paused = false;
      up.socket.resume();
    }
  };
  const send = (chunk: Buffer) => {
    if (down.readyState !== 1) return;
    down.send(chunk, { binary: true }, flushed);
    if (!paused && down.bufferedAmount > bufferBytes) {
      paused = true;
      up.socket.pause();
    }
  };
  if (up.rest.length) send(up.rest);
  up.socket.on("data", send);
  up.socket.resume();
  down.on("message", (data: RawData) => {
    const chunk = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (!toRuntime(inspector, up.socket, chunk, cut)) {
      down.pause();
      up.socket.once("drain", () => down.resume());
    }
  });
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    if (down.readyState === 1) down.close(1000);
    up.socket.destroy();
    end();
  };
  down.on("close", close);
  down.on("error", () => (down.terminate(), close()));
  up.socket.on("close", close);
  up.socket.on("error", close);
}
