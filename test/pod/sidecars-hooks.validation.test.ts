// Validation of sidecars (restartable init containers) and lifecycle hooks, with the API server's messages
// (pkg/apis/core/validation: validateContainers, validateInitContainers, validateLifecycle, validateHandler,
// validateSleepAction with PodLifecycleSleepActionAllowZero, on by default in v1.33).
import { describe, expect, it } from "vitest";
import { validatePod } from "../../src/pod/validate.js";
import { errorsOf } from "../support/pods.js";

const base = (spec: Record<string, unknown> = {}) => ({
  metadata: { name: "web", uid: "u-1" },
  spec: { terminationGracePeriodSeconds: 10, containers: [{ name: "c", image: "busybox:1" }], ...spec },
});
const errs = (spec: Record<string, unknown>) => errorsOf(() => validatePod(base(spec)));

describe("sidecar containers", () => {
  it("an init container with restartPolicy Always is accepted, with probes and hooks", () => {
    const pod = validatePod(
      base({
        initContainers: [
          {
            name: "proxy",
            image: "busybox:1",
            restartPolicy: "Always",
            startupProbe: { exec: { command: ["true"] } },
            readinessProbe: { exec: { command: ["true"] } },
            livenessProbe: { exec: { command: ["true"] } },
            lifecycle: { postStart: { exec: { command: ["true"] } }, preStop: { sleep: { seconds: 1 } } },
          },
        ],
      }),
    );
    expect(pod.spec.initContainers![0]!.restartPolicy).toBe("Always");
  });

  it("restartPolicy on an app container: Forbidden, with upstream's words", () => {
    expect(errs({ containers: [{ name: "c", image: "busybox:1", restartPolicy: "Always" }] })).toEqual([
      { path: "spec.containers[0].restartPolicy", message: "may not be set for non-init containers" },
    ]);
  });

  it("an init container's restartPolicy other than Always: Unsupported value", () => {
    const e = errs({ initContainers: [{ name: "i", image: "busybox:1", restartPolicy: "Never" }] });
    expect(e).toHaveLength(1);
    expect(e[0]!.path).toBe("spec.initContainers[0].restartPolicy");
    expect(e[0]!.message).toContain('Unsupported value: "Never": supported values: "Always"');
  });

  it("probes and hooks on a plain init container are still refused", () => {
    expect(
      errs({ initContainers: [{ name: "i", image: "busybox:1", readinessProbe: { exec: { command: ["true"] } } }] }),
    ).toEqual([
      {
        path: "spec.initContainers[0].readinessProbe",
        message: "may not be set for init containers without restartPolicy=Always",
      },
    ]);
    expect(
      errs({
        initContainers: [{ name: "i", image: "busybox:1", lifecycle: { preStop: { exec: { command: ["true"] } } } }],
      }),
    ).toEqual([
      {
        path: "spec.initContainers[0].lifecycle",
        message: "may not be set for init containers without restartPolicy=Always",
      },
    ]);
  });
});

describe("lifecycle hooks", () => {
  const hook = (h: unknown) => ({
    containers: [
      { name: "c", image: "busybox:1", ports: [{ name: "http", containerPort: 80 }], lifecycle: { preStop: h } },
    ],
  });

  it("exec, httpGet (defaults applied) and sleep are accepted", () => {
    for (const h of [
      { exec: { command: ["sh", "-c", "echo bye"] } },
      { httpGet: { port: "http" } },
      { sleep: { seconds: 0 } },
      { sleep: { seconds: 10 } },
    ])
      validatePod(base(hook(h)));
    expect(validatePod(base(hook({ httpGet: { port: 80 } }))).spec.containers[0]!.lifecycle!.preStop!.httpGet).toEqual({
      port: 80,
      path: "/",
      scheme: "HTTP",
    });
  });

  it("a hook with no handler, or two: upstream's messages", () => {
    expect(errs(hook({}))).toEqual([
      { path: "spec.containers[0].lifecycle.preStop", message: "must specify a handler type" },
    ]);
    expect(errs(hook({ exec: { command: ["true"] }, sleep: { seconds: 1 } }))).toEqual([
      { path: "spec.containers[0].lifecycle.preStop.sleep", message: "may not specify more than 1 handler type" },
    ]);
  });

  it("a sleep longer than the grace period, or negative: validateSleepAction", () => {
    expect(errs(hook({ sleep: { seconds: 11 } }))).toEqual([
      {
        path: "spec.containers[0].lifecycle.preStop.sleep.seconds",
        message: "must be non-negative and less than terminationGracePeriodSeconds (10)",
      },
    ]);
    expect(errs(hook({ sleep: { seconds: -1 } }))[0]!.path).toBe("spec.containers[0].lifecycle.preStop.sleep.seconds");
  });

  it("tcpSocket handlers and stopSignal are refused with the reason", () => {
    expect(errs(hook({ tcpSocket: { port: 80 } }))[0]).toMatchObject({
      path: "spec.containers[0].lifecycle.preStop.tcpSocket",
      message: expect.stringContaining("not supported as a lifecycle handler"),
    });
    const e = errs({ containers: [{ name: "c", image: "busybox:1", lifecycle: { stopSignal: "SIGUSR1" } }] });
    expect(e[0]).toMatchObject({
      path: "spec.containers[0].lifecycle.stopSignal",
      message: expect.stringContaining("containerd 1.6 ignores it"),
    });
  });

  it("a named httpGet port must be one of the container's ports", () => {
    expect(errs(hook({ httpGet: { port: "admin" } }))).toEqual([
      {
        path: "spec.containers[0].lifecycle.preStop.httpGet.port",
        message: 'port name "admin" is not one of the container\'s ports',
      },
    ]);
  });
});

describe("where the node cannot reach pods (Workers)", () => {
  it("httpGet hooks are refused like httpGet probes, naming the field; exec and sleep hooks are taken", async () => {
    const { probeHandlerErrors } = await import("../../src/pod/probes.js");
    const pod = validatePod(
      base({
        initContainers: [
          { name: "s", image: "busybox:1", restartPolicy: "Always", readinessProbe: { httpGet: { port: 80 } } },
        ],
        containers: [
          {
            name: "c",
            image: "busybox:1",
            lifecycle: { postStart: { httpGet: { port: 80 } }, preStop: { sleep: { seconds: 1 } } },
          },
        ],
      }),
    );
    expect(probeHandlerErrors(pod, ["exec"], "why").map((e) => e.path)).toEqual([
      "spec.initContainers[0].readinessProbe.httpGet",
      "spec.containers[0].lifecycle.postStart.httpGet",
    ]);
  });
});
