// CRI over gRPC-Web (binary, HTTP/1.1) with fetch: the transport for places with no HTTP/2 client,
// such as Cloudflare Workers. Same protobuf-es codec as the grpc-js transport; talks to cri-proxy's
// gRPC-Web port. Frames: 1 flag byte (0x00 data, 0x80 trailers), 4-byte big-endian length, payload.
import { fromBinary, toBinary, type DescMessage, type DescMethod, type MessageShape } from "@bufbuild/protobuf";
import { CriError, GrpcCode } from "./errors.js";
import { callTimeoutMs, grpcTimeoutHeader } from "./deadline.js";
import { createCriClient, type CallOptions, type CriClient, type UnaryTransport } from "./client.js";
import { decodeFrames, encodeFrame, parseTrailers, type Frame } from "./grpc-web-protocol.js";

export interface GrpcWebOptions {
  /** Base URL of the proxy's gRPC-Web endpoint, e.g. `https://node-7.example:9091`. */
  baseUrl: string;
  token?: string | undefined;
  timeoutMs?: number;
  fetch?: typeof fetch;
  maxMessageBytes?: number;
}

const decoder = new TextDecoder();

function statusFrom(get: (k: string) => string | null | undefined, method: string): CriError | undefined {
  const s = get("grpc-status");
  if (s === null || s === undefined || s === "") return undefined;
  const code = Number(s);
  if (code === GrpcCode.OK) return undefined;
  let msg = get("grpc-message") ?? "";
  try {
    msg = decodeURIComponent(msg);
  } catch {
    /* keep it as sent */
  }
  return new CriError(Number.isInteger(code) ? code : GrpcCode.UNKNOWN, msg, method);
}

export class GrpcWebTransport implements UnaryTransport {
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;
  private readonly headers: Record<string, string>;
  private readonly max: number;

  constructor(o: GrpcWebOptions) {
    this.base = o.baseUrl.replace(/\/+$/, "");
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.fetchFn = o.fetch ?? ((...a) => fetch(...a));
    this.max = o.maxMessageBytes ?? 16 * 1024 * 1024;
    this.headers = {
      "content-type": "application/grpc-web+proto",
      "x-grpc-web": "1",
      accept: "application/grpc-web+proto",
    };
    if (o.token) this.headers["authorization"] = `Bearer ${o.token}`;
  }

  async unary<I extends DescMessage, O extends DescMessage>(
    method: DescMethod & { input: I; output: O },
    input: MessageShape<I>,
    options?: CallOptions,
  ): Promise<MessageShape<O>> {
    const timeout = callTimeoutMs(options, this.timeoutMs);
    const signal = options?.signal
      ? AbortSignal.any([options.signal, AbortSignal.timeout(timeout)])
      : AbortSignal.timeout(timeout);
    let res: Response;
    try {
      res = await this.fetchFn(`${this.base}/${method.parent.typeName}/${method.name}`, {
        method: "POST",
        headers: { ...this.headers, "grpc-timeout": grpcTimeoutHeader(timeout) },
        body: encodeFrame(0, toBinary(method.input, input)) as Uint8Array<ArrayBuffer>,
        signal,
      });
    } catch (e) {
      const name = (e as Error)?.name;
      if (name === "TimeoutError")
        throw new CriError(GrpcCode.DEADLINE_EXCEEDED, `no answer within ${timeout} ms`, method.name);
      if (name === "AbortError") throw new CriError(GrpcCode.CANCELLED, "call cancelled", method.name);
      throw new CriError(GrpcCode.UNAVAILABLE, `cannot reach ${this.base}: ${(e as Error)?.message ?? e}`, method.name);
    }
    const headerErr = statusFrom((k) => res.headers.get(k), method.name);
    if (headerErr) throw headerErr;
    if (!res.ok) throw new CriError(httpToGrpc(res.status), `HTTP ${res.status} from ${this.base}`, method.name);
    let body: Uint8Array;
    try {
      body = new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      if ((e as Error)?.name === "TimeoutError")
        throw new CriError(GrpcCode.DEADLINE_EXCEEDED, `no answer within ${timeout} ms`, method.name);
      throw new CriError(GrpcCode.UNAVAILABLE, `reading the reply failed: ${(e as Error)?.message ?? e}`, method.name);
    }
    let frames: Frame[];
    try {
      frames = decodeFrames(body, this.max);
    } catch (e) {
      throw new CriError(GrpcCode.INTERNAL, `malformed gRPC-Web reply: ${(e as Error).message}`, method.name);
    }
    const trailer = frames.find((f) => f.flag & 0x80);
    if (trailer) {
      const t = parseTrailers(decoder.decode(trailer.payload));
      const err = statusFrom((k) => t.get(k), method.name);
      if (err) throw err;
    } else if (!res.headers.get("grpc-status")) {
      throw new CriError(GrpcCode.INTERNAL, "gRPC-Web reply without a status", method.name);
    }
    const data = frames.find((f) => (f.flag & 0x80) === 0);
    if (!data) throw new CriError(GrpcCode.INTERNAL, "gRPC-Web reply without a message", method.name);
    try {
      return fromBinary(method.output, data.payload);
    } catch (e) {
      throw new CriError(GrpcCode.INTERNAL, `response message parsing error: ${(e as Error).message}`, method.name);
    }
  }

  close(): void {}
}

/** HTTP status → gRPC code, per the gRPC HTTP mapping (for proxies in between that answer in HTTP). */
function httpToGrpc(status: number): number {
  if (status === 400) return GrpcCode.INTERNAL;
  if (status === 401) return GrpcCode.UNAUTHENTICATED;
  if (status === 403) return GrpcCode.PERMISSION_DENIED;
  if (status === 404) return GrpcCode.UNIMPLEMENTED;
  if (status === 429 || status === 502 || status === 503 || status === 504) return GrpcCode.UNAVAILABLE;
  return GrpcCode.UNKNOWN;
}

export function connectGrpcWeb(o: GrpcWebOptions): CriClient {
  return createCriClient(new GrpcWebTransport(o));
}
