// The node policy at cri-proxy, as its own process in front of the REAL containerd: a podsync sync through it
// works at baseline (emptyDir and termination-message mounts included), and RunPodSandbox / CreateContainer
// calls that exceed baseline are refused with PERMISSION_DENIED on both fronts, leaving nothing on containerd.
import { spawn, type ChildProcess } from "node:child_process";
import { lstatSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import * as api from "../../src/gen/runtime/v1/api_pb.js";
import type { CriClient } from "../../src/cri/client.js";
import type { CriError } from "../../src/cri/errors.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { connectGrpcWeb } from "../../src/cri/grpc-web-transport.js";
import { nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { nodeTerminationFiles } from "../../src/host/volumes/termination-files.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { generateContainerConfig, generatePodSandboxConfig } from "../../src/kuberuntime/config/config.js";
import { defaultNodeConfig, type NodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import type { Pod } from "../../src/pod/schema.js";
import { pod, syncOnce, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const TOKEN = "policy-e2e-token";
const dir = mkdtempSync(join(tmpdir(), "podsync-proxy-policy-"));
const node: NodeConfig = { ...defaultNodeConfig(), rootDir: join(dir, "root"), podLogsDir: join(dir, "logs") };

const runProxy = (args: string[], env: Record<string, string> = {}): ChildProcess =>
  spawn(process.execPath, ["bin/cri-proxy.mjs", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...env },
  });

let proc: ChildProcess;
let direct: CriClient;
let viaWeb: CriClient;
let viaGrpc: CriClient;
const made: Pod[] = [];

const denied = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("the proxy forwarded a call the node policy forbids");
    },
    (e: unknown) => e as CriError,
  );
const sandboxesOf = async (p: Pod) =>
  (await direct.listPodSandbox({ filter: { labelSelector: { "io.kubernetes.pod.uid": p.metadata.uid } } })).items;
const containersIn = async (sandboxId: string) =>
  (await direct.listContainers({ filter: { podSandboxId: sandboxId } })).containers;

describe.skipIf(skip)("cri-proxy enforces the node policy (a real proxy process, real containerd)", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the cri-proxy policy e2e: ${setupError}`);
    writeFileSync(join(dir, "token"), TOKEN);
    // The policy and the node layout come from the node's own setting names; baseline is the default.
    proc = runProxy(
      [
        "--runtime",
        endpoint,
        "--listen",
        "127.0.0.1:0",
        "--grpc-web-listen",
        "127.0.0.1:0",
        "--token-file",
        join(dir, "token"),
      ],
      { PODSYNC_ROOT_DIR: node.rootDir, PODSYNC_POD_LOGS_DIR: node.podLogsDir },
    );
    let stderr = "";
    proc.stderr!.on("data", (d) => (stderr += String(d)));
    for (let i = 0; i < 600 && !/gRPC-Web on 127\.0\.0\.1:\d+/.test(stderr); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(stderr).toContain("node policy baseline");
    viaGrpc = connectGrpc({
      endpoint: `127.0.0.1:${/gRPC on 127\.0\.0\.1:(\d+)/.exec(stderr)![1]}`,
      token: TOKEN,
      timeoutMs: 30_000,
    });
    viaWeb = connectGrpcWeb({
      baseUrl: `http://127.0.0.1:${/gRPC-Web on 127\.0\.0\.1:(\d+)/.exec(stderr)![1]}`,
      token: TOKEN,
      timeoutMs: 30_000,
    });
    direct = connectGrpc({ endpoint, timeoutMs: 30_000 });
  }, 60_000);
  afterAll(async () => {
    await deleteAll(
      createPodRuntime(direct, { node, terminationFiles: nodeTerminationFiles, podDirs: nodePodDirs }),
      made.map((p) => p.metadata.uid),
    );
    viaWeb?.close();
    viaGrpc?.close();
    direct?.close();
    proc?.kill("SIGTERM");
  });

  const track = (p: Pod) => (made.push(p), p);

  it("a podsync sync through it works at baseline; containers beyond baseline are refused in that sandbox and never made", async () => {
    // The container plants a symlink to the host's / in its emptyDir (the CVE-2017-1002101 set-up).
    const p = track(
      pod({
        volumes: [{ name: "scratch", emptyDir: {} }],
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "IfNotPresent",
            command: ["sh", "-c", "ln -s / /scratch/escape && sleep 3600"],
            volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
          },
        ],
      }),
    );
    const r = await syncOnce(viaWeb, p, {
      node,
      terminationFiles: nodeTerminationFiles,
      pullBackOff: new MemoryPullBackOff(),
    });
    expect(r.steps.filter((s) => !s.ok)).toEqual([]);
    expect(r.steps.map((s) => s.action)).toEqual(["CreatePodSandbox", "StartContainer"]);
    const [sandbox] = await sandboxesOf(p);
    expect((await containersIn(sandbox!.id)).map((c) => [c.metadata?.name, c.state])).toEqual([
      ["main", api.ContainerState.CONTAINER_RUNNING],
    ]);

    const emptyDir = join(node.rootDir, "pods", p.metadata.uid, "volumes/kubernetes.io~empty-dir/scratch");
    for (let i = 0; i < 100 && !lstatSync(`${emptyDir}/escape`, { throwIfNoEntry: false })?.isSymbolicLink(); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(lstatSync(`${emptyDir}/escape`).isSymbolicLink()).toBe(true);
    const image = (await direct.imageStatus({ image: { image: "localhost/busybox:1" } })).image!.id;
    const config = (mutate: (c: api.ContainerConfig) => void) => {
      const c = generateContainerConfig(p, { ...p.spec.containers[0]!, name: "evil" }, 0, image, node);
      mutate(c);
      return c;
    };
    const attempts: [string, api.ContainerConfig, CriClient][] = [
      ["privileged", config((c) => (c.linux!.securityContext!.privileged = true)), viaWeb],
      [
        "hostPathVolumes",
        config((c) => c.mounts.push(create(api.MountSchema, { containerPath: "/host", hostPath: "/" }))),
        viaGrpc,
      ],
      [
        "hostNamespaces",
        config((c) => (c.linux!.securityContext!.namespaceOptions!.pid = api.NamespaceMode.NODE)),
        viaWeb,
      ],
      [
        "capabilities_baseline",
        config((c) => (c.linux!.securityContext!.capabilities!.addCapabilities = ["SYS_ADMIN"])),
        viaGrpc,
      ],
      ["hostPathVolumes", config((c) => (c.mounts[0]!.hostPath = `${emptyDir}/escape`)), viaWeb],
    ];
    for (const [rule, c, via] of attempts) {
      const e = await denied(
        via.createContainer({
          podSandboxId: sandbox!.id,
          config: c,
          sandboxConfig: generatePodSandboxConfig(p, 0, node),
        }),
      );
      expect(e.code, rule).toBe(7);
      expect(e.details, rule).toMatch(
        new RegExp(`^violates PodSecurity "baseline:latest": .*refused fields: .*\\(${rule}\\)`),
      );
    }
    expect((await containersIn(sandbox!.id)).map((c) => c.metadata?.name)).toEqual(["main"]);
  }, 60_000);

  it("a subPath through the proxy: podsync's safe bind target passes, the plain join into the volume does not", async () => {
    // A Node whose runtime endpoint is a cri-proxy binds subPaths on the node itself (volume-subpaths/...).
    const p = track(
      pod({
        volumes: [{ name: "scratch", emptyDir: {} }],
        initContainers: [
          {
            name: "init",
            image: "localhost/busybox:1",
            imagePullPolicy: "IfNotPresent",
            command: ["sh", "-c", "mkdir -p /scratch/sub && echo hi > /scratch/sub/f"],
            volumeMounts: [{ name: "scratch", mountPath: "/scratch" }],
          },
        ],
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "IfNotPresent",
            command: ["sleep", "3600"],
            volumeMounts: [{ name: "scratch", mountPath: "/data", subPath: "sub" }],
          },
        ],
      }),
    );
    const opts = {
      node,
      terminationFiles: nodeTerminationFiles,
      podDirs: nodePodDirs,
      pullBackOff: new MemoryPullBackOff(),
    };
    await syncOnce(viaWeb, p, opts);
    for (
      let i = 0;
      i < 100 &&
      !(await syncOnce(viaWeb, p, opts)).steps.some((s) => s.action === "StartContainer" && s.target === "main");
      i++
    )
      await new Promise((r) => setTimeout(r, 100));
    const [sandbox] = await sandboxesOf(p);
    const main = (await containersIn(sandbox!.id)).find((c) => c.metadata?.name === "main");
    expect(main?.state).toBe(api.ContainerState.CONTAINER_RUNNING);
    expect(
      new TextDecoder().decode(
        (await direct.execSync({ containerId: main!.id, cmd: ["cat", "/data/f"], timeout: 10n })).stdout,
      ),
    ).toBe("hi\n");
    // The same mount as the plain join (what a subPath was before the safe bind) is inside the volume: refused.
    const image = (await direct.imageStatus({ image: { image: "localhost/busybox:1" } })).image!.id;
    const c = generateContainerConfig(
      p,
      { ...p.spec.containers[0]!, name: "joined", volumeMounts: [] },
      0,
      image,
      node,
    );
    c.mounts.push(
      create(api.MountSchema, {
        containerPath: "/data",
        hostPath: join(node.rootDir, "pods", p.metadata.uid, "volumes/kubernetes.io~empty-dir/scratch/sub"),
      }),
    );
    expect((await denied(viaWeb.createContainer({ podSandboxId: sandbox!.id, config: c }))).code).toBe(7);
  }, 60_000);

  it("a hostPID / hostNetwork / privileged RunPodSandbox is refused on both fronts, and no sandbox is made", async () => {
    const p = track(
      pod({
        hostNetwork: true,
        hostPID: true,
        containers: [{ name: "main", image: "localhost/busybox:1", securityContext: { privileged: true } }],
      }),
    );
    for (const via of [viaWeb, viaGrpc]) {
      const e = await denied(via.runPodSandbox({ config: generatePodSandboxConfig(p, 0, node) }));
      expect(e.code).toBe(7);
      expect(e.details).toContain(
        'violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true, hostPID=true), privileged (pod sandbox must not set privileged=true)',
      );
      expect(e.details).toContain("config.linux.securityContext.namespaceOptions.pid (hostNamespaces)");
    }
    // A podsync sync through the proxy reports the refusal as its CreatePodSandbox step, with the gRPC code.
    const r = await syncOnce(viaWeb, p, { node, pullBackOff: new MemoryPullBackOff() });
    expect(r.steps).toMatchObject([{ action: "CreatePodSandbox", ok: false, grpcCode: "PERMISSION_DENIED" }]);
    expect(await sandboxesOf(p)).toEqual([]);
  }, 60_000);

  it("a container for a host-network sandbox made outside the proxy is refused from the sandbox's status", async () => {
    // As if made by an earlier privileged podsync: containerd reports its namespaces in PodSandboxStatus.
    const p = track(pod({ hostNetwork: true }));
    const { podSandboxId } = await direct.runPodSandbox({ config: generatePodSandboxConfig(p, 0, node) });
    const c = generateContainerConfig(
      p,
      p.spec.containers[0]!,
      0,
      (await direct.imageStatus({ image: { image: "localhost/busybox:1" } })).image!.id,
      node,
    );
    c.linux!.securityContext!.namespaceOptions!.network = api.NamespaceMode.POD; // asks for no host network itself
    const e = await denied(viaWeb.createContainer({ podSandboxId, config: c }));
    expect(e.code).toBe(7);
    expect(e.details).toContain("sandbox.linux.namespaces.options.network (hostNamespaces)");
    expect(await containersIn(podSandboxId)).toEqual([]);
  }, 60_000);

  it("a bad policy flag or variable is a start-up error naming it", async () => {
    for (const [args, env, named] of [
      [["--policy", "lax"], {}, "--policy"],
      [["--policy-hostpath-allow", "/srv,relative"], {}, "--policy-hostpath-allow"],
      [[], { PODSYNC_POLICY: "none" }, "PODSYNC_POLICY"],
      [[], { PODSYNC_ROOT_DIR: "var/lib" }, "PODSYNC_ROOT_DIR"],
    ] as [string[], Record<string, string>, string][]) {
      const p = runProxy(
        ["--runtime", "unix:///nonexistent.sock", "--insecure-no-auth", "--grpc-web-listen", "127.0.0.1:0", ...args],
        env,
      );
      let err = "";
      p.stderr!.on("data", (d) => (err += String(d)));
      const code = await new Promise<number | null>((r) => p.on("exit", (c) => r(c)));
      expect(code, named).toBe(2);
      expect(err).toContain(`cri-proxy: ${named}:`);
    }
  }, 60_000);
});
