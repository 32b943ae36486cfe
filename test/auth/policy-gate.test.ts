// cri-proxy's policy gate: everything podsync sends for a pod its HTTP admission lets through passes the gate at
// the same level (property over pods, and whole syncs through a proxy), and raw CRI calls that exceed the node
// policy are refused with PERMISSION_DENIED before the runtime sees them.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import { evaluatePodSecurity } from "../../src/auth/pod-security.js";
import { POLICY_LEVELS, type NodePolicy, type PolicyLevel } from "../../src/auth/policy.js";
import { generateContainerConfig, generatePodSandboxConfig } from "../../src/kuberuntime/config/config.js";
import { defaultNodeConfig, type NodeConfig } from "../../src/container/node-config.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import type { TerminationMessageFiles } from "../../src/kuberuntime/termination-message.js";
import { CREATE_CONTAINER, RUN_POD_SANDBOX, createPolicyGate, type UpstreamCall } from "../../src/proxy/policy-gate.js";
import { startProxy, type RunningProxy } from "../../src/proxy/cri-proxy.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { connectGrpcWeb } from "../../src/cri/grpc-web-transport.js";
import type { CriError } from "../../src/cri/errors.js";
import { Pod, type PodInput } from "../../src/pod/schema.js";
import type { FakeServer } from "../support/fake-cri.js";
import { pod, syncOnce, uid } from "../support/pods.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

// The node's seccomp default is off here, so the gate sees exactly the profile the pod asked for. With it on,
// the gate also admits a pod whose only fault at restricted is a missing seccompProfile field (what podsync
// sends then carries RuntimeDefault; test/auth/cri-policy.test.ts shows that direction).
const node: NodeConfig = {
  ...defaultNodeConfig(),
  rootDir: "/srv/podsync-root",
  podLogsDir: "/srv/podsync-logs",
  seccompDefault: false,
};
const SANDBOX_ID = "f".repeat(64);

/** The termination-message mount podsync adds at CreateContainer (sync-pod.ts), without touching the disk. */
const fakeTerminationFiles: TerminationMessageFiles = {
  create: async (dir) => `${dir}/0a1b2c3d`,
  readTail: async () => undefined,
};

/** A gate whose runtime knows one sandbox: the one made from `sandbox`, reported as containerd reports it. */
function gateFor(policy: NodePolicy, sandbox: api.PodSandboxConfig | undefined) {
  let lookups = 0;
  const upstream: UpstreamCall = async (_path, body) => {
    lookups++;
    const req = fromBinary(api.PodSandboxStatusRequestSchema, body);
    if (!sandbox || req.podSandboxId !== SANDBOX_ID)
      return { code: 5, details: "an error occurred when try to find sandbox: not found" };
    const status = create(api.PodSandboxStatusResponseSchema, {
      status: {
        id: SANDBOX_ID,
        metadata: sandbox.metadata,
        linux: { namespaces: { options: sandbox.linux?.securityContext?.namespaceOptions } },
      },
    });
    return { code: 0, details: "", body: Buffer.from(toBinary(api.PodSandboxStatusResponseSchema, status)) };
  };
  return {
    gate: createPolicyGate({ policy, rootDir: node.rootDir, podLogsDir: node.podLogsDir }, upstream),
    lookups: () => lookups,
  };
}

/** What podsync sends for `p`: the sandbox, then each container with its termination-message mount. */
function podsyncRequests(p: Pod): { path: string; body: Buffer }[] {
  const sandbox = generatePodSandboxConfig(p, 0, node);
  const out = [
    {
      path: RUN_POD_SANDBOX,
      body: Buffer.from(
        toBinary(api.RunPodSandboxRequestSchema, create(api.RunPodSandboxRequestSchema, { config: sandbox })),
      ),
    },
  ];
  for (const c of [...(p.spec.initContainers ?? []), ...p.spec.containers]) {
    const config = generateContainerConfig(p, c, 0, "sha256:x", node);
    config.mounts.push(
      create(api.MountSchema, {
        containerPath: c.terminationMessagePath,
        hostPath: `${node.rootDir}/pods/${p.metadata.uid}/containers/${c.name}/0a1b2c3d`,
      }),
    );
    out.push({
      path: CREATE_CONTAINER,
      body: Buffer.from(
        toBinary(
          api.CreateContainerRequestSchema,
          create(api.CreateContainerRequestSchema, { podSandboxId: SANDBOX_ID, config, sandboxConfig: sandbox }),
        ),
      ),
    });
  }
  return out;
}

const cap = fc.constantFrom("CHOWN", "NET_BIND_SERVICE", "NET_RAW", "SYS_ADMIN", "ALL");
// Biased towards pods baseline admits (so that every level sees many), with each escalation still common.
const mostlyNot = fc.constantFrom(false, false, false, true);
const arbPod = fc
  .record({
    hostNetwork: mostlyNot,
    hostPID: mostlyNot,
    runAsUser: fc.option(fc.constantFrom(0, 1000), { nil: undefined }),
    volumes: fc.array(
      fc.option(fc.constantFrom("/", "/etc", "/srv/data", "/srv/data/x", "/srv/database"), { nil: undefined, freq: 2 }),
      { maxLength: 3 },
    ),
    sc: fc.option(
      fc.record(
        {
          privileged: fc.boolean(),
          allowPrivilegeEscalation: fc.boolean(),
          capabilities: fc.record({ add: fc.array(cap, { maxLength: 2 }), drop: fc.array(cap, { maxLength: 2 }) }),
        },
        { requiredKeys: [] },
      ),
      { nil: undefined },
    ),
    init: fc.boolean(),
    hostPort: mostlyNot,
  })
  .map((g): Pod => {
    const volumes = g.volumes.map((path, i) =>
      path === undefined ? { name: `v${i}`, emptyDir: {} } : { name: `v${i}`, hostPath: { path } },
    );
    const input: PodInput = {
      metadata: { name: "p", uid: "u-prop-1" },
      spec: {
        hostNetwork: g.hostNetwork,
        hostPID: g.hostPID,
        securityContext: g.runAsUser !== undefined ? { runAsUser: g.runAsUser } : undefined,
        volumes,
        initContainers: g.init ? [{ name: "init", image: "busybox", securityContext: g.sc }] : [],
        containers: [
          {
            name: "c",
            image: "busybox",
            securityContext: g.sc,
            volumeMounts: volumes.map((v, i) => ({ name: v.name, mountPath: `/m${i}` })),
            ports: g.hostPort ? [{ containerPort: 8080, hostPort: 8080 }] : [],
          },
        ],
      },
    };
    return Pod.parse(input);
  });

describe("the gate admits what podsync sends for an admitted pod", () => {
  it.each(
    POLICY_LEVELS.flatMap(
      (level) =>
        [
          [level, []],
          [level, ["/srv/data"]],
        ] as [PolicyLevel, string[]][],
    ),
  )("level %s, hostPath allow-list %j", async (level, hostPathAllow) => {
    const policy: NodePolicy = { level, hostPathAllow };
    let admitted = 0;
    await fc.assert(
      fc.asyncProperty(arbPod, async (p) => {
        const { gate } = gateFor(policy, generatePodSandboxConfig(p, 0, node));
        const verdicts = await Promise.all(
          podsyncRequests(p).map((r) => gate.admit(r.path, r.body, Date.now() + 1000)),
        );
        const refused = verdicts.filter((v) => !v.ok);
        if (evaluatePodSecurity(p, policy).length === 0) {
          admitted++;
          expect(refused).toEqual([]);
        } else expect(refused.length).toBeGreaterThan(0); // and what admission refuses, the gate refuses too
      }),
      { numRuns: 120 },
    );
    // restricted needs seccompProfile, which these generated pods do not set: admission refuses every pod there.
    if (level !== "restricted") expect(admitted).toBeGreaterThan(0);
  });

  it("forwards exactly what it checked: the re-encoded request, into the full sandbox id", async () => {
    const p = pod({
      volumes: [{ name: "s", emptyDir: {} }],
      containers: [{ name: "main", image: "localhost/busybox:1", volumeMounts: [{ name: "s", mountPath: "/s" }] }],
    });
    const { gate } = gateFor({ level: "baseline", hostPathAllow: [] }, generatePodSandboxConfig(p, 0, node));
    for (const r of podsyncRequests(p)) {
      const v = await gate.admit(r.path, r.body, Date.now() + 1000);
      expect(v).toEqual({ ok: true, body: r.body });
    }
  });
});

describe("the gate refuses raw calls beyond the node policy", () => {
  const p = pod({
    volumes: [{ name: "s", emptyDir: {} }],
    containers: [{ name: "main", image: "localhost/busybox:1", volumeMounts: [{ name: "s", mountPath: "/s" }] }],
  });
  const sandbox = generatePodSandboxConfig(p, 0, node);
  const containerBody = (mutate: (c: api.ContainerConfig) => void, id = SANDBOX_ID) => {
    const c = generateContainerConfig(p, p.spec.containers[0]!, 0, "sha256:x", node);
    mutate(c);
    return Buffer.from(
      toBinary(
        api.CreateContainerRequestSchema,
        create(api.CreateContainerRequestSchema, { podSandboxId: id, config: c }),
      ),
    );
  };

  it("a privileged container: PERMISSION_DENIED with the HTTP 403's wording, each field and rule", async () => {
    const { gate } = gateFor({ level: "baseline", hostPathAllow: [] }, sandbox);
    const v = await gate.admit(
      CREATE_CONTAINER,
      containerBody((c) => (c.linux!.securityContext!.privileged = true)),
      Date.now() + 1000,
    );
    expect(v).toEqual({
      ok: false,
      code: 7,
      details:
        'violates PodSecurity "baseline:latest": privileged (container "main" must not set securityContext.privileged=true); refused fields: config.linux.securityContext.privileged (privileged)',
      rules: ["privileged"],
    });
  });

  it("the sandbox config a CreateContainer carries (containerd reads it) must pass as at RunPodSandbox", async () => {
    const { gate } = gateFor({ level: "baseline", hostPathAllow: [] }, sandbox);
    const claimed = structuredClone(sandbox);
    claimed.linux!.securityContext!.privileged = true;
    const c = generateContainerConfig(p, p.spec.containers[0]!, 0, "sha256:x", node);
    const body = Buffer.from(
      toBinary(
        api.CreateContainerRequestSchema,
        create(api.CreateContainerRequestSchema, { podSandboxId: SANDBOX_ID, config: c, sandboxConfig: claimed }),
      ),
    );
    const v = await gate.admit(CREATE_CONTAINER, body, Date.now() + 1000);
    expect(v).toMatchObject({ ok: false, code: 7, rules: ["privileged"] });
    expect(!v.ok && v.details).toContain("sandboxConfig.linux.securityContext.privileged (privileged)");
  });

  it("a runtime handler (podsync never picks one) is refused below privileged", async () => {
    const body = (runtimeHandler: string) =>
      Buffer.from(
        toBinary(
          api.RunPodSandboxRequestSchema,
          create(api.RunPodSandboxRequestSchema, { config: sandbox, runtimeHandler }),
        ),
      );
    const { gate } = gateFor({ level: "baseline", hostPathAllow: [] }, sandbox);
    expect(await gate.admit(RUN_POD_SANDBOX, body("kata"), Date.now() + 1000)).toMatchObject({
      ok: false,
      code: 7,
      rules: ["runtimeHandler"],
    });
    expect((await gate.admit(RUN_POD_SANDBOX, body(""), Date.now() + 1000)).ok).toBe(true);
  });

  it("a sandbox the runtime answers for without a status: the container is refused (never checked without its sandbox)", async () => {
    const upstream: UpstreamCall = async () => ({
      code: 0,
      details: "",
      body: Buffer.from(toBinary(api.PodSandboxStatusResponseSchema, create(api.PodSandboxStatusResponseSchema, {}))),
    });
    const gate = createPolicyGate(
      { policy: { level: "baseline", hostPathAllow: [] }, rootDir: node.rootDir, podLogsDir: node.podLogsDir },
      upstream,
    );
    expect(
      await gate.admit(
        CREATE_CONTAINER,
        containerBody(() => {}),
        Date.now() + 1000,
      ),
    ).toMatchObject({ ok: false, code: 5 });
  });

  it("a container in a host-network sandbox is refused from the sandbox's status, whatever its own config says", async () => {
    const hostSandbox = generatePodSandboxConfig(pod({ hostNetwork: true }, { uid: p.metadata.uid }), 0, node);
    const { gate } = gateFor({ level: "baseline", hostPathAllow: [] }, hostSandbox);
    const v = await gate.admit(
      CREATE_CONTAINER,
      containerBody(() => {}),
      Date.now() + 1000,
    );
    expect(v).toMatchObject({ ok: false, code: 7, rules: ["hostNamespaces"] });
    expect(!v.ok && v.details).toContain(
      "host namespaces (hostNetwork=true (the pod sandbox's)); refused fields: sandbox.linux.namespaces.options.network (hostNamespaces)",
    );
  });

  it("another pod's emptyDir, a path escaping the pod dir, and a sandbox uid that is not one path component", async () => {
    const { gate } = gateFor({ level: "baseline", hostPathAllow: [] }, sandbox);
    for (const hostPath of [
      `${node.rootDir}/pods/other/volumes/x`,
      `${node.rootDir}/pods/${p.metadata.uid}/containers/../../../etc`,
    ]) {
      const v = await gate.admit(
        CREATE_CONTAINER,
        containerBody((c) => (c.mounts[0]!.hostPath = hostPath)),
        Date.now() + 1000,
      );
      expect(v, hostPath).toMatchObject({ ok: false, code: 7, rules: ["hostPathVolumes"] });
    }
    const dotted = structuredClone(sandbox);
    dotted.metadata!.uid = "..";
    const { gate: g2 } = gateFor({ level: "baseline", hostPathAllow: [] }, dotted);
    const mount = (c: api.ContainerConfig) => (c.mounts[0]!.hostPath = `${node.rootDir}/pods/../volumes/x`);
    expect(await g2.admit(CREATE_CONTAINER, containerBody(mount), Date.now() + 1000)).toMatchObject({
      ok: false,
      code: 7,
    });
  });

  it("a path inside an emptyDir (where a container may have planted a symlink) is refused; kubelet's subPath bind targets and hosts file are admitted", async () => {
    const { gate } = gateFor({ level: "baseline", hostPathAllow: [] }, sandbox);
    const pd = `${node.rootDir}/pods/${p.metadata.uid}`;
    const verdict = async (hostPath: string) =>
      (
        await gate.admit(
          CREATE_CONTAINER,
          containerBody((c) => (c.mounts[0]!.hostPath = hostPath)),
          Date.now() + 1000,
        )
      ).ok;
    for (const bad of [
      `${pd}/volumes/kubernetes.io~empty-dir/s/escape`,
      `${pd}/volumes/kubernetes.io~empty-dir`,
      `${pd}/volumes`,
      `${pd}/containers/main`,
      `${pd}/containers/main/0a1b2c3d/x`,
      `${pd}/volume-subpaths/s/main/0/escape`,
      `${pd}/volumes/kubernetes.io~empty-dir/./s`,
      `${pd}/etc-hosts/x`,
      pd,
    ])
      expect(await verdict(bad), bad).toBe(false);
    // The kubelet-managed hosts file is podsync's own (a file in the pod dir, which no container can write).
    for (const good of [
      `${pd}/volumes/kubernetes.io~empty-dir/s`,
      `${pd}/containers/main/0a1b2c3d`,
      `${pd}/volume-subpaths/s/main/0`,
      `${pd}//volumes/kubernetes.io~empty-dir/s/`,
      `${pd}/etc-hosts`,
    ])
      expect(await verdict(good), good).toBe(true);
  });

  it("a field the gate's schema does not know is refused, not forwarded unchecked", async () => {
    const { gate } = gateFor({ level: "baseline", hostPathAllow: [] }, sandbox);
    // Field 99 of LinuxContainerSecurityContext, varint 1, as a newer runtime might read it.
    const c = generateContainerConfig(p, p.spec.containers[0]!, 0, "sha256:x", node);
    (c.linux!.securityContext as { $unknown?: unknown }).$unknown = [
      { no: 99, wireType: 0, data: new Uint8Array([1]) },
    ];
    const body = Buffer.from(
      toBinary(
        api.CreateContainerRequestSchema,
        create(api.CreateContainerRequestSchema, { podSandboxId: SANDBOX_ID, config: c }),
      ),
    );
    const v = await gate.admit(CREATE_CONTAINER, body, Date.now() + 1000);
    expect(v).toMatchObject({ ok: false, code: 7, rules: ["unknownField"] });
    expect(!v.ok && v.details).toContain("config.linux.securityContext#99");
  });

  it("an unknown sandbox keeps the runtime's NOT_FOUND; a known one is looked up once", async () => {
    const { gate, lookups } = gateFor({ level: "baseline", hostPathAllow: [] }, sandbox);
    expect(
      await gate.admit(
        CREATE_CONTAINER,
        containerBody(() => {}, "nope"),
        Date.now() + 1000,
      ),
    ).toMatchObject({ ok: false, code: 5 });
    for (let i = 0; i < 3; i++)
      expect(
        (
          await gate.admit(
            CREATE_CONTAINER,
            containerBody(() => {}),
            Date.now() + 1000,
          )
        ).ok,
      ).toBe(true);
    expect(lookups()).toBe(2);
  });

  it("garbage bytes are INVALID_ARGUMENT; privileged with no allow-list forwards untouched", async () => {
    const { gate } = gateFor({ level: "baseline", hostPathAllow: [] }, sandbox);
    expect(await gate.admit(RUN_POD_SANDBOX, Buffer.from([0x0a, 0xff, 0xff, 0xff]), Date.now() + 1000)).toMatchObject({
      ok: false,
      code: 3,
    });
    const open = gateFor({ level: "privileged", hostPathAllow: [] }, sandbox);
    const body = containerBody((c) => (c.linux!.securityContext!.privileged = true));
    expect(await open.gate.admit(CREATE_CONTAINER, body, Date.now() + 1000)).toEqual({ ok: true, body });
    expect(open.lookups()).toBe(0);
  });
});

describe("through a proxy (in process, fake runtime)", () => {
  let fake: FakeServer;
  const proxies: Partial<Record<PolicyLevel, RunningProxy>> = {};
  const logs: Record<string, unknown>[] = [];
  const TOKEN = "gate-token";

  const suite = useFakeCri();
  beforeAll(async () => {
    ({ fake } = suite);
    for (const level of POLICY_LEVELS)
      proxies[level] = await startProxy({
        upstream: fake.endpoint,
        grpcListen: "127.0.0.1:0",
        grpcWebListen: "127.0.0.1:0",
        token: TOKEN,
        policy: { level, hostPathAllow: ["/srv/data"] },
        rootDir: node.rootDir,
        policyLogsDir: node.podLogsDir,
        log: (r) => logs.push(r),
      });
  });
  afterAll(async () => {
    for (const p of Object.values(proxies)) await p!.shutdown(100);
  });

  const web = (level: PolicyLevel) =>
    connectGrpcWeb({ baseUrl: `http://127.0.0.1:${proxies[level]!.grpcWebPort}`, token: TOKEN, timeoutMs: 2000 });

  it.each<[PolicyLevel, Partial<PodInput["spec"]>]>([
    [
      "privileged",
      {
        hostNetwork: true,
        volumes: [{ name: "h", hostPath: { path: "/srv/data/app" } }],
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            securityContext: { privileged: true },
            volumeMounts: [{ name: "h", mountPath: "/h" }],
          },
        ],
      },
    ],
    [
      "baseline",
      {
        volumes: [
          { name: "s", emptyDir: {} },
          { name: "h", hostPath: { path: "/srv/data" } },
        ],
        initContainers: [
          {
            name: "init",
            image: "localhost/busybox:1",
            command: ["true"],
            volumeMounts: [{ name: "s", mountPath: "/s" }],
          },
        ],
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            volumeMounts: [
              { name: "s", mountPath: "/s" },
              { name: "h", mountPath: "/h" },
            ],
          },
        ],
      },
    ],
  ])(
    "a podsync sync of a pod admitted at %s passes the gate (emptyDir, allow-listed hostPath, termination-message files)",
    async (level, spec) => {
      const p = pod(spec);
      expect(evaluatePodSecurity(p, { level, hostPathAllow: ["/srv/data"] })).toEqual([]);
      const c = web(level);
      const r = await syncOnce(c, p, {
        node,
        terminationFiles: fakeTerminationFiles,
        pullBackOff: new MemoryPullBackOff(),
      });
      c.close();
      expect(r.steps.filter((s) => !s.ok)).toEqual([]);
      expect(r.steps.map((s) => s.action)[0]).toBe("CreatePodSandbox");
      expect(
        [...fake.runtime.containers.values()].filter((x) => x.config.labels["io.kubernetes.pod.uid"] === p.metadata.uid)
          .length,
      ).toBeGreaterThan(0);
    },
  );

  it("a privileged pod synced through a baseline proxy: refused at RunPodSandbox, nothing made, on both fronts", async () => {
    const p = pod({
      hostPID: true,
      containers: [{ name: "main", image: "localhost/busybox:1", securityContext: { privileged: true } }],
    });
    const before = fake.runtime.sandboxes.size;
    const grpcClient = connectGrpc({
      endpoint: `127.0.0.1:${proxies.baseline!.grpcPort}`,
      token: TOKEN,
      timeoutMs: 2000,
    });
    for (const c of [web("baseline"), grpcClient]) {
      const e = (await c
        .runPodSandbox({ config: generatePodSandboxConfig(p, 0, node) })
        .catch((x: unknown) => x)) as CriError;
      c.close();
      expect(e.code).toBe(7);
      expect(e.details).toMatch(
        /^violates PodSecurity "baseline:latest": host namespaces \(hostPID=true\), privileged \(pod sandbox must not set privileged=true\); refused fields: config\.linux\.securityContext\.namespaceOptions\.pid \(hostNamespaces\), config\.linux\.securityContext\.privileged \(privileged\)$/,
      );
    }
    expect(fake.runtime.sandboxes.size).toBe(before);
    expect(
      logs.filter((l) => l["method"] === RUN_POD_SANDBOX && l["code"] === "PERMISSION_DENIED").at(-1),
    ).toMatchObject({ policy: ["hostNamespaces", "privileged"] });
  });

  it("restricted: a sandbox logging outside the node's pod logs dir is refused", async () => {
    const s = generatePodSandboxConfig(pod({}, { uid: uid("gate") }), 0, { ...node, podLogsDir: "/etc" });
    const c = web("restricted");
    const e = (await c.runPodSandbox({ config: s }).catch((x: unknown) => x)) as CriError;
    c.close();
    expect(e.code).toBe(7);
    expect(e.details).toContain('log path (pod must log under "/srv/podsync-logs")');
  });
});
