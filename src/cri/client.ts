// Package cri/ — one CRI client interface, the protobuf-es codec, the grpc-js and gRPC-Web transports, framing, gRPC-coded errors.
// Imports only the generated proto; never pod/ decisions or anything above.
//
// The CRI client the engine talks to: the RuntimeService/ImageService methods it uses, typed from the
// generated protobuf-es descriptors, over any transport that can carry one unary call.
import {
  create,
  type DescMessage,
  type DescMethod,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { ImageService, RuntimeService } from "../gen/runtime/v1/api_pb.js";
import { CriError, grpcCodeName } from "./errors.js";

export interface CallOptions {
  /** Per-call deadline in milliseconds; the transport's default applies when absent. */
  timeoutMs?: number;
  /** How long the call's own work may take (an ExecSync's or a StopContainer's timeout). Without `timeoutMs`, the
   * deadline is the transport's default plus this: kubelet's remote client sets `r.timeout + timeout`
   * (remote_runtime.go ExecSync, StopContainer), which leaves the runtime its request timeout to finish. */
  workMs?: number;
  signal?: AbortSignal;
}

/** One unary call, encoded and sent by a transport (grpc-js over HTTP/2, or gRPC-Web over fetch). */
export interface UnaryTransport {
  unary<I extends DescMessage, O extends DescMessage>(
    method: DescMethod & { input: I; output: O },
    input: MessageShape<I>,
    options?: CallOptions,
  ): Promise<MessageShape<O>>;
  close(): void;
}

type Methods<S extends { method: Record<string, DescMethod> }, K extends keyof S["method"]> = {
  [M in K]: S["method"][M] extends { input: infer I extends DescMessage; output: infer O extends DescMessage }
    ? (request: MessageInitShape<I>, options?: CallOptions) => Promise<MessageShape<O>>
    : never;
};

/** The runtime methods the engine uses (kubelet's RuntimeService subset for SyncPod and GetPodStatus). */
export const RUNTIME_METHODS = [
  "version",
  "status",
  "runPodSandbox",
  "stopPodSandbox",
  "removePodSandbox",
  "podSandboxStatus",
  "listPodSandbox",
  "createContainer",
  "startContainer",
  "stopContainer",
  "removeContainer",
  "listContainers",
  "containerStatus",
] as const;
export const IMAGE_METHODS = ["imageStatus", "pullImage"] as const;
/** Methods the engine calls only when the node owner enabled the feature (exec; `exec` is the streaming one, for
 * kubectl exec: it answers the URL of the runtime's streaming server; `portForward` likewise for kubectl
 * port-forward), or a pod asks for it (ListContainerStats,
 * for ephemeral-storage limits; with ListPodSandboxStats, for the Metrics API kubectl top reads; ReopenContainerLog,
 * for log rotation on the node): kept out of the methods a cri-proxy allows by default. */
export const OPTIONAL_RUNTIME_METHODS = [
  "execSync",
  "exec",
  "portForward",
  "listContainerStats",
  "listPodSandboxStats",
  "reopenContainerLog",
] as const;

/** Every method a CriClient has: what wrappers (counting, fencing) must cover. */
export const CLIENT_METHODS = [...RUNTIME_METHODS, ...OPTIONAL_RUNTIME_METHODS, ...IMAGE_METHODS] as const;

export type RuntimeClient = Methods<
  typeof RuntimeService,
  (typeof RUNTIME_METHODS)[number] | (typeof OPTIONAL_RUNTIME_METHODS)[number]
>;
export type ImageClient = Methods<typeof ImageService, (typeof IMAGE_METHODS)[number]>;

export interface CriClient extends RuntimeClient, ImageClient {
  close(): void;
}

/** Every CRI method name the engine may call, in gRPC path form (`/runtime.v1.RuntimeService/Version`). */
export const ENGINE_METHOD_PATHS: readonly string[] = [
  ...RUNTIME_METHODS.map((m) => `/${RuntimeService.typeName}/${RuntimeService.method[m]!.name}`),
  ...IMAGE_METHODS.map((m) => `/${ImageService.typeName}/${ImageService.method[m]!.name}`),
];

/** Told every call's method (the client's name for it, `listPodSandbox`), gRPC code ("OK" or the code's name)
 * and duration, for /metrics. An error that never reached the runtime (a bug, a closed client) is UNKNOWN. */
export type CallObserver = (method: string, code: string, seconds: number) => void;

export function createCriClient(transport: UnaryTransport, observe?: CallObserver): CriClient {
  const client: Record<string, unknown> = { close: () => transport.close() };
  const bind = (service: typeof RuntimeService | typeof ImageService, names: readonly string[]) => {
    for (const name of names) {
      const method = (service.method as Record<string, DescMethod>)[name]!;
      client[name] = observe
        ? (request: MessageInitShape<DescMessage>, options?: CallOptions) => {
            const t0 = performance.now();
            return transport.unary(method, create(method.input, request), options).then(
              (r) => (observe(name, "OK", (performance.now() - t0) / 1000), r),
              (e: unknown) => {
                observe(
                  name,
                  e instanceof CriError ? grpcCodeName(e.code) : "UNKNOWN",
                  (performance.now() - t0) / 1000,
                );
                throw e;
              },
            );
          }
        : (request: MessageInitShape<DescMessage>, options?: CallOptions) =>
            transport.unary(method, create(method.input, request), options);
    }
  };
  bind(RuntimeService, [...RUNTIME_METHODS, ...OPTIONAL_RUNTIME_METHODS]);
  bind(ImageService, IMAGE_METHODS);
  return client as unknown as CriClient;
}
