// The $(VAR) expansion bound with the pod's ConfigMaps and Secrets: a large key referenced many times, or one
// value past MAX_ARG_STRLEN, is refused naming the field before any runtime call (request, node set, and the
// reconcile loop's stored objects), and `expand` itself caps what it builds (defence in depth).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleFromPayload, bundlesFromSet, objectsFromStored } from "../../src/pod/bundle.js";
import { expand, ExpansionTooLargeError } from "../../src/container/expansion.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { storedObjects } from "../../src/pod/objects.js";
import { objectEnvLengths } from "../../src/pod/env-objects-size.js";
import { envResolver } from "../../src/container/env-sources.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { startStack, type Stack } from "../support/http.js";
import { uid, errorsOf } from "../support/pods.js";

const KIB = 1024;
const big = (n: number) => "b".repeat(n);
const pod = (id: string, container: Record<string, unknown>) => ({
  metadata: { name: "envsize", namespace: "default", uid: id },
  spec: {
    terminationGracePeriodSeconds: 2,
    containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"], ...container }],
  },
});
const cm = (data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data });
const secret = (stringData: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "sec" },
  stringData,
});
/** X0..Xn-1 = "$(B)" each: the review's 1 MiB key times 500 is this with a key under the per-value limit. */
const refs = (n: number, value = "$(B)") => Array.from({ length: n }, (_, i) => ({ name: `X${i}`, value }));

describe("the expansion bound sees envFrom and valueFrom values", () => {
  it("a key under 128 KiB referenced until the container passes 1 MiB is refused (envFrom and valueFrom)", () => {
    const viaFrom = errorsOf(() =>
      bundleFromPayload({
        pod: pod(uid(), { envFrom: [{ configMapRef: { name: "cfg" } }], env: refs(20) }),
        configMaps: [cm({ B: big(100 * KIB) })],
      }),
    );
    expect(viaFrom).toEqual([
      { path: "pod.spec.containers[0].env", message: expect.stringMatching(/at most 1024 KiB per container/) },
    ]);
    const viaKey = errorsOf(() =>
      bundleFromPayload({
        pod: pod(uid(), { env: [{ name: "B", valueFrom: { secretKeyRef: { name: "sec", key: "k" } } }, ...refs(20)] }),
        secrets: [secret({ k: big(100 * KIB) })],
      }),
    );
    expect(viaKey).toEqual([
      { path: "pod.spec.containers[0].env", message: expect.stringMatching(/at most 1024 KiB per container/) },
    ]);
  });

  it("one value over 128 KiB is refused naming the field: a reference to it, a valueFrom, an envFrom key", () => {
    const doubled = errorsOf(() =>
      bundleFromPayload({
        pod: pod(uid(), { envFrom: [{ configMapRef: { name: "cfg" } }], env: refs(1, "$(B)$(B)") }),
        configMaps: [cm({ B: big(100 * KIB) })],
      }),
    );
    expect(doubled).toEqual([
      {
        path: "pod.spec.containers[0].env[0].value",
        message: expect.stringMatching(/expands .* to 204800 bytes; at most 128 KiB per value/),
      },
    ]);
    const huge = big(MiB() - 8);
    const fromKey = errorsOf(() =>
      bundleFromPayload({
        pod: pod(uid(), { env: [{ name: "B", valueFrom: { configMapKeyRef: { name: "cfg", key: "B" } } }] }),
        configMaps: [cm({ B: huge })],
      }),
    );
    expect(fromKey).toEqual([
      {
        path: "pod.spec.containers[0].env[0].valueFrom",
        message: expect.stringMatching(/resolves to a value of 1048568 bytes; at most 128 KiB/),
      },
      { path: "pod.spec.containers[0].env", message: expect.stringMatching(/at most 1024 KiB per container/) },
    ]);
    const fromAll = errorsOf(() =>
      bundleFromPayload({
        pod: pod(uid(), { envFrom: [{ secretRef: { name: "sec" }, prefix: "P_" }] }),
        secrets: [secret({ B: huge })],
      }),
    );
    expect(fromAll).toEqual([
      {
        path: "pod.spec.containers[0].envFrom[0]",
        message: expect.stringMatching(/sets "P_B" to a value of 1048568 bytes/),
      },
      { path: "pod.spec.containers[0].env", message: expect.stringMatching(/at most 1024 KiB per container/) },
    ]);
    // Messages name keys, never values.
    expect(JSON.stringify([doubled, fromKey, fromAll])).not.toContain("bbbb");
  });

  it("the limits themselves pass, and a missing optional object counts nothing", () => {
    const ok = bundleFromPayload({
      pod: pod(uid(), {
        envFrom: [{ configMapRef: { name: "cfg" } }, { secretRef: { name: "nope", optional: true } }],
        env: refs(6),
      }),
      configMaps: [cm({ B: big(128 * KIB) })],
    });
    expect(ok.pod.spec.containers[0]!.env).toHaveLength(6);
  });

  it("the lengths agree with what the engine's resolver gives, byte for byte (non-ASCII, invalid UTF-8, metadata)", () => {
    const raw = Buffer.from([0x61, 0xff, 0xe2, 0x82]).toString("base64"); // "a" and invalid bytes: U+FFFD when decoded
    const sec = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "sec" },
      data: { raw },
      stringData: { emoji: "😀é" },
    };
    const env = [
      { name: "A", valueFrom: { configMapKeyRef: { name: "cfg", key: "B" } } },
      { name: "R", valueFrom: { secretKeyRef: { name: "sec", key: "raw" } } },
      { name: "L", valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
      { name: "N", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      { name: "T", valueFrom: { fieldRef: { fieldPath: "metadata.annotations['note']" } } },
      { name: "M", valueFrom: { configMapKeyRef: { name: "gone", key: "x", optional: true } } },
    ];
    const p = pod(uid(), {
      envFrom: [{ configMapRef: { name: "cfg" }, prefix: "C_" }, { secretRef: { name: "sec" } }],
      env,
    });
    const b = bundleFromPayload({
      pod: { ...p, metadata: { ...p.metadata, labels: { app: "web-1" }, annotations: { note: "ünï" } } },
      configMaps: [cm({ B: "ñandú", other: "x" })],
      secrets: [sec],
    });
    const c = b.pod.spec.containers[0]!;
    const lengths = objectEnvLengths(b.pod, b.objects);
    const resolver = envResolver(b.pod, c, b.objects, { node: defaultNodeConfig(), hostIPs: [], podIPs: [] });
    const len = (v: string) => new TextEncoder().encode(v).length;
    for (const f of c.envFrom!) expect(lengths.from(f)).toEqual(resolver.from(f).map(([k, v]) => [k, len(v)]));
    for (const e of c.env!) {
      const v = resolver.value(e.valueFrom!);
      expect(lengths.value(e.valueFrom!)).toBe(v === undefined ? undefined : len(v));
    }
  });

  it("a node set and the reconcile loop's stored objects are checked the same way", () => {
    const set = errorsOf(() =>
      bundlesFromSet([pod(uid(), { envFrom: [{ configMapRef: { name: "cfg" } }], env: refs(20) })], "pods", {
        configMaps: [cm({ B: big(100 * KIB) })],
      }),
    );
    expect(set).toEqual([
      { path: "pods[0].spec.containers[0].env", message: expect.stringMatching(/at most 1024 KiB per container/) },
    ]);
    // A store written before the bound (or edited): the pod is valid alone, its objects make it too large.
    const small = bundleFromPayload({
      pod: pod(uid(), { envFrom: [{ configMapRef: { name: "cfg" } }], env: refs(20) }),
      configMaps: [cm({ B: "b" })],
    });
    const stored = storedObjects({
      configMaps: [{ ...small.objects.configMaps[0]!, data: { B: big(100 * KIB) } }],
      secrets: [],
    });
    expect(errorsOf(() => objectsFromStored(small.pod, stored))).toEqual([
      { path: "spec.containers[0].env", message: expect.stringMatching(/at most 1024 KiB per container/) },
    ]);
  });
});

function MiB() {
  return 1024 * KIB;
}

describe("through the HTTP function and the engine (in-process CRI)", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ timeoutMs: 5000, maxBodyBytes: 4 * MiB() });
  });
  afterAll(() => stack.close());

  it("the review's case (a large key, X = $(B) many times) is 400 invalid-pod with zero runtime calls", async () => {
    const { h, fake } = stack;
    const before = fake.runtime.totalCalls();
    const token = await h.sign({
      act: "sync",
      pod: pod(uid(), { envFrom: [{ configMapRef: { name: "cfg" } }], env: refs(500) }),
      configMaps: [cm({ B: big(120 * KIB) })],
    });
    const r = await h.fetch("/v1/pods/sync", {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: token,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.type).toBe("application/problem+json");
    expect(r.body).toMatchObject({
      type: "urn:podsync:problem:invalid-pod",
      errors: [{ path: "pod.spec.containers[0].env" }],
    });
    expect(fake.runtime.totalCalls()).toBe(before);
  });

  it("expand caps what it builds; past validation, the container's start fails with that error, not an OOM", async () => {
    const vars = new Map([["B", big(100 * KIB)]]);
    expect(expand("$(B)", vars)).toHaveLength(100 * KIB);
    expect(() => expand("$(B)$(B)", vars)).toThrow(ExpansionTooLargeError);
    expect(() =>
      expand(
        refs(500)
          .map((r) => r.value)
          .join(""),
        vars,
      ),
    ).toThrow(/expands past 128 KiB/);
    // The engine given objects that validation never saw (a caller that skipped it).
    const id = uid();
    const ok = bundleFromPayload({
      pod: pod(id, { envFrom: [{ configMapRef: { name: "cfg" } }], env: refs(1, "$(B)$(B)") }),
      configMaps: [cm({ B: "b" })],
    });
    const rt = createPodRuntime(stack.cri);
    try {
      const r = await rt.sync(ok.pod, undefined, {
        configMaps: [{ ...ok.objects.configMaps[0]!, data: { B: big(100 * KIB) } }],
        secrets: [],
      });
      expect(r.ok).toBe(false);
      expect(r.steps.find((s) => s.action === "StartContainer")).toMatchObject({
        ok: false,
        error: "CreateContainerConfigError",
        message: expect.stringMatching(/expands past 128 KiB/),
      });
    } finally {
      await rt.delete(id);
    }
  });
});
