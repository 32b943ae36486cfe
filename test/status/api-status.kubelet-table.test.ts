// kubelet's own tables for pod status, ported: getPhase (pkg/kubelet/kubelet_pods_test.go
// TestPodPhaseWithRestartAlways / ...InitContainers / Never / NeverInitContainers / OnFailure), the
// conditions (pkg/kubelet/status/generate_test.go), and generateAPIPodStatus over runtime statuses.
// Cases with restartable (sidecar) init containers are left out: podsync's schema has none.
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { PodSandboxState, PodSandboxStatusSchema } from "../../src/gen/runtime/v1/api_pb.js";
import {
  containersReadyCondition,
  generateAPIPodStatus,
  getPhase,
  podInitializedCondition,
  podReadyCondition,
  type V1ContainerStatus,
} from "../../src/status/api-status.js";
import type { PodStatus } from "../../src/container/types.js";
import { pod as mkPod } from "../support/pods.js";
import { containerStatus } from "../support/status.js";
import { hashContainer } from "../../src/container/hash.js";

// The fixtures of kubelet_pods_test.go.
const base = (name: string): V1ContainerStatus => ({
  name,
  state: {},
  lastState: {},
  ready: false,
  restartCount: 0,
  image: "",
  imageID: "",
});
const waitingState = (n: string): V1ContainerStatus => ({ ...base(n), state: { waiting: {} } });
const waitingStateWithLastTermination = (n: string): V1ContainerStatus => ({
  ...base(n),
  state: { waiting: {} },
  lastState: { terminated: { exitCode: 0, startedAt: null, finishedAt: null } },
});
const waitingStateWithNonZeroTermination = (n: string): V1ContainerStatus => ({
  ...base(n),
  state: { waiting: {} },
  lastState: { terminated: { exitCode: -1, startedAt: null, finishedAt: null } },
});
const runningState = (n: string): V1ContainerStatus => ({ ...base(n), state: { running: { startedAt: null } } });
const stoppedState = (n: string): V1ContainerStatus => ({
  ...base(n),
  state: { terminated: { exitCode: 0, startedAt: null, finishedAt: null } },
});
const succeededState = stoppedState;
const failedState = (n: string): V1ContainerStatus => ({
  ...base(n),
  state: { terminated: { exitCode: -1, startedAt: null, finishedAt: null } },
});
const ready = (s: V1ContainerStatus): V1ContainerStatus => ({ ...s, ready: true });

type Row = [V1ContainerStatus[], string, string, boolean?];
const spec = (restartPolicy: "Always" | "Never" | "OnFailure", init = false) =>
  ({
    spec: {
      restartPolicy,
      containers: [{ name: "containerA" }, { name: "containerB" }],
      initContainers: init ? [{ name: "containerX" }] : [],
    },
  }) as unknown as Parameters<typeof getPhase>[0];

function table(title: string, p: Parameters<typeof getPhase>[0], rows: Row[]) {
  describe(title, () => {
    it.each(rows.map(([info, phase, test, terminal]) => ({ info, phase, test, terminal })))(
      "$test",
      ({ info, phase, terminal }) => {
        expect(getPhase(p, info, terminal ?? false)).toBe(phase);
      },
    );
  });
}

table("TestPodPhaseWithRestartAlways", spec("Always"), [
  [[], "Pending", "waiting"],
  [[runningState("containerA"), runningState("containerB")], "Running", "all running"],
  [[stoppedState("containerA"), stoppedState("containerB")], "Running", "all stopped with restart always"],
  [
    [succeededState("containerA"), succeededState("containerB")],
    "Succeeded",
    "all succeeded with restart always, but the pod is terminal",
    true,
  ],
  [
    [succeededState("containerA"), failedState("containerB")],
    "Failed",
    "all stopped with restart always, but the pod is terminal",
    true,
  ],
  [[runningState("containerA"), stoppedState("containerB")], "Running", "mixed state #1 with restart always"],
  [[runningState("containerA")], "Pending", "mixed state #2 with restart always"],
  [[runningState("containerA"), waitingState("containerB")], "Pending", "mixed state #3 with restart always"],
  [
    [runningState("containerA"), waitingStateWithLastTermination("containerB")],
    "Running",
    "backoff crashloop container with restart always",
  ],
]);

table("TestPodPhaseWithRestartAlwaysInitContainers", spec("Always", true), [
  [[], "Pending", "empty, waiting"],
  [[runningState("containerX")], "Pending", "init container running"],
  [[failedState("containerX")], "Pending", "init container terminated non-zero"],
  [[waitingStateWithLastTermination("containerX")], "Pending", "init container waiting, terminated zero"],
  [[waitingStateWithNonZeroTermination("containerX")], "Pending", "init container waiting, terminated non-zero"],
  [[waitingState("containerX")], "Pending", "init container waiting, not terminated"],
  [
    [succeededState("containerX"), runningState("containerA"), runningState("containerB")],
    "Running",
    "init container succeeded",
  ],
]);

table("TestPodPhaseWithRestartNever", spec("Never"), [
  [[], "Pending", "waiting"],
  [[runningState("containerA"), runningState("containerB")], "Running", "all running with restart never"],
  [[succeededState("containerA"), succeededState("containerB")], "Succeeded", "all succeeded with restart never"],
  [[failedState("containerA"), failedState("containerB")], "Failed", "all failed with restart never"],
  [[runningState("containerA"), succeededState("containerB")], "Running", "mixed state #1 with restart never"],
  [[runningState("containerA")], "Pending", "mixed state #2 with restart never"],
  [[runningState("containerA"), waitingState("containerB")], "Pending", "mixed state #3 with restart never"],
]);

table("TestPodPhaseWithRestartNeverInitContainers", spec("Never", true), [
  [[], "Pending", "empty, waiting"],
  [[runningState("containerX")], "Pending", "init container running"],
  [[failedState("containerX")], "Failed", "init container terminated non-zero"],
  [[waitingStateWithLastTermination("containerX")], "Pending", "init container waiting, terminated zero"],
  [[waitingStateWithNonZeroTermination("containerX")], "Failed", "init container waiting, terminated non-zero"],
  [[waitingState("containerX")], "Pending", "init container waiting, not terminated"],
  [
    [succeededState("containerX"), runningState("containerA"), runningState("containerB")],
    "Running",
    "init container succeeded",
  ],
]);

table("TestPodPhaseWithRestartOnFailure", spec("OnFailure"), [
  [[], "Pending", "waiting"],
  [[runningState("containerA"), runningState("containerB")], "Running", "all running with restart onfailure"],
  [[succeededState("containerA"), succeededState("containerB")], "Succeeded", "all succeeded with restart onfailure"],
  [[failedState("containerA"), failedState("containerB")], "Running", "all failed with restart never"],
  [[runningState("containerA"), succeededState("containerB")], "Running", "mixed state #1 with restart onfailure"],
  [[runningState("containerA")], "Pending", "mixed state #2 with restart onfailure"],
  [[runningState("containerA"), waitingState("containerB")], "Pending", "mixed state #3 with restart onfailure"],
  [
    [runningState("containerA"), waitingStateWithLastTermination("containerB")],
    "Running",
    "backoff crashloop container with restart onfailure",
  ],
]);

// status/generate_test.go
const twoContainers = mkPod({
  containers: [
    { name: "1234", image: "i" },
    { name: "5678", image: "i" },
  ],
});
describe("TestGenerateContainersReadyCondition", () => {
  it.each([
    {
      name: "no container statuses",
      statuses: undefined,
      phase: "Running",
      expect: { status: "False", reason: "UnknownContainerStatuses" },
    },
    {
      name: "one unknown, one not ready",
      statuses: [runningState("5678")],
      phase: "Running",
      expect: {
        status: "False",
        reason: "ContainersNotReady",
        message: "containers with unknown status: [1234], containers with unready status: [5678]",
      },
    },
    {
      name: "all ready",
      statuses: [ready(runningState("1234")), ready(runningState("5678"))],
      phase: "Running",
      expect: { status: "True" },
    },
    {
      name: "one not ready",
      statuses: [ready(runningState("1234")), runningState("5678")],
      phase: "Running",
      expect: { status: "False", reason: "ContainersNotReady", message: "containers with unready status: [5678]" },
    },
    {
      name: "all succeeded: PodCompleted",
      statuses: [succeededState("1234"), succeededState("5678")],
      phase: "Succeeded",
      expect: { status: "False", reason: "PodCompleted" },
    },
    {
      name: "pod failed: PodFailed",
      statuses: [failedState("1234"), succeededState("5678")],
      phase: "Failed",
      expect: { status: "False", reason: "PodFailed" },
    },
  ] as const)("$name", (t) => {
    expect(containersReadyCondition(twoContainers, t.statuses, t.phase)).toEqual({
      type: "ContainersReady",
      ...t.expect,
    });
    expect(podReadyCondition(twoContainers, t.statuses, t.phase)).toEqual({ type: "Ready", ...t.expect });
  });
});

describe("TestGeneratePodInitializedCondition", () => {
  const withInit = mkPod({
    initContainers: [
      { name: "1234", image: "i" },
      { name: "5678", image: "i" },
    ],
    containers: [{ name: "app", image: "i" }],
  });
  it.each([
    { name: "no init containers", p: mkPod(), statuses: [], phase: "Running", expect: { status: "True" } },
    {
      name: "unknown status",
      p: withInit,
      statuses: undefined,
      phase: "Pending",
      expect: { status: "False", reason: "UnknownContainerStatuses" },
    },
    {
      name: "all init containers succeeded",
      p: withInit,
      statuses: [ready(succeededState("1234")), ready(succeededState("5678"))],
      phase: "Pending",
      expect: { status: "True" },
    },
    {
      name: "one incomplete",
      p: withInit,
      statuses: [ready(succeededState("1234")), runningState("5678")],
      phase: "Pending",
      expect: {
        status: "False",
        reason: "ContainersNotInitialized",
        message: "containers with incomplete status: [5678]",
      },
    },
    {
      name: "one unknown, one incomplete",
      p: withInit,
      statuses: [runningState("5678")],
      phase: "Pending",
      expect: {
        status: "False",
        reason: "ContainersNotInitialized",
        message: "containers with unknown status: [1234], containers with incomplete status: [5678]",
      },
    },
    {
      name: "pod succeeded: PodCompleted",
      p: withInit,
      statuses: [ready(succeededState("1234")), ready(succeededState("5678"))],
      phase: "Succeeded",
      expect: { status: "True", reason: "PodCompleted" },
    },
  ] as const)("$name", (t) => {
    expect(podInitializedCondition(t.p, t.statuses, t.phase)).toEqual({ type: "Initialized", ...t.expect });
  });
});

// generateAPIPodStatus over kubecontainer statuses (runtime instances, newest first).
const NOW = Date.parse("2025-06-01T12:00:00Z");
const sandbox = (ready = true) =>
  create(PodSandboxStatusSchema, {
    id: "sb1",
    state: ready ? PodSandboxState.SANDBOX_READY : PodSandboxState.SANDBOX_NOTREADY,
    createdAt: BigInt(NOW - 60_000) * 1_000_000n,
    metadata: { attempt: 0 },
    network: { ip: "10.88.0.5" },
  });
const runtimeStatus = (containers: PodStatus["containerStatuses"], sb = sandbox()): PodStatus => ({
  id: "u",
  name: "p",
  namespace: "default",
  ips: sb.state === PodSandboxState.SANDBOX_READY ? ["10.88.0.5"] : [],
  sandboxStatuses: [sb],
  containerStatuses: containers,
});

describe("generateAPIPodStatus", () => {
  const p = mkPod({ containers: [{ name: "main", image: "localhost/busybox:1" }] }, { uid: "u", name: "p" });
  const gen = (status: PodStatus, over: Partial<Parameters<typeof generateAPIPodStatus>[0]> = {}) =>
    generateAPIPodStatus({ pod: p, status, now: NOW, runtimeName: "containerd", hostIPs: ["192.0.2.1"], ...over });

  it("running: Running, ready, started, containerd:// ids, conditions True with times from the runtime", () => {
    const s = gen(
      runtimeStatus([
        containerStatus("c1", "main", "running", "h", {
          startedAt: NOW - 50_000,
          createdAt: NOW - 51_000,
          image: "localhost/busybox:1",
          imageRef: "sha256:abc",
        }),
      ]),
    );
    expect(s).toMatchObject({
      phase: "Running",
      podIP: "10.88.0.5",
      podIPs: [{ ip: "10.88.0.5" }],
      hostIP: "192.0.2.1",
      startTime: "2025-06-01T11:59:00Z",
      qosClass: "BestEffort",
      containerStatuses: [
        {
          name: "main",
          ready: true,
          started: true,
          restartCount: 0,
          image: "localhost/busybox:1",
          imageID: "sha256:abc",
          containerID: "containerd://c1",
          state: { running: { startedAt: "2025-06-01T11:59:10Z" } },
          lastState: {},
        },
      ],
    });
    expect(s.conditions.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([
      ["PodReadyToStartContainers", "True", "2025-06-01T11:59:00Z"],
      ["Initialized", "True", "2025-06-01T11:59:00Z"],
      ["Ready", "True", "2025-06-01T11:59:10Z"],
      ["ContainersReady", "True", "2025-06-01T11:59:10Z"],
      ["PodScheduled", "True", "2025-06-01T11:59:00Z"],
    ]);
  });

  it("no instance yet: waiting ContainerCreating, Pending (PodInitializing with init containers)", () => {
    expect(gen(runtimeStatus([])).containerStatuses[0]!.state).toEqual({ waiting: { reason: "ContainerCreating" } });
    const withInit = mkPod(
      {
        initContainers: [{ name: "init", image: "i", command: ["sleep", "9"] }],
        containers: [{ name: "main", image: "i" }],
      },
      { uid: "u", name: "p" },
    );
    const s = gen(runtimeStatus([containerStatus("i1", "init", "running", "h", { startedAt: NOW - 1000 })]), {
      pod: withInit,
    });
    expect(s.phase).toBe("Pending");
    expect(s.containerStatuses[0]!.state).toEqual({ waiting: { reason: "PodInitializing" } });
    expect(s.initContainerStatuses![0]).toMatchObject({
      name: "init",
      ready: false,
      started: true,
      state: { running: {} },
    });
    expect(s.conditions.find((c) => c.type === "Initialized")).toMatchObject({
      status: "False",
      reason: "ContainersNotInitialized",
      message: "containers with incomplete status: [init]",
    });
  });

  it("crash loop (no reason cached): waiting CrashLoopBackOff with kubelet's message, lastState terminated, Running", () => {
    // The instances carry this container's hash: a changed container would start at once (no back-off).
    const h = hashContainer(p.spec.containers[0]!);
    const dead = containerStatus("c2", "main", "exited", h, {
      exitCode: 1,
      reason: "Error",
      startedAt: NOW - 3000,
      finishedAt: NOW - 2000,
      restartCount: 1,
      backoffStreak: 2,
    });
    const older = containerStatus("c1", "main", "exited", h, {
      exitCode: 1,
      reason: "Error",
      startedAt: NOW - 30_000,
      finishedAt: NOW - 29_000,
    });
    const s = gen(runtimeStatus([dead, older]));
    expect(s.phase).toBe("Running");
    expect(s.containerStatuses[0]).toMatchObject({
      restartCount: 1,
      ready: false,
      state: {
        waiting: {
          reason: "CrashLoopBackOff",
          message: `back-off 20s restarting failed container=main pod=p_default(u)`,
        },
      },
      lastState: { terminated: { exitCode: 1, reason: "Error", containerID: "containerd://c2" } },
    });
    expect(s.conditions.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "ContainersNotReady",
      message: "containers with unready status: [main]",
    });
  });

  it("reasons from the last sync (reasonCache): ErrImagePull, CreateContainerConfigError", () => {
    const s = gen(runtimeStatus([]), {
      reasons: new Map([["main", { reason: "ErrImagePull", message: 'Failed to pull image "x": not found' }]]),
    });
    expect(s.containerStatuses[0]!.state).toEqual({
      waiting: { reason: "ErrImagePull", message: 'Failed to pull image "x": not found' },
    });
    expect(s.phase).toBe("Pending");
  });

  it("restartPolicy Never: exit 0 Succeeded, exit 3 Failed (terminated reason Error), Ready False PodCompleted/PodFailed", () => {
    const never = mkPod(
      { restartPolicy: "Never", containers: [{ name: "main", image: "i" }] },
      { uid: "u", name: "p" },
    );
    const ok = gen(
      runtimeStatus([
        containerStatus("c1", "main", "exited", "h", {
          exitCode: 0,
          reason: "Completed",
          startedAt: NOW - 5000,
          finishedAt: NOW - 4000,
        }),
      ]),
      { pod: never },
    );
    expect(ok.phase).toBe("Succeeded");
    expect(ok.conditions.find((c) => c.type === "Ready")).toMatchObject({ status: "False", reason: "PodCompleted" });
    const bad = gen(
      runtimeStatus([
        containerStatus("c1", "main", "exited", "h", {
          exitCode: 3,
          reason: "Error",
          startedAt: NOW - 5000,
          finishedAt: NOW - 4000,
        }),
      ]),
      { pod: never },
    );
    expect(bad.phase).toBe("Failed");
    expect(bad.containerStatuses[0]!.state.terminated).toMatchObject({
      exitCode: 3,
      reason: "Error",
      finishedAt: "2025-06-01T11:59:56Z",
    });
    expect(bad.conditions.find((c) => c.type === "Ready")).toMatchObject({ status: "False", reason: "PodFailed" });
  });

  it("probes: readiness drives ready; a startup probe not yet passed leaves started false", () => {
    const probed = mkPod(
      {
        containers: [
          {
            name: "main",
            image: "i",
            readinessProbe: { exec: { command: ["true"] } },
            startupProbe: { exec: { command: ["true"] } },
          },
        ],
      },
      { uid: "u", name: "p" },
    );
    const st = runtimeStatus([containerStatus("c1", "main", "running", "h", { startedAt: NOW - 5000 })]);
    expect(gen(st, { pod: probed }).containerStatuses[0]).toMatchObject({ started: false, ready: false });
    const startedOnly = { startup: new Map([["c1", "Success" as const]]) };
    expect(gen(st, { pod: probed, probes: startedOnly }).containerStatuses[0]).toMatchObject({
      started: true,
      ready: false,
    });
    const both = {
      startup: new Map([["c1", "Success" as const]]),
      readiness: new Map([["c1", "Success" as const]]),
      changedAt: new Map([["c1", NOW - 1000]]),
    };
    const s = gen(st, { pod: probed, probes: both });
    expect(s.containerStatuses[0]).toMatchObject({ started: true, ready: true });
    expect(s.conditions.find((c) => c.type === "Ready")).toMatchObject({
      status: "True",
      lastTransitionTime: "2025-06-01T11:59:59Z",
    });
  });

  it("hostNetwork: podIPs are the node's", () => {
    const hn = mkPod({ hostNetwork: true, containers: [{ name: "main", image: "i" }] }, { uid: "u", name: "p" });
    const sb = create(PodSandboxStatusSchema, {
      id: "sb1",
      state: PodSandboxState.SANDBOX_READY,
      createdAt: BigInt(NOW) * 1_000_000n,
      linux: { namespaces: { options: { network: 2 } } },
    });
    const s = gen({ ...runtimeStatus([], sb), ips: [] }, { pod: hn });
    expect(s.podIPs).toEqual([{ ip: "192.0.2.1" }]);
  });
});
