// cri-proxy: the node-local piece that exposes a safe, authenticated slice of CRI to the network.
// containerd's socket has no authentication; this listens on TCP (TLS, optionally mutual, and/or a bearer
// token), allows only a list of CRI methods, bounds deadlines and concurrency, and forwards the call to
// the runtime's socket as opaque bytes, except RunPodSandbox and CreateContainer, which are held against the
// node policy first (policy-gate.ts). It speaks gRPC (HTTP/2) and gRPC-Web (HTTP/1.1, binary) so fetch-only
// callers such as Workers can use it.
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { timingSafeEqual } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { ImageService, RuntimeService } from "../gen/runtime/v1/api_pb.js";
import { ENGINE_METHOD_PATHS } from "../cri/client.js";
import { channelOptionsFor, normaliseEndpoint } from "../cri/channel.js";
import { GrpcCode, grpcCodeName } from "../cri/errors.js";
import { decodeFrames, encodeFrame } from "../cri/grpc-web-protocol.js";
import { DEFAULT_POLICY_LEVEL, type NodePolicy } from "../auth/policy.js";
import { LOGS_PREFIX, serveLogFiles } from "./log-files-endpoint.js";
import { createPolicyGate } from "./policy-gate.js";

export interface ProxyOptions {
  /** The runtime's socket (`unix:///run/containerd/containerd.sock`). */
  upstream: string;
  /** gRPC (HTTP/2) listen address `host:port`; omit to not serve it. */
  grpcListen?: string | undefined;
  /** gRPC-Web (HTTP/1.1) listen address `host:port`; omit to not serve it. */
  grpcWebListen?: string | undefined;
  /** Bearer token callers must send (`authorization: Bearer …`). */
  token?: string | undefined;
  /** PEM strings. With `clientCa`, clients must present a certificate it signed (mutual TLS). */
  tls?: { cert: string; key: string; clientCa?: string | undefined } | undefined;
  /** Extra method names to allow beyond the engine's (e.g. "Exec", "ListImages"). */
  allow?: string[];
  maxConcurrent?: number;
  /** The longest deadline a call may have (ms); callers without a deadline get this. */
  maxDeadlineMs?: number;
  maxMessageBytes?: number;
  /** Open connections served at once on the gRPC-Web port (more are closed at once). */
  maxConnections?: number | undefined;
  /** Serve container log files under this directory (the node's pod log dir) at /podsync/v1/logs/. */
  podLogsDir?: string | undefined;
  /** The node policy held against RunPodSandbox and CreateContainer (default baseline, no hostPath allow-list). */
  policy?: NodePolicy | undefined;
  /** PODSYNC_ROOT_DIR, where podsync's emptyDir and termination-message files are (default /var/lib/podsync). */
  rootDir?: string | undefined;
  /** Sandboxes must log under this directory (default: `podLogsDir`; unset: not checked). */
  policyLogsDir?: string | undefined;
  log?: (rec: Record<string, unknown>) => void;
}

export interface RunningProxy {
  grpcPort: number | undefined;
  grpcWebPort: number | undefined;
  /** Stop accepting; finish the calls in flight (up to `graceMs`); then close. */
  shutdown(graceMs?: number): Promise<void>;
}

interface Outcome {
  code: number;
  details: string;
  body?: Buffer;
}

const SERVICES = [RuntimeService, ImageService];

/** Every unary CRI method path, and whether it is allowed. */
export function allowList(extra: string[] = []): Map<string, boolean> {
  const allowed = new Set(ENGINE_METHOD_PATHS);
  const m = new Map<string, boolean>();
  for (const s of SERVICES)
    for (const meth of s.methods) {
      if (meth.methodKind !== "unary") continue;
      const path = `/${s.typeName}/${meth.name}`;
      m.set(path, allowed.has(path) || extra.includes(meth.name));
    }
  return m;
}

function tokenOk(expected: string | undefined, header: string | undefined): boolean {
  if (!expected) return true;
  const m = /^Bearer\s+(\S+)$/i.exec(header ?? "");
  if (!m) return false;
  const a = Buffer.from(m[1]!);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const identity = (b: Buffer) => b;

export async function startProxy(o: ProxyOptions): Promise<RunningProxy> {
  const maxMsg = o.maxMessageBytes ?? 16 * 1024 * 1024;
  const log = o.log ?? ((r) => console.log(JSON.stringify(r)));
  const upstream = new grpc.Client(
    normaliseEndpoint(o.upstream),
    grpc.credentials.createInsecure(),
    channelOptionsFor(maxMsg),
  );
  const call = unaryCaller(upstream);
  const gate = createPolicyGate(
    {
      policy: o.policy ?? { level: DEFAULT_POLICY_LEVEL, hostPathAllow: [] },
      rootDir: o.rootDir ?? "/var/lib/podsync",
      podLogsDir: o.policyLogsDir ?? o.podLogsDir,
    },
    call,
  );
  const fwd = createForwarder(o, call, gate, log);
  const grpcFront = o.grpcListen ? await startGrpcFront(o.grpcListen, o.tls, maxMsg, fwd) : undefined;
  const webFront = o.grpcWebListen ? await startGrpcWebFront(o.grpcWebListen, { o, maxMsg, fwd, log }) : undefined;

  return {
    grpcPort: grpcFront?.port,
    grpcWebPort: webFront?.port,
    async shutdown(graceMs = 30_000) {
      await fwd.drain(graceMs);
      const web = webFront?.server;
      await Promise.all([
        grpcFront ? new Promise<void>((r) => grpcFront.server.tryShutdown(() => r())) : undefined,
        web
          ? new Promise<void>((r) => {
              web.close(() => r());
              web.closeAllConnections();
            })
          : undefined,
      ]);
      upstream.close();
    },
  };
}

/** One unary call on the runtime's socket, bytes in and out: the reply, or its gRPC error. */
function unaryCaller(upstream: grpc.Client) {
  return (path: string, body: Buffer, deadline: number) =>
    new Promise<Outcome>((res) => {
      upstream.makeUnaryRequest<Buffer, Buffer>(
        path,
        identity,
        identity,
        body,
        new grpc.Metadata(),
        { deadline },
        (err, value) => {
          if (err) res({ code: err.code ?? GrpcCode.UNKNOWN, details: err.details || err.message });
          else res({ code: GrpcCode.OK, details: "", body: value ?? Buffer.alloc(0) });
        },
      );
    });
}

type Log = (rec: Record<string, unknown>) => void;

/** Gatekeeping and forwarding shared by both front ends, with the calls in flight and the drain. */
interface Forwarder {
  /** Every unary CRI method path, and whether it is allowed. */
  allowed: Map<string, boolean>;
  readonly draining: boolean;
  forward(
    front: string,
    path: string,
    auth: string | undefined,
    deadlineMs: number | undefined,
    body: Buffer,
    peer: string,
  ): Promise<Outcome>;
  /** Refuse new calls; wait for those in flight, up to `graceMs`. */
  drain(graceMs: number): Promise<void>;
}

function createForwarder(
  o: ProxyOptions,
  call: (path: string, body: Buffer, deadline: number) => Promise<Outcome>,
  gate: ReturnType<typeof createPolicyGate>,
  log: Log,
): Forwarder {
  const allowed = allowList(o.allow);
  const maxConcurrent = o.maxConcurrent ?? 64;
  const maxDeadline = o.maxDeadlineMs ?? 120_000;
  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | undefined;

  async function forward(
    front: string,
    path: string,
    auth: string | undefined,
    deadlineMs: number | undefined,
    body: Buffer,
    peer: string,
  ): Promise<Outcome> {
    const t0 = performance.now();
    let out: Outcome;
    let refused: string[] | undefined;
    if (draining) out = { code: GrpcCode.UNAVAILABLE, details: "cri-proxy is shutting down" };
    else if (!tokenOk(o.token, auth))
      out = { code: GrpcCode.UNAUTHENTICATED, details: "missing or wrong bearer token" };
    else if (!allowed.has(path)) out = { code: GrpcCode.UNIMPLEMENTED, details: `unknown or streaming method ${path}` };
    else if (!allowed.get(path))
      out = {
        code: GrpcCode.PERMISSION_DENIED,
        details: `${path} is not allowed by cri-proxy (enable it with --allow)`,
      };
    else if (inFlight >= maxConcurrent)
      out = {
        code: GrpcCode.RESOURCE_EXHAUSTED,
        details: `cri-proxy is at its limit of ${maxConcurrent} concurrent calls`,
      };
    else {
      inFlight++;
      try {
        const deadline = Date.now() + Math.min(deadlineMs ?? maxDeadline, maxDeadline);
        const admitted = await gate.admit(path, body, deadline);
        if (admitted.ok) out = await call(path, admitted.body, deadline);
        else {
          out = { code: admitted.code, details: admitted.details };
          refused = admitted.rules;
        }
      } finally {
        inFlight--;
        if (draining && inFlight === 0) drained?.();
      }
    }
    log({
      time: new Date().toISOString(),
      front,
      method: path,
      peer,
      code: grpcCodeName(out.code),
      durationMs: Math.round((performance.now() - t0) * 100) / 100,
      bytesIn: body.length,
      bytesOut: out.body?.length ?? 0,
      ...(refused ? { policy: refused } : {}),
    });
    return out;
  }

  return {
    allowed,
    get draining() {
      return draining;
    },
    forward,
    async drain(graceMs) {
      draining = true;
      const idle = inFlight === 0 ? Promise.resolve() : new Promise<void>((r) => (drained = r));
      await Promise.race([idle, new Promise((r) => setTimeout(r, graceMs))]);
    },
  };
}

/** The gRPC front end: every unary method registered with byte-for-byte serializers. */
async function startGrpcFront(
  listen: string,
  tls: ProxyOptions["tls"],
  maxMsg: number,
  fwd: Forwarder,
): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server({ "grpc.max_receive_message_length": maxMsg, "grpc.max_send_message_length": maxMsg });
  for (const s of SERVICES) {
    const def: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const meth of s.methods) {
      if (meth.methodKind !== "unary") continue;
      const path = `/${s.typeName}/${meth.name}`;
      def[meth.name] = {
        path,
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      };
      impl[meth.name] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        const dl = call.getDeadline();
        const ms =
          dl instanceof Date ? dl.getTime() - Date.now() : Number.isFinite(dl) ? Number(dl) - Date.now() : undefined;
        const auth = call.metadata.get("authorization")[0];
        void fwd
          .forward("grpc", path, typeof auth === "string" ? auth : undefined, ms, call.request, call.getPeer())
          .then((r) => (r.code === GrpcCode.OK ? cb(null, r.body!) : cb({ code: r.code, details: r.details })));
      };
    }
    server.addService(def as grpc.ServiceDefinition, impl);
  }
  const creds = tls
    ? grpc.ServerCredentials.createSsl(
        tls.clientCa ? Buffer.from(tls.clientCa) : null,
        [{ cert_chain: Buffer.from(tls.cert), private_key: Buffer.from(tls.key) }],
        Boolean(tls.clientCa),
      )
    : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync(listen, creds, (e, port) => (e ? rej(e) : res(port))),
  );
  return { server, port };
}

/** What the gRPC-Web front end's requests need. */
interface WebContext {
  o: ProxyOptions;
  maxMsg: number;
  fwd: Forwarder;
  log: Log;
}

/** The gRPC-Web front end (HTTP/1.1), which also serves the log files. */
async function startGrpcWebFront(listen: string, ctx: WebContext): Promise<{ server: HttpServer; port: number }> {
  const { o, log } = ctx;
  // A client that aborts, resets or sends a truncated body ends its own call as cancelled; it never reaches the
  // process as an unhandled rejection.
  const handler = (req: IncomingMessage, res: ServerResponse) =>
    void serveGrpcWeb(req, res, ctx).catch((e: unknown) => {
      log({
        time: new Date().toISOString(),
        front: "grpc-web",
        method: (req.url ?? "").split("?")[0],
        code: "CANCELLED",
        error: `client stream: ${(e as Error)?.message ?? e}`,
      });
      if (!res.headersSent && !res.destroyed) trailersOnly(res, GrpcCode.CANCELLED, "the request stream failed");
      else res.destroy();
    });
  const web = o.tls
    ? createHttpsServer(
        {
          cert: o.tls.cert,
          key: o.tls.key,
          ...(o.tls.clientCa ? { ca: o.tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
        },
        handler,
      )
    : createHttpServer(handler);
  // Bounds on what a connection may hold: headers and body must arrive in time, and connections are capped.
  web.headersTimeout = 10_000;
  web.requestTimeout = 30_000;
  web.maxConnections = o.maxConnections ?? 1024;
  const [host, port] = splitHostPort(listen);
  const bound = await new Promise<number>((res, rej) => {
    web.once("error", rej);
    web.listen(port, host, () => {
      const a = web.address();
      res(typeof a === "object" && a ? a.port : port);
    });
  });
  return { server: web, port: bound };
}

function trailersOnly(res: ServerResponse, code: number, details: string) {
  res.writeHead(200, {
    "content-type": "application/grpc-web+proto",
    "grpc-status": String(code),
    "grpc-message": encodeURIComponent(details),
  });
  res.end();
}

/** The log files under /podsync/v1/logs/, behind the same gate as a CRI call. */
async function serveLogs(req: IncomingMessage, res: ServerResponse, path: string, ctx: WebContext) {
  const { o, fwd, log } = ctx;
  // The same gate as a CRI call (the TLS layer already checked a client certificate), before anything is read.
  if (fwd.draining)
    return void res
      .writeHead(503, { "content-type": "application/json" })
      .end('{"error":"cri-proxy is shutting down"}');
  if (!tokenOk(o.token, req.headers.authorization))
    return void res
      .writeHead(401, { "content-type": "application/json" })
      .end('{"error":"missing or wrong bearer token"}');
  // 501, not 404: a missing file is 404, and the Worker must not take "no logs served" for "no log yet".
  if (!o.podLogsDir)
    return void res
      .writeHead(501, { "content-type": "application/json" })
      .end('{"error":"this cri-proxy serves no logs (start it with --pod-logs-dir)"}');
  const t0 = performance.now();
  await serveLogFiles(req, res, o.podLogsDir).catch(() => {
    if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" }).end('{"error":"log read failed"}');
  });
  log({
    time: new Date().toISOString(),
    front: "logs",
    method: path,
    peer: `${req.socket.remoteAddress}:${req.socket.remotePort}`,
    status: res.statusCode,
    durationMs: Math.round((performance.now() - t0) * 100) / 100,
  });
}

async function serveGrpcWeb(req: IncomingMessage, res: ServerResponse, ctx: WebContext) {
  const { o, maxMsg, fwd, log } = ctx;
  const { allowed } = fwd;
  const path = (req.url ?? "").split("?")[0]!;
  if (path.startsWith(LOGS_PREFIX)) return serveLogs(req, res, path, ctx);
  if (
    req.method !== "POST" ||
    !/^application\/grpc-web(\+proto)?$/.test((req.headers["content-type"] ?? "").split(";")[0]!.trim())
  ) {
    res
      .writeHead(415, { "content-type": "text/plain" })
      .end("cri-proxy serves gRPC-Web: POST application/grpc-web+proto\n");
    return;
  }
  // Auth, limits and the method check come from the headers, before one byte of body is read or buffered.
  const refuse = (code: number, details: string) => {
    res.setHeader("connection", "close");
    trailersOnly(res, code, details);
    log({
      time: new Date().toISOString(),
      front: "grpc-web",
      method: path,
      peer: `${req.socket.remoteAddress}:${req.socket.remotePort}`,
      code: grpcCodeName(code),
      durationMs: 0,
      bytesIn: 0,
      bytesOut: 0,
    });
  };
  if (!tokenOk(o.token, req.headers.authorization))
    return refuse(GrpcCode.UNAUTHENTICATED, "missing or wrong bearer token");
  if (Number(req.headers["content-length"] ?? 0) > maxMsg + 5)
    return refuse(GrpcCode.RESOURCE_EXHAUSTED, `request larger than the ${maxMsg} byte limit`);
  if (!allowed.get(path))
    return refuse(
      allowed.has(path) ? GrpcCode.PERMISSION_DENIED : GrpcCode.UNIMPLEMENTED,
      allowed.has(path)
        ? `${path} is not allowed by cri-proxy (enable it with --allow)`
        : `unknown or streaming method ${path}`,
    );
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxMsg + 5)
      return trailersOnly(res, GrpcCode.RESOURCE_EXHAUSTED, `request larger than the ${maxMsg} byte limit`);
    chunks.push(chunk as Buffer);
  }
  let frames;
  try {
    frames = decodeFrames(Buffer.concat(chunks), maxMsg);
  } catch (e) {
    return trailersOnly(res, GrpcCode.INTERNAL, `malformed gRPC-Web request: ${(e as Error).message}`);
  }
  const data = frames.find((f) => f.flag === 0);
  if (!data || frames.length !== 1)
    return trailersOnly(res, GrpcCode.INTERNAL, "a unary gRPC-Web request carries exactly one message frame");
  const r = await fwd.forward(
    "grpc-web",
    path,
    req.headers.authorization,
    parseGrpcTimeout(req.headers["grpc-timeout"] as string | undefined),
    Buffer.from(data.payload),
    `${req.socket.remoteAddress}:${req.socket.remotePort}`,
  );
  if (r.code !== GrpcCode.OK) return trailersOnly(res, r.code, r.details);
  const trailer = Buffer.from(`grpc-status:0\r\ngrpc-message:\r\n`);
  res.writeHead(200, { "content-type": "application/grpc-web+proto" });
  res.end(Buffer.concat([encodeFrame(0, r.body!), encodeFrame(0x80, trailer)]));
}

/** grpc-timeout: an integer and a unit (H, M, S, m, u, n). */
export function parseGrpcTimeout(v: string | undefined): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(v ?? "");
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 }[m[2] as "H"];
  return n * unit;
}

export function splitHostPort(addr: string): [string, number] {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(addr);
  if (!m) throw new Error(`listen address must be host:port, got "${addr}"`);
  return [m[1]!, Number(m[2])];
}
