// Pod Security Standards checks: upstream's *_test.go cases (kubernetes/kubernetes
// staging/src/k8s.io/pod-security-admission/policy/), with the field paths podsync reports.
import { describe, expect, it } from "vitest";
import * as C from "../../src/auth/pod-security-checks.js";
import type { CheckFn, ContainerLike, PodLike } from "../../src/auth/pod-security-checks.js";
import { checkContext, evaluatePodSecurity } from "../../src/auth/pod-security.js";
import { formatViolations, type NodePolicy } from "../../src/auth/policy.js";
import { pod as schemaPod } from "../support/pods.js";

const spec = (s: PodLike["spec"], annotations?: Record<string, string>): PodLike => ({
  metadata: { annotations },
  spec: s,
});
const containers = (...cs: ContainerLike[]) => cs;
const sc = (name: string, securityContext: ContainerLike["securityContext"]): ContainerLike => ({
  name,
  securityContext,
});
const ctx = checkContext({ level: "baseline", hostPathAllow: [] });

interface Case {
  name: string;
  check: CheckFn;
  pod: PodLike;
  reason?: string;
  detail?: string;
  paths?: string[];
}

const cases: Case[] = [
  // check_hostNamespaces_test.go
  {
    name: "hostNetwork",
    check: C.hostNamespaces,
    pod: spec({ hostNetwork: true }),
    reason: "host namespaces",
    detail: "hostNetwork=true",
    paths: ["spec.hostNetwork"],
  },
  {
    name: "hostPID",
    check: C.hostNamespaces,
    pod: spec({ hostPID: true }),
    reason: "host namespaces",
    detail: "hostPID=true",
    paths: ["spec.hostPID"],
  },
  {
    name: "hostIPC",
    check: C.hostNamespaces,
    pod: spec({ hostIPC: true }),
    reason: "host namespaces",
    detail: "hostIPC=true",
    paths: ["spec.hostIPC"],
  },
  {
    name: "all host namespaces",
    check: C.hostNamespaces,
    pod: spec({ hostNetwork: true, hostPID: true, hostIPC: true }),
    reason: "host namespaces",
    detail: "hostNetwork=true, hostPID=true, hostIPC=true",
    paths: ["spec.hostNetwork", "spec.hostPID", "spec.hostIPC"],
  },
  {
    name: "host namespaces false",
    check: C.hostNamespaces,
    pod: spec({ hostNetwork: false, hostPID: false, hostIPC: false }),
  },
  // check_privileged_test.go
  {
    name: "privileged, one container",
    check: C.privileged,
    pod: spec({ containers: containers({ name: "a" }, sc("b", { privileged: false }), sc("c", { privileged: true })) }),
    reason: "privileged",
    detail: 'container "c" must not set securityContext.privileged=true',
    paths: ["spec.containers[2].securityContext.privileged"],
  },
  {
    name: "privileged, init and app containers",
    check: C.privileged,
    pod: spec({
      initContainers: [sc("i", { privileged: true })],
      containers: containers(sc("a", { privileged: true })),
    }),
    reason: "privileged",
    detail: 'containers "i", "a" must not set securityContext.privileged=true',
    paths: ["spec.initContainers[0].securityContext.privileged", "spec.containers[0].securityContext.privileged"],
  },
  // check_capabilities_baseline_test.go
  {
    name: "multiple containers, non-default capabilities",
    check: C.capabilitiesBaseline,
    pod: spec({
      containers: containers(
        sc("a", { capabilities: { add: ["FOO", "BAR"] } }),
        sc("b", { capabilities: { add: ["BAR", "BAZ"] } }),
        sc("c", { capabilities: { add: ["NET_RAW", "CHOWN"] } }),
      ),
    }),
    reason: "non-default capabilities",
    detail:
      'containers "a", "b", "c" must not include "BAR", "BAZ", "FOO", "NET_RAW" in securityContext.capabilities.add',
    paths: [
      "spec.containers[0].securityContext.capabilities.add",
      "spec.containers[1].securityContext.capabilities.add",
      "spec.containers[2].securityContext.capabilities.add",
    ],
  },
  {
    name: "default capabilities only",
    check: C.capabilitiesBaseline,
    pod: spec({ containers: containers(sc("a", { capabilities: { add: ["CHOWN", "KILL", "NET_BIND_SERVICE"] } })) }),
  },
  // check_hostPathVolumes_test.go
  {
    name: "hostPath volumes",
    check: C.hostPathVolumes,
    pod: spec({
      volumes: [
        { name: "a", hostPath: { path: "/a" } },
        { name: "b", hostPath: { path: "/b" } },
        { name: "c", emptyDir: {} },
      ],
    }),
    reason: "hostPath volumes",
    detail: 'volumes "a", "b"',
    paths: ["spec.volumes[0].hostPath", "spec.volumes[1].hostPath"],
  },
  {
    name: "one hostPath volume",
    check: C.hostPathVolumes,
    pod: spec({ volumes: [{ name: "a", hostPath: { path: "/a" } }] }),
    reason: "hostPath volumes",
    detail: 'volume "a"',
    paths: ["spec.volumes[0].hostPath"],
  },
  // check_hostPorts_test.go
  {
    name: "one container, one host port",
    check: C.hostPorts,
    pod: spec({
      containers: containers(
        { name: "a", ports: [{ hostPort: 0 }] },
        { name: "b", ports: [{ hostPort: 0 }, { hostPort: 20 }] },
      ),
    }),
    reason: "hostPort",
    detail: 'container "b" uses hostPort 20',
    paths: ["spec.containers[1].ports[1].hostPort"],
  },
  {
    name: "multiple containers, multiple host ports",
    check: C.hostPorts,
    pod: spec({
      containers: containers(
        { name: "a", ports: [{ hostPort: 0 }, { hostPort: 10 }] },
        { name: "b", ports: [{ hostPort: 0 }, { hostPort: 20 }] },
      ),
    }),
    reason: "hostPort",
    detail: 'containers "a", "b" use hostPorts 10, 20',
    paths: ["spec.containers[0].ports[1].hostPort", "spec.containers[1].ports[1].hostPort"],
  },
  // check_appArmorProfile_test.go
  {
    name: "apparmor annotations",
    check: C.appArmorProfile,
    pod: spec(
      {},
      {
        "container.apparmor.security.beta.kubernetes.io/a": "",
        "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
        "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
        "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/f": "unknown",
      },
    ),
    reason: "forbidden AppArmor profiles",
    detail:
      'annotations must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/e="unconfined"", "container.apparmor.security.beta.kubernetes.io/f="unknown""',
    paths: [
      "metadata.annotations[container.apparmor.security.beta.kubernetes.io/e]",
      "metadata.annotations[container.apparmor.security.beta.kubernetes.io/f]",
    ],
  },
  {
    name: "apparmor pod and container fields",
    check: C.appArmorProfile,
    pod: spec({
      securityContext: { appArmorProfile: { type: "Unconfined" } },
      containers: containers(
        sc("a", { appArmorProfile: { type: "RuntimeDefault" } }),
        sc("b", { appArmorProfile: { type: "Unconfined" } }),
        sc("c", { appArmorProfile: { type: "Localhost" } }),
      ),
    }),
    reason: "forbidden AppArmor profile",
    detail: 'pod and container "b" must not set AppArmor profile type to "Unconfined"',
    paths: ["spec.securityContext.appArmorProfile.type", "spec.containers[1].securityContext.appArmorProfile.type"],
  },
  // check_seLinuxOptions_test.go (seLinuxOptions1_31)
  {
    name: "invalid pod and containers",
    check: C.seLinuxOptions,
    pod: spec({
      securityContext: { seLinuxOptions: { type: "foo", user: "bar", role: "baz" } },
      containers: containers(
        sc("a", { seLinuxOptions: { type: "container_t" } }),
        sc("b", { seLinuxOptions: { type: "container_init_t" } }),
        sc("c", { seLinuxOptions: { type: "container_kvm_t" } }),
        sc("d", { seLinuxOptions: { type: "container_engine_t" } }),
        sc("e", { seLinuxOptions: { type: "bar" } }),
        sc("f", { seLinuxOptions: { user: "bar" } }),
        sc("g", { seLinuxOptions: { role: "baz" } }),
      ),
    }),
    reason: "seLinuxOptions",
    detail:
      'pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set',
    paths: [
      "spec.securityContext.seLinuxOptions.type",
      "spec.securityContext.seLinuxOptions.user",
      "spec.securityContext.seLinuxOptions.role",
      "spec.containers[4].securityContext.seLinuxOptions.type",
      "spec.containers[5].securityContext.seLinuxOptions.user",
      "spec.containers[6].securityContext.seLinuxOptions.role",
    ],
  },
  {
    name: "invalid pod",
    check: C.seLinuxOptions,
    pod: spec({
      securityContext: { seLinuxOptions: { type: "foo", user: "bar", role: "baz" } },
      containers: containers(sc("a", { seLinuxOptions: { type: "container_t" } })),
    }),
    reason: "seLinuxOptions",
    detail: 'pod set forbidden securityContext.seLinuxOptions: type "foo"; user may not be set; role may not be set',
  },
  {
    name: "bad type",
    check: C.seLinuxOptions,
    pod: spec({ securityContext: { seLinuxOptions: { type: "bad" } } }),
    reason: "seLinuxOptions",
    detail: 'pod set forbidden securityContext.seLinuxOptions: type "bad"',
  },
  {
    name: "bad user",
    check: C.seLinuxOptions,
    pod: spec({ securityContext: { seLinuxOptions: { user: "bad" } } }),
    reason: "seLinuxOptions",
    detail: "pod set forbidden securityContext.seLinuxOptions: user may not be set",
  },
  {
    name: "bad role",
    check: C.seLinuxOptions,
    pod: spec({ securityContext: { seLinuxOptions: { role: "bad" } } }),
    reason: "seLinuxOptions",
    detail: "pod set forbidden securityContext.seLinuxOptions: role may not be set",
  },
  // check_procMount_test.go
  {
    name: "procMount",
    check: C.procMount,
    pod: spec({
      containers: containers(
        { name: "a" },
        sc("b", {}),
        sc("c", { procMount: "Default" }),
        sc("d", { procMount: "Unmasked" }),
        sc("e", { procMount: "other" }),
      ),
    }),
    reason: "procMount",
    detail: 'containers "d", "e" must not set securityContext.procMount to "Unmasked", "other"',
    paths: ["spec.containers[3].securityContext.procMount", "spec.containers[4].securityContext.procMount"],
  },
  // check_seccompProfile_baseline_test.go
  {
    name: "pod seccomp Unconfined",
    check: C.seccompProfileBaseline,
    pod: spec({ securityContext: { seccompProfile: { type: "Unconfined" } } }),
    reason: "seccompProfile",
    detail: 'pod must not set securityContext.seccompProfile.type to "Unconfined"',
    paths: ["spec.securityContext.seccompProfile.type"],
  },
  {
    name: "pod and containers seccomp",
    check: C.seccompProfileBaseline,
    pod: spec({
      securityContext: { seccompProfile: { type: "Unconfined" } },
      containers: containers(
        sc("a", {}),
        sc("b", { seccompProfile: { type: "Unconfined" } }),
        sc("c", { seccompProfile: { type: "RuntimeDefault" } }),
        sc("d", { seccompProfile: { type: "Localhost" } }),
        sc("e", { seccompProfile: { type: "Other" } }),
      ),
    }),
    reason: "seccompProfile",
    detail: 'pod and containers "b", "e" must not set securityContext.seccompProfile.type to "Other", "Unconfined"',
    paths: [
      "spec.securityContext.seccompProfile.type",
      "spec.containers[1].securityContext.seccompProfile.type",
      "spec.containers[4].securityContext.seccompProfile.type",
    ],
  },
  {
    name: "seccomp unset at baseline",
    check: C.seccompProfileBaseline,
    pod: spec({ containers: containers({ name: "a" }) }),
  },
  // check_seccompProfile_restricted_test.go
  {
    name: "no explicit seccomp",
    check: C.seccompProfileRestricted,
    pod: spec({
      containers: containers({ name: "a" }, sc("b", { seccompProfile: { type: "RuntimeDefault" } }), { name: "c" }),
    }),
    reason: "seccompProfile",
    detail:
      'pod or containers "a", "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
    paths: [
      "spec.containers[0].securityContext.seccompProfile.type",
      "spec.containers[2].securityContext.seccompProfile.type",
    ],
  },
  {
    name: "pod-level RuntimeDefault",
    check: C.seccompProfileRestricted,
    pod: spec({
      securityContext: { seccompProfile: { type: "RuntimeDefault" } },
      containers: containers({ name: "a" }),
    }),
  },
  {
    name: "container Unconfined despite pod RuntimeDefault",
    check: C.seccompProfileRestricted,
    pod: spec({
      securityContext: { seccompProfile: { type: "RuntimeDefault" } },
      containers: containers(sc("a", { seccompProfile: { type: "Unconfined" } })),
    }),
    reason: "seccompProfile",
    detail: 'container "a" must not set securityContext.seccompProfile.type to "Unconfined"',
  },
  // check_sysctls_test.go
  {
    name: "forbidden sysctls",
    check: C.sysctls,
    pod: spec({ securityContext: { sysctls: [{ name: "a" }, { name: "b" }] } }),
    reason: "forbidden sysctls",
    detail: "a, b",
    paths: ["spec.securityContext.sysctls[0].name", "spec.securityContext.sysctls[1].name"],
  },
  {
    name: "new sysctls",
    check: C.sysctls,
    pod: spec({
      securityContext: {
        sysctls: [
          "net.ipv4.ip_local_reserved_ports",
          "net.ipv4.tcp_keepalive_time",
          "net.ipv4.tcp_fin_timeout",
          "net.ipv4.tcp_keepalive_intvl",
          "net.ipv4.tcp_keepalive_probes",
          "net.ipv4.tcp_rmem",
          "net.ipv4.tcp_wmem",
        ].map((name) => ({ name })),
      },
    }),
  },
  {
    name: "slash separated safe sysctl",
    check: C.sysctls,
    pod: spec({ securityContext: { sysctls: [{ name: "net/ipv4/tcp_syncookies" }] } }),
  },
  // check_windowsHostProcess_test.go
  {
    name: "windows hostProcess pod and containers",
    check: C.windowsHostProcess,
    pod: spec({
      securityContext: { windowsOptions: { hostProcess: true } },
      containers: containers(
        sc("a", { windowsOptions: {} }),
        sc("b", { windowsOptions: { hostProcess: false } }),
        sc("c", { windowsOptions: { hostProcess: true } }),
        sc("d", { windowsOptions: { hostProcess: true } }),
      ),
    }),
    reason: "hostProcess",
    detail: 'pod and containers "c", "d" must not set securityContext.windowsOptions.hostProcess=true',
    paths: [
      "spec.securityContext.windowsOptions.hostProcess",
      "spec.containers[2].securityContext.windowsOptions.hostProcess",
      "spec.containers[3].securityContext.windowsOptions.hostProcess",
    ],
  },
  // check_hostProbesAndhostLifecycle_test.go
  {
    name: "probe and lifecycle hosts",
    check: C.hostProbesAndHostLifecycle,
    pod: spec({
      containers: containers(
        {
          name: "b",
          livenessProbe: { httpGet: { host: "bad.host" } },
          lifecycle: { preStop: { tcpSocket: { host: "8.8.8.8" } } },
        },
        { name: "a", readinessProbe: { tcpSocket: { host: "" } }, startupProbe: { httpGet: {} } },
        { name: "a2", startupProbe: { tcpSocket: { host: "bad.host" } } },
      ),
    }),
    reason: "probe or lifecycle host",
    detail: 'containers "a2", "b" use probe or lifecycle hosts "8.8.8.8", "bad.host"',
    paths: [
      "spec.containers[0].livenessProbe.httpGet.host",
      "spec.containers[0].lifecycle.preStop.tcpSocket.host",
      "spec.containers[2].startupProbe.tcpSocket.host",
    ],
  },
  // check_restrictedVolumes_test.go
  {
    name: "restricted volume types",
    check: C.restrictedVolumes,
    pod: spec({
      volumes: [
        { name: "a", emptyDir: {} },
        { name: "b", secret: {} },
        { name: "c", configMap: {} },
        { name: "d", persistentVolumeClaim: {} },
        { name: "e", projected: {} },
        { name: "f", downwardAPI: {} },
        { name: "g", csi: {} },
        { name: "h", ephemeral: {} },
        { name: "i", hostPath: { path: "/" } },
        { name: "j", nfs: {} },
        { name: "k", cephfs: {} },
        { name: "l" },
      ],
    }),
    reason: "restricted volume types",
    detail: 'volumes "i", "j", "k", "l" use restricted volume types "cephfs", "hostPath", "nfs", "unknown"',
    paths: ["spec.volumes[8].hostPath", "spec.volumes[9].nfs", "spec.volumes[10].cephfs", "spec.volumes[11].unknown"],
  },
  {
    name: "one restricted volume",
    check: C.restrictedVolumes,
    pod: spec({ volumes: [{ name: "a", gitRepo: {} }] }),
    reason: "restricted volume types",
    detail: 'volume "a" uses restricted volume type "gitRepo"',
  },
  // check_allowPrivilegeEscalation_test.go
  {
    name: "allowPrivilegeEscalation",
    check: C.allowPrivilegeEscalation,
    pod: spec({
      containers: containers(
        { name: "a" },
        sc("b", {}),
        sc("c", { allowPrivilegeEscalation: true }),
        sc("d", { allowPrivilegeEscalation: false }),
      ),
    }),
    reason: "allowPrivilegeEscalation != false",
    detail: 'containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false',
    paths: [
      "spec.containers[0].securityContext.allowPrivilegeEscalation",
      "spec.containers[1].securityContext.allowPrivilegeEscalation",
      "spec.containers[2].securityContext.allowPrivilegeEscalation",
    ],
  },
  // check_runAsNonRoot_test.go
  {
    name: "runAsNonRoot: no explicit",
    check: C.runAsNonRoot,
    pod: spec({ containers: containers({ name: "a" }) }),
    reason: "runAsNonRoot != true",
    detail: 'pod or container "a" must set securityContext.runAsNonRoot=true',
  },
  {
    name: "runAsNonRoot: pod explicit false, container explicit true",
    check: C.runAsNonRoot,
    pod: spec({ securityContext: { runAsNonRoot: false }, containers: containers(sc("a", { runAsNonRoot: true })) }),
    reason: "runAsNonRoot != true",
    detail: "pod must not set securityContext.runAsNonRoot=false",
    paths: ["spec.securityContext.runAsNonRoot"],
  },
  {
    name: "runAsNonRoot: explicit false containers",
    check: C.runAsNonRoot,
    pod: spec({
      securityContext: { runAsNonRoot: true },
      containers: containers({ name: "a" }, sc("b", { runAsNonRoot: false }), sc("c", { runAsNonRoot: false })),
    }),
    reason: "runAsNonRoot != true",
    detail: 'containers "b", "c" must not set securityContext.runAsNonRoot=false',
  },
  {
    name: "runAsNonRoot: pod false and container false",
    check: C.runAsNonRoot,
    pod: spec({ securityContext: { runAsNonRoot: false }, containers: containers(sc("a", { runAsNonRoot: false })) }),
    reason: "runAsNonRoot != true",
    detail: 'pod and container "a" must not set securityContext.runAsNonRoot=false',
  },
  {
    name: "runAsNonRoot: pod true",
    check: C.runAsNonRoot,
    pod: spec({ securityContext: { runAsNonRoot: true }, containers: containers({ name: "a" }) }),
  },
  // check_runAsUser_test.go
  {
    name: "runAsUser=0 pod and containers",
    check: C.runAsUser,
    pod: spec({
      securityContext: { runAsUser: 0 },
      containers: containers(
        { name: "a" },
        sc("b", { runAsUser: 0 }),
        sc("c", { runAsUser: 1 }),
        sc("d", { runAsUser: 0 }),
      ),
    }),
    reason: "runAsUser=0",
    detail: 'pod and containers "b", "d" must not set runAsUser=0',
    paths: [
      "spec.securityContext.runAsUser",
      "spec.containers[1].securityContext.runAsUser",
      "spec.containers[3].securityContext.runAsUser",
    ],
  },
  {
    name: "runAsUser non-zero",
    check: C.runAsUser,
    pod: spec({ securityContext: { runAsUser: 1000 }, containers: containers(sc("a", { runAsUser: 1 })) }),
  },
  // check_capabilities_restricted_test.go
  {
    name: "capabilities restricted",
    check: C.capabilitiesRestricted,
    pod: spec({
      containers: containers(
        { name: "a" },
        sc("b", { capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] } }),
        sc("c", { capabilities: { drop: ["ALL"], add: ["FOO", "BAR"] } }),
        sc("d", { capabilities: { add: ["BAR", "BAZ"] } }),
      ),
    }),
    reason: "unrestricted capabilities",
    detail:
      'containers "a", "d" must set securityContext.capabilities.drop=["ALL"]; containers "c", "d" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add',
    paths: [
      "spec.containers[0].securityContext.capabilities.drop",
      "spec.containers[2].securityContext.capabilities.add",
      "spec.containers[3].securityContext.capabilities.drop",
      "spec.containers[3].securityContext.capabilities.add",
    ],
  },
];

describe("Pod Security Standards checks (upstream cases)", () => {
  it.each(cases)("$name", ({ check, pod, reason, detail, paths }) => {
    const r = check(pod, ctx);
    if (reason === undefined) return expect(r).toBeUndefined();
    expect(r?.reason).toBe(reason);
    if (detail !== undefined) expect(r?.detail).toBe(detail);
    if (paths !== undefined) expect(r?.paths).toEqual(paths);
  });
});

describe("evaluatePodSecurity", () => {
  const privileged: NodePolicy = { level: "privileged", hostPathAllow: [] };
  const baseline: NodePolicy = { level: "baseline", hostPathAllow: [] };
  const restricted: NodePolicy = { level: "restricted", hostPathAllow: [] };
  const root = schemaPod({
    hostPID: true,
    volumes: [{ name: "root", hostPath: { path: "/" } }],
    containers: [
      {
        name: "x",
        image: "busybox",
        securityContext: { privileged: true, capabilities: { add: ["ALL"] } },
        volumeMounts: [{ name: "root", mountPath: "/host" }],
      },
    ],
  });

  it("privileged admits everything when no allow-list is set", () => {
    expect(evaluatePodSecurity(root, privileged)).toEqual([]);
  });

  it("baseline refuses issue 8's pod: privileged, hostPath /, hostPID, capabilities [ALL]", () => {
    const v = evaluatePodSecurity(root, baseline);
    expect(v.map((x) => [x.rule, x.path])).toEqual([
      ["capabilities_baseline", "spec.containers[0].securityContext.capabilities.add"],
      ["hostNamespaces", "spec.hostPID"],
      ["hostPathVolumes", "spec.volumes[0].hostPath"],
      ["privileged", "spec.containers[0].securityContext.privileged"],
    ]);
    expect(formatViolations("baseline", v)).toBe(
      'violates PodSecurity "baseline:latest": non-default capabilities (container "x" must not include "ALL" in securityContext.capabilities.add), host namespaces (hostPID=true), hostPath volumes (volume "root"), privileged (container "x" must not set securityContext.privileged=true)',
    );
  });

  it("restricted replaces the baseline checks it tightens (capabilities, seccomp, hostPath)", () => {
    const rules = new Set(evaluatePodSecurity(root, restricted).map((x) => x.rule));
    expect(rules).toEqual(
      new Set([
        "hostNamespaces",
        "privileged",
        "allowPrivilegeEscalation",
        "capabilities_restricted",
        "restrictedVolumes",
        "runAsNonRoot",
        "seccompProfile_restricted",
      ]),
    );
  });

  it("a plain pod passes baseline; restricted asks for the restricted fields", () => {
    const plain = schemaPod();
    expect(evaluatePodSecurity(plain, baseline)).toEqual([]);
    expect(evaluatePodSecurity(plain, restricted).map((x) => x.rule)).toEqual([
      "allowPrivilegeEscalation",
      "capabilities_restricted",
      "runAsNonRoot",
      "seccompProfile_restricted",
    ]);
  });

  describe("hostPath allow-list", () => {
    const withPaths = (...paths: string[]) =>
      schemaPod({
        volumes: paths.map((path, i) => ({ name: `v${i}`, hostPath: { path } })),
        containers: [{ name: "c", image: "busybox" }],
      });
    const allow = ["/srv/data", "/var/log"];

    it("admits paths under a prefix at baseline and restricted, component-safe and normalised", () => {
      const p = withPaths("/srv/data", "/srv/data/app", "//var/./log/x/");
      expect(evaluatePodSecurity(p, { level: "baseline", hostPathAllow: allow })).toEqual([]);
      expect(
        evaluatePodSecurity(p, { level: "restricted", hostPathAllow: allow }).filter(
          (v) => v.rule === "restrictedVolumes",
        ),
      ).toEqual([]);
    });

    it("refuses look-alikes and escapes with upstream's rule at baseline", () => {
      const v = evaluatePodSecurity(withPaths("/srv/database", "/srv/data/../../etc", "/srv/data"), {
        level: "baseline",
        hostPathAllow: allow,
      });
      expect(v).toEqual([
        { rule: "hostPathVolumes", path: "spec.volumes[0].hostPath", message: 'hostPath volumes (volumes "v0", "v1")' },
        { rule: "hostPathVolumes", path: "spec.volumes[1].hostPath", message: 'hostPath volumes (volumes "v0", "v1")' },
      ]);
    });

    it("bounds even a privileged node once a list is set", () => {
      expect(
        evaluatePodSecurity(withPaths("/etc", "/var/log/pods"), { level: "privileged", hostPathAllow: allow }),
      ).toEqual([
        {
          rule: "hostPathAllowList",
          path: "spec.volumes[0].hostPath.path",
          message: 'hostPath outside the node allow-list (volume "v0" must use a path under "/srv/data", "/var/log")',
        },
      ]);
    });
  });
});
