// Security context and volumes (issue 13 items 4 and 5): the CRI configs built from each field, the
// refusals (field + reason), kubelet's sysctl and AppArmor admission, volume set-up through a recording
// VolumeHost, and the sync/delete/claim paths on the in-process runtime.
import { beforeAll, describe, expect, it } from "vitest";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { Pod, type PodInput } from "../../src/pod/schema.js";
import { fieldErrors } from "../../src/pod/validate.js";
import { generateContainerConfig, generatePodSandboxConfig } from "../../src/kuberuntime/config/config.js";
import { defaultNodeConfig, type NodeConfig } from "../../src/container/node-config.js";
import { admitOnNode, sysctlDots, unsafeSysctlPatternError } from "../../src/lifecycle/node-admission.js";
import {
  HostPathTypeError,
  setUpVolumes,
  tmpfsSize,
  volumeHostErrors,
  type HostPathType,
  type VolumeHost,
} from "../../src/volumemanager/volumes.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import type { CriClient } from "../../src/cri/client.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { InvalidPodError } from "../../src/pod/validate.js";
import { PodAdmissionError } from "../../src/lifecycle/node-admission.js";
import { ClaimInUseError } from "../../src/volumemanager/claims.js";
import { toProblemError } from "../../src/usecases/problems.js";
import { Settings } from "../../src/settings/node.js";
import type { FakeServer } from "../support/fake-cri.js";
import { pod as fixture } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const node: NodeConfig = { ...defaultNodeConfig(), rootDir: "/var/lib/podsync" };
const mk = (spec: Partial<PodInput["spec"]> = {}) =>
  Pod.parse({
    metadata: { name: "web", uid: "uid-1" },
    spec: { containers: [{ name: "main", image: "x:1" }], ...spec },
  });
const errorsOf = (input: unknown) => {
  const r = Pod.safeParse(input);
  return r.success ? [] : fieldErrors(r.error).map((e) => `${e.path}: ${e.message}`);
};
const withSpec = (spec: Record<string, unknown>) => ({
  metadata: { name: "web", uid: "uid-1" },
  spec: { containers: [{ name: "main", image: "x:1" }], ...spec },
});
const ctr = (sc: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  withSpec({ containers: [{ name: "main", image: "x:1", securityContext: sc, ...extra }] });
const P = api.SecurityProfile_ProfileType;

describe("seccompProfile", () => {
  const sec = (p: Pod, n = node) =>
    generateContainerConfig(p, p.spec.containers[0]!, 0, "sha256:x", n).linux!.securityContext!.seccomp;
  it("no profile: RuntimeDefault from the node default; nothing when the default is off (kubelet sends Unconfined)", () => {
    expect(sec(mk())).toMatchObject({ profileType: P.RuntimeDefault });
    expect(generatePodSandboxConfig(mk(), 0, node).linux!.securityContext!.seccomp).toMatchObject({
      profileType: P.RuntimeDefault,
    });
    expect(sec(mk(), { ...node, seccompDefault: false })).toBeUndefined();
    expect(
      generatePodSandboxConfig(mk(), 0, { ...node, seccompDefault: false }).linux!.securityContext!.seccomp,
    ).toBeUndefined();
  });
  it("the container's field wins over the pod's; Localhost resolves under <rootDir>/seccomp; Unconfined is sent as asked", () => {
    const p = mk({
      securityContext: { seccompProfile: { type: "Unconfined" } },
      containers: [
        {
          name: "main",
          image: "x:1",
          securityContext: { seccompProfile: { type: "Localhost", localhostProfile: "profiles/audit.json" } },
        },
        { name: "b", image: "x:1" },
      ],
    });
    expect(sec(p)).toMatchObject({
      profileType: P.Localhost,
      localhostRef: "/var/lib/podsync/seccomp/profiles/audit.json",
    });
    expect(
      generateContainerConfig(p, p.spec.containers[1]!, 0, "x", node).linux!.securityContext!.seccomp,
    ).toMatchObject({ profileType: P.Unconfined });
    expect(generatePodSandboxConfig(p, 0, node).linux!.securityContext!.seccomp).toMatchObject({
      profileType: P.Unconfined,
    });
  });
  it("refuses a Localhost profile without a path, a path that escapes, and localhostProfile on another type", () => {
    expect(errorsOf(ctr({ seccompProfile: { type: "Localhost" } }))).toEqual([
      'spec.containers[0].securityContext.seccompProfile.localhostProfile: seccompProfile.localhostProfile must be set when type is "Localhost"',
    ]);
    expect(errorsOf(ctr({ seccompProfile: { type: "Localhost", localhostProfile: "../x" } }))[0]).toMatch(
      /localhostProfile: must be a relative path without '\.\.'/,
    );
    expect(errorsOf(ctr({ seccompProfile: { type: "RuntimeDefault", localhostProfile: "x" } }))).toEqual([
      'spec.containers[0].securityContext.seccompProfile.localhostProfile: can only be set if seccompProfile.type is "Localhost"',
    ]);
    expect(errorsOf(ctr({ seccompProfile: { type: "Default" } }))[0]).toMatch(
      /seccompProfile.type: seccompProfile.type must be one of "RuntimeDefault", "Localhost", "Unconfined"/,
    );
  });
});

describe("appArmorProfile, seLinuxOptions, procMount", () => {
  it("AppArmor: the field and kubelet's deprecated string; the container's over the pod's; none is left to the runtime", () => {
    const p = mk({
      securityContext: { appArmorProfile: { type: "RuntimeDefault" } },
      containers: [
        {
          name: "main",
          image: "x:1",
          securityContext: { appArmorProfile: { type: "Localhost", localhostProfile: "k8s-nginx" } },
        },
        { name: "b", image: "x:1" },
      ],
    });
    const a = generateContainerConfig(p, p.spec.containers[0]!, 0, "x", node).linux!.securityContext!;
    expect([a.apparmor?.profileType, a.apparmor?.localhostRef, a.apparmorProfile]).toEqual([
      P.Localhost,
      "k8s-nginx",
      "localhost/k8s-nginx",
    ]);
    const b = generateContainerConfig(p, p.spec.containers[1]!, 0, "x", node).linux!.securityContext!;
    expect([b.apparmor?.profileType, b.apparmorProfile]).toEqual([P.RuntimeDefault, "runtime/default"]);
    const none = generateContainerConfig(mk(), mk().spec.containers[0]!, 0, "x", node).linux!.securityContext!;
    expect([none.apparmor, none.apparmorProfile]).toEqual([undefined, ""]);
  });
  it("SELinux: container options, else the pod's, on containers; the pod's on the sandbox", () => {
    const p = mk({
      securityContext: { seLinuxOptions: { level: "s0:c1,c2" } },
      containers: [
        { name: "main", image: "x:1", securityContext: { seLinuxOptions: { type: "container_t" } } },
        { name: "b", image: "x:1" },
      ],
    });
    expect(
      generateContainerConfig(p, p.spec.containers[0]!, 0, "x", node).linux!.securityContext!.selinuxOptions,
    ).toMatchObject({ type: "container_t", level: "" });
    expect(
      generateContainerConfig(p, p.spec.containers[1]!, 0, "x", node).linux!.securityContext!.selinuxOptions,
    ).toMatchObject({ level: "s0:c1,c2" });
    expect(generatePodSandboxConfig(p, 0, node).linux!.securityContext!.selinuxOptions).toMatchObject({
      level: "s0:c1,c2",
    });
  });
  it("procMount Default keeps the masked paths; Unmasked is refused with kubelet's validation reason", () => {
    const p = Pod.parse(ctr({ procMount: "Default" }));
    expect(
      generateContainerConfig(p, p.spec.containers[0]!, 0, "x", node).linux!.securityContext!.maskedPaths,
    ).toContain("/proc/kcore");
    expect(errorsOf(ctr({ procMount: "Unmasked" }))).toEqual([
      "spec.containers[0].securityContext.procMount: `hostUsers` must be false to use `Unmasked` (kubelet's validation), and podsync runs no pod in a user namespace: use Default",
    ]);
  });
});

describe("capabilities", () => {
  it("any case, with or without CAP_, is sent in the form containerd reads; the pod keeps the names as written", () => {
    const p = Pod.parse(ctr({ capabilities: { drop: ["all"], add: ["net_admin", "CAP_SYS_TIME", "Chown"] } }));
    expect(p.spec.containers[0]!.securityContext!.capabilities).toEqual({
      drop: ["all"],
      add: ["net_admin", "CAP_SYS_TIME", "Chown"],
    });
    const caps = generateContainerConfig(p, p.spec.containers[0]!, 0, "x", node).linux!.securityContext!.capabilities!;
    expect([caps.dropCapabilities, caps.addCapabilities]).toEqual([["ALL"], ["NET_ADMIN", "SYS_TIME", "CHOWN"]]);
  });
  it("a name that is not a capability is refused, naming the field", () => {
    expect(errorsOf(ctr({ capabilities: { add: ["NET_ADMN"] } }))).toEqual([
      "spec.containers[0].securityContext.capabilities.add[0]: not a Linux capability: use a name from capabilities(7) such as NET_ADMIN (any case, CAP_ prefix optional) or ALL",
    ]);
  });
});

describe("mountPropagation", () => {
  const vol = { volumes: [{ name: "h", hostPath: { path: "/srv/x" } }] };
  it("maps to CRI propagation (None → private)", () => {
    const p = Pod.parse(
      withSpec({
        ...vol,
        containers: [
          {
            name: "main",
            image: "x:1",
            securityContext: { privileged: true },
            volumeMounts: [
              { name: "h", mountPath: "/a" },
              { name: "h", mountPath: "/b", mountPropagation: "HostToContainer" },
              { name: "h", mountPath: "/c", mountPropagation: "Bidirectional" },
            ],
          },
        ],
      }),
    );
    expect(generateContainerConfig(p, p.spec.containers[0]!, 0, "x", node).mounts.map((m) => m.propagation)).toEqual([
      api.MountPropagation.PROPAGATION_PRIVATE,
      api.MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
      api.MountPropagation.PROPAGATION_BIDIRECTIONAL,
    ]);
  });
  it("Bidirectional only for privileged containers, as API validation says", () => {
    expect(
      errorsOf(
        withSpec({
          ...vol,
          containers: [
            {
              name: "main",
              image: "x:1",
              volumeMounts: [{ name: "h", mountPath: "/c", mountPropagation: "Bidirectional" }],
            },
          ],
        }),
      ),
    ).toEqual([
      "spec.containers[0].volumeMounts[0].mountPropagation: Bidirectional mount propagation is available only to privileged containers",
    ]);
  });
});

describe("sysctls: kubelet's admission", () => {
  const withSysctls = (names: string[], spec: Partial<PodInput["spec"]> = {}) =>
    mk({ ...spec, securityContext: { sysctls: names.map((name) => ({ name, value: "1" })) } });
  it("the safe set is admitted and sent with dots; others are SysctlForbidden naming the field", () => {
    const p = withSysctls(["net.ipv4.ip_local_port_range", "kernel/shm_rmid_forced"]);
    expect(admitOnNode(p, node)).toEqual([]);
    expect(generatePodSandboxConfig(p, 0, node).linux!.sysctls).toEqual({
      "net.ipv4.ip_local_port_range": "1",
      "kernel.shm_rmid_forced": "1",
    });
    expect(admitOnNode(withSysctls(["net.core.somaxconn", "kernel.panic"]), node)).toEqual([
      {
        reason: "SysctlForbidden",
        message: 'forbidden sysctl: "net.core.somaxconn" not allowlisted',
        path: "spec.securityContext.sysctls[0].name",
      },
      {
        reason: "SysctlForbidden",
        message: 'forbidden sysctl: "kernel.panic" not allowlisted',
        path: "spec.securityContext.sysctls[1].name",
      },
    ]);
  });
  it("the owner's allow-list (names and prefix*), and no net sysctls with hostNetwork, no ipc ones with hostIPC", () => {
    const allowed = { ...node, allowedUnsafeSysctls: ["net.core.somaxconn", "kernel.msg*"] };
    expect(admitOnNode(withSysctls(["net.core.somaxconn", "kernel.msgmax"]), allowed)).toEqual([]);
    expect(
      admitOnNode(withSysctls(["net.ipv4.ip_local_port_range"], { hostNetwork: true }), node).map((f) => f.message),
    ).toEqual(['forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host net enabled']);
    expect(admitOnNode(withSysctls(["kernel.msgmax"], { hostIPC: true }), allowed).map((f) => f.message)).toEqual([
      'forbidden sysctl: "kernel.msgmax" not allowed with host ipc enabled',
    ]);
  });
  it("allow-list entries must be namespaced sysctls (kubelet refuses to start otherwise); the setting is checked at start-up", () => {
    expect(unsafeSysctlPatternError("net.core.*")).toBeUndefined();
    expect(unsafeSysctlPatternError("kernel.panic")).toMatch(/not known to be namespaced/);
    expect(
      Settings.safeParse({ PODSYNC_ALLOWED_UNSAFE_SYSCTLS: "net.core.somaxconn,vm.swappiness" }).error?.issues.map(
        (i) => i.message,
      ),
    ).toEqual([expect.stringMatching(/"vm.swappiness" is not known to be namespaced/)]);
    expect(sysctlDots("net/ipv4/conf/eno2.100/rp_filter")).toBe("net.ipv4.conf.eno2/100.rp_filter");
  });
  it("renders as 403 admission with kubelet's reason", () => {
    const p = toProblemError(new PodAdmissionError(admitOnNode(withSysctls(["kernel.panic"]), node))).toProblem();
    expect(p).toMatchObject({
      status: 403,
      type: "urn:podsync:problem:admission",
      reason: "SysctlForbidden",
      errors: [
        {
          path: "spec.securityContext.sysctls[0].name",
          message: 'SysctlForbidden: forbidden sysctl: "kernel.panic" not allowlisted',
        },
      ],
    });
  });
});

describe("AppArmor admission", () => {
  it("a profile on a host without AppArmor is refused as kubelet's validator does; Unconfined and unknown hosts pass", () => {
    const p = mk({
      containers: [
        { name: "main", image: "x:1", securityContext: { appArmorProfile: { type: "RuntimeDefault" } } },
        { name: "b", image: "x:1", securityContext: { appArmorProfile: { type: "Unconfined" } } },
      ],
    });
    expect(admitOnNode(p, { ...node, appArmorEnabled: false })).toEqual([
      {
        reason: "AppArmor",
        message: "Cannot enforce AppArmor: AppArmor is not enabled on the host",
        path: "spec.containers[0].securityContext.appArmorProfile",
      },
    ]);
    expect(admitOnNode(p, { ...node, appArmorEnabled: true })).toEqual([]);
    expect(admitOnNode(p, { ...node, appArmorEnabled: undefined })).toEqual([]);
  });
});

describe("resources kubelet cannot give without its managers", () => {
  it("extended resources and hugepages are refused, each saying why; ephemeral-storage is taken (the eviction manager holds it)", () => {
    const errs = errorsOf(
      withSpec({
        containers: [
          {
            name: "main",
            image: "x:1",
            resources: {
              limits: { "nvidia.com/gpu": 1, "ephemeral-storage": "1Gi" },
              requests: { "hugepages-2Mi": "2Mi", cpu: "1" },
            },
          },
        ],
      }),
    );
    expect(errs).toEqual([
      "spec.containers[0].resources.limits.nvidia.com/gpu: nvidia.com/gpu is an extended resource: kubelet gives these only through a device plugin (which allocates the device and adds it to the container), and podsync runs no device plugins",
      "spec.containers[0].resources.requests.hugepages-2Mi: hugepages-2Mi is refused: huge pages need the node's hugetlb accounting and kubelet's pre-allocated pool, which podsync does not manage",
    ]);
    expect(
      Pod.parse(
        withSpec({
          containers: [{ name: "main", image: "x:1", resources: { limits: { "ephemeral-storage": "1Gi" } } }],
        }),
      ).spec.containers[0]!.resources,
    ).toEqual({ limits: { "ephemeral-storage": "1Gi" } });
    expect(
      Pod.parse(
        withSpec({ containers: [{ name: "main", image: "x:1", resources: { limits: { cpu: "1", memory: "64Mi" } } }] }),
      ).spec.containers[0]!.resources,
    ).toEqual({ limits: { cpu: "1", memory: "64Mi" } });
  });
});

/** A VolumeHost that records calls; checkHostPath fails for paths in `bad`. */
function recordingHost(bad: Record<string, string> = {}) {
  const calls: string[] = [];
  const mounted = new Set<string>();
  const host: VolumeHost = {
    async checkHostPath(path: string, type: HostPathType) {
      calls.push(`check ${type} ${path}`);
      if (bad[path]) throw new HostPathTypeError(`hostPath type check failed: ${path} is not ${bad[path]}`);
    },
    async ensureDir(path, mode) {
      calls.push(`mkdir ${mode.toString(8)} ${path}`);
    },
    async mountTmpfs(path, size) {
      calls.push(`tmpfs ${size} ${path}`);
      mounted.add(path);
    },
    async setOwnership(path, gid, readOnly) {
      calls.push(`own ${gid}${readOnly ? " ro" : ""} ${path}`);
    },
    async listDirs(dir) {
      // <root>/volumes/pvc holds one directory per namespace (and podsync's dot-directories), each its claims.
      return dir.endsWith("/pvc") ? ["default", ".unassigned"] : dir.endsWith("/pvc/default") ? ["data", "spare"] : [];
    },
    async removeDir(path) {
      calls.push(`rm ${path}`);
    },
  };
  return { host, calls, mounted };
}

describe("volumes: schema and set-up", () => {
  it("hostPath takes every kubelet type; a disk emptyDir sizeLimit is taken (the eviction manager holds it)", () => {
    for (const type of [
      "",
      "Directory",
      "DirectoryOrCreate",
      "File",
      "FileOrCreate",
      "Socket",
      "CharDevice",
      "BlockDevice",
    ])
      expect(errorsOf(withSpec({ volumes: [{ name: "h", hostPath: { path: "/srv", type } }] }))).toEqual([]);
    expect(errorsOf(withSpec({ volumes: [{ name: "h", hostPath: { path: "/srv", type: "Dir" } }] }))[0]).toMatch(
      /hostPath.type: hostPath.type must be one of/,
    );
    expect(errorsOf(withSpec({ volumes: [{ name: "e", emptyDir: { sizeLimit: "1Gi" } }] }))).toEqual([]);
    expect(errorsOf(withSpec({ volumes: [{ name: "c", persistentVolumeClaim: { claimName: "../etc" } }] }))[0]).toMatch(
      /claimName: claimName must be a DNS-1123 subdomain/,
    );
  });

  it("set-up: typed hostPaths checked, emptyDirs 0777, Memory as a tmpfs sized by sizeLimit, claims as directories; untyped hostPaths left to the runtime", async () => {
    const p = mk({
      volumes: [
        { name: "h0", hostPath: { path: "/srv/any" } },
        { name: "h1", hostPath: { path: "/srv/dir", type: "Directory" } },
        { name: "e", emptyDir: {} },
        { name: "m", emptyDir: { medium: "Memory", sizeLimit: "64Mi" } },
        { name: "c", persistentVolumeClaim: { claimName: "data" } },
      ],
    });
    const { host, calls } = recordingHost();
    expect(await setUpVolumes(host, p, node)).toBe("volumes ready: h1, e, m, c");
    expect(calls).toEqual([
      "check Directory /srv/dir",
      "mkdir 777 /var/lib/podsync/pods/uid-1/volumes/kubernetes.io~empty-dir/e",
      "mkdir 777 /var/lib/podsync/pods/uid-1/volumes/kubernetes.io~empty-dir/m",
      `tmpfs ${64 * 2 ** 20} /var/lib/podsync/pods/uid-1/volumes/kubernetes.io~empty-dir/m`,
      "mkdir 777 /var/lib/podsync/volumes/pvc/default/data",
    ]);
  });

  it("fsGroup: emptyDirs and claims get kubelet's volume ownership when the pod starts (not on a container restart); hostPaths never", async () => {
    const p = mk({
      securityContext: { fsGroup: 2000 },
      volumes: [
        { name: "h", hostPath: { path: "/srv/h", type: "Directory" } },
        { name: "e", emptyDir: {} },
        { name: "c", persistentVolumeClaim: { claimName: "data", readOnly: true } },
      ],
    });
    const { host, calls } = recordingHost();
    await setUpVolumes(host, p, node, true);
    expect(calls.filter((c) => c.startsWith("own"))).toEqual([
      "own 2000 /var/lib/podsync/pods/uid-1/volumes/kubernetes.io~empty-dir/e",
      "own 2000 ro /var/lib/podsync/volumes/pvc/default/data",
    ]);
    const again = recordingHost();
    await setUpVolumes(again.host, p, node, false);
    expect(again.calls.filter((c) => c.startsWith("own"))).toEqual([]);
  });

  it("a tmpfs without sizeLimit is the node's memory, lowered to the pod's memory limit (kubelet's calculateEmptyDirMemorySize)", () => {
    const vol = [{ name: "m", emptyDir: { medium: "Memory" as const } }];
    expect(tmpfsSize(mk({ volumes: vol }), undefined, node)).toBe(node.memoryCapacity);
    const limited = mk({
      volumes: vol,
      containers: [
        { name: "a", image: "x:1", resources: { limits: { memory: "100Mi" } } },
        { name: "b", image: "x:1", resources: { limits: { memory: "28Mi" } } },
      ],
    });
    expect(tmpfsSize(limited, undefined, node)).toBe(128 * 2 ** 20);
    expect(tmpfsSize(limited, "16Mi", node)).toBe(16 * 2 ** 20);
  });

  it("mounts: a claim at its directory, readOnly from the claim or the mount", () => {
    const p = mk({
      volumes: [
        { name: "c", persistentVolumeClaim: { claimName: "data", readOnly: true } },
        { name: "d", persistentVolumeClaim: { claimName: "db" } },
      ],
      containers: [
        {
          name: "main",
          image: "x:1",
          volumeMounts: [
            { name: "c", mountPath: "/c" },
            { name: "d", mountPath: "/d" },
          ],
        },
      ],
    });
    const c = generateContainerConfig(p, p.spec.containers[0]!, 0, "x", node);
    expect(c.mounts.map((m) => [m.hostPath, m.readonly])).toEqual([
      ["/var/lib/podsync/volumes/pvc/default/data", true],
      ["/var/lib/podsync/volumes/pvc/default/db", false],
    ]);
    expect(c.annotations["io.podsync.container.claims"]).toBe("data,db");
  });

  it("without a VolumeHost (Workers) the volumes that need the node's filesystem are refused, naming the field", () => {
    const p = mk({
      volumes: [
        { name: "h", hostPath: { path: "/srv", type: "Socket" } },
        { name: "o", hostPath: { path: "/srv", type: "DirectoryOrCreate" } },
        { name: "e", emptyDir: {} },
        { name: "m", emptyDir: { medium: "Memory" } },
        { name: "c", persistentVolumeClaim: { claimName: "x" } },
      ],
    });
    expect(volumeHostErrors(p).map((e) => e.path)).toEqual([
      "spec.volumes[0].hostPath.type",
      "spec.volumes[3].emptyDir.medium",
      "spec.volumes[4].persistentVolumeClaim",
    ]);
  });

  it("without a VolumeHost an fsGroup is refused when the pod has an emptyDir (its ownership is node I/O), accepted otherwise", () => {
    const withDir = mk({ securityContext: { fsGroup: 2000 }, volumes: [{ name: "e", emptyDir: {} }] });
    expect(volumeHostErrors(withDir).map((e) => e.path)).toEqual(["spec.securityContext.fsGroup"]);
    expect(volumeHostErrors(mk({ securityContext: { fsGroup: 2000 } }))).toEqual([]);
  });
});

describe("volumes through the engine on the in-process runtime", () => {
  let fake: FakeServer;
  let cri: CriClient;
  const suite = useFakeCri({ timeoutMs: 2000 });
  beforeAll(() => ({ fake, cri } = suite));

  it("a failed hostPath check is a FailedMount step in kubelet's words, and nothing is created", async () => {
    const { host } = recordingHost({ "/srv/file": "a directory" });
    const p = fixture({
      volumes: [{ name: "h", hostPath: { path: "/srv/file", type: "Directory" } }],
      containers: [{ name: "main", image: "localhost/busybox:1", volumeMounts: [{ name: "h", mountPath: "/h" }] }],
    });
    fake.runtime.resetCalls();
    const r = await createPodRuntime(cri, { volumeHost: host, pullBackOff: new MemoryPullBackOff() }).sync(p);
    expect(r.ok).toBe(false);
    expect(r.steps.map((s) => [s.action, s.error, s.message])).toEqual([
      [
        "MountVolumes",
        "FailedMount",
        'MountVolume.SetUp failed for volume "h" : hostPath type check failed: /srv/file is not a directory',
      ],
    ]);
    expect(fake.runtime.calls.get("RunPodSandbox") ?? 0).toBe(0);
    expect(fake.runtime.calls.get("CreateContainer") ?? 0).toBe(0);
  });

  it("a tmpfs emptyDir is mounted before the sandbox, not again once converged, and goes with the pod dir on DELETE", async () => {
    const { host, mounted } = recordingHost();
    // DELETE's pod-dir removal unmounts what is mounted under the pod dir (src/host/volumes/pod-dirs.ts).
    const removed: string[] = [];
    const podDirs = {
      removeTree: async (dir: string) =>
        void (removed.push(dir), [...mounted].filter((p) => p.startsWith(`${dir}/`)).forEach((p) => mounted.delete(p))),
      bindSubPath: async () => undefined,
    };
    const rt = createPodRuntime(cri, { volumeHost: host, podDirs, pullBackOff: new MemoryPullBackOff() });
    const p = fixture({
      volumes: [{ name: "m", emptyDir: { medium: "Memory", sizeLimit: "8Mi" } }],
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          command: ["sleep", "1d"],
          volumeMounts: [{ name: "m", mountPath: "/m" }],
        },
      ],
    });
    const r = await rt.sync(p);
    expect(r.steps.map((s) => `${s.action}:${s.ok}`)).toEqual([
      "MountVolumes:true",
      "CreatePodSandbox:true",
      "StartContainer:true",
    ]);
    expect(mounted.size).toBe(1);
    // Converged: no step at all, the volume is not touched again.
    expect((await rt.sync(p)).steps).toEqual([]);
    const d = await rt.delete(p.metadata.uid);
    expect(d.steps.map((s) => `${s.action}:${s.ok}`)).toContain("RemovePodDirs:true");
    expect(removed).toContain(`/var/lib/podsync/pods/${p.metadata.uid}`);
    expect(mounted.size).toBe(0);
  });

  it("without a VolumeHost, a sync that needs one is refused before any runtime call; admission likewise", async () => {
    const rt = createPodRuntime(cri, { pullBackOff: new MemoryPullBackOff() });
    fake.runtime.resetCalls();
    await expect(
      rt.sync(fixture({ volumes: [{ name: "c", persistentVolumeClaim: { claimName: "x" } }] })),
    ).rejects.toBeInstanceOf(InvalidPodError);
    await expect(
      rt.plan(fixture({ securityContext: { sysctls: [{ name: "kernel.panic", value: "1" }] } })),
    ).rejects.toBeInstanceOf(PodAdmissionError);
    expect([...fake.runtime.calls.values()].reduce((a, b) => a + b, 0)).toBe(0);
  });

  it("claims: listed with the pods whose containers mount them; removal refused while one does, allowed after its DELETE", async () => {
    const { host, calls } = recordingHost();
    const rt = createPodRuntime(cri, { volumeHost: host, pullBackOff: new MemoryPullBackOff() });
    const p = fixture({
      volumes: [{ name: "c", persistentVolumeClaim: { claimName: "data" } }],
      containers: [
        {
          name: "main",
          image: "localhost/busybox:1",
          command: ["sleep", "1d"],
          volumeMounts: [{ name: "c", mountPath: "/data" }],
        },
      ],
    });
    expect((await rt.sync(p)).ok).toBe(true);
    const listed = (await rt.claims()).claims;
    expect(listed).toEqual([
      {
        namespace: "default",
        name: "data",
        path: "/var/lib/podsync/volumes/pvc/default/data",
        usedBy: [{ uid: p.metadata.uid, name: p.metadata.name, namespace: "default" }],
      },
      { namespace: "default", name: "spare", path: "/var/lib/podsync/volumes/pvc/default/spare", usedBy: [] },
    ]);
    await expect(rt.removeClaim("default", "data")).rejects.toBeInstanceOf(ClaimInUseError);
    // A desired pod naming the claim holds it too, with no container.
    await expect(
      rt.removeClaim("default", "spare", [
        fixture({ volumes: [{ name: "s", persistentVolumeClaim: { claimName: "spare" } }] }),
      ]),
    ).rejects.toThrow(/volume "default\/spare" is used by pod default\//);
    // A pod of another namespace naming a claim of the same name does not hold this one.
    await expect(
      rt.removeClaim("default", "spare", [
        fixture({ volumes: [{ name: "s", persistentVolumeClaim: { claimName: "spare" } }] }, { namespace: "other" }),
      ]),
    ).resolves.toBeDefined();
    await expect(rt.removeClaim("other", "data")).rejects.toThrow(/no volume "data" in namespace "other"/);
    await rt.delete(p.metadata.uid);
    await rt.removeClaim("default", "data");
    expect(calls).toContain("rm /var/lib/podsync/volumes/pvc/default/data");
    expect(toProblemError(new ClaimInUseError("x", [])).status).toBe(409);
  });
});

describe("nodeVolumeHost: kubelet's checkType on this machine's filesystem", () => {
  it("each type against a directory, a file, a socket and a character device; the *OrCreate types create with kubelet's modes", async () => {
    const { mkdtempSync, writeFileSync, statSync, rmSync } = await import("node:fs");
    const { createServer } = await import("node:net");
    const { tmpdir } = await import("node:os");
    const { nodeVolumeHost } = await import("../../src/host/volumes/volume-host.js");
    const dir = mkdtempSync(`${tmpdir()}/podsync-hostpath-`);
    const file = `${dir}/file`;
    writeFileSync(file, "x");
    const sock = `${dir}/sock`;
    const server = createServer();
    await new Promise<void>((res) => server.listen(sock, res));
    try {
      const verdict = async (path: string, type: HostPathType) =>
        nodeVolumeHost.checkHostPath(path, type).then(
          () => "ok",
          (e: Error) => e.message,
        );
      expect(await verdict(dir, "Directory")).toBe("ok");
      expect(await verdict(file, "Directory")).toBe(`hostPath type check failed: ${file} is not a directory`);
      expect(await verdict(`${dir}/missing`, "Directory")).toBe(
        `hostPath type check failed: ${dir}/missing is not a directory`,
      );
      expect(await verdict(file, "File")).toBe("ok");
      expect(await verdict(dir, "File")).toBe(`hostPath type check failed: ${dir} is not a file`);
      expect(await verdict(sock, "Socket")).toBe("ok");
      expect(await verdict(file, "Socket")).toBe(`hostPath type check failed: ${file} is not a socket file`);
      expect(await verdict("/dev/null", "CharDevice")).toBe("ok");
      expect(await verdict(file, "CharDevice")).toBe(`hostPath type check failed: ${file} is not a character device`);
      expect(await verdict("/dev/null", "BlockDevice")).toBe(
        "hostPath type check failed: /dev/null is not a block device",
      );
      expect(await verdict(file, "DirectoryOrCreate")).toBe(`hostPath type check failed: ${file} is not a directory`);
      expect(await verdict(`${dir}/made/deep`, "DirectoryOrCreate")).toBe("ok");
      expect(statSync(`${dir}/made/deep`).mode & 0o777).toBe(0o755);
      expect(await verdict(dir, "FileOrCreate")).toBe(`hostPath type check failed: ${dir} is not a file`);
      expect(await verdict(`${dir}/p/q/new`, "FileOrCreate")).toBe("ok");
      expect([statSync(`${dir}/p/q/new`).isFile(), statSync(`${dir}/p/q/new`).mode & 0o777]).toEqual([true, 0o644]);
      // SetVolumeOwnership: group and group bits, setgid on directories.
      await nodeVolumeHost.setOwnership(`${dir}/p`, 2000, false);
      expect([
        statSync(`${dir}/p/q`).gid,
        statSync(`${dir}/p/q`).mode & 0o2070,
        statSync(`${dir}/p/q/new`).gid,
        statSync(`${dir}/p/q/new`).mode & 0o777,
      ]).toEqual([2000, 0o2070, 2000, 0o664]);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
