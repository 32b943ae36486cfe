// SyncPod against the in-process CRI server over real gRPC: behaviour, then faults.
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { CriError } from "../../src/cri/errors.js";
import { getPodStatus } from "../../src/kuberuntime/pod-status.js";
import { computePodActions } from "../../src/kuberuntime/compute-actions.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import type { PodRuntimeOptions } from "../../src/kubelet/pod-runtime.js";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import type { FakeServer } from "../support/fake-cri.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { EventRecorder, recordingEvents } from "../../src/kubeapi/events.js";
import { RvClock } from "../../src/kubeapi/watch-hub.js";
import { Pod } from "../../src/pod/schema.js";
import { pod, syncOnce } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
let cri: CriClient;
let clock = 0; // ms added to the real clock, so tests can step past back-off
const opts = (): PodRuntimeOptions => ({ now: () => Date.now() + clock, pullBackOff: new MemoryPullBackOff() });
const actionsOf = (r: { steps: { action: string; target: string; ok: boolean; error?: string }[] }) =>
  r.steps.map((s) => `${s.action}:${s.target}:${s.ok ? "ok" : s.error}`);

const suite = useFakeCri({ timeoutMs: 2000 });
beforeAll(() => ({ fake, cri } = suite));
beforeEach(() => {
  fake.runtime.clearFaults();
  clock = 0;
});

const running = (uid: string) =>
  [...fake.runtime.containers.values()].filter(
    (c) => c.config.labels["io.kubernetes.pod.uid"] === uid && c.state === api.ContainerState.CONTAINER_RUNNING,
  );

describe("SyncPod on the in-process runtime", () => {
  it("creates the sandbox and starts the containers, then converges to no actions", async () => {
    const p = pod({
      containers: [
        { name: "a", image: "localhost/busybox:1", command: ["sleep", "1d"] },
        { name: "b", image: "localhost/busybox:1", command: ["sleep", "1d"] },
      ],
    });
    const first = await syncOnce(cri, p, opts());
    expect(first.ok).toBe(true);
    expect(actionsOf(first)).toEqual([
      expect.stringMatching(/^CreatePodSandbox:.*:ok$/),
      "StartContainer:a:ok",
      "StartContainer:b:ok",
    ]);
    expect(running(p.metadata.uid)).toHaveLength(2);
    const [sb] = [...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === p.metadata.uid);
    expect(sb!.config.labels).toMatchObject({
      "io.kubernetes.pod.uid": p.metadata.uid,
      "io.kubernetes.pod.name": p.metadata.name,
      "io.kubernetes.pod.namespace": "default",
    });
    expect(sb!.config.logDirectory).toBe(`/var/log/pods/default_${p.metadata.name}_${p.metadata.uid}`);

    fake.runtime.resetCalls();
    const second = await syncOnce(cri, p, opts());
    expect(second.steps).toEqual([]);
    expect(second.actions).toMatchObject({
      killPod: false,
      createSandbox: false,
      containersToStart: [],
      containersToKill: {},
    });
    // The minimum status read for a converged pod: two lists and the newest sandbox's status; then the
    // read-back for the v1 status completes the running containers (ContainerStatus each), and a fresh
    // runtime asks Version once for the runtime's name.
    expect(Object.fromEntries(fake.runtime.calls)).toEqual({
      ListPodSandbox: 1,
      ListContainers: 1,
      PodSandboxStatus: 1,
      ContainerStatus: 2,
      Version: 1,
    });
  });

  it("restarts a container whose spec changed, with restartCount+1 and its hash annotation", async () => {
    const p = pod();
    await syncOnce(cri, p, opts());
    const changed = pod(
      { containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "7200"] }] },
      { uid: p.metadata.uid, name: p.metadata.name },
    );
    const r = await syncOnce(cri, changed, opts());
    expect(actionsOf(r)).toEqual(["KillContainer:main:ok", "StartContainer:main:ok"]);
    expect(r.steps[0]!.message).toBe("Container main definition changed, will be restarted");
    const [c] = running(p.metadata.uid);
    expect(c!.config.annotations["io.kubernetes.container.restartCount"]).toBe("1");
    expect(c!.config.metadata?.attempt).toBe(1);
    expect(c!.config.command).toEqual(["sleep", "7200"]);
    expect((await syncOnce(cri, changed, opts())).steps).toEqual([]);
  });

  it("restarts an exited container under Always, then backs off (CrashLoopBackOff) until 10 s passed", async () => {
    const p = pod();
    await syncOnce(cri, p, opts());
    fake.runtime.exit(running(p.metadata.uid)[0]!.id, 1);
    const r1 = await syncOnce(cri, p, opts());
    expect(actionsOf(r1)).toEqual(["StartContainer:main:ok"]);
    fake.runtime.exit(running(p.metadata.uid)[0]!.id, 1);
    const r2 = await syncOnce(cri, p, opts());
    expect(actionsOf(r2)).toEqual(["StartContainer:main:CrashLoopBackOff", "RemoveContainer:main:ok"]);
    expect(r2.steps[0]!.message).toMatch(/^back-off 10s restarting failed container=main pod=/);
    clock += 10_001;
    const r3 = await syncOnce(cri, p, opts());
    expect(actionsOf(r3)).toEqual(["StartContainer:main:ok"]);
    fake.runtime.exit(running(p.metadata.uid)[0]!.id, 2);
    // 10 s later (the clock stays 10 s ahead of the exit) the next delay, 20 s, has not passed.
    const r4 = await syncOnce(cri, p, opts());
    expect(r4.steps[0]!.message).toMatch(/^back-off 20s/);
  });

  it("OnFailure keeps a succeeded container down; Never keeps a failed one down and kills the finished pod", async () => {
    const p = pod({ restartPolicy: "OnFailure" });
    await syncOnce(cri, p, opts());
    fake.runtime.exit(running(p.metadata.uid)[0]!.id, 0);
    const r = await syncOnce(cri, p, opts());
    expect(r.actions.killPod).toBe(true);
    expect(r.actions.createSandbox).toBe(false);
    expect(actionsOf(r).filter((s) => s.startsWith("Start") || s.startsWith("Create"))).toEqual([]);

    const q = pod({ restartPolicy: "Never" });
    await syncOnce(cri, q, opts());
    fake.runtime.exit(running(q.metadata.uid)[0]!.id, 3);
    const r2 = await syncOnce(cri, q, opts());
    expect(r2.actions).toMatchObject({ killPod: true, createSandbox: false, containersToStart: [] });
    // A finished pod stays finished: the next sync only re-asserts the kill (no sandbox, no start).
    const r3 = await syncOnce(cri, q, opts());
    expect(r3.actions).toMatchObject({ killPod: true, createSandbox: false, containersToStart: [] });
    expect(running(q.metadata.uid)).toHaveLength(0);
  });

  it("runs init containers one at a time, in order, before the app containers", async () => {
    const p = pod({
      initContainers: [
        { name: "init1", image: "localhost/busybox:1", command: ["sleep", "1"] },
        { name: "init2", image: "localhost/busybox:1", command: ["sleep", "1"] },
      ],
    });
    const r1 = await syncOnce(cri, p, opts());
    expect(actionsOf(r1)).toEqual([expect.stringMatching(/^CreatePodSandbox/), "InitContainer:init1:ok"]);
    expect((await syncOnce(cri, p, opts())).steps).toEqual([]); // init1 still running
    fake.runtime.exit(running(p.metadata.uid)[0]!.id, 0);
    expect(actionsOf(await syncOnce(cri, p, opts()))).toEqual(["InitContainer:init2:ok"]);
    fake.runtime.exit(running(p.metadata.uid)[0]!.id, 0);
    expect(actionsOf(await syncOnce(cri, p, opts()))).toEqual(["StartContainer:main:ok"]);
    expect((await syncOnce(cri, p, opts())).steps).toEqual([]);
  });

  it("a failed init container is restarted under Always/OnFailure and kills the pod under Never", async () => {
    const p = pod({ initContainers: [{ name: "init", image: "localhost/busybox:1", command: ["false"] }] });
    await syncOnce(cri, p, opts());
    const r = await syncOnce(cri, p, opts());
    expect(actionsOf(r)).toEqual(["InitContainer:init:ok"]); // first restart has no back-off
    const q = pod({
      restartPolicy: "Never",
      initContainers: [{ name: "init", image: "localhost/busybox:1", command: ["false"] }],
    });
    await syncOnce(cri, q, opts());
    const r2 = await syncOnce(cri, q, opts());
    expect(r2.actions.killPod).toBe(true);
    expect(r2.actions.initContainersToStart).toEqual([]);
  });

  it("imagePullPolicy: Never with a missing image is ErrImageNeverPull; a failing pull is ErrImagePull then ImagePullBackOff", async () => {
    const p = pod({ containers: [{ name: "main", image: "example.com/missing:1", imagePullPolicy: "Never" }] });
    const r = await syncOnce(cri, p, opts());
    expect(r.ok).toBe(false);
    expect(actionsOf(r).at(-1)).toBe("StartContainer:main:ErrImageNeverPull");

    const o = opts();
    const q = pod({ containers: [{ name: "main", image: "example.com/missing:1" }] });
    const r1 = await syncOnce(cri, q, o);
    expect(actionsOf(r1).at(-1)).toBe("StartContainer:main:ErrImagePull");
    expect(r1.steps.at(-1)!.grpcCode).toBe("UNKNOWN");
    const pulls = fake.runtime.calls.get("PullImage");
    const r2 = await syncOnce(cri, q, o);
    expect(actionsOf(r2).at(-1)).toBe("StartContainer:main:ImagePullBackOff");
    expect(fake.runtime.calls.get("PullImage")).toBe(pulls);
  });

  it("kubelet's Pulling event is there while the pull runs, and recorded once (recordingEvents leaves the steps' out)", async () => {
    fake.runtime.pullable.add("registry.example.com/slow:1");
    fake.runtime.fault("PullImage", { kind: "hang", ms: 400, times: 1 });
    const recorder = new EventRecorder(new RvClock(1), "n1");
    const rt = recordingEvents(
      createPodRuntime(cri, { ...opts(), onPulling: (p, c, i) => recorder.pulling(p, c, i) }),
      recorder,
    );
    const p = Pod.parse(
      pod({
        containers: [
          { name: "main", image: "registry.example.com/slow:1", imagePullPolicy: "Always", command: ["sleep", "1d"] },
        ],
      }),
    );
    const done = rt.sync(p);
    await new Promise((r) => setTimeout(r, 200));
    expect(recorder.hub.list().map((e) => `${e.reason} ${e.involvedObject.fieldPath}: ${e.message}`)).toEqual([
      'Pulling spec.containers{main}: Pulling image "registry.example.com/slow:1"',
    ]);
    expect((await done).ok).toBe(true);
    const after = recorder.hub.list().map((e) => `${e.reason} x${e.count}`);
    expect(after).toEqual(["Pulling x1", "Pulled x1", "Created x1", "Started x1"]);
    await createPodRuntime(cri).delete(p.metadata.uid, 0);
  });

  it("pulls with the inline pull secret for the image's registry", async () => {
    fake.runtime.pullable.add("registry.example.com/app:2");
    const p = pod({
      containers: [{ name: "main", image: "registry.example.com/app:2", imagePullPolicy: "Always" }],
      imagePullSecrets: [
        {
          auths: {
            "other.example.com": { username: "x", password: "y" },
            "https://registry.example.com": { auth: btoa("alice:s3cret") },
          },
        },
      ],
    });
    const r = await syncOnce(cri, p, opts());
    expect(r.ok).toBe(true);
    // No serverAddress (kubelet's keyring sends none; containerd would parse "registry.example.com" as a URL path and drop the credentials).
    expect(fake.runtime.pullAuth.at(-1)).toMatchObject({ username: "alice", password: "s3cret", serverAddress: "" });
  });

  it("runAsNonRoot: refused for an image that runs as root (CreateContainerConfigError), allowed with a non-root runAsUser", async () => {
    const nonRoot = (sc: Record<string, unknown>) =>
      pod({
        containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"], securityContext: sc }],
      });
    const r = await syncOnce(cri, nonRoot({ runAsNonRoot: true }), opts());
    expect(r.steps.at(-1)).toMatchObject({
      action: "StartContainer",
      ok: false,
      error: "CreateContainerConfigError",
      message: expect.stringMatching(/^container has runAsNonRoot and image will run as root/),
    });
    const r0 = await syncOnce(cri, nonRoot({ runAsNonRoot: true, runAsUser: 0 }), opts());
    expect(r0.steps.at(-1)!.message).toMatch(/^container's runAsUser breaks non-root policy/);
    const ok = await syncOnce(cri, nonRoot({ runAsNonRoot: true, runAsUser: 1000 }), opts());
    expect(ok.ok).toBe(true);
  });

  it("pull-secret credentials never appear in step messages, even when the runtime echoes them", async () => {
    const p = pod({
      containers: [{ name: "main", image: "registry.example.com/private:1", imagePullPolicy: "Always" }],
      imagePullSecrets: [{ auths: { "registry.example.com": { username: "bob", password: "hunter2-secret" } } }],
    });
    const r = await syncOnce(cri, p, opts());
    expect(r.steps.at(-1)!.error).toBe("ErrImagePull");
    expect(r.steps.at(-1)!.message).toContain("password [redacted]");
    expect(JSON.stringify(r, (_, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain("hunter2-secret");
  });

  it("expands $(VAR) in env, command and args like kubelet", async () => {
    const p = pod({
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          command: ["echo", "$(GREETING)", "$$(GREETING)", "$(NOPE)"],
          env: [
            { name: "WHO", value: "node" },
            { name: "GREETING", value: "hello $(WHO)" },
          ],
        },
      ],
    });
    await syncOnce(cri, p, opts());
    const c = [...fake.runtime.containers.values()].find(
      (c) => c.config.labels["io.kubernetes.pod.uid"] === p.metadata.uid,
    )!;
    expect(c.config.command).toEqual(["echo", "hello node", "$(GREETING)", "$(NOPE)"]);
    expect(c.config.envs.map((e) => [e.key, new TextDecoder().decode(e.value)])).toEqual([
      ["WHO", "node"],
      ["GREETING", "hello node"],
    ]);
  });

  it("a new sandbox runs initialization again: old init instances are purged (kubelet purgeInitContainers)", async () => {
    const p = pod({ initContainers: [{ name: "init", image: "localhost/busybox:1", command: ["true"] }] });
    await syncOnce(cri, p, opts()); // sandbox + init (exits 0 at once)
    expect(actionsOf(await syncOnce(cri, p, opts()))).toEqual(["StartContainer:main:ok"]);
    const sb = [...fake.runtime.sandboxes.values()].find((s) => s.config.metadata?.uid === p.metadata.uid)!;
    sb.state = api.PodSandboxState.SANDBOX_NOTREADY;
    const r = await syncOnce(cri, p, opts());
    expect(actionsOf(r)).toEqual([
      "KillContainer:main:ok",
      `KillPodSandbox:${p.metadata.uid}:ok`,
      expect.stringMatching(/^KillPod:/),
      "RemoveContainer:init:ok",
      expect.stringMatching(/^CreatePodSandbox:/),
      "InitContainer:init:ok",
    ]);
    expect(actionsOf(await syncOnce(cri, p, opts()))).toEqual(["StartContainer:main:ok"]);
  });

  it("replaces a sandbox that is no longer ready: kills the pod, new sandbox with attempt+1", async () => {
    const p = pod();
    await syncOnce(cri, p, opts());
    const sb = [...fake.runtime.sandboxes.values()].find((s) => s.config.metadata?.uid === p.metadata.uid)!;
    sb.state = api.PodSandboxState.SANDBOX_NOTREADY;
    const r = await syncOnce(cri, p, opts());
    expect(r.actions).toMatchObject({ killPod: true, createSandbox: true, attempt: 1, sandboxId: sb.id });
    expect(r.ok).toBe(true);
    const status = await getPodStatus(cri, p.metadata);
    expect(status.sandboxStatuses[0]!.metadata?.attempt).toBe(1);
    expect(computePodActions(p, status)).toMatchObject({ killPod: false, createSandbox: false, containersToStart: [] });
  });
});

describe("SyncPod under runtime faults", () => {
  it("RunPodSandbox failing stops the sync with CreatePodSandboxError and its gRPC code", async () => {
    fake.runtime.fault("RunPodSandbox", { kind: "error", code: 14, message: "cni down", times: 1 });
    const p = pod();
    const r = await syncOnce(cri, p, opts());
    expect(r.ok).toBe(false);
    expect(r.steps.at(-1)).toMatchObject({
      action: "CreatePodSandbox",
      ok: false,
      error: "CreatePodSandboxError",
      grpcCode: "UNAVAILABLE",
      message: "cni down",
    });
    expect(r.steps.some((s) => s.action === "StartContainer")).toBe(false);
    expect((await syncOnce(cri, p, opts())).ok).toBe(true);
  });

  it("one container failing CreateContainer does not stop the others (step 6 goes on)", async () => {
    fake.runtime.fault("CreateContainer", { kind: "error", code: 2, message: "disk full", times: 1 });
    const p = pod({
      containers: [
        { name: "a", image: "localhost/busybox:1", command: ["sleep", "1d"] },
        { name: "b", image: "localhost/busybox:1", command: ["sleep", "1d"] },
      ],
    });
    const r = await syncOnce(cri, p, opts());
    const starts = r.steps.filter((s) => s.action === "StartContainer");
    expect(starts.map((s) => s.ok).sort()).toEqual([false, true]);
    expect(starts.find((s) => !s.ok)).toMatchObject({
      error: "CreateContainerError",
      grpcCode: "UNKNOWN",
      message: "disk full",
    });
    expect(running(p.metadata.uid)).toHaveLength(1);
    expect((await syncOnce(cri, p, opts())).ok).toBe(true);
    expect(running(p.metadata.uid)).toHaveLength(2);
  });

  it("StartContainer failing is RunContainerError; the created instance is replaced and cleaned up next time", async () => {
    fake.runtime.fault("StartContainer", { kind: "error", code: 2, message: "exec format error", times: 1 });
    const p = pod();
    const r = await syncOnce(cri, p, opts());
    expect(r.steps.at(-1)).toMatchObject({ action: "StartContainer", ok: false, error: "RunContainerError" });
    const r2 = await syncOnce(cri, p, opts());
    expect(actionsOf(r2)).toEqual(["StartContainer:main:ok", "RemoveContainer:main:ok"]);
    expect(
      [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === p.metadata.uid),
    ).toHaveLength(1);
  });

  it("KillContainer failing stops the sync before anything is started", async () => {
    const p = pod();
    await syncOnce(cri, p, opts());
    fake.runtime.fault("StopContainer", { kind: "error", code: 13, message: "shim died", times: 1 });
    const changed = pod(
      { containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "99"] }] },
      { uid: p.metadata.uid, name: p.metadata.name },
    );
    const r = await syncOnce(cri, changed, opts());
    expect(actionsOf(r)).toEqual(["KillContainer:main:KillContainerError"]);
    expect(r.steps[0]!.grpcCode).toBe("INTERNAL");
  });

  it("a call hanging past its deadline fails with DEADLINE_EXCEEDED", async () => {
    const quick = connectGrpc({ endpoint: fake.endpoint, timeoutMs: 150 });
    fake.runtime.fault("ListContainers", { kind: "hang", ms: 1000, times: 1 });
    const err = await getPodStatus(quick, { uid: "x", name: "x", namespace: "default" }).catch((e) => e);
    expect(err).toBeInstanceOf(CriError);
    expect(err).toMatchObject({ code: 4, method: "ListContainers" });
    quick.close();
  });

  it("a malformed reply from a broken peer is a clean INTERNAL error", async () => {
    fake.runtime.fault("ListPodSandbox", { kind: "garbage", times: 1 });
    const err = await getPodStatus(cri, { uid: "x", name: "x", namespace: "default" }).catch((e) => e);
    expect(err).toBeInstanceOf(CriError);
    expect(err.codeName).toBe("INTERNAL");
  });

  it("an unreachable runtime is UNAVAILABLE, and a restarted one converges on the next sync", async () => {
    const p = pod();
    await fake.stop();
    const err = await syncOnce(cri, p, opts()).catch((e) => e);
    expect(err).toBeInstanceOf(CriError);
    expect(err.codeName).toBe("UNAVAILABLE");
    await fake.restart();
    const again = connectGrpc({ endpoint: fake.endpoint, timeoutMs: 2000 });
    expect((await syncOnce(again, p, opts())).ok).toBe(true);
    expect((await syncOnce(again, p, opts())).steps).toEqual([]);
    again.close();
  });
});
