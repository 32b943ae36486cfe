// PODSYNC_POLICY_HOSTPORT_ALLOW: the "known list" of host ports Pod Security's baseline hostPorts check allows
// (check_hostPorts.go), parsed from the setting and honoured by the pod-level check and by cri-proxy's CRI check.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { PolicySettings, nodePolicy } from "../../src/auth/policy.js";
import { evaluatePodSecurity } from "../../src/auth/pod-security.js";
import { checkRunPodSandbox, podsyncInternalMount } from "../../src/auth/cri-policy.js";
import { generatePodSandboxConfig } from "../../src/kuberuntime/config/config.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { RunPodSandboxRequestSchema } from "../../src/gen/runtime/v1/api_pb.js";
import { validatePod } from "../../src/pod/validate.js";

const pod = (hostPorts: number[]) =>
  validatePod({
    metadata: { name: "p", uid: "u-hostport" },
    spec: {
      containers: [
        {
          name: "c",
          image: "localhost/busybox:1",
          ports: hostPorts.map((h, i) => ({ containerPort: 80 + i, hostPort: h })),
        },
      ],
    },
  });

describe("PODSYNC_POLICY_HOSTPORT_ALLOW", () => {
  it("parses ports and ranges; refuses what is not one", () => {
    expect(nodePolicy(PolicySettings.parse({ PODSYNC_POLICY_HOSTPORT_ALLOW: "8080, 30000-30010" }))).toMatchObject({
      hostPortAllow: [
        [8080, 8080],
        [30000, 30010],
      ],
    });
    expect(PolicySettings.safeParse({ PODSYNC_POLICY_HOSTPORT_ALLOW: "70000" }).success).toBe(false);
    expect(PolicySettings.safeParse({ PODSYNC_POLICY_HOSTPORT_ALLOW: "10-5" }).success).toBe(false);
    expect(nodePolicy(PolicySettings.parse({}))).not.toHaveProperty("hostPortAllow");
  });

  it("baseline admits a listed host port and still refuses one off the list, naming it", () => {
    const policy = nodePolicy(PolicySettings.parse({ PODSYNC_POLICY_HOSTPORT_ALLOW: "8080,30000-30010" }));
    expect(evaluatePodSecurity(pod([8080, 30005]), policy)).toEqual([]);
    expect(evaluatePodSecurity(pod([8080, 9090]), policy)).toEqual([
      expect.objectContaining({ rule: "hostPorts", path: "spec.containers[0].ports[1].hostPort" }),
    ]);
    // Without the list, every host port is refused at baseline, as before.
    expect(evaluatePodSecurity(pod([8080]), nodePolicy(PolicySettings.parse({})))).toHaveLength(1);
  });

  it("cri-proxy's CRI-level check honours the same list", () => {
    const p = pod([8080]);
    const node = defaultNodeConfig();
    const ctx = { isInternalMount: podsyncInternalMount(node.rootDir, p.metadata.uid), podLogsDir: node.podLogsDir };
    const req = create(RunPodSandboxRequestSchema, { config: generatePodSandboxConfig(p, 0, node) });
    const allow = nodePolicy(PolicySettings.parse({ PODSYNC_POLICY_HOSTPORT_ALLOW: "8080" }));
    expect(checkRunPodSandbox(req, allow, ctx).filter((v) => v.rule === "hostPorts")).toEqual([]);
    expect(
      checkRunPodSandbox(req, nodePolicy(PolicySettings.parse({})), ctx).filter((v) => v.rule === "hostPorts"),
    ).toHaveLength(1);
  });
});
