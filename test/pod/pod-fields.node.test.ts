// Pod fields a single node honours (issue #23): shareProcessNamespace, setHostnameAsFQDN, activeDeadlineSeconds
// and subPathExpr, as kubelet puts them in force; pure parts here, the effects in pod-fields.e2e.test.ts.
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { Pod } from "../../src/pod/schema.js";
import { validatePod } from "../../src/pod/validate.js";
import { generateContainerConfig, generatePodSandboxConfig } from "../../src/kuberuntime/config/config.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { expandSubPathExpr } from "../../src/container/expansion.js";
import { podActionsAt } from "../../src/kuberuntime/compute-actions.js";
import { decide, decisionHolds, syncReason } from "../../src/syncloop/decide.js";
import { generateAPIPodStatus } from "../../src/status/api-status.js";
import { hashContainer } from "../../src/container/hash.js";
import type { PodStatus } from "../../src/container/types.js";
import { containerStatus } from "../support/status.js";
import { errorsOf } from "../support/pods.js";

const node = defaultNodeConfig();
const mk = (spec: Record<string, unknown> = {}, name = "web") =>
  Pod.parse({
    metadata: { name, namespace: "ns1", uid: "u1" },
    spec: { containers: [{ name: "c", image: "busybox:1" }], ...spec },
  });

describe("shareProcessNamespace", () => {
  it("puts the containers in the pod's PID namespace (PidNamespaceForPod)", () => {
    const pod = mk({ shareProcessNamespace: true });
    expect(
      generateContainerConfig(pod, pod.spec.containers[0]!, 0, "img", node).linux!.securityContext!.namespaceOptions!
        .pid,
    ).toBe(api.NamespaceMode.POD);
    expect(generatePodSandboxConfig(pod, 0, node).linux!.securityContext!.namespaceOptions!.pid).toBe(
      api.NamespaceMode.POD,
    );
    const own = mk();
    expect(
      generateContainerConfig(own, own.spec.containers[0]!, 0, "img", node).linux!.securityContext!.namespaceOptions!
        .pid,
    ).toBe(api.NamespaceMode.CONTAINER);
  });
  it("with hostPID: the API server's error", () => {
    expect(
      errorsOf(() =>
        validatePod({
          metadata: { name: "w", uid: "u" },
          spec: { hostPID: true, shareProcessNamespace: true, containers: [{ name: "c", image: "busybox:1" }] },
        }),
      ),
    ).toEqual([
      { path: "spec.shareProcessNamespace", message: "ShareProcessNamespace and HostPID cannot both be enabled" },
    ]);
  });
});

describe("setHostnameAsFQDN", () => {
  it("the sandbox's hostname is the FQDN when the pod has a subdomain, else the hostname (GetNodenameForKernel)", () => {
    expect(
      generatePodSandboxConfig(mk({ hostname: "h", subdomain: "s", setHostnameAsFQDN: true }), 0, node).hostname,
    ).toBe("h.s.ns1.svc.cluster.local");
    expect(generatePodSandboxConfig(mk({ hostname: "h", subdomain: "s" }), 0, node).hostname).toBe("h");
    expect(generatePodSandboxConfig(mk({ hostname: "h", setHostnameAsFQDN: true }), 0, node).hostname).toBe("h");
  });
  it("an FQDN past 64 characters fails the sandbox with kubelet's message", () => {
    expect(() =>
      generatePodSandboxConfig(
        mk({ hostname: "h".repeat(40), subdomain: "s".repeat(20), setHostnameAsFQDN: true }),
        0,
        node,
      ),
    ).toThrow(/FQDN .* is too long \(64 characters is the max, 83 characters requested\)/);
  });
});

describe("subPathExpr", () => {
  const vars = new Map([
    ["POD", "web-0"],
    ["EMPTY", ""],
  ]);
  it("expands $(VAR) from the container's env", () =>
    expect(expandSubPathExpr("logs/$(POD)", vars)).toBe("logs/web-0"));
  it("refuses missing or empty variables, absolute results and '..', in kubelet's words", () => {
    expect(() => expandSubPathExpr("$(NOPE)/$(EMPTY)", vars)).toThrow("missing value for EMPTY, NOPE");
    expect(() => expandSubPathExpr("$(X)", new Map([["X", "/etc"]]))).toThrow(
      "error SubPath `/etc` must not be an absolute path",
    );
    expect(() => expandSubPathExpr("a/$(X)", new Map([["X", "../.."]]))).toThrow(
      "unable to provision SubPath `a/../..`: must not contain '..'",
    );
  });
  it("validation: exclusive with subPath, and relative", () => {
    const spec = (m: Record<string, unknown>) => ({
      metadata: { name: "w", uid: "u" },
      spec: {
        volumes: [{ name: "v", emptyDir: {} }],
        containers: [{ name: "c", image: "busybox:1", volumeMounts: [{ name: "v", mountPath: "/v", ...m }] }],
      },
    });
    expect(errorsOf(() => validatePod(spec({ subPath: "a", subPathExpr: "$(B)" })))).toEqual([
      {
        path: "spec.containers[0].volumeMounts[0].subPathExpr",
        message: "subPathExpr and subPath are mutually exclusive",
      },
    ]);
    expect(errorsOf(() => validatePod(spec({ subPathExpr: "/$(B)" })))[0]!.path).toBe(
      "spec.containers[0].volumeMounts[0].subPathExpr",
    );
  });
});

describe("activeDeadlineSeconds (kubelet's activeDeadlineHandler)", () => {
  const pod = mk({ activeDeadlineSeconds: 5 });
  const started = 1_000_000;
  const status = (): PodStatus => ({
    id: "u1",
    name: "web",
    namespace: "ns1",
    ips: ["10.0.0.2"],
    sandboxStatuses: [
      create(api.PodSandboxStatusSchema, {
        id: "sb",
        state: api.PodSandboxState.SANDBOX_READY,
        createdAt: BigInt(started) * 1_000_000n,
        metadata: { attempt: 0 },
        network: { ip: "10.0.0.2" },
      }),
    ],
    containerStatuses: [
      containerStatus("c1", "c", "running", hashContainer(pod.spec.containers[0]!), {
        createdAt: started + 100,
        startedAt: started + 200,
      }),
    ],
  });

  it("before the deadline: the usual actions, and a converged decision that holds only until the deadline", () => {
    expect(podActionsAt(pod, status(), undefined, started + 4_999).killPod).toBe(false);
    const d = decide(pod, status(), undefined, started + 1_000);
    expect(d).toEqual({ kind: "converged", until: started + 5_000 });
    expect(decisionHolds(d, started + 4_999)).toBe(true);
    expect(decisionHolds(d, started + 5_000)).toBe(false);
  });

  it("past it: kill the pod, no new sandbox, nothing started; the loop syncs at once; Failed, DeadlineExceeded", () => {
    expect(podActionsAt(pod, status(), undefined, started + 5_000)).toMatchObject({
      killPod: true,
      createSandbox: false,
      initContainersToStart: [],
      containersToStart: [],
    });
    const d = decide(pod, status(), undefined, started + 5_000);
    expect(d).toEqual({ kind: "act", why: "active deadline exceeded", dueAt: started + 5_000 });
    expect(
      syncReason(
        { fingerprint: "x", lastSyncStart: started + 100, lastSyncEnd: started + 200, retryAt: started + 60_000 },
        d,
        false,
        { now: started + 5_000, resyncIntervalMs: 60_000 },
      ),
    ).toBe("active deadline exceeded");
    const s = generateAPIPodStatus({ pod, status: status(), now: started + 5_000, runtimeName: "containerd" });
    expect(s).toMatchObject({
      phase: "Failed",
      reason: "DeadlineExceeded",
      message: "Pod was active on the node longer than the specified deadline",
    });
    // Killed: nothing of it runs any more, and a decision says so.
    const dead = status();
    dead.sandboxStatuses[0]!.state = api.PodSandboxState.SANDBOX_NOTREADY;
    dead.containerStatuses[0]!.state = "exited";
    expect(decide(pod, dead, undefined, started + 6_000)).toEqual({ kind: "converged", finished: true });
  });
});

describe("hostAliases and the kubelet-managed /etc/hosts", () => {
  it("managedHostsFileContent and nodeHostsFileContent, byte for byte", async () => {
    const { managedHostsFileContent, nodeHostsFileContent } = await import("../../src/kuberuntime/config/etc-hosts.js");
    const aliases = [{ ip: "10.1.2.3", hostnames: ["a", "b"] }];
    expect(managedHostsFileContent(["10.0.0.5"], "web", "", undefined)).toBe(
      "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n10.0.0.5\tweb\n",
    );
    expect(
      managedHostsFileContent(["10.0.0.5"], "web", "s.ns.svc.cluster.local", aliases).endsWith(
        "10.0.0.5\tweb.s.ns.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n10.1.2.3\ta\tb\n",
      ),
    ).toBe(true);
    expect(nodeHostsFileContent("127.0.0.1 localhost\n", aliases)).toBe(
      "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n\n# Entries added by HostAliases.\n10.1.2.3\ta\tb\n",
    );
  });
  it("validation: an IP and DNS subdomain hostnames", () => {
    const e = errorsOf(() =>
      validatePod({
        metadata: { name: "w", uid: "u" },
        spec: {
          hostAliases: [{ ip: "nope", hostnames: ["Bad_Name"] }],
          containers: [{ name: "c", image: "busybox:1" }],
        },
      }),
    );
    expect(e.map((x) => x.path)).toEqual(["spec.hostAliases[0].ip", "spec.hostAliases[0].hostnames[0]"]);
  });
});

describe("admission counts sidecars as kubelet's PodRequests does", () => {
  it("app containers plus sidecars, or the largest init container with the sidecars before it", async () => {
    const { podRequests } = await import("../../src/lifecycle/predicates.js");
    const r = (cpu: string) => ({ resources: { requests: { cpu } } });
    const pod = mk({
      initContainers: [
        { name: "s1", image: "busybox:1", restartPolicy: "Always", ...r("100m") },
        { name: "i1", image: "busybox:1", ...r("1") },
        { name: "s2", image: "busybox:1", restartPolicy: "Always", ...r("200m") },
      ],
      containers: [{ name: "c", image: "busybox:1", ...r("300m") }],
    });
    // Running: c + s1 + s2 = 600m; during init: i1 + s1 = 1100m.
    expect(podRequests(pod).milliCPU).toBe(1100);
  });
});
