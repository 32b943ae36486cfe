// Pod fields a single node honours (issue #23) on a REAL containerd, through the HTTP server with the node
// agent's loop running: each effect read inside the container (files it writes into a hostPath directory of
// the test's) or from the v1 status.
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { hostDir, hostDirSuite, readIn as read, shContainer as c } from "../support/hostdir-pods.js";
import { until } from "../support/wait.js";

const skip = inject("skipE2E");

describe.skipIf(skip)("pod fields on real containerd", () => {
  const { podInput, sync, get } = hostDirSuite();

  it("shareProcessNamespace: one container sees the other's process; setHostnameAsFQDN: the kernel hostname is the FQDN; hostAliases: kubelet's /etc/hosts; subPathExpr: the mount is the subdirectory named from the env", async () => {
    const dir = hostDir();
    const p = podInput("fields", dir, {
      terminationGracePeriodSeconds: 2,
      shareProcessNamespace: true,
      hostname: "web",
      subdomain: "sub",
      setHostnameAsFQDN: true,
      hostAliases: [{ ip: "10.1.2.3", hostnames: ["foo.local", "bar"] }],
      containers: [
        c("a", "exec sleep 3600"),
        c(
          "b",
          "echo hi > /sub/file; while true; do ps > /h/ps; cat /proc/sys/kernel/hostname > /h/hostname; cat /etc/hosts > /h/hosts; sleep 1; done",
          {
            env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
            volumeMounts: [
              { name: "h", mountPath: "/h" },
              { name: "h", mountPath: "/sub", subPathExpr: "out/$(POD_NAME)" },
            ],
          },
        ),
      ],
    });
    await sync(p);
    // b writes ps, hostname, hosts in turn each second: wait for a round in which it saw a.
    const ps = await until(
      "b to see a's sleep",
      async () => (read(dir, "ps") ?? "").includes("sleep 3600") && read(dir, "hosts") && read(dir, "ps"),
    );
    expect(ps).toMatch(/sleep 3600/);
    expect(read(dir, "hostname")).toBe("web.sub.default.svc.cluster.local\n");
    const podIP = (await get(p.metadata.uid)).status.podIP;
    expect(read(dir, "hosts")).toBe(
      "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
        `${podIP}\tweb.sub.default.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar\n`,
    );
    expect(read(join(dir, "out", "fields"), "file")).toBe("hi\n");
  });

  it("activeDeadlineSeconds: the pod is killed once active that long, Failed with reason DeadlineExceeded, and not restarted", async () => {
    const dir = hostDir();
    const p = podInput("deadline", dir, {
      terminationGracePeriodSeconds: 2,
      activeDeadlineSeconds: 2,
      containers: [c("main", "trap 'exit 0' TERM; while true; do sleep 1; done")],
    });
    await sync(p);
    const s = await until("the deadline to pass", async () => {
      const st = (await get(p.metadata.uid)).status;
      return st.phase === "Failed" && st.containerStatuses[0]!.state.terminated ? st : undefined;
    });
    expect(s).toMatchObject({
      reason: "DeadlineExceeded",
      message: "Pod was active on the node longer than the specified deadline",
    });
    expect(s.containerStatuses[0]!.restartCount).toBe(0);
    // The loop keeps it down: a further relist does not start it again.
    await new Promise((r) => setTimeout(r, 1000));
    const again = (await get(p.metadata.uid)).status;
    expect(again.containerStatuses[0]!.state.terminated).toBeDefined();
    expect(again.containerStatuses[0]!.restartCount).toBe(0);
  });

  it("an emptyDir over its sizeLimit on disk: the eviction manager evicts the pod, its preStop hook first, Failed with reason Evicted and kubelet's message; it stays down (restartPolicy Never)", async () => {
    const dir = hostDir();
    const p = podInput("evict", dir, {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 2,
      volumes: [
        { name: "h", hostPath: { path: dir } },
        { name: "scratch", emptyDir: { sizeLimit: "1Mi" } },
      ],
      // 2 MiB into the emptyDir, then wait.
      // Its preStop hook runs on the eviction as on any kill (evictPod's override 0 is the pod's own grace).
      containers: [
        c(
          "main",
          "a=0123456789abcdef; i=0; while [ $i -lt 17 ]; do a=$a$a; i=$((i+1)); done; echo \"$a\" > /scratch/f; echo done > /h/wrote; trap 'exit 0' TERM; while true; do sleep 1; done",
          {
            volumeMounts: [
              { name: "h", mountPath: "/h" },
              { name: "scratch", mountPath: "/scratch" },
            ],
            lifecycle: { preStop: { exec: { command: ["sh", "-c", "echo evicted > /h/prestop"] } } },
          },
        ),
      ],
    });
    await sync(p);
    const s = await until("the eviction", async () => {
      const st = (await get(p.metadata.uid)).status;
      return st.reason === "Evicted" && st.containerStatuses[0]!.state.terminated ? st : undefined;
    });
    expect(read(dir, "wrote")).toBe("done\n");
    expect(read(dir, "prestop")).toBe("evicted\n");
    expect(s).toMatchObject({
      phase: "Failed",
      reason: "Evicted",
      message: 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ',
    });
    expect(s.containerStatuses[0]!.restartCount).toBe(0);
  });
});
