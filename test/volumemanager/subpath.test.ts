// subPath cannot leave its volume (issue 8.4, CVE-2017-1002101): the node-side bind on the real filesystem,
// and the refusal where there is no node filesystem (Workers), through the real HTTP app.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  chmodSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mountsUnder, nodePodDirs } from "../../src/host/volumes/pod-dirs.js";
import { SubPathError } from "../../src/volumemanager/subpath.js";
import type { SubPathBind } from "../../src/volumemanager/pod-dirs.js";
import { startStack } from "../support/http.js";
import { uid } from "../support/pods.js";

const root = mkdtempSync(join(tmpdir(), "podsync-subpath-"));
afterAll(async () => {
  await nodePodDirs.removeTree(root);
  rmSync(root, { recursive: true, force: true });
});

let n = 0;
/** A volume with a file, a directory and an outside directory holding a secret. */
function volume() {
  const pod = join(root, `pod${++n}`);
  const vol = join(pod, "volumes", "kubernetes.io~empty-dir", "scratch");
  mkdirSync(join(vol, "dir"), { recursive: true });
  writeFileSync(join(vol, "greeting"), "hello");
  const outside = join(root, `outside${n}`);
  mkdirSync(outside);
  writeFileSync(join(outside, "secret"), "host data");
  const bind = (subPath: string, index = 0): SubPathBind => ({
    volumePath: vol,
    subPath,
    target: join(pod, "volume-subpaths", "scratch", "main", String(index)),
    createVolume: true,
  });
  return { pod, vol, outside, bind };
}

describe("PodDirs.bindSubPath on the node filesystem", () => {
  it("a symlink to / (the CVE's escape) or to a directory outside is refused, and nothing is mounted", async () => {
    const v = volume();
    symlinkSync("/", join(v.vol, "escape"));
    symlinkSync(v.outside, join(v.vol, "out"));
    symlinkSync(join(v.outside, "secret"), join(v.vol, "secret-link"));
    for (const sp of ["escape", "out", "out/secret", "secret-link", "dir/../escape"]) {
      const err = await nodePodDirs.bindSubPath(v.bind(sp)).then(
        () => undefined,
        (e) => e,
      );
      expect(err, sp).toBeInstanceOf(SubPathError);
      expect((err as SubPathError).reason).toMatch(/outside its volume|contains '\.\.'/);
    }
    expect(await mountsUnder(v.pod)).toEqual([]);
  });

  it("a dangling symlink (its target could appear later, anywhere) is refused, not created through", async () => {
    const v = volume();
    symlinkSync(join(v.outside, "not-yet"), join(v.vol, "later"));
    await expect(nodePodDirs.bindSubPath(v.bind("later/x"))).rejects.toMatchObject({
      reason: expect.stringContaining("symlink"),
    });
    expect(existsSync(join(v.outside, "not-yet"))).toBe(false);
    expect(await mountsUnder(v.pod)).toEqual([]);
  });

  it("a file and a directory are bound onto the target; a symlink that stays inside the volume is allowed (as kubelet)", async () => {
    const v = volume();
    symlinkSync("dir", join(v.vol, "inner"));
    writeFileSync(join(v.vol, "dir", "f"), "in dir");
    await nodePodDirs.bindSubPath(v.bind("greeting", 0));
    await nodePodDirs.bindSubPath(v.bind("inner", 1));
    expect(readFileSync(v.bind("greeting", 0).target, "utf8")).toBe("hello");
    expect(readFileSync(join(v.bind("inner", 1).target, "f"), "utf8")).toBe("in dir");
    // Binding again (a restarted container) reuses the bind: one mount per target.
    await nodePodDirs.bindSubPath(v.bind("greeting", 0));
    expect((await mountsUnder(v.pod)).sort()).toEqual([v.bind("greeting", 0).target, v.bind("inner", 1).target].sort());
    // DELETE's removal unmounts them first: the volume's content goes, nothing outside it.
    await nodePodDirs.removeTree(v.pod);
    expect(existsSync(v.pod)).toBe(false);
    expect(await mountsUnder(v.pod)).toEqual([]);
    expect(readFileSync(join(v.outside, "secret"), "utf8")).toBe("host data");
  });

  it("a missing subPath is made inside the volume, one directory at a time, with the volume's mode; a missing emptyDir first", async () => {
    const v = volume();
    chmodSync(v.vol, 0o770);
    await nodePodDirs.bindSubPath(v.bind("a/b/c"));
    expect(statSync(join(v.vol, "a", "b", "c")).mode & 0o777).toBe(0o770);
    expect(await mountsUnder(v.pod)).toEqual([v.bind("a/b/c").target]);
    const fresh = { ...v.bind("x", 3), volumePath: join(v.pod, "volumes", "kubernetes.io~empty-dir", "new") };
    await nodePodDirs.bindSubPath(fresh);
    expect(statSync(join(fresh.volumePath, "x")).isDirectory()).toBe(true);
    await nodePodDirs.removeTree(v.pod);
  });
});

describe("a deployment without the node filesystem refuses subPath", () => {
  it("400 invalid-pod naming each subPath field, with no runtime call (sync and plan)", async () => {
    const stack = await startStack({ timeoutMs: 1500, maxBodyBytes: 64 * 1024 });
    try {
      const pod = {
        metadata: { name: "web", namespace: "default", uid: uid() },
        spec: {
          volumes: [{ name: "scratch", emptyDir: {} }],
          initContainers: [
            {
              name: "init",
              image: "localhost/busybox:1",
              command: ["true"],
              volumeMounts: [{ name: "scratch", mountPath: "/s" }],
            },
          ],
          containers: [
            {
              name: "main",
              image: "localhost/busybox:1",
              command: ["sleep", "1d"],
              volumeMounts: [
                { name: "scratch", mountPath: "/s" },
                { name: "scratch", mountPath: "/t", subPath: "t" },
              ],
            },
          ],
        },
      };
      for (const path of ["/v1/pods/sync", "/v1/pods/plan"] as const) {
        const before = stack.fake.runtime.totalCalls();
        const r = await stack.h.post(path, pod);
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(r.body).toMatchObject({
          type: "urn:podsync:problem:invalid-pod",
          errors: [
            {
              path: "spec.containers[0].volumeMounts[1].subPath",
              message: expect.stringContaining("subPath cannot be used on this deployment"),
            },
          ],
        });
        expect(stack.fake.runtime.totalCalls()).toBe(before);
      }
      // '..' and absolute subPaths are refused at validation everywhere.
      for (const subPath of ["../x", "a/../../x", "/etc"]) {
        const bad = {
          ...pod,
          spec: {
            ...pod.spec,
            initContainers: [],
            containers: [{ ...pod.spec.containers[0]!, volumeMounts: [{ name: "scratch", mountPath: "/t", subPath }] }],
          },
        };
        const r = await stack.h.post("/v1/pods/plan", bad);
        expect(r.status).toBe(400);
        expect(r.body.errors[0]).toMatchObject({ message: "subPath must be relative and must not contain '..'" });
      }
    } finally {
      await stack.close();
    }
  });
});
