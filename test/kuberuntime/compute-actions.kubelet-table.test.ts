// The kubelet's own computePodActions tables, ported one for one from
// pkg/kubelet/kuberuntime/kuberuntime_manager_test.go (v1.33 cycle):
//   TestComputePodActions (17 cases),
//   TestComputePodActionsWithInitContainers (15 cases on computeInitContainerActions, the path kubelet v1.33 takes
//     for every pod and podsync follows; checked on InitContainersToStart, as upstream checks this path),
//   TestComputePodActionsWithInitContainersWithLegacySidecarContainers (the findNextInitContainerToRun path behind
//     the LegacySidecarContainers gate, off by default in v1.33): its 15 cases expect exactly the same decisions, so
//     one run checks both. The rows where the two paths part are in compute-actions.fidelity.test.ts.
// Same base pod and status (makeBasePodAndStatus / ...WithInitContainers), same mutations, same expected
// actions. verifyActions ignores kill message/reason; so do these tables (messages are checked elsewhere).
// The restartable (sidecar) init container table is in compute-actions.sidecars.kubelet-table.test.ts. Not
// ported, because podsync has no such containers: the ephemeral container and in-place resize tables.
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { Pod } from "../../src/pod/schema.js";
import { computePodActions, type ProbeResults } from "../../src/kuberuntime/compute-actions.js";
import { hashContainer } from "../../src/container/hash.js";
import type { Container } from "../../src/pod/schema.js";
import type { ContainerState, ContainerStatus, PodActions, PodStatus } from "../../src/container/types.js";
import { containerStatus, kubeletBasePodStatus } from "../support/status.js";

type Policy = "Always" | "OnFailure" | "Never";

const status = (id: string, name: string, state: ContainerState, c: Container): ContainerStatus =>
  containerStatus(id, name, state, hashContainer(c));

/** makeBasePodAndStatus. kubelet leaves RestartPolicy "" when a case does not set it; it behaves as Always there. */
function makeBasePodAndStatus(policy: Policy = "Always"): { pod: Pod; status: PodStatus } {
  const pod = Pod.parse({
    metadata: { uid: "12345678", name: "foo", namespace: "foo-ns" },
    spec: {
      restartPolicy: policy,
      containers: [
        { name: "foo1", image: "busybox" },
        { name: "foo2", image: "busybox" },
        { name: "foo3", image: "busybox" },
      ],
    },
  });
  const c = pod.spec.containers;
  return {
    pod,
    status: kubeletBasePodStatus([
      status("id1", "foo1", "running", c[0]!),
      status("id2", "foo2", "running", c[1]!),
      status("id3", "foo3", "running", c[2]!),
    ]),
  };
}

/** makeBasePodAndStatusWithInitContainers: the statuses are replaced by exited (0) init containers. */
function makeBasePodAndStatusWithInitContainers(policy: Policy = "Always"): { pod: Pod; status: PodStatus } {
  const base = makeBasePodAndStatus(policy);
  const pod = Pod.parse({
    ...base.pod,
    spec: {
      ...base.pod.spec,
      initContainers: [
        { name: "init1", image: "bar-image" },
        { name: "init2", image: "bar-image" },
        { name: "init3", image: "bar-image" },
      ],
    },
  });
  const i = pod.spec.initContainers!;
  base.status.containerStatuses = [
    status("initid1", "init1", "exited", i[0]!),
    status("initid2", "init2", "exited", i[1]!),
    status("initid3", "init3", "exited", i[2]!),
  ];
  return { pod, status: base.status };
}

interface Expected {
  killPod?: boolean;
  createSandbox?: boolean;
  sandboxId?: string;
  attempt?: number;
  nextInit?: number;
  start?: number[];
  /** status index → spec index, as getKillMap / getKillMapWithInitContainers build them. */
  kill?: number[];
}

interface Case {
  policy?: Policy;
  mutateStatus?: (s: PodStatus) => void;
  probes?: ProbeResults;
  want: Expected;
}

const SID = "sandboxID";
const noAction: Expected = { sandboxId: SID };

function check(make: typeof makeBasePodAndStatus, kind: "containers" | "initContainers", c: Case) {
  const { pod, status } = make(c.policy);
  const baseStatus = make(c.policy).status;
  c.mutateStatus?.(status);
  const got = computePodActions(pod, status, c.probes);
  const specs = kind === "containers" ? pod.spec.containers : pod.spec.initContainers!;
  const want: PodActions = {
    killPod: c.want.killPod ?? false,
    createSandbox: c.want.createSandbox ?? false,
    sandboxId: c.want.sandboxId ?? "",
    attempt: c.want.attempt ?? 0,
    initContainersToStart: c.want.nextInit === undefined ? [] : [c.want.nextInit],
    containersToStart: c.want.start ?? [],
    containersToKill: Object.fromEntries(
      (c.want.kill ?? []).map((i) => [
        baseStatus.containerStatuses[i]!.id,
        { name: specs[i]!.name, container: specs[i]!, message: expect.any(String), reason: expect.any(String) },
      ]),
    ),
  };
  expect(got).toEqual(want);
}

const notReady = (s: PodStatus) => {
  s.sandboxStatuses[0]!.state = api.PodSandboxState.SANDBOX_NOTREADY;
};
const set =
  (i: number, state: ContainerState, exitCode = 0) =>
  (s: PodStatus) => {
    s.containerStatuses[i]!.state = state;
    s.containerStatuses[i]!.exitCode = exitCode;
  };
const all =
  (...fns: ((s: PodStatus) => void)[]) =>
  (s: PodStatus) =>
    fns.forEach((f) => f(s));

const TestComputePodActions: Record<string, Case> = {
  "everything is good; do nothing": { want: noAction },
  "start pod sandbox and all containers for a new pod": {
    mutateStatus: (s) => {
      s.sandboxStatuses = [];
      s.containerStatuses = [];
    },
    want: { killPod: true, createSandbox: true, attempt: 0, start: [0, 1, 2] },
  },
  "restart exited containers if RestartPolicy == Always": {
    policy: "Always",
    mutateStatus: all(set(0, "exited", 0), set(1, "exited", 111)),
    want: { sandboxId: SID, start: [0, 1] },
  },
  "restart failed containers if RestartPolicy == OnFailure": {
    policy: "OnFailure",
    mutateStatus: all(set(0, "exited", 0), set(1, "exited", 111)),
    want: { sandboxId: SID, start: [1] },
  },
  "restart created but not started containers if RestartPolicy == OnFailure": {
    policy: "OnFailure",
    mutateStatus: all(set(0, "exited", 0), set(1, "created")),
    want: { sandboxId: SID, start: [1] },
  },
  "don't restart containers if RestartPolicy == Never": {
    policy: "Never",
    mutateStatus: all(set(0, "exited", 0), set(1, "exited", 111)),
    want: noAction,
  },
  "Kill pod and recreate everything if the pod sandbox is dead, and RestartPolicy == Always": {
    policy: "Always",
    mutateStatus: notReady,
    want: { killPod: true, createSandbox: true, sandboxId: SID, attempt: 1, start: [0, 1, 2] },
  },
  "Kill pod and recreate all containers (except for the succeeded one) if the pod sandbox is dead, and RestartPolicy == OnFailure":
    {
      policy: "OnFailure",
      mutateStatus: all(notReady, set(1, "exited", 0)),
      want: { killPod: true, createSandbox: true, sandboxId: SID, attempt: 1, start: [0, 2] },
    },
  "Kill pod and recreate all containers if the PodSandbox does not have an IP": {
    mutateStatus: (s) => {
      s.sandboxStatuses[0]!.network!.ip = "";
    },
    want: { killPod: true, createSandbox: true, sandboxId: SID, attempt: 1, start: [0, 1, 2] },
  },
  "Kill and recreate the container if the container's spec changed": {
    policy: "Always",
    mutateStatus: (s) => {
      s.containerStatuses[1]!.hash = (432423432).toString(16);
    },
    want: { sandboxId: SID, kill: [1], start: [1] },
  },
  "Kill and recreate the container if the liveness check has failed": {
    policy: "Always",
    probes: { liveness: new Map([["id2", "Failure"]]) },
    want: { sandboxId: SID, kill: [1], start: [1] },
  },
  "Kill and recreate the container if the startup check has failed": {
    policy: "Always",
    probes: { startup: new Map([["id2", "Failure"]]) },
    want: { sandboxId: SID, kill: [1], start: [1] },
  },
  "Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and all containers exited":
    {
      policy: "Never",
      mutateStatus: all(
        notReady,
        (s) => (s.sandboxStatuses[0]!.metadata!.attempt = 1),
        set(0, "exited"),
        set(1, "exited"),
        set(2, "exited"),
      ),
      want: { sandboxId: SID, attempt: 2, createSandbox: false, killPod: true },
    },
  "Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=OnFailure and all containers succeeded":
    {
      policy: "OnFailure",
      mutateStatus: all(
        notReady,
        (s) => (s.sandboxStatuses[0]!.metadata!.attempt = 1),
        set(0, "exited"),
        set(1, "exited"),
        set(2, "exited"),
      ),
      want: { sandboxId: SID, attempt: 2, createSandbox: false, killPod: true },
    },
  "Verify we create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and no containers have ever been created":
    {
      policy: "Never",
      mutateStatus: all(
        notReady,
        (s) => (s.sandboxStatuses[0]!.metadata!.attempt = 2),
        (s) => (s.containerStatuses = []),
      ),
      want: { sandboxId: SID, attempt: 3, createSandbox: true, killPod: true, start: [0, 1, 2] },
    },
  "Kill and recreate the container if the container is in unknown state": {
    policy: "Never",
    mutateStatus: set(1, "unknown"),
    want: { sandboxId: SID, kill: [1], start: [1] },
  },
  "Restart the container if the container is in created state": {
    policy: "Never",
    mutateStatus: set(1, "created"),
    want: { sandboxId: SID, start: [1] },
  },
};

const TestComputePodActionsWithInitContainers: Record<string, Case> = {
  "initialization completed; start all containers": { want: { sandboxId: SID, start: [0, 1, 2] } },
  "no init containers have been started; start the first one": {
    mutateStatus: (s) => (s.containerStatuses = []),
    want: { sandboxId: SID, nextInit: 0 },
  },
  "initialization in progress; do nothing": { policy: "Always", mutateStatus: set(2, "running"), want: noAction },
  "Kill pod and restart the first init container if the pod sandbox is dead": {
    policy: "Always",
    mutateStatus: notReady,
    want: { killPod: true, createSandbox: true, sandboxId: SID, attempt: 1, nextInit: 0 },
  },
  "initialization failed; restart the last init container if RestartPolicy == Always": {
    policy: "Always",
    mutateStatus: set(2, "exited", 137),
    want: { sandboxId: SID, nextInit: 2 },
  },
  "initialization failed; restart the last init container if RestartPolicy == OnFailure": {
    policy: "OnFailure",
    mutateStatus: set(2, "exited", 137),
    want: { sandboxId: SID, nextInit: 2 },
  },
  "initialization failed; kill pod if RestartPolicy == Never": {
    policy: "Never",
    mutateStatus: set(2, "exited", 137),
    want: { killPod: true, sandboxId: SID },
  },
  "init container state unknown; kill and recreate the last init container if RestartPolicy == Always": {
    policy: "Always",
    mutateStatus: set(2, "unknown"),
    want: { sandboxId: SID, nextInit: 2, kill: [2] },
  },
  "init container state unknown; kill and recreate the last init container if RestartPolicy == OnFailure": {
    policy: "OnFailure",
    mutateStatus: set(2, "unknown"),
    want: { sandboxId: SID, nextInit: 2, kill: [2] },
  },
  "init container state unknown; kill pod if RestartPolicy == Never": {
    policy: "Never",
    mutateStatus: set(2, "unknown"),
    want: { killPod: true, sandboxId: SID },
  },
  "Pod sandbox not ready, init container failed, but RestartPolicy == Never; kill pod only": {
    policy: "Never",
    mutateStatus: notReady,
    want: { killPod: true, createSandbox: false, sandboxId: SID, attempt: 1 },
  },
  "Pod sandbox not ready, and RestartPolicy == Never, but no visible init containers;  create a new pod sandbox": {
    policy: "Never",
    mutateStatus: all(notReady, (s) => (s.containerStatuses = [])),
    want: { killPod: true, createSandbox: true, sandboxId: SID, attempt: 1, nextInit: 0 },
  },
  "Pod sandbox not ready, init container failed, and RestartPolicy == OnFailure; create a new pod sandbox": {
    policy: "OnFailure",
    mutateStatus: all(notReady, set(2, "exited", 137)),
    want: { killPod: true, createSandbox: true, sandboxId: SID, attempt: 1, nextInit: 0 },
  },
  "some of the init container statuses are missing but the last init container is running, don't restart preceding ones":
    {
      policy: "Always",
      mutateStatus: all(set(2, "running"), (s) => (s.containerStatuses = s.containerStatuses.slice(2))),
      want: { killPod: false, sandboxId: SID },
    },
  "an init container is in the created state due to an unknown error when starting container; restart it": {
    policy: "Always",
    mutateStatus: set(2, "created"),
    want: { killPod: false, sandboxId: SID, nextInit: 2 },
  },
};

describe("kubelet TestComputePodActions", () => {
  it("has all 17 cases", () => expect(Object.keys(TestComputePodActions)).toHaveLength(17));
  for (const [desc, c] of Object.entries(TestComputePodActions))
    it(desc, () => check(makeBasePodAndStatus, "containers", c));
});

describe("kubelet TestComputePodActionsWithInitContainers(WithLegacySidecarContainers)", () => {
  it("has all 15 cases", () => expect(Object.keys(TestComputePodActionsWithInitContainers)).toHaveLength(15));
  for (const [desc, c] of Object.entries(TestComputePodActionsWithInitContainers))
    it(desc, () => check(makeBasePodAndStatusWithInitContainers, c.want.kill ? "initContainers" : "containers", c));
});

describe("kill messages (what verifyActions leaves out)", () => {
  it("say why, the way kubelet words them", () => {
    const { pod, status } = makeBasePodAndStatus();
    status.containerStatuses[1]!.hash = "0";
    status.containerStatuses[2]!.state = "unknown";
    const a = computePodActions(pod, status, { liveness: new Map([["id1", "Failure"]]) });
    expect(a.containersToKill).toMatchObject({
      id1: { message: "Container foo1 failed liveness probe, will be restarted", reason: "LivenessProbe" },
      id2: { message: "Container foo2 definition changed, will be restarted", reason: "" },
      id3: { message: 'Container is in "unknown" state, try killing it before restart', reason: "Unknown" },
    });
  });
  it("a liveness failure under Never kills without restarting", () => {
    const { pod, status } = makeBasePodAndStatus("Never");
    const a = computePodActions(pod, status, { liveness: new Map([["id2", "Failure"]]) });
    expect(a.containersToStart).toEqual([]);
    expect(a.containersToKill["id2"]?.message).toBe("Container foo2 failed liveness probe");
  });
});

describe("podSandboxChanged cases the table does not cover", () => {
  it("more than one ready sandbox: recreate", () => {
    const { pod, status } = makeBasePodAndStatus();
    status.sandboxStatuses.push(
      create(api.PodSandboxStatusSchema, {
        id: "old",
        state: api.PodSandboxState.SANDBOX_READY,
        metadata: { attempt: 0 },
      }),
    );
    expect(computePodActions(pod, status)).toMatchObject({
      killPod: true,
      createSandbox: true,
      attempt: 1,
      sandboxId: SID,
    });
  });
  it("network namespace changed (hostNetwork flipped): recreate, with no sandbox id", () => {
    const { pod, status } = makeBasePodAndStatus();
    const host = Pod.parse({ ...pod, spec: { ...pod.spec, hostNetwork: true } });
    expect(computePodActions(host, status)).toMatchObject({
      killPod: true,
      createSandbox: true,
      attempt: 1,
      sandboxId: "",
    });
  });
});
