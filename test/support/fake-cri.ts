// An in-process CRI runtime over real gRPC (grpc-js server on a unix socket, in-memory state), for
// unit-speed SyncPod tests and fault injection: errors, hangs past the deadline, malformed replies.
// It mimics containerd 1.6's observable behaviour where the engine depends on it (reasons, exit codes,
// NOT_FOUND on status of a missing object, stop/remove idempotence).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type DescMethod, type MessageShape } from "@bufbuild/protobuf";
import * as api from "../../src/gen/runtime/v1/api_pb.js";

type Sandbox = {
  id: string;
  config: api.PodSandboxConfig;
  state: api.PodSandboxState;
  createdAt: bigint;
  ip: string;
};
type Ctr = {
  id: string;
  sandboxId: string;
  config: api.ContainerConfig;
  state: api.ContainerState;
  createdAt: bigint;
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  reason: string;
  imageRef: string;
};

export type Fault =
  | { kind: "error"; code: number; message?: string; times?: number }
  | { kind: "hang"; ms: number; times?: number }
  | { kind: "garbage"; times?: number };

type Handler = (req: any) => any;

let seq = 0;
const hex = (n: number) => n.toString(16).padStart(12, "0");
const nowNs = () => BigInt(Date.now()) * 1_000_000n;

function matches(labels: Record<string, string>, selector: Record<string, string> | undefined) {
  for (const [k, v] of Object.entries(selector ?? {})) if (labels[k] !== v) return false;
  return true;
}

export class FakeRuntime {
  readonly sandboxes = new Map<string, Sandbox>();
  readonly containers = new Map<string, Ctr>();
  /** Images present, by reference → id. */
  readonly images = new Map<string, string>([
    ["localhost/busybox:1", "sha256:busybox1"],
    ["localhost/pause:1", "sha256:pause1"],
  ]);
  /** Images a PullImage can fetch (everything else fails like a missing registry). */
  readonly pullable = new Set<string>();
  readonly calls = new Map<string, number>();
  /** Calls being served right now, and the most seen at once, per method. */
  readonly inFlight = new Map<string, number>();
  readonly maxInFlight = new Map<string, number>();
  readonly pullAuth: (api.AuthConfig | undefined)[] = [];
  private readonly faults = new Map<string, Fault[]>();
  /** Called after StartContainer: lets a test make a command exit at once (e.g. `false`). */
  onStart: (c: Ctr) => void = (c) => {
    const cmd = [...c.config.command, ...c.config.args].join(" ");
    if (/^(sh -c )?false\b/.test(cmd) || cmd === "false") this.exit(c.id, 1);
    else if (/^(sh -c )?(true|exit 0)\b/.test(cmd)) this.exit(c.id, 0);
  };

  fault(method: string, f: Fault) {
    const list = this.faults.get(method) ?? [];
    list.push(f);
    this.faults.set(method, list);
  }
  clearFaults() {
    this.faults.clear();
  }
  resetCalls() {
    this.calls.clear();
  }
  totalCalls() {
    let n = 0;
    for (const v of this.calls.values()) n += v;
    return n;
  }

  /** Open GetContainerEvents streams (CRI's container events, as containerd >= 1.7 sends them). */
  readonly eventStreams = new Set<grpc.ServerWritableStream<api.GetEventsRequest, api.ContainerEventResponse>>();
  /** When set, GetContainerEvents is refused with this code (e.g. UNIMPLEMENTED, as containerd 1.6 answers). */
  eventsRefused: number | undefined;

  /** End every open event stream (as a runtime restart or a broken connection would). */
  closeEventStreams(code: number = grpc.status.UNAVAILABLE) {
    for (const s of this.eventStreams) s.emit("error", { code, details: "event stream closed by the fake runtime" });
    this.eventStreams.clear();
  }

  /** Simulate the process exiting (crash, completion, or a kill from outside). */
  exit(id: string, code: number, reason?: string) {
    const c = this.containers.get(id);
    if (!c || c.state !== api.ContainerState.CONTAINER_RUNNING) return;
    c.state = api.ContainerState.CONTAINER_EXITED;
    c.exitCode = code;
    c.finishedAt = nowNs();
    c.reason = reason ?? (code === 0 ? "Completed" : "Error");
    // After the state changed, as CRI's events are sent.
    const sb = this.sandboxes.get(c.sandboxId);
    const ev = create(api.ContainerEventResponseSchema, {
      containerId: id,
      containerEventType: api.ContainerEventType.CONTAINER_STOPPED_EVENT,
      createdAt: c.finishedAt,
      podSandboxStatus: sb ? { id: sb.id, metadata: sb.config.metadata } : undefined,
    });
    for (const s of this.eventStreams) s.write(ev);
  }

  takeFault(method: string): Fault | undefined {
    const list = this.faults.get(method);
    const f = list?.[0];
    if (!f) return undefined;
    if (f.times !== undefined && --f.times <= 0) list!.shift();
    return f;
  }

  private firstTag(imageId: string): string | undefined {
    for (const [ref, id] of this.images) if (id === imageId) return ref;
    return undefined;
  }

  private containerOf(id: string) {
    const c = this.containers.get(id);
    if (!c)
      throw Object.assign(new Error(`an error occurred when try to find container "${id}": not found`), {
        code: grpc.status.NOT_FOUND,
      });
    return c;
  }

  readonly runtime: Record<string, Handler> = {
    Version: () => ({ version: "0.1.0", runtimeName: "fake", runtimeVersion: "1.0", runtimeApiVersion: "v1" }),
    Status: () => ({
      status: {
        conditions: [
          { type: "RuntimeReady", status: true },
          { type: "NetworkReady", status: true },
        ],
      },
    }),
    RunPodSandbox: (req: api.RunPodSandboxRequest) => {
      const id = `sb${hex(++seq)}`;
      const host = req.config?.linux?.securityContext?.namespaceOptions?.network === api.NamespaceMode.NODE;
      if (host && req.config?.hostname)
        throw Object.assign(new Error("runc create failed: unable to set hostname without a private UTS namespace"), {
          code: grpc.status.UNKNOWN,
        });
      this.sandboxes.set(id, {
        id,
        config: req.config!,
        state: api.PodSandboxState.SANDBOX_READY,
        createdAt: nowNs(),
        ip: host ? "" : `10.88.0.${(seq % 250) + 2}`,
      });
      return { podSandboxId: id };
    },
    StopPodSandbox: (req: api.StopPodSandboxRequest) => {
      const s = this.sandboxes.get(req.podSandboxId);
      if (!s) return {};
      for (const c of this.containers.values()) if (c.sandboxId === s.id) this.exit(c.id, 137, "Error");
      s.state = api.PodSandboxState.SANDBOX_NOTREADY;
      return {};
    },
    RemovePodSandbox: (req: api.RemovePodSandboxRequest) => {
      for (const c of [...this.containers.values()]) if (c.sandboxId === req.podSandboxId) this.containers.delete(c.id);
      this.sandboxes.delete(req.podSandboxId);
      return {};
    },
    PodSandboxStatus: (req: api.PodSandboxStatusRequest) => {
      const s = this.sandboxes.get(req.podSandboxId);
      if (!s)
        throw Object.assign(new Error(`an error occurred when try to find sandbox: not found`), {
          code: grpc.status.NOT_FOUND,
        });
      return {
        status: {
          id: s.id,
          metadata: s.config.metadata,
          state: s.state,
          createdAt: s.createdAt,
          network: { ip: s.state === api.PodSandboxState.SANDBOX_READY ? s.ip : "" },
          linux: { namespaces: { options: s.config.linux?.securityContext?.namespaceOptions } },
          labels: s.config.labels,
          annotations: s.config.annotations,
        },
      };
    },
    ListPodSandbox: (req: api.ListPodSandboxRequest) => ({
      items: [...this.sandboxes.values()]
        .filter(
          (s) => matches(s.config.labels, req.filter?.labelSelector) && (!req.filter?.id || req.filter.id === s.id),
        )
        .map((s) => ({
          id: s.id,
          metadata: s.config.metadata,
          state: s.state,
          createdAt: s.createdAt,
          labels: s.config.labels,
          annotations: s.config.annotations,
        })),
    }),
    CreateContainer: (req: api.CreateContainerRequest) => {
      const s = this.sandboxes.get(req.podSandboxId);
      if (!s || s.state !== api.PodSandboxState.SANDBOX_READY)
        throw Object.assign(new Error(`failed to create containerd container: sandbox ${req.podSandboxId} not ready`), {
          code: grpc.status.UNKNOWN,
        });
      const name = req.config!.metadata!.name;
      const attempt = req.config!.metadata!.attempt;
      for (const c of this.containers.values())
        if (c.sandboxId === s.id && c.config.metadata?.name === name && c.config.metadata.attempt === attempt)
          throw Object.assign(new Error(`failed to reserve container name "${name}_${attempt}": name is reserved`), {
            code: grpc.status.UNKNOWN,
          });
      const id = `c${hex(++seq)}`;
      this.containers.set(id, {
        id,
        sandboxId: s.id,
        config: req.config!,
        state: api.ContainerState.CONTAINER_CREATED,
        createdAt: nowNs() + BigInt(seq),
        startedAt: 0n,
        finishedAt: 0n,
        exitCode: 0,
        reason: "",
        imageRef: this.images.get(req.config!.image!.userSpecifiedImage) ?? req.config!.image!.image,
      });
      return { containerId: id };
    },
    StartContainer: (req: api.StartContainerRequest) => {
      const c = this.containerOf(req.containerId);
      if (c.state !== api.ContainerState.CONTAINER_CREATED)
        throw Object.assign(new Error(`container ${c.id} is in ${api.ContainerState[c.state]} state`), {
          code: grpc.status.UNKNOWN,
        });
      c.state = api.ContainerState.CONTAINER_RUNNING;
      c.startedAt = nowNs();
      this.onStart(c);
      return {};
    },
    StopContainer: (req: api.StopContainerRequest) => {
      const c = this.containers.get(req.containerId);
      if (c) this.exit(c.id, 143, "Error");
      return {};
    },
    RemoveContainer: (req: api.RemoveContainerRequest) => {
      this.containers.delete(req.containerId);
      return {};
    },
    ListContainers: (req: api.ListContainersRequest) => ({
      containers: [...this.containers.values()]
        .filter(
          (c) =>
            matches(c.config.labels, req.filter?.labelSelector) &&
            (!req.filter?.podSandboxId || req.filter.podSandboxId === c.sandboxId),
        )
        .map((c) => ({
          id: c.id,
          podSandboxId: c.sandboxId,
          metadata: c.config.metadata,
          // containerd 1.6 predates userSpecifiedImage: the list echoes only the image (id) it was created with.
          image: { image: c.config.image?.image ?? "" },
          imageRef: c.imageRef,
          state: c.state,
          createdAt: c.createdAt,
          labels: c.config.labels,
          annotations: c.config.annotations,
        })),
    }),
    ContainerStatus: (req: api.ContainerStatusRequest) => {
      const c = this.containerOf(req.containerId);
      return {
        status: {
          id: c.id,
          metadata: c.config.metadata,
          state: c.state,
          createdAt: c.createdAt,
          startedAt: c.startedAt,
          finishedAt: c.finishedAt,
          exitCode: c.exitCode,
          // Like containerd 1.6: the image's first tag (not necessarily the one the spec named), and its id.
          image: { image: this.firstTag(c.imageRef) ?? c.config.image?.image ?? "" },
          imageRef: c.imageRef,
          reason: c.reason,
          labels: c.config.labels,
          annotations: c.config.annotations,
          logPath: c.config.logPath,
        },
      };
    },
  };

  readonly image: Record<string, Handler> = {
    ImageStatus: (req: api.ImageStatusRequest) => {
      const id = this.images.get(req.image?.image ?? "");
      // Like the lab images (built from busybox with no USER): they run as root.
      return id ? { image: { id, repoTags: [req.image!.image], size: 1n, uid: { value: 0n } } } : {};
    },
    PullImage: (req: api.PullImageRequest) => {
      const ref = req.image?.image ?? "";
      this.pullAuth.push(req.auth);
      if (!this.pullable.has(ref)) {
        // A registry that echoes what it was sent, to prove credentials are redacted on the way out.
        const echo = req.auth?.password ? ` (tried user ${req.auth.username} password ${req.auth.password})` : "";
        throw Object.assign(
          new Error(
            `failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": connection refused${echo}`,
          ),
          { code: grpc.status.UNKNOWN },
        );
      }
      const id = `sha256:${Buffer.from(ref).toString("hex").slice(0, 16)}`;
      this.images.set(ref, id);
      return { imageRef: id };
    },
  };
}

export interface FakeServer {
  runtime: FakeRuntime;
  endpoint: string;
  /** Stop serving (calls then fail UNAVAILABLE); `restart()` serves the same state again. */
  stop(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

function serviceDefinition(
  service: typeof api.RuntimeService | typeof api.ImageService,
  handlers: Record<string, Handler>,
  runtime: FakeRuntime,
): [grpc.ServiceDefinition, grpc.UntypedServiceImplementation] {
  const def: Record<string, grpc.MethodDefinition<any, any>> = {};
  const impl: grpc.UntypedServiceImplementation = {};
  for (const m of service.methods as DescMethod[]) {
    if (m.name === "GetContainerEvents") {
      def[m.name] = {
        path: `/${service.typeName}/${m.name}`,
        requestStream: false,
        responseStream: true,
        requestSerialize: (v: MessageShape<DescMessage>) => Buffer.from(toBinary(m.input, v)),
        requestDeserialize: (b: Buffer) => fromBinary(m.input, b),
        responseSerialize: (v: MessageShape<DescMessage>) => Buffer.from(toBinary(m.output, v)),
        responseDeserialize: (b: Buffer) => fromBinary(m.output, b),
        originalName: m.localName,
      };
      impl[m.name] = (call: grpc.ServerWritableStream<api.GetEventsRequest, api.ContainerEventResponse>) => {
        runtime.calls.set(m.name, (runtime.calls.get(m.name) ?? 0) + 1);
        if (runtime.eventsRefused !== undefined) {
          call.emit("error", { code: runtime.eventsRefused, details: `${m.name} refused by the fake runtime` });
          return;
        }
        runtime.eventStreams.add(call);
        call.on("cancelled", () => runtime.eventStreams.delete(call));
      };
      continue;
    }
    if (m.methodKind !== "unary") continue;
    let garbageNext = false;
    def[m.name] = {
      path: `/${service.typeName}/${m.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (v: MessageShape<DescMessage>) => Buffer.from(toBinary(m.input, v)),
      requestDeserialize: (b: Buffer) => fromBinary(m.input, b),
      responseSerialize: (v: MessageShape<DescMessage>) => {
        if (garbageNext) {
          garbageNext = false;
          return Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]); // a length far past the end
        }
        return Buffer.from(toBinary(m.output, v));
      },
      responseDeserialize: (b: Buffer) => fromBinary(m.output, b),
      originalName: m.localName,
    };
    impl[m.name] = (call: grpc.ServerUnaryCall<any, any>, done: grpc.sendUnaryData<any>) => {
      runtime.calls.set(m.name, (runtime.calls.get(m.name) ?? 0) + 1);
      const now = (runtime.inFlight.get(m.name) ?? 0) + 1;
      runtime.inFlight.set(m.name, now);
      runtime.maxInFlight.set(m.name, Math.max(now, runtime.maxInFlight.get(m.name) ?? 0));
      let finished = false;
      const cb: grpc.sendUnaryData<any> = (err, value) => {
        if (finished) return;
        finished = true;
        runtime.inFlight.set(m.name, (runtime.inFlight.get(m.name) ?? 1) - 1);
        done(err, value);
      };
      const h = handlers[m.name];
      const run = () => {
        if (!h)
          return cb({ code: grpc.status.UNIMPLEMENTED, details: `${m.name} not implemented by the fake runtime` });
        try {
          cb(null, create(m.output, h(call.request)));
        } catch (e: any) {
          cb({ code: e.code ?? grpc.status.UNKNOWN, details: e.message });
        }
      };
      const f = runtime.takeFault(m.name);
      if (!f) return run();
      if (f.kind === "error") return cb({ code: f.code, details: f.message ?? `injected ${m.name} failure` });
      if (f.kind === "garbage") {
        garbageNext = true;
        return run();
      }
      const t = setTimeout(run, f.ms);
      call.on("cancelled", () => {
        clearTimeout(t);
        cb({ code: grpc.status.CANCELLED, details: "cancelled" });
      });
    };
  }
  return [def as grpc.ServiceDefinition, impl];
}

export async function startFakeCri(runtime = new FakeRuntime()): Promise<FakeServer> {
  const dir = mkdtempSync(join(tmpdir(), "podsync-fakecri-"));
  const sock = join(dir, "cri.sock");
  const endpoint = `unix://${sock}`;
  let server: grpc.Server | undefined;
  const serve = async () => {
    const s = new grpc.Server();
    s.addService(...serviceDefinition(api.RuntimeService, runtime.runtime, runtime));
    s.addService(...serviceDefinition(api.ImageService, runtime.image, runtime));
    await new Promise<void>((res, rej) =>
      s.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (e) => (e ? rej(e) : res())),
    );
    server = s;
  };
  const stop = async () => {
    const s = server;
    server = undefined;
    if (s)
      await new Promise<void>((res) => {
        s.forceShutdown();
        res();
      });
    rmSync(sock, { force: true });
  };
  await serve();
  return {
    runtime,
    endpoint,
    stop,
    restart: serve,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
