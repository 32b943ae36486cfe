// Invariants of computePodActions and SyncPod, over generated pods and runtime states (fast-check).
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { syncOnce } from "../support/pods.js";
import { Pod, type PodInput } from "../../src/pod/schema.js";
import { computePodActions } from "../../src/kuberuntime/compute-actions.js";
import { hashContainer } from "../../src/container/hash.js";
import type { ContainerState, ContainerStatus, PodStatus } from "../../src/container/types.js";
import { containerStatus } from "../support/status.js";
import type { CriClient } from "../../src/cri/client.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import type { FakeServer } from "../support/fake-cri.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const name = fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/);
const containerArb = fc.record({
  image: fc.constantFrom("localhost/busybox:1", "localhost/pause:1"),
  command: fc.constantFrom(["sleep", "1d"], ["sleep", "2d"], ["sh", "-c", "sleep 9d"]),
  env: fc.option(
    fc.array(fc.record({ name: fc.constantFrom("A", "B", "C"), value: fc.string({ maxLength: 4 }) }), { maxLength: 2 }),
    { nil: undefined },
  ),
});

const podArb = fc
  .record({
    names: fc.uniqueArray(name, { minLength: 1, maxLength: 6 }),
    split: fc.nat(),
    containers: fc.array(containerArb, { minLength: 6, maxLength: 6 }),
    restartPolicy: fc.constantFrom("Always", "OnFailure", "Never"),
    hostNetwork: fc.boolean(),
    uid: fc.uuid(),
  })
  .map(({ names, split, containers, restartPolicy, hostNetwork, uid }) => {
    const nInit = names.length > 1 ? split % names.length : 0;
    const mk = (n: string, i: number) => ({
      name: n,
      ...containers[i]!,
      command: [...containers[i]!.command],
      imagePullPolicy: "IfNotPresent" as const,
    });
    const input: PodInput = {
      metadata: { name: "prop", uid, namespace: "default" },
      spec: {
        restartPolicy,
        hostNetwork,
        terminationGracePeriodSeconds: 2,
        initContainers: names.slice(0, nInit).map(mk),
        containers: names.slice(nInit).map((n, i) => mk(n, i + nInit)),
      },
    };
    return Pod.parse(input);
  });

function readySandbox(pod: Pod, attempt = 0): api.PodSandboxStatus {
  return create(api.PodSandboxStatusSchema, {
    id: "sandbox",
    metadata: { name: pod.metadata.name, uid: pod.metadata.uid, namespace: pod.metadata.namespace, attempt },
    state: api.PodSandboxState.SANDBOX_READY,
    network: { ip: pod.spec.hostNetwork ? "" : "10.0.0.2" },
    linux: {
      namespaces: { options: { network: pod.spec.hostNetwork ? api.NamespaceMode.NODE : api.NamespaceMode.POD } },
    },
  });
}

const cstatus = (
  name: string,
  state: ContainerState,
  hash: string,
  over: Partial<ContainerStatus> = {},
): ContainerStatus =>
  containerStatus(`id-${name}`, name, state, hash, { createdAt: 1, startedAt: 1, sandboxId: "sandbox", ...over });

function converged(pod: Pod, withInitRecords: boolean): PodStatus {
  return {
    id: pod.metadata.uid,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    ips: [],
    sandboxStatuses: [readySandbox(pod, 3)],
    containerStatuses: [
      ...pod.spec.containers.map((c) => cstatus(c.name, "running", hashContainer(c))),
      ...(withInitRecords
        ? (pod.spec.initContainers ?? []).map((c) => cstatus(c.name, "exited", hashContainer(c), { finishedAt: 1 }))
        : []),
    ],
  };
}

const noActions = {
  killPod: false,
  createSandbox: false,
  initContainersToStart: [],
  containersToStart: [],
  containersToKill: {},
};

describe("computePodActions invariants", () => {
  it("an already-converged pod gives no actions (init records kept or garbage-collected)", () => {
    fc.assert(
      fc.property(podArb, fc.boolean(), (pod, withInit) => {
        expect(computePodActions(pod, converged(pod, withInit))).toMatchObject({
          ...noActions,
          attempt: 3,
          sandboxId: "sandbox",
        });
      }),
    );
  });

  const stateArb = fc.constantFrom<ContainerState>("created", "running", "exited", "unknown");
  it("over arbitrary runtime states, the actions are well-formed", () => {
    fc.assert(
      fc.property(
        podArb,
        fc.array(fc.tuple(stateArb, fc.integer({ min: 0, max: 2 }), fc.boolean()), { minLength: 12, maxLength: 12 }),
        fc.constantFrom(0, 1, 2),
        (pod, states, nSandboxes) => {
          const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
          const status: PodStatus = {
            id: pod.metadata.uid,
            name: pod.metadata.name,
            namespace: pod.metadata.namespace,
            ips: [],
            sandboxStatuses: Array.from({ length: nSandboxes }, () => readySandbox(pod)),
            containerStatuses: all.flatMap((c, i) => {
              const [st, code, sameHash] = states[i]!;
              return st === "created" && code === 2
                ? []
                : [cstatus(c.name, st, sameHash ? hashContainer(c) : "old", { exitCode: code, id: `id${i}` })];
            }),
          };
          const a = computePodActions(pod, status);
          const idx = a.containersToStart;
          expect(new Set(idx).size).toBe(idx.length);
          for (const i of idx) expect(pod.spec.containers[i]).toBeDefined();
          // Never an init container and app containers in the same sync (these pods have no sidecars), and at
          // most one init container at a time.
          if (a.initContainersToStart.length) expect(idx).toEqual([]);
          expect(a.initContainersToStart.length).toBeLessThanOrEqual(1);
          // A sandbox is created only together with killing the old pod.
          if (a.createSandbox) expect(a.killPod).toBe(true);
          // Killing the pod without a new sandbox starts nothing.
          if (a.killPod && !a.createSandbox) {
            expect(idx).toEqual([]);
            expect(a.initContainersToStart).toEqual([]);
          }
          // Every container killed is one the runtime reports.
          for (const id of Object.keys(a.containersToKill))
            expect(status.containerStatuses.some((c) => c.id === id)).toBe(true);
          // Under Never a container that ran is never started again.
          if (pod.spec.restartPolicy === "Never" && !a.createSandbox)
            for (const i of idx) {
              const s = status.containerStatuses.find((c) => c.name === pod.spec.containers[i]!.name);
              expect(
                s === undefined ||
                  s.state === "created" ||
                  s.state === "unknown" ||
                  s.hash !== hashContainer(pod.spec.containers[i]!),
              ).toBe(true);
            }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("SyncPod is idempotent", () => {
  let fake: FakeServer;
  let cri: CriClient;
  const suite = useFakeCri();
  beforeAll(async () => {
    ({ fake, cri } = suite);
    fake.runtime.onStart = () => undefined; // processes keep running: nothing changes between the two syncs
  });

  it("a second SyncPod right after the first makes no change", async () => {
    const writes = [
      "RunPodSandbox",
      "StopPodSandbox",
      "RemovePodSandbox",
      "CreateContainer",
      "StartContainer",
      "StopContainer",
      "RemoveContainer",
      "PullImage",
    ];
    await fc.assert(
      fc.asyncProperty(podArb, async (pod) => {
        const opts = { pullBackOff: new MemoryPullBackOff() };
        const first = await syncOnce(cri, pod, opts);
        expect(first.ok).toBe(true);
        fake.runtime.resetCalls();
        const second = await syncOnce(cri, pod, opts);
        expect(second.steps).toEqual([]);
        for (const w of writes) expect(fake.runtime.calls.get(w) ?? 0, w).toBe(0);
      }),
      { numRuns: 40 },
    );
  });
});
