// A CRI gRPC proxy in front of a real runtime's socket (the lab containerd), for fault injection on real pods: every
// call of the CRI v1 RuntimeService and ImageService, and containerd's event service (the runtime events of
// containerd 1.6), is passed through byte for byte (the event streams streamed),
// and a test's `fault` hook may, per call, answer an error instead (with a gRPC code, as the runtime would) or let
// the call through after a delay. Requests are decoded for the hook only (to see a sandbox or container id).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { fromBinary, type DescMethod } from "@bufbuild/protobuf";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { Events } from "../../src/gen/containerd/services/events/v1/events_pb.js";

/** What the hook may answer for a call: nothing (pass it on), an error, or a delay before passing it on. */
export type Fault = undefined | { code: grpc.status; details: string } | { delayMs: number };

export interface FaultProxy {
  /** `unix://...` of the proxy's socket. */
  endpoint: string;
  /** Calls seen, by method name. */
  calls: Map<string, number>;
  close(): Promise<void>;
}

const identity = (b: Buffer) => b;

export async function startFaultProxy(
  upstream: string,
  fault: (method: string, request: Record<string, unknown>) => Fault,
): Promise<FaultProxy> {
  const dir = mkdtempSync(join(tmpdir(), "podsync-faultproxy-"));
  const endpoint = `unix://${join(dir, "cri.sock")}`;
  const client = new grpc.Client(upstream, grpc.credentials.createInsecure(), {
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
  });
  const calls = new Map<string, number>();
  const server = new grpc.Server({
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
    "grpc.max_send_message_length": 64 * 1024 * 1024,
  });
  for (const service of [api.RuntimeService, api.ImageService, Events]) {
    const def: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const m of service.methods as DescMethod[]) {
      const path = `/${service.typeName}/${m.name}`;
      const stream = m.methodKind === "server_streaming";
      def[m.name] = {
        path,
        requestStream: false,
        responseStream: stream,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
        originalName: m.localName,
      };
      const decide = (req: Buffer): Fault => {
        calls.set(m.name, (calls.get(m.name) ?? 0) + 1);
        return fault(m.name, fromBinary(m.input, req) as unknown as Record<string, unknown>);
      };
      if (stream)
        impl[m.name] = (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
          const f = decide(call.request);
          if (f && "code" in f) {
            call.emit("error", f);
            return;
          }
          const up = client.makeServerStreamRequest(path, identity, identity, call.request, call.metadata);
          up.on("data", (b: Buffer) => call.write(b));
          up.on("end", () => call.end());
          up.on("error", (e: grpc.ServiceError) =>
            e.code === grpc.status.CANCELLED ? call.end() : call.emit("error", e),
          );
          call.on("cancelled", () => up.cancel());
        };
      else
        impl[m.name] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
          const f = decide(call.request);
          if (f && "code" in f) return done(f);
          const forward = () =>
            client.makeUnaryRequest(
              path,
              identity,
              identity,
              call.request,
              call.metadata,
              { deadline: call.getDeadline() },
              (e, v) => done(e, v),
            );
          if (f) setTimeout(forward, f.delayMs);
          else forward();
        };
    }
    server.addService(def as grpc.ServiceDefinition, impl);
  }
  await new Promise<void>((res, rej) =>
    server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (e) => (e ? rej(e) : res())),
  );
  return {
    endpoint,
    calls,
    async close() {
      server.forceShutdown();
      client.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
