// ConfigMaps, Secrets and the downward API: parsing the bundle (YAML stream, v1.List, JWS payload), refusals
// that name the field, env and volume values as kubelet computes them, and secret values kept out of every
// response and the request log (through the real HTTP function and the in-process CRI runtime).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseYamlStream } from "../../src/http/parse-yaml.js";
import { bodyFromItems, bundleFromDocuments, bundleFromPayload } from "../../src/pod/bundle.js";
import { containerEnv } from "../../src/container/expansion.js";
import { envResolver } from "../../src/container/env-sources.js";
import { formatMap, goQuote } from "../../src/container/downward.js";
import { volumePayloads, type VolumeFiles, type VolumePayload } from "../../src/volumemanager/object-volumes.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { resolvePullSecrets } from "../../src/pod/references.js";
import { pullCredentials } from "../../src/kuberuntime/images.js";
import type { CriClient } from "../../src/cri/client.js";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness } from "../support/http.js";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileDesiredState } from "../../src/state/desired-pods.js";
import { SealedDesiredState } from "../../src/state/sealed-desired-state.js";
import { loadSealKey } from "../../src/state/seal-key.js";
import { importSealKey, newSealKeyBytes } from "../../src/state/secret-seal.js";
import { MemoryDesiredState } from "../../src/pleg/desired-state.js";
import { storedObjects } from "../../src/pod/objects.js";
import { startReconcileLoop } from "../../src/syncloop/sync-loop.js";
import { errorsOf } from "../support/pods.js";
import { instrumentRuntime } from "../../src/metrics/metrics.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

const SECRET = "s3cr3t-hunter2-value";
const b64 = (s: string) => Buffer.from(s).toString("base64");

const podDoc = (
  extra: {
    env?: unknown[];
    envFrom?: unknown[];
    volumes?: unknown[];
    volumeMounts?: unknown[];
    imagePullSecrets?: unknown[];
    uid?: string;
    hostNetwork?: boolean;
  } = {},
) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "web",
    namespace: "default",
    uid: extra.uid ?? "uid-objects-1",
    labels: { app: "web", tier: "front" },
    annotations: { note: 'say "hi"' },
  },
  spec: {
    terminationGracePeriodSeconds: 2,
    ...(extra.hostNetwork ? { hostNetwork: true } : {}),
    containers: [
      {
        name: "main",
        image: "localhost/busybox:1",
        command: ["sleep", "3600"],
        resources: { limits: { memory: "64Mi" }, requests: { cpu: "250m" } },
        ...(extra.env ? { env: extra.env } : {}),
        ...(extra.envFrom ? { envFrom: extra.envFrom } : {}),
        ...(extra.volumeMounts ? { volumeMounts: extra.volumeMounts } : {}),
      },
    ],
    ...(extra.volumes ? { volumes: extra.volumes } : {}),
    ...(extra.imagePullSecrets ? { imagePullSecrets: extra.imagePullSecrets } : {}),
  },
});
const cm = {
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "cfg" },
  data: { "app.conf": "port=8080\n", mode: "fast" },
  binaryData: { blob: b64("\u0001\u0002") },
};
const secret = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "creds" },
  type: "Opaque",
  data: { password: b64(SECRET) },
  stringData: { user: "admin" },
};

describe("the bundle: a pod and its objects", () => {
  it("a YAML stream of Pod, ConfigMap and Secret (empty documents skipped); stringData merged into data", () => {
    const yaml = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
data: {password: ${b64(SECRET)}}
stringData: {user: admin}
---
${JSON.stringify(podDoc({ env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } }] }))}
---
`;
    const b = bundleFromDocuments(parseYamlStream(yaml));
    expect(b.pod.metadata.name).toBe("web");
    expect(b.objects.configMaps.map((c) => c.metadata.name)).toEqual(["cfg"]);
    expect(new TextDecoder().decode(b.objects.secrets[0]!.data["password"])).toBe(SECRET);
    expect(new TextDecoder().decode(b.objects.secrets[0]!.data["user"])).toBe("admin");
  });

  it("examples/config-pod.yaml is a valid bundle", () => {
    const b = bundleFromDocuments(
      parseYamlStream(readFileSync(new URL("../../examples/config-pod.yaml", import.meta.url), "utf8")),
    );
    expect([b.pod.metadata.name, b.objects.configMaps.length, b.objects.secrets.length]).toEqual(["site", 1, 1]);
  });

  it("a JSON v1.List, and a JWS payload with configMaps and secrets next to pod", () => {
    const list = { apiVersion: "v1", kind: "List", items: [cm, secret, podDoc()] };
    expect(bundleFromDocuments([list]).objects.secrets).toHaveLength(1);
    const p = bundleFromPayload({ pod: podDoc(), configMaps: [cm], secrets: [secret] });
    expect(p.objects.configMaps[0]!.metadata.name).toBe("cfg");
    // Objects exported with kubectl get -o yaml: their read-only fields are ignored; in a payload array the kind may be left out.
    const exported = {
      ...cm,
      metadata: {
        name: "cfg",
        namespace: "default",
        uid: "1a",
        resourceVersion: "42",
        creationTimestamp: "2026-01-01T00:00:00Z",
        managedFields: [{ manager: "kubectl" }],
        ownerReferences: [],
      },
    };
    expect(
      bundleFromPayload({
        pod: podDoc(),
        configMaps: [exported],
        secrets: [{ metadata: { name: "s" }, stringData: { a: "b" } }],
      }).objects.secrets,
    ).toHaveLength(1);
    // A lone pod is still a pod body, as before.
    expect(bundleFromDocuments([podDoc()]).objects).toEqual({ configMaps: [], secrets: [] });
  });

  it("refuses a second pod, an unknown kind, objects of another namespace and duplicate names", () => {
    expect(errorsOf(() => bundleFromDocuments([podDoc(), podDoc()]))).toEqual([
      expect.objectContaining({ path: "documents[1]", message: expect.stringContaining("2 Pods") }),
    ]);
    // A Kubernetes kind a node has no part in is skipped with a warning, and so is a custom resource (as kubectl
    // apply reports it and applies the rest); a document of no API at all is refused.
    expect(
      bundleFromDocuments([podDoc(), { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "x" } }]).warnings,
    ).toEqual([expect.stringContaining('documents[1]: v1 ServiceAccount "x" skipped')]);
    expect(
      bundleFromDocuments([podDoc(), { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "x" } }])
        .warnings,
    ).toEqual([expect.stringContaining('documents[1]: skipped: custom resource example.com/v1 Widget "x"')]);
    expect(
      errorsOf(() =>
        bundleFromDocuments([podDoc(), { apiVersion: "widgets", kind: "Widget", metadata: { name: "x" } }]),
      ),
    ).toEqual([
      expect.objectContaining({
        path: "documents[1].kind",
        message: expect.stringContaining('widgets Widget "x" is not a Kubernetes kind'),
      }),
    ]);
    const other = { ...cm, metadata: { name: "cfg", namespace: "kube-system" } };
    expect(errorsOf(() => bundleFromPayload({ pod: podDoc(), configMaps: [other, cm] }))).toEqual([
      expect.objectContaining({ path: "configMaps[0].metadata.namespace" }),
      expect.objectContaining({ path: "configMaps[1].metadata.name", message: 'duplicate ConfigMap name "cfg"' }),
    ]);
  });

  it("a missing object or key is a warning naming the field (the pod waits, as kubelet keeps it), unless optional", () => {
    const env = [
      { name: "A", value: "1" },
      { name: "B", valueFrom: { configMapKeyRef: { name: "cfg", key: "mode" } } },
      { name: "PW", valueFrom: { secretKeyRef: { name: "nope", key: "password" } } },
      { name: "K", valueFrom: { secretKeyRef: { name: "creds", key: "missing" } } },
      { name: "O", valueFrom: { secretKeyRef: { name: "nope", key: "x", optional: true } } },
      { name: "BIN", valueFrom: { configMapKeyRef: { name: "cfg", key: "blob" } } },
    ];
    const volumes = [
      { name: "c", configMap: { name: "cfg", items: [{ key: "absent", path: "a" }] } },
      { name: "s", secret: { secretName: "gone" } },
      { name: "so", secret: { secretName: "gone", optional: true } },
      { name: "p", projected: { sources: [{ configMap: { name: "none" } }] } },
    ];
    const envFrom = [{ secretRef: { name: "gone" } }, { configMapRef: { name: "gone", optional: true }, prefix: "X_" }];
    // Taken, not refused: on a cluster kubelet keeps the container waiting (CreateContainerConfigError) until
    // the object arrives. Each one is a warning naming the field.
    const pod = podDoc({ env, volumes, envFrom });
    const b = bodyFromItems(
      [{ input: pod, at: "pod", podByPlace: true }],
      { configMaps: [cm], secrets: [secret] },
      {
        nodeName: "n",
        serviceAccountTokens: "drop",
      },
    );
    const errors = b.warnings.map((w) => ({
      path: w.slice(0, w.indexOf(": ")),
      message: w.slice(w.indexOf(": ") + 2),
    }));
    expect(errors.map((e) => e.path)).toEqual([
      "pod.spec.containers[0].env[2].valueFrom.secretKeyRef.name",
      "pod.spec.containers[0].env[3].valueFrom.secretKeyRef.key",
      "pod.spec.containers[0].env[5].valueFrom.configMapKeyRef.key",
      "pod.spec.containers[0].envFrom[0].secretRef.name",
      "pod.spec.volumes[0].configMap.items[0].key",
      "pod.spec.volumes[1].secret.secretName",
      "pod.spec.volumes[3].projected.sources[0].configMap.name",
    ]);
    expect(errors[0]!.message).toBe(
      'Secret "nope" is not in the signed body; the container waits (CreateContainerConfigError) until a sync brings it',
    );
    expect(errors[1]!.message).toMatch(/^Secret "creds" has no key "missing"; the container waits/);
    // Without any objects, a detached body is taken too, with the same warning without the payload's "pod." prefix.
    expect(bundleFromDocuments([podDoc({ env: env.slice(2, 3) })]).warnings).toEqual([
      expect.stringMatching(/^spec\.containers\[0\]\.env\[0\]\.valueFrom\.secretKeyRef\.name: Secret "nope"/),
    ]);
  });

  it("static rules: projected serviceAccountToken needs an API server; bad fieldPath, resource and divisor; value with valueFrom", () => {
    const volumes = [
      { name: "t", projected: { sources: [{ serviceAccountToken: { path: "token" } }] } },
      {
        name: "d",
        downwardAPI: {
          items: [
            { path: "ip", fieldRef: { fieldPath: "status.podIP" } },
            { path: "mem", resourceFieldRef: { resource: "limits.memory" } },
          ],
        },
      },
    ];
    const env = [
      { name: "X", valueFrom: { fieldRef: { fieldPath: "spec.hostname" } } },
      { name: "Y", valueFrom: { resourceFieldRef: { resource: "limits.cpu", divisor: "2" } } },
      { name: "Z", value: "v", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      { name: "W", valueFrom: { resourceFieldRef: { resource: "limits.ephemeral-storage" } } },
    ];
    const errors = errorsOf(() =>
      bundleFromDocuments([
        podDoc({ env, volumes, envFrom: [{ prefix: "1BAD", configMapRef: { name: "cfg", optional: true } }] }),
      ]),
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        {
          path: "spec.volumes[0].projected.sources[0].serviceAccountToken",
          message: "needs a Kubernetes API server to issue a service account token",
        },
        expect.objectContaining({
          path: "spec.volumes[1].downwardAPI.items[0].fieldRef.fieldPath",
          message: expect.stringContaining('unsupported fieldPath "status.podIP"'),
        }),
        expect.objectContaining({ path: "spec.volumes[1].downwardAPI.items[1].resourceFieldRef.containerName" }),
        expect.objectContaining({ path: "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath" }),
        {
          path: "spec.containers[0].env[1].valueFrom.resourceFieldRef.divisor",
          message: "cpu divisor must be 1m or 1",
        },
        expect.objectContaining({ path: "spec.containers[0].env[2].valueFrom" }),
        expect.objectContaining({ path: "spec.containers[0].env[3].valueFrom.resourceFieldRef.resource" }),
        expect.objectContaining({ path: "spec.containers[0].envFrom[0].prefix" }),
      ]),
    );
  });

  it("object validation names keys and never quotes a value", () => {
    const bad = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "creds" },
      data: { "bad key": b64(SECRET), ok: `${SECRET}!!` },
    };
    const errors = errorsOf(() => bundleFromPayload({ pod: podDoc(), secrets: [bad] }));
    expect(errors.map((e) => e.path).sort()).toEqual(["secrets[0].data.bad key", "secrets[0].data.ok"]);
    expect(JSON.stringify(errors)).not.toContain(SECRET);
    const dockerBad = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "reg" },
      type: "kubernetes.io/dockerconfigjson",
      data: { ".dockerconfigjson": b64(`{"auths": ${SECRET}`) },
    };
    const e2 = errorsOf(() => bundleFromPayload({ pod: podDoc(), secrets: [dockerBad] }));
    expect(e2).toEqual([
      { path: "secrets[0].data..dockerconfigjson", message: "must be a JSON object (the registry credentials file)" },
    ]);
    expect(JSON.stringify(e2)).not.toContain(SECRET);
  });

  it("imagePullSecrets by name: a dockerconfigjson Secret from the body, resolved to its credentials", () => {
    const reg = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "reg" },
      type: "kubernetes.io/dockerconfigjson",
      data: {
        ".dockerconfigjson": b64(
          JSON.stringify({ auths: { "registry.example:5000": { username: "u", password: SECRET } } }),
        ),
      },
    };
    const b = bundleFromPayload({ pod: podDoc({ imagePullSecrets: [{ name: "reg" }] }), secrets: [reg, secret] });
    const creds = pullCredentials(
      "registry.example:5000/app:1",
      resolvePullSecrets(b.pod.spec.imagePullSecrets, b.objects),
    );
    expect(creds).toEqual([expect.objectContaining({ username: "u", password: SECRET })]);
    // Only the credential fields, only as strings: other fields (email) and non-string values are dropped.
    const odd = {
      ...reg,
      metadata: { name: "odd" },
      data: {
        ".dockerconfigjson": b64(
          JSON.stringify({ auths: { "registry.example:5000": { username: "u", password: 12345, email: "a@b" } } }),
        ),
      },
    };
    const b2 = bundleFromPayload({ pod: podDoc({ imagePullSecrets: [{ name: "odd" }] }), secrets: [odd] });
    expect(resolvePullSecrets(b2.pod.spec.imagePullSecrets, b2.objects)).toEqual([
      { name: "odd", auths: { "registry.example:5000": { username: "u" } } },
    ]);
    expect(
      errorsOf(() => bundleFromPayload({ pod: podDoc({ imagePullSecrets: [{ name: "missing" }] }) })).map(
        (e) => e.path,
      ),
    ).toEqual(["pod.spec.imagePullSecrets[0].name"]);
    expect(
      errorsOf(() =>
        bundleFromPayload({ pod: podDoc({ imagePullSecrets: [{ name: "creds" }] }), secrets: [secret] }),
      )[0]!.message,
    ).toContain('is of type "Opaque"');
  });
});

describe("values as kubelet computes them", () => {
  const node = { ...defaultNodeConfig(), nodeName: "edge-7", cpuCapacity: 4, memoryCapacity: 8 * 2 ** 30 };
  const info = { node, hostIPs: ["192.0.2.10"], podIPs: ["10.244.78.9"] };

  it("env: envFrom (prefix, data only) first, env overrides and expands, valueFrom resolved, optional missing left out", () => {
    const env = [
      { name: "X_mode", value: "override-$(X_app.conf)" },
      { name: "PW", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } },
      { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
      { name: "IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
      { name: "HOST", valueFrom: { fieldRef: { fieldPath: "status.hostIPs" } } },
      { name: "TIER", valueFrom: { fieldRef: { fieldPath: "metadata.labels['tier']" } } },
      { name: "CPU_LIMIT", valueFrom: { resourceFieldRef: { resource: "limits.cpu" } } },
      { name: "CPU_REQ_M", valueFrom: { resourceFieldRef: { resource: "requests.cpu", divisor: "1m" } } },
      { name: "MEM_MI", valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } } },
      { name: "MEM_REQ", valueFrom: { resourceFieldRef: { resource: "requests.memory" } } },
      { name: "GONE", valueFrom: { configMapKeyRef: { name: "cfg", key: "nokey", optional: true } } },
    ];
    const b = bundleFromPayload({
      pod: podDoc({ env, envFrom: [{ configMapRef: { name: "cfg" }, prefix: "X_" }] }),
      configMaps: [cm],
      secrets: [secret],
    });
    const c = b.pod.spec.containers[0]!;
    const vars = Object.fromEntries(containerEnv(c, envResolver(b.pod, c, b.objects, info)));
    expect(vars).toEqual({
      "X_app.conf": "port=8080\n",
      X_mode: "override-port=8080\n",
      PW: SECRET,
      NODE: "edge-7",
      IP: "10.244.78.9",
      HOST: "192.0.2.10",
      TIER: "front",
      CPU_LIMIT: "4", // no cpu limit: the node's allocatable (4 cores)
      CPU_REQ_M: "250",
      MEM_MI: "64",
      MEM_REQ: String(64 * 2 ** 20), // no request: the limit (API-server defaulting)
    });
  });

  it("volume payloads: keys, items with modes, defaultMode, downwardAPI labels in FormatMap's form; secret and projected on tmpfs", () => {
    const volumes = [
      {
        name: "c",
        configMap: {
          name: "cfg",
          defaultMode: 0o600,
          items: [
            { key: "app.conf", path: "conf/app.conf", mode: 0o640 },
            { key: "mode", path: "mode" },
          ],
        },
      },
      { name: "s", secret: { secretName: "creds" } },
      {
        name: "d",
        downwardAPI: {
          items: [
            { path: "labels", fieldRef: { fieldPath: "metadata.labels" } },
            { path: "ann", fieldRef: { fieldPath: "metadata.annotations" } },
            { path: "mem", resourceFieldRef: { containerName: "main", resource: "limits.memory", divisor: "1Mi" } },
          ],
        },
      },
      {
        name: "p",
        projected: {
          defaultMode: 0o400,
          sources: [
            { configMap: { name: "cfg", items: [{ key: "mode", path: "m" }] } },
            { secret: { name: "creds", items: [{ key: "user", path: "u" }] } },
            { downwardAPI: { items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }] } },
          ],
        },
      },
      { name: "e", configMap: { name: "absent", optional: true } },
    ];
    const b = bundleFromPayload({ pod: podDoc({ volumes }), configMaps: [cm], secrets: [secret] });
    const ps = volumePayloads(b.pod, b.objects, info);
    const show = (p: VolumePayload) => ({
      dir: p.dir,
      tmpfs: p.tmpfs,
      files: Object.fromEntries(
        [...p.files].map(([k, f]) => [k, [new TextDecoder().decode(f.data), f.mode.toString(8)]]),
      ),
    });
    expect(ps.map(show)).toEqual([
      {
        dir: "/var/lib/podsync/pods/uid-objects-1/volumes/kubernetes.io~configmap/c",
        tmpfs: false,
        files: { "conf/app.conf": ["port=8080\n", "640"], mode: ["fast", "600"] },
      },
      {
        dir: "/var/lib/podsync/pods/uid-objects-1/volumes/kubernetes.io~secret/s",
        tmpfs: true,
        files: { password: [SECRET, "644"], user: ["admin", "644"] },
      },
      {
        dir: "/var/lib/podsync/pods/uid-objects-1/volumes/kubernetes.io~downward-api/d",
        tmpfs: false,
        files: { labels: ['app="web"\ntier="front"', "644"], ann: ['note="say \\"hi\\""', "644"], mem: ["64", "644"] },
      },
      {
        dir: "/var/lib/podsync/pods/uid-objects-1/volumes/kubernetes.io~projected/p",
        tmpfs: true,
        files: { m: ["fast", "400"], u: ["admin", "400"], name: ["web", "400"] },
      },
      { dir: "/var/lib/podsync/pods/uid-objects-1/volumes/kubernetes.io~configmap/e", tmpfs: false, files: {} },
    ]);
  });

  it("Go's %q and FormatMap", () => {
    expect(goQuote('a"b\\c\n\t\u0001é')).toBe('"a\\"b\\\\c\\n\\t\\x01é"');
    expect(formatMap({ b: "2", a: "1" })).toBe('a="1"\nb="2"');
    expect(formatMap(undefined)).toBe("");
  });
});

/** Records what would be written, for the engine tests (the real writer is tested on the host). */
class MemoryVolumeFiles implements VolumeFiles {
  readonly written: VolumePayload[] = [];
  readonly removed: string[] = [];
  async write(p: VolumePayload) {
    this.written.push(p);
    return true;
  }
  async removeAll(dir: string) {
    this.removed.push(dir);
  }
}

describe("through the engine and the HTTP function (in-process CRI)", () => {
  let fake: FakeServer;
  let cri: CriClient;
  let h: Harness;
  const files = new MemoryVolumeFiles();
  const suite = useFakeCri();
  beforeAll(async () => {
    ({ fake, cri } = suite);
    h = await Harness.start(
      cri,
      {},
      {},
      { volumeFiles: files, hostIPs: ["192.0.2.10"], node: { ...defaultNodeConfig(), nodeName: "node-a" } },
    );
  });
  afterAll(async () => {
    await h.close();
  });

  const full = (uid: string) =>
    podDoc({
      uid,
      env: [
        { name: "PW", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } },
        { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
      ],
      volumes: [{ name: "s", secret: { secretName: "creds" } }],
      volumeMounts: [{ name: "s", mountPath: "/etc/creds" }],
    });

  it("sync: env and a read-only secret mount reach CreateContainer; the pod IP costs one PodSandboxStatus after RunPodSandbox; no secret in the response or the log", async () => {
    const before = fake.runtime.calls.get("PodSandboxStatus") ?? 0;
    const token = await h.sign({ act: "sync", pod: full("uid-objects-http"), secrets: [secret] });
    const r = await h.fetch("/v1/pods/sync", {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: token,
    });
    expect(r.status).toBe(200);
    expect(r.body.steps.map((s: { action: string }) => s.action)).toEqual([
      "MountVolumes",
      "CreatePodSandbox",
      "StartContainer",
    ]);
    const ctr = [...fake.runtime.containers.values()].find(
      (c) => c.config.labels["io.kubernetes.pod.uid"] === "uid-objects-http",
    )!;
    const env = Object.fromEntries(ctr.config.envs.map((e) => [e.key, new TextDecoder().decode(e.value)]));
    const sandbox = fake.runtime.sandboxes.get(ctr.sandboxId)!;
    expect(env).toMatchObject({ PW: SECRET, POD_IP: sandbox.ip });
    expect(sandbox.ip).not.toBe("");
    expect(ctr.config.mounts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          containerPath: "/etc/creds",
          hostPath: "/var/lib/podsync/pods/uid-objects-http/volumes/kubernetes.io~secret/s",
          readonly: true,
        }),
      ]),
    );
    expect(files.written.at(-1)!.tmpfs).toBe(true);
    // One, after RunPodSandbox: the read-back after the steps reuses it (and the decision read no sandbox).
    expect((fake.runtime.calls.get("PodSandboxStatus") ?? 0) - before).toBe(1);

    const status = await h.fetch("/v1/pods/uid-objects-http", {
      headers: { authorization: `Bearer ${await h.sign({ act: "status", uid: "uid-objects-http" })}` },
    });
    expect(status.status).toBe(200);
    expect(status.body.spec.containers[0].env[0]).toEqual({
      name: "PW",
      value: "",
      valueFrom: { secretKeyRef: { name: "creds", key: "password" } },
    });
    for (const text of [JSON.stringify(r.body), JSON.stringify(status.body), JSON.stringify(h.logs)]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(b64(SECRET));
    }
  });

  it("a detached YAML stream works the same; a missing reference is taken with a warning naming the field, and the pod waits (FailedMount)", async () => {
    const body = `${JSON.stringify(full("uid-objects-bad"))}\n`;
    const hash = Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body))).toString(
      "base64url",
    );
    const r = await h.fetch("/v1/pods/sync", {
      method: "POST",
      headers: {
        "content-type": "application/yaml",
        "podsync-signature": await h.sign({ act: "sync", body_sha256: hash }),
      },
      body,
    });
    // kubelet takes the pod and keeps it waiting: the secret volume cannot be set up (FailedMount), so no
    // container starts; the warnings name each reference.
    expect(r.status, JSON.stringify(r.body)).toBe(207);
    expect(r.body.warnings).toEqual([
      expect.stringMatching(/^spec\.containers\[0\]\.env\[0\]\.valueFrom\.secretKeyRef\.name: Secret "creds"/),
      expect.stringMatching(/^spec\.volumes\[0\]\.secret\.secretName: Secret "creds"/),
    ]);
    expect(r.body.steps).toContainEqual(
      expect.objectContaining({
        action: "MountVolumes",
        ok: false,
        error: "FailedMount",
        message: 'MountVolume.SetUp failed: secret "creds" not found',
      }),
    );
    expect(r.body.steps.some((x: { action: string }) => x.action === "StartContainer")).toBe(false);
    await createPodRuntime(cri).delete("uid-objects-bad");

    const stream = `${JSON.stringify(secret)}\n---\n${JSON.stringify(full("uid-objects-yaml"))}\n`;
    const hash2 = Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(stream))).toString(
      "base64url",
    );
    const ok = await h.fetch("/v1/pods/sync", {
      method: "POST",
      headers: {
        "content-type": "application/yaml",
        "podsync-signature": await h.sign({ act: "sync", body_sha256: hash2 }),
      },
      body: stream,
    });
    expect(ok.status).toBe(200);
    expect(JSON.stringify(ok.body)).not.toContain(SECRET);
  });

  it("no PodSandboxStatus after RunPodSandbox when no env needs the pod IP; a hostNetwork pod's pod IP is the node's", async () => {
    const rt = createPodRuntime(cri, { volumeFiles: files, hostIPs: ["192.0.2.10"] });
    const plain = bundleFromPayload({
      pod: podDoc({
        uid: "uid-objects-lean",
        env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } }],
      }),
      secrets: [secret],
    });
    const before = fake.runtime.calls.get("PodSandboxStatus") ?? 0;
    expect((await rt.sync(plain.pod, undefined, plain.objects)).ok).toBe(true);
    expect((fake.runtime.calls.get("PodSandboxStatus") ?? 0) - before).toBe(1); // the read-back only

    const host = bundleFromPayload({
      pod: podDoc({
        uid: "uid-objects-host",
        hostNetwork: true,
        env: [{ name: "IP", valueFrom: { fieldRef: { fieldPath: "status.podIPs" } } }],
      }),
    });
    expect((await rt.sync(host.pod, undefined, host.objects)).ok).toBe(true);
    const ctr = [...fake.runtime.containers.values()].find(
      (c) => c.config.labels["io.kubernetes.pod.uid"] === "uid-objects-host",
    )!;
    expect(new TextDecoder().decode(ctr.config.envs.find((e) => e.key === "IP")!.value)).toBe("192.0.2.10");
    await rt.delete("uid-objects-lean");
    await rt.delete("uid-objects-host");
  });

  it("GET renders inline pull-secret credentials redacted", async () => {
    const p = podDoc({
      uid: "uid-objects-inline",
      imagePullSecrets: [{ name: "inline-reg", auths: { "registry.example": { username: "u", password: SECRET } } }],
    });
    expect((await h.post("/v1/pods/sync", p)).status).toBe(200);
    const got = await h.fetch("/v1/pods/uid-objects-inline", {
      headers: { authorization: `Bearer ${await h.sign({ act: "status", uid: "uid-objects-inline" })}` },
    });
    expect(got.body.spec.imagePullSecrets[0].name).toBe("inline-reg");
    expect(JSON.stringify(got.body)).not.toContain(SECRET);
    await createPodRuntime(cri).delete("uid-objects-inline");
  });

  it("a runtime error that echoes a secret is redacted in the step message", async () => {
    fake.runtime.fault("CreateContainer", { kind: "error", code: 2, message: `bad env PW=${SECRET}`, times: 1 });
    const token = await h.sign({ act: "sync", pod: full("uid-objects-redact"), secrets: [secret] });
    const r2 = await h.fetch("/v1/pods/sync", {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: token,
    });
    expect(r2.status).toBe(207);
    expect(JSON.stringify(r2.body)).toContain("[redacted]");
    expect(JSON.stringify(r2.body)).not.toContain(SECRET);
  });

  it("DELETE removes the pod's file volumes", async () => {
    const r = await h.fetch("/v1/pods/uid-objects-http", {
      method: "DELETE",
      headers: { authorization: `Bearer ${await h.sign({ act: "delete", uid: "uid-objects-http" })}` },
    });
    expect(r.status).toBe(200);
    expect(files.removed).toEqual(
      expect.arrayContaining(["/var/lib/podsync/pods/uid-objects-http/volumes/kubernetes.io~secret"]),
    );
  });

  it("a deployment without node files (Workers) refuses file volumes naming them, and takes env", async () => {
    const w = await Harness.start(cri, {}, {}, {});
    try {
      const token = await w.sign({ act: "plan", pod: full("uid-objects-worker"), secrets: [secret] });
      const r = await w.fetch("/v1/pods/plan", {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: token,
      });
      expect(r.status).toBe(400);
      expect(r.body.errors).toEqual([
        {
          path: "spec.volumes[0].secret",
          message:
            "secret volumes are not available here: this deployment cannot write files on the node (use env: valueFrom or envFrom)",
        },
      ]);
      const envOnly = {
        ...full("uid-objects-worker"),
        spec: {
          ...full("uid-objects-worker").spec,
          volumes: undefined,
          containers: [{ ...full("uid-objects-worker").spec.containers[0], volumeMounts: undefined }],
        },
      };
      const ok = await w.fetch("/v1/pods/plan", {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: await w.sign({ act: "plan", pod: envOnly, secrets: [secret] }),
      });
      expect(ok.status).toBe(200);
    } finally {
      await w.close();
    }
  });

  it("on the node's disk the desired state holds the Secret sealed (the file store behind SealedDesiredState)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-objects-state-"));
    const files = new FileDesiredState(dir);
    await files.open();
    const w = await Harness.start(
      cri,
      { desired: new SealedDesiredState(files, () => loadSealKey(dir)) },
      {},
      { volumeFiles: new MemoryVolumeFiles() },
    );
    try {
      const r = await w.fetch("/v1/pods/sync", {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: await w.sign({ act: "sync", pod: full("uid-objects-store"), secrets: [secret] }),
      });
      expect(r.status).toBe(200);
      const text = readdirSync(join(dir, "pods"))
        .map((f) => readFileSync(join(dir, "pods", f), "utf8"))
        .join("\n");
      expect(text).toContain('"kind": "SealedSecret"');
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(b64(SECRET));
      await createPodRuntime(cri).delete("uid-objects-store");
    } finally {
      await w.close();
    }
  });

  it("PUT /v1/node/pods: a YAML stream of pods with their objects; each pod's references checked against its namespace's", async () => {
    const w = await Harness.start(cri, {}, {}, { volumeFiles: new MemoryVolumeFiles() });
    try {
      const put = async (docs: unknown[], generation: number) => {
        const body = docs.map((d) => JSON.stringify(d)).join("\n---\n");
        const hash = Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body))).toString(
          "base64url",
        );
        return w.fetch("/v1/node/pods", {
          method: "PUT",
          headers: {
            "content-type": "application/yaml",
            "podsync-signature": await w.sign({ act: "apply", generation, body_sha256: hash }),
          },
          body,
        });
      };
      const other = { ...secret, metadata: { name: "creds", namespace: "other" } };
      // The other namespace's Secret is not the pod's: the pod is taken and waits, with a warning per reference.
      const bad = await put([other, full("uid-objects-set")], 1);
      expect(bad.status, JSON.stringify(bad.body)).toBeLessThan(300);
      expect(bad.body.warnings.map((x: string) => x.slice(0, x.indexOf(": ")))).toEqual([
        "items[1].spec.containers[0].env[0].valueFrom.secretKeyRef.name",
        "items[1].spec.volumes[0].secret.secretName",
      ]);
      const ok = await put([secret, full("uid-objects-set")], 2);
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect(JSON.stringify(ok.body)).not.toContain(SECRET);
      const ctr = [...fake.runtime.containers.values()].find(
        (c) => c.config.labels["io.kubernetes.pod.uid"] === "uid-objects-set",
      )!;
      expect(new TextDecoder().decode(ctr.config.envs.find((e) => e.key === "PW")!.value)).toBe(SECRET);
      expect((await put([], 3)).status).toBe(200);
    } finally {
      await w.close();
    }
  });

  it("the node agent's loop syncs a stored pod with its stored (sealed) objects: the env from the Secret reaches the container", async () => {
    const b = bundleFromPayload({ pod: full("uid-objects-loop"), secrets: [secret] });
    const key = await importSealKey(newSealKeyBytes());
    const desired = new SealedDesiredState(new MemoryDesiredState(), async () => key);
    await desired.put({ pod: b.pod, objects: storedObjects(b.objects), audit: { iss: "i", iat: 1 }, storedAt: 0 });
    const rt = createPodRuntime(cri, { volumeFiles: files });
    const loop = startReconcileLoop({ runtime: rt, cri, desired, manual: true, log: () => undefined });
    try {
      const report = await loop.tick();
      expect(report.synced.map((x) => x.uid)).toEqual(["uid-objects-loop"]);
      const ctr = [...fake.runtime.containers.values()].find(
        (c) => c.config.labels["io.kubernetes.pod.uid"] === "uid-objects-loop",
      )!;
      expect(new TextDecoder().decode(ctr.config.envs.find((e) => e.key === "PW")!.value)).toBe(SECRET);
    } finally {
      await loop.stop();
      await rt.delete("uid-objects-loop");
    }
  });

  it("the metrics wrapper of the front door passes the objects on", async () => {
    const b = bundleFromPayload({ pod: full("uid-objects-metrics"), secrets: [secret] });
    const counted: string[] = [];
    const rt = instrumentRuntime(
      createPodRuntime(cri, { volumeFiles: files }),
      { sync: (_t: string, outcome: string) => counted.push(outcome) } as never,
      "request",
    );
    expect((await rt.sync(b.pod, undefined, b.objects)).ok).toBe(true);
    expect(counted).toEqual(["ok"]);
    await rt.delete("uid-objects-metrics");
  });

  it("the engine refuses to start a container whose env needs objects it was not given (kubelet's words)", async () => {
    const b = bundleFromPayload({ pod: full("uid-objects-noobj"), secrets: [secret] });
    const r = await createPodRuntime(cri, { volumeFiles: files }).sync(b.pod);
    expect(r.steps.find((s) => s.action === "MountVolumes")).toMatchObject({
      ok: false,
      error: "FailedMount",
      message: 'MountVolume.SetUp failed: secret "creds" not found',
    });
    const envOnly = bundleFromPayload({
      pod: podDoc({
        uid: "uid-objects-noenv",
        env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } }],
      }),
    });
    const e = await createPodRuntime(cri, { volumeFiles: files }).sync(envOnly.pod);
    expect(e.steps.find((s) => s.action === "StartContainer")).toMatchObject({
      ok: false,
      error: "CreateContainerConfigError",
      message: 'secret "creds" not found',
    });
    await createPodRuntime(cri).delete("uid-objects-noenv");
    await createPodRuntime(cri).delete("uid-objects-noobj");
    await createPodRuntime(cri).delete("uid-objects-yaml");
    await createPodRuntime(cri).delete("uid-objects-redact");
  });
});
