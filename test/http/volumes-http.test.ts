// The node's claims over HTTP (GET /v1/node/volumes, DELETE /v1/node/volumes/{name}) and kubelet's
// admission refusals, through the real server in front of the in-process runtime, with a real VolumeHost
// on a temporary root dir (claims need no mounts).
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { exportJWK } from "jose";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CriClient } from "../../src/cri/client.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { nodeVolumeHost } from "../../src/host/volumes/volume-host.js";
import type { DesiredPod } from "../../src/pleg/desired-state.js";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness, ISSUER } from "../support/http.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const root = mkdtempSync(join(tmpdir(), "podsync-volumes-http-"));
let fake: FakeServer;
let cri: CriClient;
let h: Harness;

const suite = useFakeCri({ timeoutMs: 2000 });
beforeAll(async () => {
  ({ fake, cri } = suite);
  h = await Harness.start(
    cri,
    { policy: { level: "baseline", hostPathAllow: [] } },
    {},
    { volumeHost: nodeVolumeHost, node: { ...defaultNodeConfig(), rootDir: root } },
  );
});
afterAll(async () => {
  await h.close();
  rmSync(root, { recursive: true, force: true });
});

const podWith = (uid: string, spec: Record<string, unknown>) => ({
  metadata: { name: uid, uid },
  spec: {
    terminationGracePeriodSeconds: 2,
    containers: [
      {
        name: "main",
        image: "localhost/busybox:1",
        command: ["sleep", "1d"],
        volumeMounts: [{ name: "d", mountPath: "/data" }],
      },
    ],
    volumes: [{ name: "d", persistentVolumeClaim: { claimName: "data" } }],
    ...spec,
  },
});
const bearer = async (claims: Record<string, unknown>) => ({ authorization: `Bearer ${await h.sign(claims)}` });

describe("/v1/node/volumes", () => {
  it("lists claims with the pods using them; removal is 409 while used, 200 after the pod's DELETE; tokens are checked", async () => {
    const sync = await h.post("/v1/pods/sync", podWith("vol-pod-1", {}));
    expect(sync.status).toBe(200);
    expect(sync.body.steps[0]).toMatchObject({ action: "MountVolumes", ok: true, message: "volumes ready: d" });
    expect(existsSync(join(root, "volumes/pvc/default/data"))).toBe(true);

    const list = await h.fetch("/v1/node/volumes", { headers: await bearer({ act: "status" }) });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      volumes: [
        {
          namespace: "default",
          name: "data",
          path: join(root, "volumes/pvc/default/data"),
          usedBy: [{ uid: "vol-pod-1", name: "vol-pod-1", namespace: "default" }],
        },
      ],
    });
    expect(
      (await h.fetch("/v1/node/volumes", { headers: await bearer({ act: "status", uid: "vol-pod-1" }) })).body,
    ).toMatchObject({ status: 401, reason: "bad-claims" });

    const busy = await h.fetch("/v1/node/volumes/data", {
      method: "DELETE",
      headers: await bearer({ act: "delete", volume: "data" }),
    });
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ type: "urn:podsync:problem:volume-in-use", usedBy: [{ uid: "vol-pod-1" }] });
    expect(
      (
        await h.fetch("/v1/node/volumes/data", {
          method: "DELETE",
          headers: await bearer({ act: "delete", volume: "other" }),
        })
      ).body,
    ).toMatchObject({ status: 401, reason: "bad-claims" });

    expect(
      (
        await h.fetch("/v1/pods/vol-pod-1", {
          method: "DELETE",
          headers: await bearer({ act: "delete", uid: "vol-pod-1" }),
        })
      ).status,
    ).toBe(200);
    const gone = await h.fetch("/v1/node/volumes/data", {
      method: "DELETE",
      headers: await bearer({ act: "delete", volume: "data" }),
    });
    expect(gone).toMatchObject({ status: 200, body: { ok: true, removed: "data", namespace: "default" } });
    expect(existsSync(join(root, "volumes/pvc/default/data"))).toBe(false);
    expect(
      (
        await h.fetch("/v1/node/volumes/data", {
          method: "DELETE",
          headers: await bearer({ act: "delete", volume: "data" }),
        })
      ).body,
    ).toMatchObject({ status: 404, type: "urn:podsync:problem:volume-not-found" });
    expect(
      (
        await h.fetch("/v1/node/volumes/Bad_Name", {
          method: "DELETE",
          headers: await bearer({ act: "delete", volume: "Bad_Name" }),
        })
      ).status,
    ).toBe(400);
  });

  it("a claim a desired pod names is in use even with no container", async () => {
    const { MemoryDesiredState } = await import("../../src/pleg/desired-state.js");
    const { validatePod } = await import("../../src/pod/validate.js");
    const desired = new MemoryDesiredState();
    await desired.put({
      pod: validatePod(
        podWith("vol-pod-desired", { volumes: [{ name: "d", persistentVolumeClaim: { claimName: "kept" } }] }),
      ),
      audit: { iss: ISSUER, iat: 0 },
      storedAt: 0,
    });
    const hd = await Harness.start(
      cri,
      { desired },
      {},
      { volumeHost: nodeVolumeHost, node: { ...defaultNodeConfig(), rootDir: root } },
    );
    try {
      await nodeVolumeHost.ensureDir(join(root, "volumes/pvc/default/kept"), 0o777);
      const r = await hd.fetch("/v1/node/volumes/kept", {
        method: "DELETE",
        headers: { authorization: `Bearer ${await hd.sign({ act: "delete", volume: "kept" })}` },
      });
      expect(r.body).toMatchObject({ status: 409, usedBy: [{ uid: "vol-pod-desired" }] });
    } finally {
      await hd.close();
    }
  });

  it("a removal waits for a pod being admitted: its in-use check sees a pod stored meanwhile (409), the claim stays", async () => {
    const { MemoryDesiredState } = await import("../../src/pleg/desired-state.js");
    // A store whose put is held open: the POST sits inside the node's admission section until released.
    let entered!: () => void;
    let release!: () => void;
    const inPut = new Promise<void>((r) => (entered = r));
    const gate = new Promise<void>((r) => (release = r));
    class HeldPut extends MemoryDesiredState {
      override async put(entry: DesiredPod) {
        entered();
        await gate;
        return super.put(entry);
      }
    }
    const hd = await Harness.start(
      cri,
      { desired: new HeldPut() },
      {},
      { volumeHost: nodeVolumeHost, node: { ...defaultNodeConfig(), rootDir: root } },
    );
    try {
      await nodeVolumeHost.ensureDir(join(root, "volumes/pvc/default/raced"), 0o777);
      writeFileSync(join(root, "volumes/pvc/default/raced/data"), "keep");
      const put = hd.post(
        "/v1/pods/sync",
        podWith("vol-pod-raced", { volumes: [{ name: "d", persistentVolumeClaim: { claimName: "raced" } }] }),
      );
      await inPut;
      const removal = hd.fetch("/v1/node/volumes/raced", {
        method: "DELETE",
        headers: { authorization: `Bearer ${await hd.sign({ act: "delete", volume: "raced" })}` },
      });
      // Let the removal run as far as it can while the pod is being admitted, then let the admission finish.
      await new Promise((r) => setTimeout(r, 100));
      release();
      expect((await put).status).toBe(200);
      expect((await removal).body).toMatchObject({ status: 409, usedBy: [{ uid: "vol-pod-raced" }] });
      expect(existsSync(join(root, "volumes/pvc/default/raced/data"))).toBe(true);
      expect(
        (
          await hd.fetch("/v1/pods/vol-pod-raced", {
            method: "DELETE",
            headers: { authorization: `Bearer ${await hd.sign({ act: "delete", uid: "vol-pod-raced" })}` },
          })
        ).status,
      ).toBe(200);
    } finally {
      release();
      await hd.close();
    }
  });

  it("the CLI: podsync volumes lists, podsync volumes rm refuses a used claim (exit 1) and removes an unused one", async () => {
    const pod = podWith("vol-pod-cli", { volumes: [{ name: "d", persistentVolumeClaim: { claimName: "cli-data" } }] });
    expect((await h.post("/v1/pods/sync", pod)).status).toBe(200);
    const key = h.keys[0]!;
    const keyFile = join(root, "key.json");
    writeFileSync(
      keyFile,
      JSON.stringify({ ...(await exportJWK(key.privateKey)), kid: key.kid, alg: key.alg, iss: ISSUER }),
    );
    const cli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((res) =>
        execFile(
          process.execPath,
          ["bin/podsync.mjs", "--url", h.url, "--key", keyFile, ...args],
          (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const list = await cli("volumes");
    expect(list.code).toBe(0);
    expect(list.stdout.split("\n")[0]).toMatch(/^NAMESPACE\s+NAME\s+USED BY\s+PATH$/);
    expect(list.stdout).toMatch(
      new RegExp(`default\\s+cli-data\\s+default/vol-pod-cli\\s+${join(root, "volumes/pvc/default/cli-data")}`),
    );
    const refused = await cli("volumes", "rm", "cli-data");
    expect(refused).toMatchObject({
      code: 1,
      stdout: "",
      stderr: expect.stringMatching(
        /^podsync: 409 Volume is in use: volume "default\/cli-data" is used by pod default\/vol-pod-cli/,
      ),
    });
    expect(
      (
        await h.fetch("/v1/pods/vol-pod-cli", {
          method: "DELETE",
          headers: await bearer({ act: "delete", uid: "vol-pod-cli" }),
        })
      ).status,
    ).toBe(200);
    expect(await cli("volumes", "rm", "cli-data")).toEqual({
      code: 0,
      stdout: "removed volume default/cli-data\n",
      stderr: "",
    });
  });

  it("kubelet's admission: an unsafe sysctl is 403 admission with reason SysctlForbidden; an Unconfined seccomp profile is the baseline policy's 403", async () => {
    // At baseline Pod Security refuses unsafe sysctls first; kubelet's admission is what holds at privileged.
    const { MemoryDesiredState } = await import("../../src/pleg/desired-state.js");
    const desired = new MemoryDesiredState();
    const priv = await Harness.start(
      cri,
      { policy: { level: "privileged", hostPathAllow: [] }, desired },
      {},
      { volumeHost: nodeVolumeHost, node: { ...defaultNodeConfig(), rootDir: root } },
    );
    fake.runtime.resetCalls();
    const sysctl = await priv.post("/v1/pods/sync", {
      metadata: { name: "s", uid: "vol-pod-2" },
      spec: {
        securityContext: { sysctls: [{ name: "net.core.somaxconn", value: "1024" }] },
        containers: [{ name: "main", image: "localhost/busybox:1" }],
      },
    });
    expect(sysctl.status).toBe(403);
    expect(sysctl.body).toMatchObject({
      type: "urn:podsync:problem:admission",
      reason: "SysctlForbidden",
      detail: 'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted',
    });
    // Refused before it is stored: the node never keeps trying to run a pod it cannot admit.
    expect(await desired.get("vol-pod-2")).toBeUndefined();
    // The same for a node-wide set: the refused pod is named under pods[i].
    const put = await priv.fetch("/v1/node/pods", {
      method: "PUT",
      headers: { "content-type": "application/jose" },
      body: await priv.sign({
        act: "apply",
        generation: 1,
        pods: [
          {
            metadata: { name: "s", uid: "vol-pod-2" },
            spec: {
              securityContext: { sysctls: [{ name: "kernel.panic", value: "1" }] },
              containers: [{ name: "main", image: "localhost/busybox:1" }],
            },
          },
        ],
      }),
    });
    expect(put.body).toMatchObject({
      status: 403,
      reason: "SysctlForbidden",
      errors: [{ path: expect.stringMatching(/^pods\[0\]\.spec\.securityContext\.sysctls\[0\]\.name$/) }],
    });
    expect(await desired.list()).toEqual([]);
    await priv.close();
    const unconfined = await h.post("/v1/pods/sync", {
      metadata: { name: "u", uid: "vol-pod-3" },
      spec: {
        securityContext: { seccompProfile: { type: "Unconfined" } },
        containers: [{ name: "main", image: "localhost/busybox:1" }],
      },
    });
    expect(unconfined.body).toMatchObject({
      status: 403,
      type: "urn:podsync:problem:policy",
      errors: [{ path: "spec.securityContext.seccompProfile.type" }],
    });
    expect([...fake.runtime.calls.values()].reduce((a, b) => a + b, 0)).toBe(0);
  });
});
