// PodSpec → PodSandboxConfig / ContainerConfig, field by field against what kubelet writes.
import { describe, expect, it } from "vitest";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { Pod, defaultPullPolicy, type PodInput } from "../../src/pod/schema.js";
import { generateContainerConfig, generatePodSandboxConfig } from "../../src/kuberuntime/config/config.js";
import { defaultNodeConfig, type NodeConfig } from "../../src/container/node-config.js";
import { expand } from "../../src/container/expansion.js";
import { podDNS } from "../../src/kuberuntime/config/dns.js";
import { hostResolvConf } from "../../src/settings/node.js";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { podQOS } from "../../src/kuberuntime/config/resources.js";
import { hashContainer } from "../../src/container/hash.js";
import { parseQuantity } from "../../src/pod/quantity.js";

const node: NodeConfig = {
  ...defaultNodeConfig(),
  cgroupParent: "/kubepods",
  hostDNS: { servers: ["192.0.2.53"], searches: ["corp.example"], options: ["ndots:1"] },
  memoryCapacity: 8 * 2 ** 30,
};
const mk = (spec: Partial<PodInput["spec"]> = {}, meta: Partial<PodInput["metadata"]> = {}) =>
  Pod.parse({
    metadata: {
      name: "web",
      namespace: "prod",
      uid: "uid-1",
      labels: { app: "web" },
      annotations: { note: "x" },
      ...meta,
    },
    spec: { containers: [{ name: "main", image: "registry.example.com/app:1.2" }], ...spec },
  });

describe("generatePodSandboxConfig", () => {
  it("metadata, hostname, labels and annotations, log directory, cgroup parent, namespaces", () => {
    const c = generatePodSandboxConfig(mk(), 3, node);
    expect(c.metadata).toMatchObject({ name: "web", namespace: "prod", uid: "uid-1", attempt: 3 });
    expect(c.hostname).toBe("web");
    expect(c.labels).toEqual({
      app: "web",
      "io.kubernetes.pod.name": "web",
      "io.kubernetes.pod.namespace": "prod",
      "io.kubernetes.pod.uid": "uid-1",
      "io.kubernetes.managed-by": "podsync",
    });
    expect(c.annotations).toEqual({ note: "x" });
    expect(c.logDirectory).toBe("/var/log/pods/prod_web_uid-1");
    expect(c.linux?.cgroupParent).toBe("/kubepods");
    expect(c.linux?.securityContext?.namespaceOptions).toMatchObject({
      network: api.NamespaceMode.POD,
      pid: api.NamespaceMode.CONTAINER,
      ipc: api.NamespaceMode.POD,
    });
  });

  it("hostNetwork/PID/IPC use the node's namespaces; a hostNetwork sandbox gets no hostname", () => {
    const c = generatePodSandboxConfig(mk({ hostNetwork: true, hostPID: true, hostIPC: true }), 0, node);
    expect(c.linux?.securityContext?.namespaceOptions).toMatchObject({
      network: api.NamespaceMode.NODE,
      pid: api.NamespaceMode.NODE,
      ipc: api.NamespaceMode.NODE,
    });
    expect(c.hostname).toBe("");
  });

  it("spec.hostname wins; long pod names are cut to 63 without a trailing dash", () => {
    expect(generatePodSandboxConfig(mk({ hostname: "h1" }), 0, node).hostname).toBe("h1");
    const long = `${"a".repeat(62)}-bcd`;
    expect(generatePodSandboxConfig(mk({}, { name: long }), 0, node).hostname).toBe("a".repeat(62));
  });

  it('hostPort 0 (the API server\'s "none", as kubectl exports it) is no host port', () => {
    const c = generatePodSandboxConfig(
      mk({ containers: [{ name: "main", image: "x:1", ports: [{ containerPort: 80, hostPort: 0 }] }] }),
      0,
      node,
    );
    expect(c.portMappings).toEqual([]);
  });

  it("port mappings for ports with a hostPort, with protocol and host IP", () => {
    const c = generatePodSandboxConfig(
      mk({
        containers: [
          {
            name: "main",
            image: "x:1",
            ports: [
              { containerPort: 80, hostPort: 8080 },
              { containerPort: 53, hostPort: 5353, protocol: "UDP", hostIP: "127.0.0.1" },
              { containerPort: 9000 },
            ],
          },
        ],
      }),
      0,
      node,
    );
    expect(c.portMappings.map((p) => [p.protocol, p.containerPort, p.hostPort, p.hostIp])).toEqual([
      [api.Protocol.TCP, 80, 8080, ""],
      [api.Protocol.UDP, 53, 5353, "127.0.0.1"],
    ]);
  });

  it("pod security context: run-as user/group, supplemental groups + fsGroup, sysctls with dots, privileged if any container is", () => {
    const c = generatePodSandboxConfig(
      mk({
        securityContext: {
          runAsUser: 1000,
          runAsGroup: 2000,
          supplementalGroups: [5],
          fsGroup: 7,
          sysctls: [{ name: "net/ipv4/ip_forward", value: "1" }],
        },
        containers: [{ name: "main", image: "x:1", securityContext: { privileged: true } }],
      }),
      0,
      node,
    );
    const sc = c.linux!.securityContext!;
    expect(sc.runAsUser?.value).toBe(1000n);
    expect(sc.runAsGroup?.value).toBe(2000n);
    expect(sc.supplementalGroups).toEqual([5n, 7n]);
    expect(sc.privileged).toBe(true);
    expect(c.linux!.sysctls).toEqual({ "net.ipv4.ip_forward": "1" });
  });
});

describe("DNS (kubelet GetPodDNS)", () => {
  it("Default uses the node's resolv.conf; ClusterFirst without cluster DNS falls back to it", () => {
    expect(podDNS(mk({ dnsPolicy: "Default" }), node)).toEqual(node.hostDNS);
    expect(podDNS(mk(), node)).toEqual(node.hostDNS);
  });
  it("ClusterFirst with cluster DNS: cluster servers, namespace search path, ndots:5", () => {
    const withDns = { ...node, clusterDNS: ["10.96.0.10"] };
    expect(podDNS(mk(), withDns)).toEqual({
      servers: ["10.96.0.10"],
      searches: ["prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"],
      options: ["ndots:5"],
    });
    // hostNetwork + ClusterFirst means Default; ClusterFirstWithHostNet keeps cluster DNS.
    expect(podDNS(mk({ hostNetwork: true }), withDns).servers).toEqual(["192.0.2.53"]);
    expect(podDNS(mk({ hostNetwork: true, dnsPolicy: "ClusterFirstWithHostNet" }), withDns).servers).toEqual([
      "10.96.0.10",
    ]);
  });
  it("None uses dnsConfig only; dnsConfig merges into the others and overrides options by name", () => {
    expect(
      podDNS(
        mk({
          dnsPolicy: "None",
          dnsConfig: {
            nameservers: ["1.1.1.1"],
            searches: ["a.example"],
            options: [{ name: "ndots", value: "2" }, { name: "edns0" }],
          },
        }),
        node,
      ),
    ).toEqual({
      servers: ["1.1.1.1"],
      searches: ["a.example"],
      options: ["ndots:2", "edns0"],
    });
    expect(
      podDNS(mk({ dnsPolicy: "Default", dnsConfig: { options: [{ name: "ndots", value: "3" }] } }), node).options,
    ).toEqual(["ndots:3"]);
  });
  it("reads the node's resolv.conf as kubelet's parseResolvConf", () => {
    const f = join(mkdtempSync(join(tmpdir(), "podsync-resolv-")), "resolv.conf");
    writeFileSync(
      f,
      "# c\nnameserver 192.0.2.53\nsearch old.example\nsearch corp.example. . b.example\noptions ndots:2\noptions edns0\nnameserver 192.0.2.54\n",
    );
    expect(hostResolvConf(f)).toEqual({
      servers: ["192.0.2.53", "192.0.2.54"],
      searches: ["corp.example", "b.example"],
      options: ["edns0"],
    });
  });
  it("as kubelet: duplicates omitted, at most 3 nameservers, search paths within the limits, bare options", () => {
    const withDns = {
      ...node,
      clusterDNS: ["10.96.0.10"],
      hostDNS: { ...node.hostDNS, searches: ["cluster.local", "corp.example", "x".repeat(254)] },
    };
    const r = podDNS(
      mk({
        dnsConfig: {
          nameservers: ["1.1.1.1", "8.8.8.8", "9.9.9.9"],
          searches: ["svc.cluster.local", ...Array.from({ length: 30 }, (_, i) => `s${i}.example`)],
          options: [{ name: "edns0" }, { name: "ndots", value: "" }],
        },
      }),
      withDns,
    );
    expect(r.servers).toEqual(["10.96.0.10", "1.1.1.1", "8.8.8.8"]);
    expect(r.searches.slice(0, 4)).toEqual([
      "prod.svc.cluster.local",
      "svc.cluster.local",
      "cluster.local",
      "corp.example",
    ]);
    // Cut to 32 first, then the path over 253 characters dropped (formDNSSearchFitsLimits' order): 31.
    expect(r.searches).toHaveLength(31);
    expect(r.searches.every((s) => s.length <= 253)).toBe(true);
    expect(r.options).toEqual(["ndots", "edns0"]);
    // No cluster domain: the host's search paths only.
    expect(podDNS(mk(), { ...withDns, clusterDomain: "" }).searches).toEqual(["cluster.local", "corp.example"]);
    // A search line over 2048 characters loses its last paths.
    const long = Array.from({ length: 20 }, (_, i) => `${String(i).padStart(2, "0")}${"y".repeat(150)}.example`);
    const cut = podDNS(mk({ dnsPolicy: "Default" }), {
      ...node,
      hostDNS: { ...node.hostDNS, searches: long },
    }).searches;
    expect(cut.join(" ").length).toBeLessThanOrEqual(2048);
    expect(cut).toEqual(long.slice(0, cut.length));
  });
});

describe("generateContainerConfig", () => {
  const pod = mk({
    volumes: [
      { name: "data", hostPath: { path: "/srv/data" } },
      { name: "scratch", emptyDir: {} },
    ],
    containers: [
      {
        name: "main",
        image: "registry.example.com/app:1.2",
        command: ["/bin/app", "--name=$(NAME)"],
        args: ["$(MISSING)", "$$(NAME)"],
        workingDir: "/work",
        env: [
          { name: "NAME", value: "web" },
          { name: "GREETING", value: "hi $(NAME)" },
        ],
        volumeMounts: [
          { name: "data", mountPath: "/data", readOnly: true },
          { name: "scratch", mountPath: "/tmp/s", subPath: "x" },
        ],
        resources: { requests: { cpu: "250m", memory: "64Mi" }, limits: { cpu: "1", memory: "128Mi" } },
        securityContext: {
          capabilities: { add: ["NET_ADMIN"], drop: ["ALL"] },
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          runAsUser: 1001,
        },
        ports: [{ containerPort: 8080, name: "http" }],
      },
    ],
  });
  const c = generateContainerConfig(pod, pod.spec.containers[0]!, 2, "sha256:abc", node);

  it("metadata with attempt = restart count, image by ref with the user's name, log path <name>/<restarts>.log", () => {
    expect(c.metadata).toMatchObject({ name: "main", attempt: 2 });
    expect(c.image).toMatchObject({ image: "sha256:abc", userSpecifiedImage: "registry.example.com/app:1.2" });
    expect(c.logPath).toBe("main/2.log");
    expect(c.workingDir).toBe("/work");
  });

  it("$(VAR) expansion in command, args and env (undefined stays, $$ escapes)", () => {
    expect(c.command).toEqual(["/bin/app", "--name=web"]);
    expect(c.args).toEqual(["$(MISSING)", "$(NAME)"]);
    expect(c.envs.map((e) => [e.key, new TextDecoder().decode(e.value)])).toEqual([
      ["NAME", "web"],
      ["GREETING", "hi web"],
    ]);
    expect(expand("a$b$(", new Map())).toBe("a$b$(");
  });

  it("labels and annotations as kubelet writes them (hash, restart count, termination message, grace, ports)", () => {
    expect(c.labels).toEqual({
      "io.kubernetes.pod.name": "web",
      "io.kubernetes.pod.namespace": "prod",
      "io.kubernetes.pod.uid": "uid-1",
      "io.kubernetes.container.name": "main",
      "io.kubernetes.managed-by": "podsync",
    });
    expect(c.annotations).toMatchObject({
      "io.kubernetes.container.hash": hashContainer(pod.spec.containers[0]!),
      "io.kubernetes.container.restartCount": "2",
      "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
      "io.kubernetes.container.terminationMessagePolicy": "File",
      "io.kubernetes.pod.terminationGracePeriod": "30",
    });
    expect(JSON.parse(c.annotations["io.kubernetes.container.ports"]!)).toEqual([
      { containerPort: 8080, name: "http", protocol: "TCP" },
    ]);
  });

  it("mounts: hostPath as is, emptyDir under the pod's volume dir, subPath joined, readOnly kept", () => {
    expect(c.mounts.map((m) => [m.containerPath, m.hostPath, m.readonly])).toEqual([
      ["/data", "/srv/data", true],
      ["/tmp/s", "/var/lib/podsync/pods/uid-1/volumes/kubernetes.io~empty-dir/scratch/x", false],
    ]);
  });

  it("resources as Linux resources: shares from requests, quota from limits, memory limit, Burstable oom_score_adj", () => {
    expect(podQOS(pod)).toBe("Burstable");
    expect(c.linux!.resources).toMatchObject({
      cpuShares: 256n,
      cpuQuota: 100000n,
      cpuPeriod: 100000n,
      memoryLimitInBytes: 134217728n,
    });
    // 1000 - 1000*64Mi/8Gi = 993
    expect(c.linux!.resources!.oomScoreAdj).toBe(993n);
  });

  it("QoS: Guaranteed -997, BestEffort 1000 with the minimum shares", () => {
    const g = mk({
      containers: [{ name: "main", image: "x:1", resources: { limits: { cpu: "500m", memory: "1Gi" } } }],
    });
    const gc = generateContainerConfig(g, g.spec.containers[0]!, 0, "r", node);
    expect(podQOS(g)).toBe("Guaranteed");
    expect(gc.linux!.resources).toMatchObject({ cpuShares: 512n, cpuQuota: 50000n, oomScoreAdj: -997n });
    const b = mk();
    const bc = generateContainerConfig(b, b.spec.containers[0]!, 0, "r", node);
    expect(bc.linux!.resources).toMatchObject({
      cpuShares: 2n,
      cpuQuota: 0n,
      memoryLimitInBytes: 0n,
      oomScoreAdj: 1000n,
    });
  });

  it("security context: capabilities, read-only root, no_new_privs, run-as user, default masked/readonly paths", () => {
    const sc = c.linux!.securityContext!;
    expect(sc.capabilities).toMatchObject({ addCapabilities: ["NET_ADMIN"], dropCapabilities: ["ALL"] });
    expect(sc.readonlyRootfs).toBe(true);
    expect(sc.noNewPrivs).toBe(true);
    expect(sc.runAsUser?.value).toBe(1001n);
    expect(sc.maskedPaths).toContain("/proc/kcore");
    expect(sc.readonlyPaths).toContain("/proc/sys");
    const p = mk({ containers: [{ name: "main", image: "x:1", securityContext: { privileged: true } }] });
    const pc = generateContainerConfig(p, p.spec.containers[0]!, 0, "r", node).linux!.securityContext!;
    expect(pc.privileged).toBe(true);
    expect(pc.maskedPaths).toEqual([]);
  });
});

describe("schema defaults and helpers", () => {
  it("imagePullPolicy defaults like the API server", () => {
    expect(defaultPullPolicy("busybox")).toBe("Always");
    expect(defaultPullPolicy("busybox:latest")).toBe("Always");
    expect(defaultPullPolicy("localhost:5000/busybox")).toBe("Always");
    expect(defaultPullPolicy("localhost:5000/busybox:1")).toBe("IfNotPresent");
    expect(defaultPullPolicy("busybox@sha256:abc")).toBe("IfNotPresent");
  });
  it("quantities", () => {
    expect(parseQuantity("500m")).toBe(0.5);
    expect(parseQuantity("128Mi")).toBe(134217728);
    expect(parseQuantity("1G")).toBe(1e9);
    expect(parseQuantity("1e3")).toBe(1000);
    expect(parseQuantity("12x")).toBeUndefined();
  });
});
