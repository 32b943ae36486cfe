// The runtime's event stream (src/cri/container-events.ts): which source a runtime offers, how containerd's
// envelopes are read, and a stream on the in-process fake CRI that delivers exits, ends, and comes back.
import { afterEach, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { EnvelopeSchema } from "../../src/gen/containerd/services/events/v1/events_pb.js";
import { TaskExitSchema, TaskOOMSchema } from "../../src/gen/containerd/events/task_pb.js";
import {
  eventSourceFor,
  fromContainerdEnvelope,
  watchContainerEvents,
  type ContainerEvent,
  type EventStreamState,
  type EventWatch,
} from "../../src/cri/container-events.js";
import { GrpcTransport } from "../../src/cri/grpc-transport.js";
import { createCriClient } from "../../src/cri/client.js";
import { GrpcCode } from "../../src/cri/errors.js";
import { useFakeCri } from "../support/fake-cri-suite.js";
import { pod, syncOnce } from "../support/pods.js";
import { until } from "../support/wait.js";

describe("the event source a runtime offers (from CRI Version)", () => {
  it.each([
    ["containerd", "1.6.20~ds1", "containerd"],
    ["containerd", "v1.6.36", "containerd"],
    ["containerd", "1.7.0", "cri"],
    ["containerd", "v2.0.1", "cri"],
    ["cri-o", "1.30.0", "cri"],
    ["containerd", "unknown", "cri"],
  ])("%s %s → %s", (runtimeName, runtimeVersion, source) => {
    expect(eventSourceFor({ runtimeName, runtimeVersion })).toBe(source);
  });
});

describe("containerd's envelopes", () => {
  const envelope = (topic: string, event: Parameters<typeof anyPack>[1], schema: Parameters<typeof anyPack>[0]) =>
    create(EnvelopeSchema, { namespace: "k8s.io", topic, event: anyPack(schema, event) });
  it("an init process's TaskExit is an unsettled exit of that container; other task and container events are changes; an exec's events are nothing", () => {
    // It carries how the process ended (what the CRI plugin records a moment later as exitCode and finishedAt).
    const exitedAt = { seconds: 1_700_000_000n, nanos: 123_456_789 };
    expect(
      fromContainerdEnvelope(
        envelope(
          "/tasks/exit",
          create(TaskExitSchema, { containerId: "c1", id: "c1", pid: 7, exitStatus: 137, exitedAt }),
          TaskExitSchema,
        ),
      ),
    ).toEqual({ id: "c1", kind: "exited", settled: false, exit: { code: 137, at: 1_700_000_000_123 } });
    // Without its time it is an exit to wait for in CRI.
    expect(
      fromContainerdEnvelope(
        envelope(
          "/tasks/exit",
          create(TaskExitSchema, { containerId: "c1", id: "c1", pid: 7, exitStatus: 137 }),
          TaskExitSchema,
        ),
      ),
    ).toEqual({ id: "c1", kind: "exited", settled: false });
    expect(
      fromContainerdEnvelope(
        envelope("/tasks/exit", create(TaskExitSchema, { containerId: "c1", id: "exec-probe-1" }), TaskExitSchema),
      ),
    ).toBeUndefined();
    expect(
      fromContainerdEnvelope(envelope("/tasks/oom", create(TaskOOMSchema, { containerId: "c1" }), TaskOOMSchema)),
    ).toEqual({ id: "c1", kind: "changed", settled: false });
    // Every task event (TaskStart, TaskDelete, ...) and container event (ContainerCreate, ContainerDelete, ...) has
    // the container's id in field 1, as TaskOOM has: read without their schemas.
    for (const topic of ["/tasks/start", "/tasks/delete", "/tasks/create", "/containers/create", "/containers/delete"])
      expect(
        fromContainerdEnvelope(envelope(topic, create(TaskOOMSchema, { containerId: "c9" }), TaskOOMSchema)),
      ).toEqual({ id: "c9", kind: "changed", settled: false });
    // An exec probe's (kubectl exec's) process: nothing of the container changed.
    for (const topic of ["/tasks/exec-added", "/tasks/exec-started"])
      expect(
        fromContainerdEnvelope(envelope(topic, create(TaskOOMSchema, { containerId: "c1" }), TaskOOMSchema)),
      ).toBeUndefined();
    expect(
      fromContainerdEnvelope(envelope("/images/create", create(TaskOOMSchema, { containerId: "img" }), TaskOOMSchema)),
    ).toBeUndefined();
    expect(fromContainerdEnvelope(envelope("/tasks/start", create(TaskOOMSchema, {}), TaskOOMSchema))).toBeUndefined();
    // The wire form decodes the same (what the stream's codec hands over).
    expect(
      toBinary(EnvelopeSchema, envelope("/tasks/exit", create(TaskExitSchema, { containerId: "c2" }), TaskExitSchema))
        .length,
    ).toBeGreaterThan(0);
  });
});

describe("watchContainerEvents on the fake CRI (GetContainerEvents)", () => {
  const suite = useFakeCri({ each: true, timeoutMs: 2000 });
  let watch: EventWatch | undefined;
  let transport: GrpcTransport | undefined;
  afterEach(() => {
    watch?.close();
    transport?.close();
    watch = transport = undefined;
  });

  async function start() {
    const server = suite.fake;
    transport = new GrpcTransport({ endpoint: server.endpoint, timeoutMs: 2000 });
    const cri = createCriClient(transport);
    const events: ContainerEvent[] = [];
    const states: EventStreamState[] = [];
    watch = watchContainerEvents({
      transport,
      version: () => cri.version({}),
      onEvent: (e) => events.push(e),
      onState: (s) => states.push(s),
      backOffMs: { initial: 20, max: 100 },
    });
    return { server, cri, events, states };
  }

  it("an exit arrives with its pod's uid; a closed stream is reported down and opened again", async () => {
    const { server, cri, events, states } = await start();
    await until("the stream is up", async () => watch!.state.up);
    const p = pod({}, { uid: "uid-ev-1" });
    await syncOnce(cri, p);
    const c = [...server.runtime.containers.values()][0]!;
    server.runtime.exit(c.id, 137);
    await until("the exit event", async () => events.length > 0);
    expect(events[0]).toEqual({ id: c.id, podUid: "uid-ev-1", kind: "exited", settled: true });

    server.runtime.closeEventStreams();
    await until("reported down", async () => states.some((s) => !s.up && s.error?.includes("UNAVAILABLE")));
    await until("up again", async () => watch!.state.up && watch!.state.reconnects === 1);
    expect(states.map((s) => s.up)).toEqual([true, false, true]);
  });

  it("a runtime that refuses the stream (UNIMPLEMENTED) is down, and asked again with a growing back-off", async () => {
    const server = suite.fake;
    server.runtime.eventsRefused = GrpcCode.UNIMPLEMENTED;
    transport = new GrpcTransport({ endpoint: server.endpoint, timeoutMs: 2000 });
    const cri = createCriClient(transport);
    const states: EventStreamState[] = [];
    watch = watchContainerEvents({
      transport,
      version: () => cri.version({}),
      onEvent: () => undefined,
      onState: (s) => states.push(s),
      backOffMs: { initial: 20, max: 100 },
    });
    await until("refused a few times", async () => (server.runtime.calls.get("GetContainerEvents") ?? 0) >= 3);
    expect(states.every((s) => !s.up)).toBe(true);
    expect(states[0]!.error).toMatch(/UNIMPLEMENTED/);
    // Reported once while the reason stays the same.
    expect(states).toHaveLength(1);
    server.runtime.eventsRefused = undefined;
    await until("up once the runtime offers it", async () => watch!.state.up);
  });
});
