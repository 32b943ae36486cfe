// Kubelet fidelity (issue 10), the pure parts: each block is titled with the upstream test or function it
// follows (kubernetes v1.33 line: pkg/kubelet/container/helpers.go + helpers_test.go + container_hash_test.go,
// pkg/kubelet/kuberuntime/kuberuntime_manager.go + kuberuntime_container.go).
import { describe, expect, it } from "vitest";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { Pod } from "../../src/pod/schema.js";
import { computePodActions } from "../../src/kuberuntime/compute-actions.js";
import { fnv1a32, goJSONString, hashContainer, kubeletHashInput, specHash } from "../../src/container/hash.js";
import { generateContainerConfig } from "../../src/kuberuntime/config/config.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { crashLoopBackOff, formatGoDuration } from "../../src/container/backoff.js";
import type { Container } from "../../src/pod/schema.js";
import type { ContainerState, PodStatus } from "../../src/container/types.js";
import { containerStatus, kubeletBasePodStatus } from "../support/status.js";

type Policy = "Always" | "OnFailure" | "Never";

/** makeBasePodAndStatus / ...WithInitContainers from kuberuntime_manager_test.go, with podsync's spec hash on
 * every instance as podsync writes it. */
function base(policy: Policy, withInit: boolean): { pod: Pod; status: PodStatus } {
  const pod = Pod.parse({
    metadata: { uid: "12345678", name: "foo", namespace: "foo-ns" },
    spec: {
      restartPolicy: policy,
      containers: ["foo1", "foo2", "foo3"].map((name) => ({ name, image: "busybox" })),
      ...(withInit && { initContainers: ["init1", "init2", "init3"].map((name) => ({ name, image: "bar-image" })) }),
    },
  });
  const st = (id: string, c: Container, state: ContainerState) =>
    containerStatus(id, c.name, state, hashContainer(c), { specHash: specHash(c) });
  const statuses = withInit
    ? pod.spec.initContainers!.map((c, i) => st(`initid${i + 1}`, c, "exited"))
    : pod.spec.containers.map((c, i) => st(`id${i + 1}`, c, "running"));
  return {
    pod,
    status: kubeletBasePodStatus(statuses),
  };
}
const notReady = (s: PodStatus) => (s.sandboxStatuses[0]!.state = api.PodSandboxState.SANDBOX_NOTREADY);

describe("item 1: kubelet's HashContainer in io.kubernetes.container.hash", () => {
  // The upstream vectors use the name "test_container", which podsync's schema (like the API server) refuses;
  // HashContainer reads only name and image, so the containers are built without the schema here.
  const upstream = (c: Record<string, unknown>) => c as unknown as Container;

  it("helpers_test.go TestHashContainer: name + image only, FNV-32a over dump.ForHash(json) = 0x8e45cbd0", () => {
    const c = upstream({
      name: "test_container",
      image: "foo/image:v1",
      args: ["/bin/sh", "-c", "echo abc"],
      ports: [{ containerPort: 8001 }],
    });
    expect(hashContainer(c)).toBe((0x8e45cbd0).toString(16));
  });

  it("container_hash_test.go TestConsistentHashContainer: sampleV131HashValue 0x8e45cbd0 whatever else the container holds", () => {
    const c = upstream({
      name: "test_container",
      image: "foo/image:v1",
      command: ["/bin/testcmd"],
      args: ["/bin/sh", "-c", "echo abc"],
      ports: [{ containerPort: 8001 }],
      env: [
        { name: "ENV_FOO", value: "bar" },
        { name: "ENV_BAR", valueFrom: { secretKeyRef: { name: "foo", key: "bar", optional: true } } },
      ],
      resources: { limits: { foo: "1G" }, requests: { foo: "500M" } },
    });
    expect(hashContainer(c)).toBe("8e45cbd0");
  });

  it("HashContainer's input bytes: spew prints the json.Marshal []byte as ([]uint8)[decimal bytes], keys sorted", () => {
    expect(kubeletHashInput({ name: "a", image: "b" })).toBe(
      `([]uint8)[${[...new TextEncoder().encode('{"image":"b","name":"a"}')].join(" ")}]`,
    );
    expect(fnv1a32(new Uint8Array([]))).toBe(0x811c9dc5);
    // encoding/json's HTML-safe escaping and Go 1.22+ short escapes.
    expect(goJSONString('a<b>&"\\\n\b\u0001\u2028')).toBe('"a\\u003cb\\u003e\\u0026\\"\\\\\\n\\b\\u0001\\u2028"');
  });

  it("labels.go newContainerAnnotations: kubelet's hash in kubelet's key, podsync's full-spec hash in its own", () => {
    const pod = Pod.parse({
      metadata: { uid: "u", name: "p", namespace: "n" },
      spec: { containers: [{ name: "web", image: "foo/image:v1", command: ["x"] }] },
    });
    const c = pod.spec.containers[0]!;
    const cfg = generateContainerConfig(pod, c, 0, "sha256:x", defaultNodeConfig());
    expect(cfg.annotations["io.kubernetes.container.hash"]).toBe(
      fnv1a32(
        `([]uint8)[${[...new TextEncoder().encode('{"image":"foo/image:v1","name":"web"}')].join(" ")}]`,
      ).toString(16),
    );
    expect(cfg.annotations["io.podsync.container.specHash"]).toBe(specHash(c));
    expect(specHash(c)).not.toBe(hashContainer(c));
  });

  it("containerChanged + podsync's spec hash: a command change restarts a podsync-made container (podsync's choice)", () => {
    const { pod, status } = base("Always", false);
    const changed = Pod.parse({
      ...pod,
      spec: {
        ...pod.spec,
        containers: pod.spec.containers.map((c, i) => (i === 1 ? { ...c, command: ["sleep", "1"] } : c)),
      },
    });
    expect(hashContainer(changed.spec.containers[1]!)).toBe(hashContainer(pod.spec.containers[1]!));
    const a = computePodActions(changed, status);
    expect(a.containersToStart).toEqual([1]);
    expect(a.containersToKill["id2"]?.message).toBe("Container foo2 definition changed, will be restarted");
  });

  it("containerChanged: an instance without podsync's spec hash (a kubelet made it) is compared on kubelet's hash only", () => {
    const { pod, status } = base("Always", false);
    for (const s of status.containerStatuses) delete s.specHash;
    const changed = Pod.parse({
      ...pod,
      spec: { ...pod.spec, containers: pod.spec.containers.map((c) => ({ ...c, command: ["sleep", "1"] })) },
    });
    expect(computePodActions(changed, status)).toMatchObject({
      killPod: false,
      containersToStart: [],
      containersToKill: {},
    });
    const newImage = Pod.parse({
      ...pod,
      spec: { ...pod.spec, containers: pod.spec.containers.map((c, i) => (i === 0 ? { ...c, image: "alpine" } : c)) },
    });
    expect(computePodActions(newImage, status).containersToStart).toEqual([0]);
  });
});

describe("item 2: containerSucceeded means exited with code 0 (PR #126420)", () => {
  it("containerSucceeded: OnFailure + dead sandbox restarts a created-never-started container (exit code 0 reported)", () => {
    const { pod, status } = base("OnFailure", false);
    notReady(status);
    status.containerStatuses[1]!.state = "created";
    status.containerStatuses[2]!.state = "exited"; // succeeded: left out
    expect(computePodActions(pod, status)).toMatchObject({
      killPod: true,
      createSandbox: true,
      attempt: 1,
      containersToStart: [0, 1],
    });
  });

  it("containerSucceeded: OnFailure + dead sandbox with every container unknown-state starts them all, not kill-only", () => {
    const { pod, status } = base("OnFailure", false);
    notReady(status);
    for (const s of status.containerStatuses) s.state = "unknown";
    expect(computePodActions(pod, status)).toMatchObject({
      killPod: true,
      createSandbox: true,
      containersToStart: [0, 1, 2],
    });
  });
});

describe("item 3: v1.33 init containers (computeInitContainerActions / hasAnyRegularContainerCreated)", () => {
  it("computeInitContainerActions: a regular container in Created state means initialized, even with no init records", () => {
    const { pod, status } = base("Always", true);
    status.containerStatuses = [containerStatus("id1", "foo1", "created", hashContainer(pod.spec.containers[0]!))];
    // The legacy findNextInitContainerToRun saw no running regular container and started init1 again.
    expect(computePodActions(pod, status)).toMatchObject({
      killPod: false,
      initContainersToStart: [],
      containersToStart: [0, 1, 2],
    });
  });

  it("computeInitContainerActions: the newest init record decides; an older failed init record is not rerun", () => {
    const { pod, status } = base("Always", true);
    status.containerStatuses[0]!.exitCode = 1; // init1 failed once, init2 and init3 completed since
    expect(computePodActions(pod, status)).toMatchObject({ initContainersToStart: [], containersToStart: [0, 1, 2] });
  });

  it("hasAnyRegularContainerCreated: OnFailure, dead sandbox, all regular containers succeeded, init records gone: kill only", () => {
    const { pod, status } = base("OnFailure", true);
    notReady(status);
    status.containerStatuses = pod.spec.containers.map((c, i) =>
      containerStatus(`id${i + 1}`, c.name, "exited", hashContainer(c)),
    );
    // The legacy path found no init record, judged initialization not done and made a sandbox to rerun init1.
    expect(computePodActions(pod, status)).toMatchObject({
      killPod: true,
      createSandbox: false,
      initContainersToStart: [],
      containersToStart: [],
    });
  });

  it("computeInitContainerActions: exited regular containers do not count as initialized (node reboot): rerun init from the start", () => {
    const { pod, status } = base("Always", true);
    status.containerStatuses = pod.spec.containers.map((c, i) =>
      containerStatus(`id${i + 1}`, c.name, "exited", hashContainer(c)),
    );
    expect(computePodActions(pod, status).initContainersToStart).toEqual([0]);
  });

  it("computeInitContainerActions: an init container stuck in Created is started again even if earlier records are gone", () => {
    const { pod, status } = base("Always", true);
    status.containerStatuses = [
      containerStatus("initid3", "init3", "created", hashContainer(pod.spec.initContainers![2]!)),
    ];
    expect(computePodActions(pod, status).initContainersToStart).toEqual([2]);
  });
});

describe("item 4: crash-loop back-off per spec (doBackOff keyed by getStableKey, which holds the container hash)", () => {
  const exited = (c: Container, streak: number, over = {}) =>
    containerStatus("old", c.name, "exited", hashContainer(c), {
      specHash: specHash(c),
      exitCode: 1,
      startedAt: 1_000,
      finishedAt: 2_000,
      backoffStreak: streak,
      ...over,
    });
  const statusOf = (...cs: ReturnType<typeof exited>[]): PodStatus => ({
    id: "u",
    name: "p",
    namespace: "n",
    ips: [],
    sandboxStatuses: [],
    containerStatuses: cs,
  });
  const c = Pod.parse({
    metadata: { uid: "u", name: "p", namespace: "n" },
    spec: { containers: [{ name: "main", image: "busybox", command: ["false"] }] },
  }).spec.containers[0]!;

  it("getStableKey: the same container backs off; a new spec starts at once with a fresh streak", () => {
    expect(crashLoopBackOff(c, statusOf(exited(c, 3)), 3_000)).toEqual({ inBackOff: true, delayMs: 40_000, streak: 4 });
    const newCommand = { ...c, command: ["true"] };
    expect(crashLoopBackOff(newCommand, statusOf(exited(c, 3)), 3_000)).toEqual({
      inBackOff: false,
      delayMs: 0,
      streak: 0,
    });
    const newImage = { ...c, image: "alpine" };
    expect(crashLoopBackOff(newImage, statusOf(exited(c, 3, { specHash: undefined })), 3_000).inBackOff).toBe(false);
  });
});

describe("item 7: back-off wording in Go's time.Duration format", () => {
  it("time.Duration.String for the back-off values and around them", () => {
    const cases: [number, string][] = [
      [0, "0s"],
      [1, "1ms"],
      [250, "250ms"],
      [1_000, "1s"],
      [1_500, "1.5s"],
      [10_000, "10s"],
      [20_000, "20s"],
      [40_000, "40s"],
      [60_000, "1m0s"],
      [80_000, "1m20s"],
      [160_000, "2m40s"],
      [300_000, "5m0s"],
      [3_600_000, "1h0m0s"],
      [3_723_004, "1h2m3.004s"],
      [-1_500, "-1.5s"],
    ];
    for (const [ms, s] of cases) expect(formatGoDuration(ms), String(ms)).toBe(s);
  });
});
