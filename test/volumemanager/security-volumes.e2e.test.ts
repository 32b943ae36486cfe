// Security context and volumes on a REAL containerd, each checked from inside the container (CRI ExecSync):
// seccomp mode, capabilities, a safe sysctl, a tmpfs emptyDir and its size, a claim's data across a pod's
// delete and re-create, and a hostPath type check failing before anything is created.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { MemoryPullBackOff } from "../../src/container/backoff.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime, type PodRuntime } from "../../src/kubelet/pod-runtime.js";
import { evaluatePodSecurity } from "../../src/auth/pod-security.js";
import { nodeVolumeHost } from "../../src/host/volumes/volume-host.js";
import { nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import type { Pod } from "../../src/pod/schema.js";
import { pod, uid, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const root = mkdtempSync(join(tmpdir(), "podsync-secctx-e2e-"));
let cri: CriClient;
let rt: PodRuntime;
const made = new Set<string>();

const track = (p: Pod) => (made.add(p.metadata.uid), p);
const exec = async (p: Pod, container: string, command: string[]) => {
  const r = await rt.exec(p.metadata.uid, { container, command, timeoutSeconds: 10, maxOutputBytes: 65536 });
  return r.stdout.data;
};
const hostMounts = () => readFileSync("/proc/self/mountinfo", "utf8");

describe.skipIf(skip)("security context and volumes on real containerd", () => {
  beforeAll(() => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    rt = createPodRuntime(cri, {
      pullBackOff: new MemoryPullBackOff(),
      volumeHost: nodeVolumeHost,
      podDirs: nodePodDirs,
      node: { ...defaultNodeConfig(), rootDir: root, podLogsDir: join(root, "logs"), seccompDefault: true },
    });
  });
  afterAll(async () => {
    await deleteAll(rt, made);
    cri?.close();
    // Nothing of ours may stay mounted before the directory goes.
    if (!hostMounts().includes(root)) rmSync(root, { recursive: true, force: true });
  });

  it("seccomp (node default 2, Unconfined 0, a Localhost profile from <rootDir>/seccomp enforced), capabilities (drop [all] → CapEff 0; cap_net_admin works), a safe sysctl, a sized tmpfs; the tmpfs is unmounted with the pod dir on DELETE", async () => {
    const sleep = ["sleep", "3600"];
    const p = track(
      pod({
        securityContext: { sysctls: [{ name: "net.ipv4.ip_local_port_range", value: "40000 50000" }] },
        volumes: [{ name: "mem", emptyDir: { medium: "Memory", sizeLimit: "8Mi" } }],
        containers: [
          {
            name: "dflt",
            image: "localhost/busybox:1",
            command: sleep,
            volumeMounts: [{ name: "mem", mountPath: "/mem" }],
          },
          {
            name: "unconf",
            image: "localhost/busybox:1",
            command: sleep,
            securityContext: { seccompProfile: { type: "Unconfined" } },
          },
          {
            name: "nocaps",
            image: "localhost/busybox:1",
            command: sleep,
            securityContext: { capabilities: { drop: ["all"] } },
          },
          {
            name: "netadm",
            image: "localhost/busybox:1",
            command: sleep,
            securityContext: { capabilities: { add: ["cap_net_admin"] } },
          },
          {
            name: "local",
            image: "localhost/busybox:1",
            command: sleep,
            securityContext: { seccompProfile: { type: "Localhost", localhostProfile: "no-mkdir.json" } },
          },
        ],
      }),
    );
    // Unconfined needs a node policy that allows it: privileged does, the default (baseline) does not.
    expect(evaluatePodSecurity(p, { level: "privileged", hostPathAllow: [] })).toEqual([]);
    expect(evaluatePodSecurity(p, { level: "baseline", hostPathAllow: [] }).map((v) => v.rule)).toContain(
      "seccompProfile_baseline",
    );

    // A Localhost profile is a file under <rootDir>/seccomp (kubelet's <root-dir>/seccomp): this one refuses mkdir.
    mkdirSync(join(root, "seccomp"), { recursive: true });
    writeFileSync(
      join(root, "seccomp", "no-mkdir.json"),
      JSON.stringify({
        defaultAction: "SCMP_ACT_ALLOW",
        syscalls: [{ names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO" }],
      }),
    );
    const r = await rt.sync(p);
    expect(r.steps.filter((s) => !s.ok)).toEqual([]);
    const status = (c: string) => exec(p, c, ["cat", "/proc/self/status"]);
    const field = (text: string, name: string) => new RegExp(`^${name}:\\s*(\\S+)`, "m").exec(text)?.[1];

    expect(field(await status("dflt"), "Seccomp")).toBe("2");
    expect(field(await status("unconf"), "Seccomp")).toBe("0");
    expect(field(await status("local"), "Seccomp")).toBe("2");
    expect(await exec(p, "local", ["sh", "-c", "mkdir /tmp/x 2>/dev/null; echo $?"])).toBe("1\n");
    expect(await exec(p, "dflt", ["sh", "-c", "mkdir /tmp/x; echo $?"])).toBe("0\n");
    expect(field(await status("nocaps"), "CapEff")).toBe("0000000000000000");
    expect(BigInt(`0x${field(await status("netadm"), "CapEff")}`) & (1n << 12n)).toBe(1n << 12n); // CAP_NET_ADMIN is bit 12
    expect((await exec(p, "dflt", ["cat", "/proc/sys/net/ipv4/ip_local_port_range"])).trim().split(/\s+/)).toEqual([
      "40000",
      "50000",
    ]);

    const tmpfs = (await exec(p, "dflt", ["cat", "/proc/mounts"])).split("\n").find((l) => l.split(" ")[1] === "/mem");
    expect(tmpfs).toMatch(/^tmpfs \/mem tmpfs \S*size=8192k/);
    const volDir = join(root, "pods", p.metadata.uid, "volumes", "kubernetes.io~empty-dir", "mem");
    expect(hostMounts()).toContain(` ${volDir} `);

    const d = await rt.delete(p.metadata.uid);
    expect(d.ok).toBe(true);
    expect(d.steps.find((s) => s.action === "RemovePodDirs")).toMatchObject({ ok: true });
    expect(hostMounts()).not.toContain(volDir);
    made.delete(p.metadata.uid);
  });

  it("a persistentVolumeClaim's data survives the pod's delete and re-create; the claim is listed and removable once unused", async () => {
    const claimName = `data-${uid("c")
      .slice(-10)
      .replace(/[^a-z0-9]/g, "")}`;
    const spec = (command: string[]) => ({
      restartPolicy: "Never" as const,
      securityContext: { fsGroup: 2000 },
      volumes: [{ name: "data", persistentVolumeClaim: { claimName } }],
      containers: [
        { name: "main", image: "localhost/busybox:1", command, volumeMounts: [{ name: "data", mountPath: "/data" }] },
      ],
    });
    const first = track(pod(spec(["sh", "-c", "echo kept-across-pods > /data/file && sleep 3600"])));
    expect((await rt.sync(first)).steps.filter((s) => !s.ok)).toEqual([]);
    await expect.poll(() => exec(first, "main", ["cat", "/data/file"]), { timeout: 10_000 }).toBe("kept-across-pods\n");
    expect((await rt.claims()).claims.find((c) => c.name === claimName)?.usedBy.map((u) => u.uid)).toEqual([
      first.metadata.uid,
    ]);
    await expect(rt.removeClaim("default", claimName)).rejects.toThrow(/is used by pod/);
    await rt.delete(first.metadata.uid);
    made.delete(first.metadata.uid);

    const second = track(pod(spec(["sleep", "3600"])));
    expect((await rt.sync(second)).steps.filter((s) => !s.ok)).toEqual([]);
    expect(await exec(second, "main", ["cat", "/data/file"])).toBe("kept-across-pods\n");
    // fsGroup: the claim and its files belong to group 2000, the directory setgid (kubelet's volume ownership).
    expect(
      (await exec(second, "main", ["ls", "-ldn", "/data"])).split(/\s+/).filter((_, i) => i === 0 || i === 3),
    ).toEqual(["drwxrwsrwx", "2000"]);
    expect((await exec(second, "main", ["ls", "-ln", "/data/file"])).split(/\s+/)[3]).toBe("2000");
    await rt.delete(second.metadata.uid);
    made.delete(second.metadata.uid);

    await rt.removeClaim("default", claimName);
    expect((await rt.claims()).claims.map((c) => c.name)).not.toContain(claimName);
  });

  it("a hostPath of type Directory that is a file fails kubelet's type check; no sandbox or container is made", async () => {
    const file = join(root, "not-a-dir");
    writeFileSync(file, "x");
    const p = track(
      pod({
        volumes: [{ name: "h", hostPath: { path: file, type: "Directory" } }],
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            command: ["sleep", "3600"],
            volumeMounts: [{ name: "h", mountPath: "/h" }],
          },
        ],
      }),
    );
    const r = await rt.sync(p);
    expect(r.ok).toBe(false);
    expect(r.steps.map((s) => [s.action, s.error, s.message])).toEqual([
      [
        "MountVolumes",
        "FailedMount",
        `MountVolume.SetUp failed for volume "h" : hostPath type check failed: ${file} is not a directory`,
      ],
    ]);
    expect(await rt.status(p.metadata.uid)).toBeUndefined();
    made.delete(p.metadata.uid);
  });
});
