// Sidecars and lifecycle hooks on a REAL containerd, through the HTTP server with the node agent's loop and
// prober running, as on a node. Each effect is read where it happens: files the containers and their hooks
// write into a hostPath directory of the test's, and the v1 status.
import { describe, expect, inject, it } from "vitest";
import { hostDir, hostDirSuite, readIn as read, shContainer as c } from "../support/hostdir-pods.js";
import { until } from "../support/wait.js";

const skip = inject("skipE2E");
/** A process that appends its name to /h/order when it is sent SIGTERM, then exits 0. */
const stoppable = (name: string, extra: Record<string, unknown> = {}) =>
  c(name, `trap 'echo ${name} >> /h/order; exit 0' TERM; while true; do sleep 1; done`, extra);

describe.skipIf(skip)("sidecars and lifecycle hooks on real containerd", () => {
  const { podInput, sync, get, del } = hostDirSuite();

  it("a Job-like pod with a sidecar: the sidecar starts first and its startupProbe gates the next init container; the pod completes Succeeded and the sidecar is stopped", async () => {
    const dir = hostDir();
    const p = podInput("job", dir, {
      restartPolicy: "Never",
      // sh as PID 1 ignores SIGTERM: the sidecar is killed when the grace ends.
      terminationGracePeriodSeconds: 2,
      initContainers: [
        c("proxy", "echo up > /h/proxy; while true; do sleep 1; done", {
          restartPolicy: "Always",
          startupProbe: { exec: { command: ["cat", "/h/proxy"] }, periodSeconds: 1 },
        }),
        // Fails (and so fails the pod: Never) unless the sidecar had started before it.
        c("init", "cat /h/proxy > /h/init-saw"),
      ],
      containers: [c("work", "cat /h/init-saw && sleep 1")],
    });
    await sync(p);
    const done = await until(
      "the pod to complete",
      async () => {
        const s = (await get(p.metadata.uid)).status;
        return s.phase === "Succeeded" && s.initContainerStatuses?.[0]?.state.terminated ? s : undefined;
      },
      50_000,
    );
    expect(read(dir, "init-saw")).toBe("up\n");
    expect(done.containerStatuses[0]!.state.terminated!.exitCode).toBe(0);
    // The sidecar was stopped after the regular container finished, not left running.
    expect(done.initContainerStatuses![0]!.name).toBe("proxy");
    expect(done.initContainerStatuses![1]!.state.terminated!.exitCode).toBe(0);
  }, 60_000);

  it("a sidecar that exits is restarted under restartPolicy Always; status lists it with started, ready and restartCount; DELETE stops the app container first, then the sidecars in reverse order, after preStop", async () => {
    const dir = hostDir();
    const p = podInput("svc", dir, {
      restartPolicy: "Always",
      initContainers: [
        stoppable("sc1", { restartPolicy: "Always" }),
        // Exits 3 the first time it runs, then stays up.
        c(
          "sc2",
          `trap 'echo sc2 >> /h/order; exit 0' TERM; if [ ! -f /h/sc2-ran ]; then echo > /h/sc2-ran; exit 3; fi; while true; do sleep 1; done`,
          { restartPolicy: "Always", readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 } },
        ),
      ],
      containers: [
        stoppable("main", {
          lifecycle: { preStop: { exec: { command: ["sh", "-c", "echo main-prestop >> /h/order"] } } },
        }),
      ],
    });
    await sync(p);
    const s = await until("the sidecar to be restarted and ready", async () => {
      const st = (await get(p.metadata.uid)).status;
      const sc2 = st.initContainerStatuses?.find((x) => x.name === "sc2");
      return sc2 && sc2.restartCount >= 1 && sc2.ready && st.containerStatuses[0]!.state.running ? st : undefined;
    });
    expect(s.phase).toBe("Running");
    expect(s.initContainerStatuses!.map((x) => [x.name, x.started, x.state.running !== undefined])).toEqual([
      ["sc1", true, true],
      ["sc2", true, true],
    ]);
    expect(s.conditions.find((x) => x.type === "Ready")!.status).toBe("True");

    await del(p.metadata.uid);
    expect(read(dir, "order")).toBe("main-prestop\nmain\nsc2\nsc1\n");
  });

  it("postStart runs before the next container starts; preStop runs before the stop signal, and a preStop sleep delays it", async () => {
    const dir = hostDir();
    const p = podInput("hooks", dir, {
      containers: [
        stoppable("a", {
          lifecycle: { postStart: { exec: { command: ["sh", "-c", "sleep 1; echo a-poststart > /h/poststart"] } } },
        }),
        c(
          "b",
          "cat /h/poststart > /h/b-saw; trap 'busybox date +%s > /h/b-term; exit 0' TERM; while true; do sleep 1; done",
          { lifecycle: { preStop: { sleep: { seconds: 2 } } } },
        ),
      ],
    });
    const r = await sync(p);
    expect(r.steps.filter((s) => s.action === "StartContainer").map((s) => [s.target, s.ok])).toEqual([
      ["a", true],
      ["b", true],
    ]);
    await until("b to have read a's postStart marker", async () => read(dir, "b-saw"));
    expect(read(dir, "b-saw")).toBe("a-poststart\n");

    const before = Math.floor(Date.now() / 1000);
    const d = await del(p.metadata.uid);
    // The sleep hook ran first: b got SIGTERM at least 2 s after the DELETE began (the issue asks for the sleep).
    expect(Number(read(dir, "b-term"))).toBeGreaterThanOrEqual(before + 2);
    expect(d.steps.find((s) => s.action === "KillContainer" && s.target === "b")!.message).toMatch(
      /preStop hook completed/,
    );
  });

  it("a failing postStart kills the container: PostStartHookError, and it is not restarted under restartPolicy Never", async () => {
    const dir = hostDir();
    const p = podInput("badhook", dir, {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 2,
      containers: [
        c("main", "while true; do sleep 1; done", {
          lifecycle: { postStart: { exec: { command: ["sh", "-c", "exit 7"] } } },
        }),
      ],
    });
    const r = await sync(p);
    const step = r.steps.find((s) => s.action === "StartContainer")!;
    expect(step).toMatchObject({ ok: false, error: "PostStartHookError" });
    expect(step.message).toMatch(
      /^Exec lifecycle hook \(\[sh -c exit 7\]\) for Container "main" in Pod "badhook_default\(.*\)" failed - error: command 'sh -c exit 7' exited with 7/,
    );
    const s = await until("the pod to fail", async () => {
      const st = (await get(p.metadata.uid)).status;
      return st.phase === "Failed" ? st : undefined;
    });
    expect(s.containerStatuses[0]!.state.terminated).toBeDefined();
    expect(s.containerStatuses[0]!.restartCount).toBe(0);
  });
});
