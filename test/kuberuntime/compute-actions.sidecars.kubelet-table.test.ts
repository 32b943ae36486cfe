// kubelet's TestComputePodActionsWithRestartableInitContainers, ported row for row from
// pkg/kubelet/kuberuntime/kuberuntime_manager_test.go (v1.33 cycle): all 24 rows, named as upstream names them.
// Same base pod and status (makeBasePodAndStatusWithRestartableInitContainers: three sidecars, the second and
// third with liveness and startup probes, all running, their probes Success), the same mutations, the same
// expected podActions. Like verifyActions, kill messages and reasons are not compared here.
// kubelet's probe managers distinguish a result not yet set from Unknown; both mean "wait" in
// computeInitContainerActions, and podsync's prober reports neither (ProbeResults holds Success/Failure only).
import { describe, expect, it } from "vitest";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { Pod, type PodInput } from "../../src/pod/schema.js";
import { computePodActions, type ProbeResults } from "../../src/kuberuntime/compute-actions.js";
import { hashContainer } from "../../src/container/hash.js";
import type { ContainerState, PodActions, PodStatus } from "../../src/container/types.js";
import { containerStatus, kubeletBasePodStatus } from "../support/status.js";

type Policy = "Always" | "OnFailure" | "Never";
const probe = { exec: { command: ["true"] } };
const SID = "sandboxID";

function basePodInput(): PodInput {
  return {
    metadata: { uid: "12345678", name: "foo", namespace: "foo-ns" },
    spec: {
      restartPolicy: "Always",
      containers: [
        { name: "foo1", image: "busybox" },
        { name: "foo2", image: "busybox" },
        { name: "foo3", image: "busybox" },
      ],
      initContainers: [
        { name: "restartable-init-1", image: "bar-image", restartPolicy: "Always" },
        {
          name: "restartable-init-2",
          image: "bar-image",
          restartPolicy: "Always",
          livenessProbe: probe,
          startupProbe: probe,
        },
        {
          name: "restartable-init-3",
          image: "bar-image",
          restartPolicy: "Always",
          livenessProbe: probe,
          startupProbe: probe,
        },
      ],
    },
  };
}

function baseStatus(pod: Pod): PodStatus {
  const i = pod.spec.initContainers!;
  return kubeletBasePodStatus([
    containerStatus("initid1", "restartable-init-1", "running", hashContainer(i[0]!)),
    containerStatus("initid2", "restartable-init-2", "running", hashContainer(i[1]!)),
    containerStatus("initid3", "restartable-init-3", "running", hashContainer(i[2]!)),
  ]);
}

interface Probes {
  liveness: Map<string, "Success" | "Failure">;
  startup: Map<string, "Success" | "Failure">;
}

interface Row {
  mutatePod?: (p: PodInput) => void;
  mutateStatus?: (s: PodStatus, pod: Pod, probes: Probes) => void;
  want: {
    killPod?: boolean;
    createSandbox?: boolean;
    attempt?: number;
    init?: number[];
    start?: number[];
    kill?: number[];
  };
}

const policy = (p: Policy) => (pod: PodInput) => {
  pod.spec.restartPolicy = p;
};
const set =
  (i: number, state: ContainerState, exitCode = 0) =>
  (s: PodStatus) => {
    s.containerStatuses[i]!.state = state;
    s.containerStatuses[i]!.exitCode = exitCode;
  };
const notReady = (s: PodStatus) => {
  s.sandboxStatuses[0]!.state = api.PodSandboxState.SANDBOX_NOTREADY;
};
/** The regular containers, appended to the status (rows that have them running or succeeded). */
const regular = (state: ContainerState) => (s: PodStatus, pod: Pod) => {
  pod.spec.containers.forEach((c, i) =>
    s.containerStatuses.push(containerStatus(`id${i + 1}`, c.name, state, hashContainer(c))),
  );
};

const TestComputePodActionsWithRestartableInitContainers: Record<string, Row> = {
  "initialization completed; start all containers": { want: { start: [0, 1, 2] } },
  "no init containers have been started; start the first one": {
    mutateStatus: (s) => (s.containerStatuses = []),
    want: { init: [0] },
  },
  "an init container is stuck in the created state; restart it": {
    mutatePod: policy("Always"),
    mutateStatus: set(2, "created"),
    want: { init: [2] },
  },
  "restartable init container has started; start the next": {
    mutatePod: policy("Always"),
    mutateStatus: (s) => (s.containerStatuses = s.containerStatuses.slice(0, 1)),
    want: { init: [1] },
  },
  "livenessProbe has not been run; start the nothing": {
    mutatePod: policy("Always"),
    mutateStatus: (s, _p, probes) => {
      probes.liveness.delete("initid2");
      s.containerStatuses = s.containerStatuses.slice(0, 2);
    },
    want: { init: [2] },
  },
  "livenessProbe in progress; start the next": {
    mutatePod: policy("Always"),
    // Unknown: podsync's prober leaves it out of ProbeResults.
    mutateStatus: (s, _p, probes) => {
      probes.liveness.delete("initid2");
      s.containerStatuses = s.containerStatuses.slice(0, 2);
    },
    want: { init: [2] },
  },
  "livenessProbe has completed; start the next": {
    mutatePod: policy("Always"),
    mutateStatus: (s) => (s.containerStatuses = s.containerStatuses.slice(0, 2)),
    want: { init: [2] },
  },
  "kill and recreate the restartable init container if the liveness check has failed": {
    mutatePod: policy("Always"),
    mutateStatus: (_s, _p, probes) => probes.liveness.set("initid3", "Failure"),
    want: { init: [2], kill: [2], start: [0, 1, 2] },
  },
  "startupProbe has not been run; do nothing": {
    mutatePod: policy("Always"),
    mutateStatus: (s, _p, probes) => {
      probes.startup.delete("initid2");
      s.containerStatuses = s.containerStatuses.slice(0, 2);
    },
    want: {},
  },
  "startupProbe in progress; do nothing": {
    mutatePod: policy("Always"),
    mutateStatus: (s, _p, probes) => {
      probes.startup.delete("initid2");
      s.containerStatuses = s.containerStatuses.slice(0, 2);
    },
    want: {},
  },
  "startupProbe has completed; start the next": {
    mutatePod: policy("Always"),
    mutateStatus: (s) => (s.containerStatuses = s.containerStatuses.slice(0, 2)),
    want: { init: [2] },
  },
  "kill and recreate the restartable init container if the startup check has failed": {
    mutatePod: (p) => {
      p.spec.restartPolicy = "Always";
      p.spec.initContainers![2]!.startupProbe = probe;
    },
    mutateStatus: (_s, _p, probes) => probes.startup.set("initid3", "Failure"),
    want: { init: [2], kill: [2] },
  },
  "kill and recreate the restartable init container if the container definition changes": {
    mutatePod: (p) => {
      p.spec.restartPolicy = "Always";
      p.spec.initContainers![2]!.image = "foo-image";
    },
    want: { init: [2], kill: [2], start: [0, 1, 2] },
  },
  "restart terminated restartable init container and next init container": {
    mutatePod: policy("Always"),
    mutateStatus: (s) => (set(0, "exited")(s), set(2, "exited")(s)),
    want: { init: [0, 2] },
  },
  "restart terminated restartable init container and regular containers": {
    mutatePod: policy("Always"),
    mutateStatus: set(0, "exited"),
    want: { init: [0], start: [0, 1, 2] },
  },
  "Pod sandbox not ready, restartable init container failed, but RestartPolicy == Never; kill pod only": {
    mutatePod: policy("Never"),
    mutateStatus: (s) => (notReady(s), set(2, "exited", 137)(s)),
    want: { killPod: true, createSandbox: false, attempt: 1 },
  },
  "Pod sandbox not ready, and RestartPolicy == Never, but no visible restartable init containers;  create a new pod sandbox":
    {
      mutatePod: policy("Never"),
      mutateStatus: (s) => (notReady(s), (s.containerStatuses = [])),
      want: { killPod: true, createSandbox: true, attempt: 1, init: [0] },
    },
  "Pod sandbox not ready, restartable init container failed, and RestartPolicy == OnFailure; create a new pod sandbox":
    {
      mutatePod: policy("OnFailure"),
      mutateStatus: (s) => (notReady(s), set(2, "exited", 137)(s)),
      want: { killPod: true, createSandbox: true, attempt: 1, init: [0] },
    },
  "Pod sandbox not ready, restartable init container failed, and RestartPolicy == Always; create a new pod sandbox": {
    mutatePod: policy("Always"),
    mutateStatus: (s) => (notReady(s), set(2, "exited", 137)(s)),
    want: { killPod: true, createSandbox: true, attempt: 1, init: [0] },
  },
  "initialization failed; restart the last restartable init container even if pod's RestartPolicy == Never": {
    mutatePod: policy("Never"),
    mutateStatus: set(2, "exited", 137),
    want: { init: [2] },
  },
  "restartable init container state unknown; kill and recreate the last restartable init container even if pod's RestartPolicy == Never":
    {
      mutatePod: policy("Never"),
      mutateStatus: set(2, "unknown"),
      want: { init: [2], kill: [2] },
    },
  "restart restartable init container if regular containers are running even if pod's RestartPolicy == Never": {
    mutatePod: policy("Never"),
    mutateStatus: (s, pod) => (set(2, "exited", 137)(s), regular("running")(s, pod)),
    want: { init: [2] },
  },
  "kill the pod if all main containers succeeded if pod's RestartPolicy == Never": {
    mutatePod: policy("Never"),
    mutateStatus: regular("exited"),
    want: { killPod: true },
  },
  "some of the init container statuses are missing but the last init container is running, restart restartable init and regular containers":
    {
      mutatePod: policy("Always"),
      mutateStatus: (s) => (s.containerStatuses = s.containerStatuses.slice(2)),
      want: { init: [0, 1], start: [0, 1, 2] },
    },
};

describe("kubelet TestComputePodActionsWithRestartableInitContainers", () => {
  it("has all 24 rows", () => expect(Object.keys(TestComputePodActionsWithRestartableInitContainers)).toHaveLength(24));
  for (const [name, row] of Object.entries(TestComputePodActionsWithRestartableInitContainers))
    it(name, () => {
      const input = basePodInput();
      row.mutatePod?.(input);
      const pod = Pod.parse(input);
      const base = baseStatus(Pod.parse(basePodInput()));
      const status = baseStatus(Pod.parse(basePodInput()));
      const probes: Probes = {
        liveness: new Map([
          ["initid2", "Success"],
          ["initid3", "Success"],
        ]),
        startup: new Map([
          ["initid2", "Success"],
          ["initid3", "Success"],
        ]),
      };
      row.mutateStatus?.(status, pod, probes);
      const got = computePodActions(pod, status, probes satisfies ProbeResults);
      const inits = pod.spec.initContainers!;
      const want: PodActions = {
        killPod: row.want.killPod ?? false,
        createSandbox: row.want.createSandbox ?? false,
        sandboxId: SID,
        attempt: row.want.attempt ?? 0,
        initContainersToStart: row.want.init ?? [],
        containersToStart: row.want.start ?? [],
        // getKillMapWithInitContainers: the base status's instance of init container i, with the (mutated) spec.
        containersToKill: Object.fromEntries(
          (row.want.kill ?? []).map((i) => [
            base.containerStatuses[i]!.id,
            { name: inits[i]!.name, container: inits[i]!, message: expect.any(String), reason: expect.any(String) },
          ]),
        ),
      };
      expect(got).toEqual(want);
    });
});
