// kubectl get pods columns (printPod) and HumanDuration over generated v1.Pods.
import { describe, expect, it } from "vitest";
import { humanDuration, podRow, podTable } from "../../src/cli/print/kubectl-print.js";
import type { V1ContainerStatus, V1Pod } from "../../src/status/api-status.js";

const NOW = Date.parse("2025-06-01T12:00:00Z");
const cs = (name: string, over: Partial<V1ContainerStatus>): V1ContainerStatus => ({
  name,
  state: {},
  lastState: {},
  ready: false,
  restartCount: 0,
  image: "i",
  imageID: "",
  ...over,
});
const pod = (status: Partial<V1Pod["status"]>, inits = 0): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "web", namespace: "default", uid: "u", creationTimestamp: "2025-06-01T11:55:30Z" },
  spec: {
    containers: [{ name: "main" }],
    initContainers: inits ? [{ name: "init" }] : undefined,
  } as unknown as V1Pod["spec"],
  status: { phase: "Running", conditions: [], containerStatuses: [], qosClass: "BestEffort", ...status },
});

describe("kubectl get pods", () => {
  it("HumanDuration", () => {
    expect(
      [5_000, 119_000, 150_000, 600_000, 3 * 3600_000 + 60_000, 9 * 3600_000, 50 * 3600_000, 400 * 86400_000].map(
        humanDuration,
      ),
    ).toEqual(["5s", "119s", "2m30s", "10m", "3h1m", "9h", "2d2h", "400d"]);
  });
  it("Running and ready", () => {
    const p = pod({
      conditions: [{ type: "Ready", status: "True", lastProbeTime: null, lastTransitionTime: null }],
      containerStatuses: [cs("main", { ready: true, state: { running: { startedAt: null } } })],
    });
    expect(podRow(p, NOW)).toEqual({ name: "web", ready: "1/1", status: "Running", restarts: "0", age: "4m30s" });
  });
  it("CrashLoopBackOff with restarts and the last restart's age", () => {
    const p = pod({
      containerStatuses: [
        cs("main", {
          restartCount: 3,
          state: { waiting: { reason: "CrashLoopBackOff" } },
          lastState: {
            terminated: { exitCode: 1, reason: "Error", startedAt: null, finishedAt: "2025-06-01T11:59:50Z" },
          },
        }),
      ],
    });
    expect(podRow(p, NOW)).toMatchObject({ ready: "0/1", status: "CrashLoopBackOff", restarts: "3 (10s ago)" });
  });
  it("Init:0/1 while the init container runs; Init:CrashLoopBackOff; Error; Completed", () => {
    const running = pod(
      {
        phase: "Pending",
        initContainerStatuses: [cs("init", { state: { running: { startedAt: null } } })],
        containerStatuses: [cs("main", { state: { waiting: { reason: "PodInitializing" } } })],
      },
      1,
    );
    expect(podRow(running, NOW).status).toBe("Init:0/1");
    const looping = pod(
      {
        phase: "Pending",
        initContainerStatuses: [cs("init", { state: { waiting: { reason: "CrashLoopBackOff" } } })],
        containerStatuses: [cs("main", { state: { waiting: { reason: "PodInitializing" } } })],
      },
      1,
    );
    expect(podRow(looping, NOW).status).toBe("Init:CrashLoopBackOff");
    expect(
      podRow(
        pod({
          phase: "Failed",
          containerStatuses: [
            cs("main", { state: { terminated: { exitCode: 3, reason: "Error", startedAt: null, finishedAt: null } } }),
          ],
        }),
        NOW,
      ).status,
    ).toBe("Error");
    expect(
      podRow(
        pod({
          phase: "Succeeded",
          containerStatuses: [
            cs("main", {
              state: { terminated: { exitCode: 0, reason: "Completed", startedAt: null, finishedAt: null } },
            }),
          ],
        }),
        NOW,
      ).status,
    ).toBe("Completed");
  });
  it("the table", () => {
    const p = pod({ containerStatuses: [cs("main", { ready: true, state: { running: { startedAt: null } } })] });
    expect(podTable([p], NOW)).toBe(
      "NAME   READY   STATUS    RESTARTS   AGE\nweb    1/1     Running   0          4m30s",
    );
  });
});
