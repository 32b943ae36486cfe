// CRI over HTTP/2 gRPC with @grpc/grpc-js: a unix socket (`unix:///run/containerd/containerd.sock`)
// or `host:port`, optionally with TLS. Bodies are encoded with the protobuf-es codec, no eval.
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary, type DescMessage, type DescMethod, type MessageShape } from "@bufbuild/protobuf";
import { CriError, GrpcCode } from "./errors.js";
import { callTimeoutMs } from "./deadline.js";
import { createCriClient, type CallOptions, type CriClient, type UnaryTransport } from "./client.js";
import type { StreamHandlers, StreamTransport } from "./container-events.js";
import { cachingListDecoder } from "./list-decoder.js";
import {
  ContainerSchema,
  ListContainersResponseSchema,
  ListPodSandboxResponseSchema,
  PodSandboxSchema,
  RuntimeService,
} from "../gen/runtime/v1/api_pb.js";
import { channelOptionsFor, normaliseEndpoint } from "./channel.js";

export interface GrpcTransportOptions {
  /** `unix:///path.sock`, `/path.sock`, or `host:port`. */
  endpoint: string;
  /** Default per-call deadline (ms). kubelet's default runtime-request-timeout is 2 minutes; a
   * request-scoped function wants a much shorter one. */
  timeoutMs?: number;
  tls?: { ca?: string; cert?: string; key?: string; serverName?: string } | undefined;
  /** Bearer token sent as `authorization` metadata (for cri-proxy). */
  token?: string | undefined;
  /** gRPC max message size; kubelet uses 16 MiB. */
  maxMessageBytes?: number;
}

export class GrpcTransport implements UnaryTransport, StreamTransport {
  private readonly client: grpc.Client;
  private readonly timeoutMs: number;
  private readonly metadata: grpc.Metadata;
  private readonly paths = new Map<DescMethod, string>();
  /** The list answers decode only the items that changed since an earlier answer (list-decoder.ts). */
  private readonly decoders = new Map<DescMethod, (buf: Uint8Array) => unknown>([
    [
      RuntimeService.method.listContainers,
      cachingListDecoder(ListContainersResponseSchema, ContainerSchema, "containers").decode,
    ],
    [
      RuntimeService.method.listPodSandbox,
      cachingListDecoder(ListPodSandboxResponseSchema, PodSandboxSchema, "items").decode,
    ],
  ]);

  constructor(options: GrpcTransportOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    const tls = options.tls;
    const creds = tls
      ? grpc.credentials.createSsl(
          tls.ca ? readFileSync(tls.ca) : null,
          tls.key ? readFileSync(tls.key) : null,
          tls.cert ? readFileSync(tls.cert) : null,
        )
      : grpc.credentials.createInsecure();
    const channelOptions: grpc.ChannelOptions = channelOptionsFor(options.maxMessageBytes ?? 16 * 1024 * 1024);
    if (tls?.serverName) channelOptions["grpc.ssl_target_name_override"] = tls.serverName;
    this.client = new grpc.Client(normaliseEndpoint(options.endpoint), creds, channelOptions);
    this.metadata = new grpc.Metadata();
    if (options.token) this.metadata.set("authorization", `Bearer ${options.token}`);
  }

  private path(method: DescMethod): string {
    let p = this.paths.get(method);
    if (!p) this.paths.set(method, (p = `/${method.parent.typeName}/${method.name}`));
    return p;
  }

  unary<I extends DescMessage, O extends DescMessage>(
    method: DescMethod & { input: I; output: O },
    input: MessageShape<I>,
    options?: CallOptions,
  ): Promise<MessageShape<O>> {
    const deadline = Date.now() + callTimeoutMs(options, this.timeoutMs);
    const signal = options?.signal;
    const decode =
      (this.decoders.get(method) as ((buf: Uint8Array) => MessageShape<O>) | undefined) ??
      ((buf: Uint8Array) => fromBinary(method.output, buf));
    return new Promise((resolve, reject) => {
      // The listener goes when the call ends: one signal (a pod's lock) spans many calls.
      const onAbort = () => call.cancel();
      const call = this.client.makeUnaryRequest<MessageShape<I>, MessageShape<O>>(
        this.path(method),
        (msg) => Buffer.from(toBinary(method.input, msg)),
        decode,
        input,
        this.metadata,
        { deadline },
        (err, value) => {
          signal?.removeEventListener("abort", onAbort);
          if (err) reject(new CriError(err.code ?? GrpcCode.UNKNOWN, err.details || err.message, method.name));
          else resolve(value!);
        },
      );
      if (signal?.aborted) call.cancel();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** One server-streaming call with no deadline (the runtime's event stream); returns its cancel. `ready` is
   * called once the channel is connected and the call has not ended `settleMs` later (a refusal such as
   * UNIMPLEMENTED comes back within one round trip; a stream that opened sends nothing until an event). */
  serverStream<I extends DescMessage, O extends DescMessage>(
    method: DescMethod & { input: I; output: O },
    input: MessageShape<I>,
    on: StreamHandlers<MessageShape<O>>,
    settleMs = 100,
  ): () => void {
    let ended = false;
    let settle: ReturnType<typeof setTimeout> | undefined;
    const call = this.client.makeServerStreamRequest<MessageShape<I>, MessageShape<O>>(
      this.path(method),
      (msg) => Buffer.from(toBinary(method.input, msg)),
      (buf: Buffer) => fromBinary(method.output, buf),
      input,
      this.metadata,
      {},
    );
    const end = (e: CriError) => {
      if (ended) return;
      ended = true;
      clearTimeout(settle);
      on.end(e);
    };
    call.on("data", (m: MessageShape<O>) => {
      if (!ended) on.message(m);
    });
    call.on("error", (err: grpc.ServiceError) =>
      end(new CriError(err.code ?? GrpcCode.UNKNOWN, err.details || err.message, method.name)),
    );
    // A server that closes the stream with OK still ended it: the caller sees that as a lost stream too.
    call.on("status", (st: grpc.StatusObject) => {
      if (st.code === grpc.status.OK)
        end(new CriError(GrpcCode.UNAVAILABLE, "the runtime closed the event stream", method.name));
    });
    this.client.waitForReady(Date.now() + this.timeoutMs, (err) => {
      if (ended) return;
      if (err) return end(new CriError(GrpcCode.UNAVAILABLE, err.message, method.name));
      settle = setTimeout(() => {
        if (!ended) on.ready?.();
      }, settleMs);
      (settle as { unref?: () => void }).unref?.();
    });
    return () => {
      if (ended) return;
      ended = true;
      clearTimeout(settle);
      call.cancel();
    };
  }

  close(): void {
    this.client.close();
  }
}

export function connectGrpc(options: GrpcTransportOptions): CriClient {
  return createCriClient(new GrpcTransport(options));
}
