// kubectl exec over WebSocket (client-go tools/remotecommand: `v5.channel.k8s.io`, with `v4.channel.k8s.io` as
// fallback): the HTTP upgrade of GET /api/v1/namespaces/{ns}/pods/{name}/exec is checked (a read token minted
// with exec, the node owner's PODSYNC_ALLOW_EXEC, the pod, a command), then CRI Exec asks the runtime for the
// URL of its streaming server (on loopback, containerd's) and the two WebSockets are joined frame for frame:
// both speak the channel protocol (first byte 0 stdin, 1 stdout, 2 stderr, 3 error Status, 4 resize). The
// runtime's server speaks v4; v5's one addition, the close signal (channel 255), has no v4 form and is not
// passed on (a TTY session ends when its shell exits). Each direction has back-pressure (ws-pipe.ts): a client
// that does not read stops the command's output, a command that does not read stops the client's stdin, and
// neither holds more than `bufferBytes` here. Each session takes a slot of the stream budget (stream-budget.ts)
// for as long as it is open. Each exec is logged with iss, jti and the SHA-256 of
// its argv, never the argv or the stream.
import { parseBool } from "./apiserver/query.js";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import type { Verifier } from "../auth/verify.js";
import { verifyReadToken } from "../auth/read-token.js";
import { checkExec, EXEC_PATH } from "./exec-check.js";
import type { PodRuntime } from "../kubelet/pod-runtime.js";
import type { V1Pod } from "../status/api-status.js";
import type { RequestLog } from "../usecases/ports.js";
import { badRequest, KubeStatusError, notFound, toKubeStatus } from "./status.js";
import { upgradeLog } from "./upgrade-log.js";
import type { WatchHub } from "./watch-hub.js";
import { pipeFrames } from "../usecases/streams/ws-pipe.js";
import type { StreamBudget } from "../usecases/streams/budget.js";

const PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"];
const CLOSE_SIGNAL = 255;

export interface ExecStreamOptions {
  verifier: Verifier;
  pods: WatchHub<V1Pod>;
  runtime: Pick<PodRuntime, "execStream">;
  allowExec: boolean;
  log?: ((rec: RequestLog) => void) | undefined;
  now?: () => number;
  /** The node's cap on open streams; none when unset. */
  streams?: StreamBudget | undefined;
  /** Per direction: what a session holds for a slow reader before it stops reading the writer (1 MiB). */
  bufferBytes?: number | undefined;
}

const truthy = (v: string | null) => parseBool(v ?? undefined);

export async function sha256hex(s: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** An upgrade that is not served: the Status as a plain HTTP answer on the socket. */
export function refuse(socket: Duplex, s: KubeStatusError): void {
  const body = JSON.stringify(s.toStatus());
  socket.end(
    `HTTP/1.1 ${s.code} ${s.reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The upgrade handler for the server(s): exec paths are served, any other upgrade is refused (404). */
export function execUpgrade(o: ExecStreamOptions): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const now = o.now ?? Date.now;
  const bufferBytes = o.bufferBytes ?? 1024 * 1024;
  // A frame is held whole before it is passed on: kubectl sends stdin in 32 KiB frames (remotecommand's buffer),
  // so a frame over the buffer bound is refused (close 1009) rather than held.
  const maxPayload = Math.max(64 * 1024, bufferBytes);
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload,
    handleProtocols: (offered) => PROTOCOLS.find((p) => offered.has(p)) ?? false,
  });
  return (req, socket, head) => {
    const { rec, done } = upgradeLog(o.log, now, "GET", "/api/v1/namespaces/:ns/pods/:name/exec");
    let release = () => undefined as void;
    void (async () => {
      const url = new URL(req.url ?? "/", "http://node");
      const m = EXEC_PATH.exec(url.pathname);
      if (!m) throw new KubeStatusError(404, "NotFound", "the server could not find the requested resource", {});
      const [, ns, name] = m as unknown as [string, string, string];
      const scope = await verifyReadToken(o.verifier, req.headers.authorization);
      rec.jti = scope.token.payload.jti;
      rec.iss = scope.token.payload.iss;
      checkExec(scope, o.allowExec, name);
      const offered = String(req.headers["sec-websocket-protocol"] ?? "")
        .split(",")
        .map((p) => p.trim());
      if (!PROTOCOLS.some((p) => offered.includes(p)))
        throw badRequest(
          `exec needs one of the WebSocket subprotocols ${PROTOCOLS.join(", ")} (kubectl 1.30 or later)`,
        );
      const command = url.searchParams.getAll("command");
      if (command.length === 0) throw badRequest("you must specify at least 1 command");
      const pod = o.pods.list().find((p) => p.metadata.namespace === ns && p.metadata.name === name);
      if (!pod) throw notFound("pods", name);
      rec.podUid = pod.metadata.uid;
      rec.commandSha256 = await sha256hex(JSON.stringify(command));
      release = o.streams?.take(`${rec.iss}\0${rec.jti}`, "exec") ?? (() => undefined);
      const tty = truthy(url.searchParams.get("tty"));
      const r = await o.runtime.execStream(pod.metadata.uid, {
        container: url.searchParams.get("container") ?? pod.spec?.containers[0]?.name,
        command,
        tty,
        stdin: truthy(url.searchParams.get("stdin")),
        stdout: truthy(url.searchParams.get("stdout")),
        stderr: truthy(url.searchParams.get("stderr")),
      });
      rec.criCalls = r.criCalls;
      const upstream = new WebSocket(r.url.replace(/^http(s?):/, "ws$1:"), ["v4.channel.k8s.io"], { maxPayload });
      upstream.once("close", () => release());
      await new Promise<void>((res, rej) => {
        upstream.once("open", () => res());
        upstream.once("error", (e) =>
          rej(new KubeStatusError(502, "InternalError", `the runtime's streaming server: ${e.message}`)),
        );
      });
      wss.handleUpgrade(req, socket, head, (down) => {
        done(101);
        const v5 = down.protocol === "v5.channel.k8s.io";
        pipeFrames(upstream, down, { highWaterMark: bufferBytes });
        pipeFrames(down, upstream, { highWaterMark: bufferBytes, keep: (b) => !(v5 && b[0] === CLOSE_SIGNAL) });
        upstream.on("close", () => down.close(1000));
        // The client gone: the runtime's side is cut at once (a paused socket would not read its close reply).
        down.on("close", () => (release(), upstream.terminate()));
        upstream.on("error", () => down.terminate());
        down.on("error", () => upstream.terminate());
      });
    })().catch((e: unknown) => {
      release();
      const s = toKubeStatus(e);
      done(s.code, s.message);
      refuse(socket, s);
    });
  };
}
