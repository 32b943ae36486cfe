// Kubelet fidelity (issue 10) through the in-process CRI runtime over real gRPC: upstream's runtime-manager tests
// from pkg/kubelet/kuberuntime/kuberuntime_manager_test.go (v1.33 line), case for case, and the status, GC and
// back-off items, each titled with the upstream test or function it follows.
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { CriClient } from "../../src/cri/client.js";
import { getPodStatus } from "../../src/kuberuntime/pod-status.js";
import { computePodActions } from "../../src/kuberuntime/compute-actions.js";
import { generateContainerConfig, generatePodSandboxConfig } from "../../src/kuberuntime/config/config.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { collectGarbage } from "../../src/kuberuntime/gc.js";
import { Steps } from "../../src/container/steps.js";
import { killPod } from "../../src/kuberuntime/kill.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import type { PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import type { Pod } from "../../src/pod/schema.js";
import type { FakeServer } from "../support/fake-cri.js";
import { pod, syncOnce } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
let cri: CriClient;
let clock = 0;
const opts = (): PodRuntimeOptions => ({ now: () => Date.now() + clock, pullBackOff: new MemoryPullBackOff() });
const NOT_FOUND = 5;
const sleeper = (name: string) => ({ name, image: "localhost/busybox:1", command: ["sleep", "1d"] });

const suite = useFakeCri({ timeoutMs: 2000 });
beforeAll(() => ({ fake, cri } = suite));
beforeEach(() => {
  fake.runtime.clearFaults();
  clock = 0;
});

const containersOf = (uid: string) =>
  [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === uid);
const sandboxesOf = (uid: string) => [...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === uid);
/** verifyContainerStatuses' cRecord: name, attempt, state, sorted by name then attempt. */
const records = (uid: string) =>
  containersOf(uid)
    .map((c) => ({
      name: c.config.metadata!.name,
      attempt: c.config.metadata!.attempt,
      state: api.ContainerState[c.state],
    }))
    .sort((a, b) => (a.name !== b.name ? (a.name < b.name ? -1 : 1) : a.attempt - b.attempt));
const crash = (uid: string, code = 1) =>
  fake.runtime.exit(containersOf(uid).find((c) => c.state === api.ContainerState.CONTAINER_RUNNING)!.id, code);
const twoContainers = () => pod({ containers: [sleeper("foo1"), sleeper("foo2")] }, { name: "foo", namespace: "new" });

describe("kuberuntime_manager_test.go", () => {
  it("TestGetPodStatus: id, name, namespace and the sandbox's IPs", async () => {
    const p = twoContainers();
    await syncOnce(cri, p, opts());
    const s = await getPodStatus(cri, p.metadata);
    expect([s.id, s.name, s.namespace]).toEqual([p.metadata.uid, "foo", "new"]);
    expect(s.ips).toEqual([sandboxesOf(p.metadata.uid)[0]!.ip]);
  });

  it("TestStopContainerWithNotFoundError: KillPod succeeds when StopContainer answers NotFound", async () => {
    const p = twoContainers();
    await syncOnce(cri, p, opts());
    fake.runtime.fault("StopContainer", { kind: "error", code: NOT_FOUND, message: "No such container", times: 2 });
    const status = await getPodStatus(cri, p.metadata);
    const steps = new Steps();
    expect(
      await killPod(cri, { metadata: p.metadata, spec: { terminationGracePeriodSeconds: 1 } }, status, steps),
    ).toBe(true);
    expect(steps.steps.every((s) => s.ok)).toBe(true);
  });

  it("TestGetPodStatusWithNotFoundError: ContainerStatus NotFound is skipped, not an error; IPs still reported", async () => {
    const p = twoContainers();
    await syncOnce(cri, p, opts());
    fake.runtime.fault("ContainerStatus", { kind: "error", code: NOT_FOUND, message: "No such container", times: 2 });
    const s = await getPodStatus(cri, p.metadata, "full");
    expect([s.id, s.name, s.namespace]).toEqual([p.metadata.uid, "foo", "new"]);
    expect(s.ips).toEqual([sandboxesOf(p.metadata.uid)[0]!.ip]);
    expect(s.containerStatuses).toEqual([]);
  });

  it("TestSyncPodWithInitContainers: the states and attempts after each of its four syncs", async () => {
    const p = pod(
      { initContainers: [sleeper("init1")], containers: [sleeper("foo1"), sleeper("foo2")] },
      { name: "foo", namespace: "new" },
    );
    const uid = p.metadata.uid;
    // 1. should only create the init container.
    expect((await syncOnce(cri, p, opts())).ok).toBe(true);
    const initOnly = [{ name: "init1", attempt: 0, state: "CONTAINER_RUNNING" }];
    expect(records(uid)).toEqual(initOnly);
    // 2. should not create app container because init container is still running.
    expect((await syncOnce(cri, p, opts())).ok).toBe(true);
    expect(records(uid)).toEqual(initOnly);
    // 3. should create all app containers because init container finished.
    fake.runtime.exit(containersOf(uid)[0]!.id, 0);
    expect((await syncOnce(cri, p, opts())).ok).toBe(true);
    expect(records(uid)).toEqual([
      { name: "foo1", attempt: 0, state: "CONTAINER_RUNNING" },
      { name: "foo2", attempt: 0, state: "CONTAINER_RUNNING" },
      { name: "init1", attempt: 0, state: "CONTAINER_EXITED" },
    ]);
    // 4. should restart the init container if needed to create a new podsandbox: the old instance is purged,
    // the new one is attempt 1; the app containers were killed and stay exited at attempt 0.
    fake.runtime.runtime.StopPodSandbox!({ podSandboxId: sandboxesOf(uid)[0]!.id });
    expect((await syncOnce(cri, p, opts())).ok).toBe(true);
    expect(records(uid)).toEqual([
      { name: "foo1", attempt: 0, state: "CONTAINER_EXITED" },
      { name: "foo2", attempt: 0, state: "CONTAINER_EXITED" },
      { name: "init1", attempt: 1, state: "CONTAINER_RUNNING" },
    ]);
  });

  it("TestPruneInitContainers: only the newest exited-or-unknown instance per init container is kept (pruneInitContainersBeforeStart, podsync's GC step)", async () => {
    const p = pod(
      { initContainers: [sleeper("init1"), sleeper("init2")], containers: [sleeper("main")] },
      { name: "foo", namespace: "new" },
    );
    const node = defaultNodeConfig();
    const { podSandboxId } = fake.runtime.runtime.RunPodSandbox!({ config: generatePodSandboxConfig(p, 0, node) });
    const [init1, init2] = p.spec.initContainers!;
    const templates: [typeof init1, number, number, api.ContainerState][] = [
      [init1, 3, 3, api.ContainerState.CONTAINER_EXITED],
      [init1, 2, 2, api.ContainerState.CONTAINER_EXITED],
      [init2, 1, 1, api.ContainerState.CONTAINER_EXITED],
      [init1, 1, 1, api.ContainerState.CONTAINER_UNKNOWN],
      [init2, 0, 0, api.ContainerState.CONTAINER_EXITED],
      [init1, 0, 0, api.ContainerState.CONTAINER_EXITED],
    ];
    const ids = templates.map(([c, attempt, createdAt, state], i) => {
      const id = `prune-${p.metadata.uid}-${i}`;
      fake.runtime.containers.set(id, {
        id,
        sandboxId: podSandboxId,
        config: generateContainerConfig(p, c!, attempt, "sha256:busybox1", node),
        state,
        createdAt: BigInt(createdAt),
        startedAt: 0n,
        finishedAt: 0n,
        exitCode: 0,
        reason: "",
        imageRef: "sha256:busybox1",
      });
      return id;
    });
    const status = await getPodStatus(cri, p.metadata);
    fake.runtime.resetCalls();
    await collectGarbage(cri, status, new Set(), new Set(), new Steps());
    expect(new Set(containersOf(p.metadata.uid).map((c) => c.id))).toEqual(new Set([ids[0], ids[2]]));
    // removeOldestN: the unknown-state instance is killed before it is removed.
    expect(fake.runtime.calls.get("StopContainer")).toBe(1);
  });
});

describe("GetPodStatus: a vanished sandbox is not in the status", () => {
  it("GetPodStatus skips a sandbox whose PodSandboxStatus answers NotFound; no pod IPs; a new sandbox is decided", async () => {
    const p = pod();
    await syncOnce(cri, p, opts());
    fake.runtime.fault("PodSandboxStatus", { kind: "error", code: NOT_FOUND, message: "sandbox not found", times: 1 });
    const s = await getPodStatus(cri, p.metadata);
    expect(s.sandboxStatuses).toEqual([]);
    expect(s.ips).toEqual([]);
    expect(computePodActions(p, s)).toMatchObject({ createSandbox: true, attempt: 0 });
  });
});

describe("crash-loop back-off per spec, in kubelet's words", () => {
  it("doBackOff: `back-off 1m20s restarting failed container=… pod=…` (Go duration, as kubelet prints backOff.Get)", async () => {
    const p = pod();
    await syncOnce(cri, p, opts());
    const c = containersOf(p.metadata.uid)[0]!;
    c.config.annotations["io.podsync.container.backoffStreak"] = "4"; // its fifth consecutive crash
    crash(p.metadata.uid);
    const r = await syncOnce(cri, p, opts());
    expect(r.steps[0]).toMatchObject({ action: "StartContainer", ok: false, error: "CrashLoopBackOff" });
    expect(r.steps[0]!.message).toBe(
      `back-off 1m20s restarting failed container=main pod=${p.metadata.name}_default(${p.metadata.uid})`,
    );
  });

  it("getStableKey includes the container hash: a crash-looping container given a new spec starts at once", async () => {
    const p = pod();
    await syncOnce(cri, p, opts());
    crash(p.metadata.uid);
    await syncOnce(cri, p, opts()); // first restart: no back-off
    crash(p.metadata.uid);
    expect((await syncOnce(cri, p, opts())).steps[0]!.error).toBe("CrashLoopBackOff");
    const fixed: Pod = pod(
      { containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "7200"] }] },
      { uid: p.metadata.uid, name: p.metadata.name },
    );
    const r = await syncOnce(cri, fixed, opts());
    expect(r.steps[0]).toMatchObject({ action: "StartContainer", ok: true });
    const started = containersOf(p.metadata.uid).find((c) => c.state === api.ContainerState.CONTAINER_RUNNING)!;
    expect(started.config.annotations["io.podsync.container.backoffStreak"]).toBe("0");
  });
});

describe("container GC of unknown-state instances", () => {
  it("removeOldestN: an older unknown-state app instance is stopped, then removed", async () => {
    const p = pod();
    await syncOnce(cri, p, opts());
    const first = containersOf(p.metadata.uid)[0]!;
    first.state = api.ContainerState.CONTAINER_UNKNOWN;
    // computePodActions kills the unknown instance and starts a new one. GC keeps one dead instance per name
    // (MaxPerPodContainer), so the unknown one goes once a newer instance has died too.
    const r1 = await syncOnce(cri, p, opts());
    expect(r1.steps.map((s) => `${s.action}:${s.ok}`)).toEqual(["KillContainer:true", "StartContainer:true"]);
    crash(p.metadata.uid);
    fake.runtime.resetCalls();
    const r2 = await syncOnce(cri, p, opts());
    expect(r2.steps.map((s) => `${s.action}:${s.ok}`)).toEqual(["StartContainer:true", "RemoveContainer:true"]);
    expect(r2.steps[1]!.message).toBe(`stopped and removed ${first.id} (unknown state)`);
    expect(fake.runtime.calls.get("StopContainer")).toBe(1);
    expect(containersOf(p.metadata.uid).map((c) => c.id)).not.toContain(first.id);
  });
});
