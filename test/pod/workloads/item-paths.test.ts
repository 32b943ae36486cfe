// Volume item paths cleaned as kubelet's AtomicWriter cleans them (path.Clean in validatePayload): "./app.conf"
// is the file app.conf, "x/" is x; paths that clean to the same file (or to a file where another item needs a
// directory) are refused naming the field, and a path that cleans onto the writer's own names or the volume itself
// is refused; and the node's writer writes the cleaned layout.
import { mkdtempSync, readFileSync, readdirSync, readlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bundleFromPayload } from "../../../src/pod/bundle.js";
import { cleanItemPath } from "../../../src/pod/sources.js";
import { volumePayloads } from "../../../src/volumemanager/object-volumes.js";
import { defaultNodeConfig } from "../../../src/container/node-config.js";
import { errorsOf } from "../../support/pods.js";
import { nodeVolumeFiles } from "../../../src/host/volumes/volume-files.js";

const root = mkdtempSync(join(tmpdir(), "podsync-itempaths-"));
afterAll(() => nodeVolumeFiles.removeAll(root));
const info = { node: { ...defaultNodeConfig(), rootDir: root }, hostIPs: [], podIPs: [] };
const cm = {
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "cfg" },
  data: { "app.conf": "port=1", mode: "fast" },
};
const pod = (volumes: unknown[]) => ({
  metadata: { name: "paths", namespace: "default", uid: "uid-item-paths" },
  spec: {
    volumes,
    containers: [
      {
        name: "main",
        image: "localhost/busybox:1",
        volumeMounts: (volumes as { name: string }[]).map((v) => ({ name: v.name, mountPath: `/v/${v.name}` })),
      },
    ],
  },
});

describe("volume item paths", () => {
  it("cleanItemPath is path.Clean on what validation lets through", () => {
    expect(["./app.conf", "x/", "a//b/./c", "a", ".", "./"].map(cleanItemPath)).toEqual([
      "app.conf",
      "x",
      "a/b/c",
      "a",
      ".",
      ".",
    ]);
  });

  it("the payload has cleaned paths, and the node writes them: ./app.conf as app.conf, conf/ as conf", async () => {
    const b = bundleFromPayload({
      pod: pod([
        {
          name: "c",
          configMap: {
            name: "cfg",
            items: [
              { key: "app.conf", path: "./app.conf" },
              { key: "mode", path: "sub//mode/" },
            ],
          },
        },
        { name: "d", downwardAPI: { items: [{ path: "./name", fieldRef: { fieldPath: "metadata.name" } }] } },
      ]),
      configMaps: [cm],
    });
    const [c, d] = volumePayloads(b.pod, b.objects, info);
    expect([...c!.files.keys()]).toEqual(["app.conf", "sub/mode"]);
    expect([...d!.files.keys()]).toEqual(["name"]);
    // Before: "sub//mode/" was written as a directory's name with a trailing slash (ENOENT/EISDIR on every sync).
    expect(await nodeVolumeFiles.write(c!)).toBe(true);
    expect(
      readdirSync(c!.dir)
        .filter((n) => !n.startsWith(".."))
        .sort(),
    ).toEqual(["app.conf", "sub"]);
    expect(readlinkSync(`${c!.dir}/app.conf`)).toBe("..data/app.conf");
    expect(readFileSync(`${c!.dir}/sub/mode`, "utf8")).toBe("fast");
    expect(await nodeVolumeFiles.write(c!)).toBe(false);
  });

  it("paths that clean to the same file, or a file and a directory, are refused naming the field", () => {
    const errs = errorsOf(() =>
      bundleFromPayload({
        pod: pod([
          {
            name: "c",
            configMap: {
              name: "cfg",
              items: [
                { key: "app.conf", path: "app.conf" },
                { key: "mode", path: "./app.conf" },
              ],
            },
          },
          {
            name: "f",
            configMap: {
              name: "cfg",
              items: [
                { key: "app.conf", path: "a" },
                { key: "mode", path: "a/b" },
              ],
            },
          },
          {
            name: "p",
            projected: {
              sources: [
                { configMap: { name: "cfg", items: [{ key: "mode", path: "x/y" }] } },
                { downwardAPI: { items: [{ path: "x", fieldRef: { fieldPath: "metadata.name" } }] } },
              ],
            },
          },
        ]),
        configMaps: [cm],
      }),
    );
    expect(errs).toEqual([
      {
        path: "pod.spec.volumes[0].configMap.items[1].path",
        message: expect.stringMatching(/^path "app.conf" conflicts with configMap.items\[0\].path/),
      },
      {
        path: "pod.spec.volumes[1].configMap.items[1].path",
        message: expect.stringMatching(/^path "a\/b" conflicts with configMap.items\[0\].path/),
      },
      {
        path: "pod.spec.volumes[2].projected.sources[1].downwardAPI.items[0].path",
        message: expect.stringMatching(/^path "x" conflicts with projected.sources\[0\].configMap.items\[0\].path/),
      },
    ]);
  });

  it("a path cleaning onto the writer's names (..data) or onto the volume itself is refused", () => {
    const errs = errorsOf(() =>
      bundleFromPayload({
        pod: pod([
          {
            name: "c",
            configMap: {
              name: "cfg",
              items: [
                { key: "app.conf", path: "./..data" },
                { key: "mode", path: "./" },
              ],
            },
          },
        ]),
        configMaps: [cm],
      }),
    );
    expect(errs).toEqual([
      { path: "pod.spec.volumes[0].configMap.items[0].path", message: "must not start with '..'" },
      {
        path: "pod.spec.volumes[0].configMap.items[1].path",
        message: "must name a file in the volume, not the volume itself",
      },
    ]);
  });

  it("a path the node cannot write (a NUL byte, a component over 255 bytes, over the path limit) is refused naming the field", () => {
    const long = "a".repeat(256);
    const deep = Array.from({ length: 16 }, () => "d".repeat(200)).join("/");
    const errs = errorsOf(() =>
      bundleFromPayload({
        pod: pod([
          {
            name: "c",
            configMap: {
              name: "cfg",
              items: [
                { key: "app.conf", path: "nul\u0000x" },
                { key: "mode", path: `ok/${long}` },
              ],
            },
          },
          {
            name: "p",
            projected: {
              sources: [{ downwardAPI: { items: [{ path: deep, fieldRef: { fieldPath: "metadata.name" } }] } }],
            },
          },
        ]),
        configMaps: [cm],
      }),
    );
    expect(errs).toEqual([
      { path: "pod.spec.volumes[0].configMap.items[0].path", message: "must not contain a NUL byte" },
      {
        path: "pod.spec.volumes[0].configMap.items[1].path",
        message: "each path component must be at most 255 bytes (the node's file name limit)",
      },
      {
        path: "pod.spec.volumes[1].projected.sources[0].downwardAPI.items[0].path",
        message: expect.stringMatching(/^must be at most 3072 bytes/),
      },
    ]);
    // 255 bytes of UTF-8 (not characters) is the limit: 128 two-byte letters are 256 bytes.
    expect(
      errorsOf(() =>
        bundleFromPayload({
          pod: pod([{ name: "c", configMap: { name: "cfg", items: [{ key: "mode", path: "é".repeat(128) }] } }]),
          configMaps: [cm],
        }),
      ),
    ).toHaveLength(1);
    expect(
      bundleFromPayload({
        pod: pod([{ name: "c", configMap: { name: "cfg", items: [{ key: "mode", path: "é".repeat(127) }] } }]),
        configMaps: [cm],
      }).pod.spec.volumes,
    ).toHaveLength(1);
  });
});
