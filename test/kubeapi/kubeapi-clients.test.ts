// The node's Kubernetes API as real clients use it (issue 40), at the routes: query parameters as apimachinery
// reads them, trailing slashes and legacy watch paths, Status on every error, namespaces, the authorization reviews
// in JSON and protobuf, OpenAPI, the Metrics API; and the pure parts (defaults, the metrics rate, quantities, the
// credential plugin's cache). The real clients themselves run in kubeapi-clients.e2e.test.ts.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import { createVerifier } from "../../src/auth/verify.js";
import { CACHE_GUARD } from "../../src/cli/commands/keys/kubeconfig.js";
import { cacheFileName, cacheKey, readCached, writeCached } from "../../src/cli/token-cache.js";
import {
  SelfSubjectAccessReviewSchema,
  SubjectAccessReviewStatusSchema,
} from "../../src/gen/k8s.io/api/authorization/v1/generated_pb.js";
import { UnknownSchema } from "../../src/gen/k8s.io/apimachinery/pkg/runtime/generated_pb.js";
import {
  defaultPodSpec,
  defaultPullPolicy,
  defaultWorkload,
  wholeSeconds,
} from "../../src/kubeapi/apiserver/defaults.js";
import { EventRecorder } from "../../src/kubeapi/events.js";
import { cpuQuantity, memoryQuantity } from "../../src/kubeapi/metrics/metrics.js";
import { nodeObject, type V1Node } from "../../src/kubeapi/node-object.js";
import { normalizeRequest, parseBool } from "../../src/kubeapi/apiserver/query.js";
import { createKubeApi } from "../../src/kubeapi/routes.js";
import { RvClock, WatchHub } from "../../src/kubeapi/watch-hub.js";
import type { PodRuntime } from "../../src/kubelet/pod-runtime.js";
import type { V1Pod } from "../../src/status/api-status.js";
import { usage } from "../../src/stats/resource-metrics.js";
import { ISSUER, makeKey, NODE } from "../support/http.js";

const v1pod = (name: string, namespace: string, uid: string, labels?: Record<string, string>): V1Pod =>
  ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, uid, creationTimestamp: "2026-01-01T00:00:00Z", ...(labels ? { labels } : {}) },
    spec: defaultPodSpec({ containers: [{ name: "main", image: "localhost/busybox:1" }] }),
    status: { phase: "Running", conditions: [], containerStatuses: [] },
  }) as unknown as V1Pod;

describe("query parameters and paths as the API server reads them", () => {
  it("booleans: ParseBool's forms, any case of false, anything else true (Convert_Slice_string_To_bool)", () => {
    for (const v of ["1", "t", "T", "TRUE", "true", "True", "", "yes"]) expect(parseBool(v), v).toBe(true);
    for (const v of ["0", "f", "F", "FALSE", "false", "False", "fAlSe"]) expect(parseBool(v), v).toBe(false);
    expect(parseBool(undefined)).toBe(false);
  });
  it("trailing slashes, the legacy watch path, pretty and stream=All are taken away before routing", () => {
    const url = (u: string) => new URL(normalizeRequest(new Request(`https://n${u}`)).url);
    expect(url("/api/").pathname).toBe("/api");
    expect(url("/version/").pathname).toBe("/version");
    const w = url("/api/v1/watch/namespaces/a/pods?pretty=true");
    expect(w.pathname).toBe("/api/v1/namespaces/a/pods");
    expect([...w.searchParams]).toEqual([["watch", "true"]]);
    expect(url("/apis/apps/v1/watch/deployments").searchParams.get("watch")).toBe("true");
    const log = url("/api/v1/namespaces/a/pods/p/log?follow=True&stream=All&pretty=");
    expect([...log.searchParams]).toEqual([["follow", "true"]]);
    // Other streams are not ignored: the log route says it does not take them.
    expect(url("/api/v1/namespaces/a/pods/p/log?stream=Stdout").searchParams.get("stream")).toBe("Stdout");
  });
});

describe("defaults as the API server applies them (SetDefaults_*)", () => {
  it("a pod's spec: securityContext {}, kubelet's container defaults, no value beside a valueFrom", () => {
    const s = defaultPodSpec({
      containers: [
        {
          name: "a",
          image: "nginx",
          ports: [{ containerPort: 80 }],
          env: [{ name: "X", value: "", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
          livenessProbe: { httpGet: { port: 80 } },
          resources: { limits: { cpu: "1" } },
        },
      ],
      volumes: [{ name: "s", secret: { secretName: "x" } }, { name: "e" }],
    });
    expect(s).toMatchObject({
      securityContext: {},
      dnsPolicy: "ClusterFirst",
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      schedulerName: "default-scheduler",
      enableServiceLinks: true,
      volumes: [
        { name: "s", secret: { secretName: "x", defaultMode: 420 } },
        { name: "e", emptyDir: {} },
      ],
    });
    expect(s["containers"][0]).toMatchObject({
      imagePullPolicy: "Always",
      terminationMessagePath: "/dev/termination-log",
      terminationMessagePolicy: "File",
      ports: [{ containerPort: 80, protocol: "TCP" }],
      env: [{ name: "X", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } }],
      livenessProbe: { httpGet: { port: 80, path: "/", scheme: "HTTP" }, timeoutSeconds: 1, periodSeconds: 10 },
      resources: { limits: { cpu: "1" }, requests: { cpu: "1" } },
    });
    expect("value" in s["containers"][0].env[0]).toBe(false);
    expect(defaultPullPolicy("localhost/busybox:1")).toBe("IfNotPresent");
    expect(defaultPullPolicy("registry:5000/x")).toBe("Always");
    expect(defaultPullPolicy("x@sha256:00")).toBe("IfNotPresent");
  });
  it("apps/v1 and batch/v1: a Deployment's rolling update 25%/25% and the rest; whole-second timestamps", () => {
    const d = defaultWorkload({ kind: "Deployment", metadata: {}, spec: { template: { spec: { containers: [] } } } });
    expect(d.spec).toMatchObject({
      replicas: 1,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } },
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
      template: { spec: { securityContext: {}, restartPolicy: "Always" } },
    });
    expect(defaultWorkload({ kind: "DaemonSet", metadata: {}, spec: {} }).spec).toMatchObject({
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      revisionHistoryLimit: 10,
    });
    expect(defaultWorkload({ kind: "StatefulSet", metadata: {}, spec: {} }).spec).toMatchObject({
      podManagementPolicy: "OrderedReady",
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Retain", whenScaled: "Retain" },
    });
    expect(defaultWorkload({ kind: "Job", metadata: {}, spec: {} }).spec).toMatchObject({
      completions: 1,
      parallelism: 1,
      backoffLimit: 6,
      completionMode: "NonIndexed",
      suspend: false,
      podReplacementPolicy: "TerminatingOrFailed",
    });
    expect(defaultWorkload({ kind: "CronJob", metadata: {}, spec: {} }).spec).toMatchObject({
      concurrencyPolicy: "Allow",
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 1,
    });
    expect(wholeSeconds("2026-01-01T00:00:00.789Z")).toBe("2026-01-01T00:00:00Z");
  });
});

describe("the routes real clients reach", async () => {
  const key = await makeKey("EdDSA", "k1");
  const verifier = createVerifier({
    keys: { jwks: { keys: [key.publicJwk] } },
    issuers: [ISSUER],
    audience: [NODE],
    replay: new MemoryReplayStore(),
  });
  const token = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "EdDSA", kid: "k1" })
      .setIssuer(ISSUER)
      .setAudience(NODE)
      .setIssuedAt()
      .setExpirationTime("2m")
      .setJti(crypto.randomUUID())
      .sign(key.privateKey);
  const clock = new RvClock(100);
  const pods = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
  pods.replaceAll([v1pod("web", "default", "u1", { app: "web" }), v1pod("db", "other", "u2")]);
  const nodeHub = new WatchHub<V1Node>(clock, { key: (n) => n.metadata.name });
  const ready = {
    ok: true,
    criCalls: 2,
    runtime: {
      name: "containerd",
      version: "1.6",
      apiVersion: "v1",
      conditions: { RuntimeReady: true, NetworkReady: true },
    },
  };
  const s1 = { containers: [point(1e9, 1e18)], node: { cpuNs: 5e9, atNs: 1e18, memoryWorkingSetBytes: 1024 ** 3 } };
  const s2 = {
    containers: [point(1.5e9, 1e18 + 10e9)],
    node: { cpuNs: 15e9, atNs: 1e18 + 10e9, memoryWorkingSetBytes: 2 * 1024 ** 3 },
  };
  const app = createKubeApi({
    verifier,
    pods,
    events: new EventRecorder(clock, NODE),
    node: {
      hub: nodeHub,
      refresh: async () =>
        nodeHub.replaceAll([
          nodeObject(
            {
              info: { name: NODE, labels: { "kubernetes.io/hostname": NODE }, taints: [], allocatable: {} },
              hostIPs: ["192.0.2.1"],
              startedAt: 0,
            },
            ready as never,
            Date.now(),
          ),
        ]),
    },
    runtime: { ready: async () => ready } as unknown as PodRuntime,
    podsyncVersion: "0.1.0",
    allowExec: true,
    arch: "amd64",
    followMaxMs: 1000,
    metrics: { read: async () => usage(s1, s2) },
  });
  const read = await token({ act: "read" });
  const call = (path: string, init: RequestInit = {}, bearer = read) =>
    app.request(path, { ...init, headers: { authorization: `Bearer ${bearer}`, ...(init.headers ?? {}) } });

  it("trailing slashes and `True` work; a 404 anywhere, /openapi too, is a Status", async () => {
    for (const p of ["/api/", "/apis/", "/api/v1/", "/version/"]) expect((await call(p)).status, p).toBe(200);
    const w = await call("/api/v1/watch/namespaces/default/pods?timeoutSeconds=1");
    expect((await w.text()).split("\n")[0]).toContain('"type":"ADDED"');
    const watched = await call("/api/v1/pods?watch=True&timeoutSeconds=1&pretty=true");
    expect((await watched.text()).trim().split("\n")).toHaveLength(2);
    for (const p of ["/openapi/v3/apis/nope/v1", "/apis/nope", "/api/v1/nope"]) {
      const r = await call(p);
      expect(r.status, p).toBe(404);
      expect(await r.json()).toMatchObject({ kind: "Status", reason: "NotFound", code: 404 });
    }
  });

  it("namespaces: read-only, from the node's objects, with printNamespace's Table; a watch starts with ADDED", async () => {
    const list = await (await call("/api/v1/namespaces")).json();
    expect(list.items.map((n: { metadata: { name: string } }) => n.metadata.name)).toEqual(["default", "other"]);
    expect(list.items[0]).toMatchObject({ kind: "Namespace", status: { phase: "Active" } });
    const t = await (
      await call("/api/v1/namespaces", { headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } })
    ).json();
    expect(t.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Name", "Status", "Age"]);
    expect(t.rows[0].cells.slice(0, 2)).toEqual(["default", "Active"]);
    expect((await call("/api/v1/namespaces/nope")).status).toBe(404);
    const w = await (await call("/api/v1/namespaces?watch=1&timeoutSeconds=1")).text();
    expect(
      w
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).type),
    ).toEqual(["ADDED", "ADDED"]);
    expect((await call("/api/v1/namespaces/x", { method: "DELETE" })).status).toBe(403);
  });

  it("SelfSubjectAccessReview in JSON: reads yes, writes no, exec by the token's grant", async () => {
    const review = async (attrs: Record<string, string>, bearer = read) => {
      const r = await call(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            kind: "SelfSubjectAccessReview",
            apiVersion: "authorization.k8s.io/v1",
            spec: { resourceAttributes: attrs },
          }),
        },
        bearer,
      );
      expect(r.status).toBe(201);
      return (await r.json()).status;
    };
    expect(await review({ verb: "list", resource: "pods" })).toMatchObject({ allowed: true });
    expect(await review({ verb: "watch", resource: "nodes" })).toMatchObject({ allowed: true });
    expect(await review({ verb: "get", group: "apps", resource: "deployments" })).toMatchObject({ allowed: false });
    expect(await review({ verb: "delete", resource: "pods" })).toMatchObject({
      allowed: false,
      reason: expect.stringMatching(/read-only/),
    });
    expect(await review({ verb: "get", resource: "secrets" })).toMatchObject({ allowed: false });
    expect(await review({ verb: "create", resource: "pods", subresource: "exec" })).toMatchObject({
      allowed: false,
      reason: expect.stringMatching(/--exec/),
    });
    expect(
      await review({ verb: "create", resource: "pods", subresource: "exec" }, await token({ act: "read", exec: true })),
    ).toMatchObject({ allowed: true });
  });

  it("SelfSubjectAccessReview in protobuf (kubectl 1.32+): the k8s\\0 envelope in, the same type out", async () => {
    const msg = create(SelfSubjectAccessReviewSchema, {
      spec: { resourceAttributes: { verb: "get", resource: "pods", namespace: "default" } },
    });
    const inner = toBinary(
      UnknownSchema,
      create(UnknownSchema, {
        typeMeta: { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview" },
        raw: toBinary(SelfSubjectAccessReviewSchema, msg),
      }),
    );
    const body = new Uint8Array([0x6b, 0x38, 0x73, 0, ...inner]);
    const r = await call("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      method: "POST",
      headers: {
        "content-type": "application/vnd.kubernetes.protobuf",
        accept: "application/vnd.kubernetes.protobuf,application/json",
      },
      body,
    });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toBe("application/vnd.kubernetes.protobuf");
    const out = new Uint8Array(await r.arrayBuffer());
    expect([...out.slice(0, 4)]).toEqual([0x6b, 0x38, 0x73, 0]);
    const env = fromBinary(UnknownSchema, out.slice(4));
    expect(env.typeMeta).toMatchObject({ kind: "SelfSubjectAccessReview" });
    const back = fromBinary(SelfSubjectAccessReviewSchema, env.raw);
    expect(back.status).toMatchObject(
      create(SubjectAccessReviewStatusSchema, { allowed: true, reason: expect.any(String) }),
    );
    expect(back.spec?.resourceAttributes?.resource).toBe("pods");
    const bad = await call("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      method: "POST",
      headers: { "content-type": "application/vnd.kubernetes.protobuf" },
      body: new Uint8Array([1, 2, 3, 4, 5]),
    });
    expect(await bad.json()).toMatchObject({ kind: "Status", code: 400, message: expect.stringMatching(/k8s/) });
  });

  it("SelfSubjectRulesReview lists what the token may do", async () => {
    const r = await call("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ spec: { namespace: "default" } }),
    });
    const rules = (await r.json()).status.resourceRules as { verbs: string[]; resources: string[] }[];
    expect(rules.find((x) => x.resources.includes("pods"))?.verbs).toEqual(["get", "list", "watch"]);
    expect(rules.some((x) => x.resources.includes("pods/exec"))).toBe(false);
  });

  it("OpenAPI: v3's root names each group-version by hash; the documents are upstream's, pruned", async () => {
    const root = await (await call("/openapi/v3")).json();
    const url = root.paths["api/v1"].serverRelativeURL as string;
    expect(url).toMatch(/^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]{128}$/);
    const doc = await call(url);
    expect(doc.headers.get("cache-control")).toBe("public, immutable");
    const v1 = await doc.json();
    const pod = v1.components.schemas["io.k8s.api.core.v1.Pod"];
    expect(pod["x-kubernetes-group-version-kind"]).toEqual([{ group: "", kind: "Pod", version: "v1" }]);
    expect(pod.properties.spec.allOf[0].$ref).toBe("#/components/schemas/io.k8s.api.core.v1.PodSpec");
    expect(v1.components.schemas["io.k8s.api.core.v1.Container"].description).toBe(
      "A single application container that you want to run within a pod.",
    );
    expect(Object.keys(v1.paths)).toContain("/api/v1/namespaces/{namespace}/pods/{name}/log");
    // Services are served (issue 37), so their paths and schema are in; a kind not served is not.
    expect(Object.keys(v1.paths)).toContain("/api/v1/namespaces/{namespace}/services");
    expect(v1.components.schemas["io.k8s.api.core.v1.ServiceSpec"]).toBeDefined();
    expect(Object.keys(v1.paths)).not.toContain("/api/v1/namespaces/{namespace}/secrets");
    const patch = v1.paths["/api/v1/namespaces/{namespace}/pods/{name}"].patch;
    expect(patch.parameters.map((p: { name: string }) => p.name)).toContain("fieldValidation");
    expect((await call(url.replace(/hash=.*/, "hash=OLD"))).status).toBe(301);
    const v2 = await (await call("/openapi/v2")).json();
    expect(v2.definitions["io.k8s.api.apps.v1.Deployment"]).toBeDefined();
    expect(
      (await call("/openapi/v2", { headers: { accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" } }))
        .status,
    ).toBe(406);
  });

  it("metrics.k8s.io: PodMetrics per container and NodeMetrics, as metrics-server", async () => {
    const list = await (
      await call("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Dweb")
    ).json();
    expect(list).toMatchObject({ kind: "PodMetricsList", apiVersion: "metrics.k8s.io/v1beta1" });
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({
      metadata: { name: "web", namespace: "default" },
      window: "10s",
      containers: [{ name: "main", usage: { cpu: "50m", memory: "1Mi" } }],
    });
    const nodes = await (await call("/apis/metrics.k8s.io/v1beta1/nodes")).json();
    expect(nodes.items[0]).toMatchObject({
      kind: "NodeMetrics",
      metadata: { name: NODE },
      usage: { cpu: "1", memory: "2Gi" },
    });
    expect((await call("/apis/metrics.k8s.io/v1beta1/namespaces/other/pods/db")).status).toBe(404);
  });
});

function point(cpuNs: number, cpuAtNs: number) {
  return {
    podUid: "u1",
    namespace: "default",
    pod: "web",
    container: "main",
    cpuNs,
    cpuAtNs,
    memoryWorkingSetBytes: 1024 * 1024,
  };
}

describe("the metrics rate and quantities (pure)", () => {
  it("a rate between two points; a counter that went back gives none", () => {
    const u = usage({ containers: [point(1e9, 1e18)] }, { containers: [point(2e9, 1e18 + 4e9)] });
    expect(u.containers[0]).toMatchObject({ nanoCores: 250_000_000, windowMs: 4000 });
    expect(usage({ containers: [point(2e9, 1e18)] }, { containers: [point(1e9, 1e18 + 4e9)] }).containers).toEqual([]);
    expect(cpuQuantity(1234)).toBe("1234n");
    expect(cpuQuantity(5_000_000)).toBe("5m");
    expect(memoryQuantity(1536 * 1024)).toBe("1536Ki");
    expect(memoryQuantity(1000)).toBe("1000");
    expect(memoryQuantity(1025)).toBe("1025");
  });
});

describe("the credential plugin's cache", () => {
  it("keyed by server, audience and key; 0600; served until shortly before expiry", () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-token-cache-"));
    const keyFile = join(dir, "key.json");
    writeFileSync(keyFile, '{"kty":"OKP"}');
    const args = ["--act", "read", "--exec-credential", "--ttl", "300", "--key", keyFile, "--aud", "n1"];
    const info = (server: string) => ({ KUBERNETES_EXEC_INFO: JSON.stringify({ spec: { cluster: { server } } }) });
    const k = cacheKey(args, info("https://a:1"))!;
    expect(k).toMatch(/^[0-9a-f]{32}$/);
    expect(cacheKey(args, info("https://b:1"))).not.toBe(k);
    expect(cacheKey([...args.slice(0, -1), "n2"], info("https://a:1"))).not.toBe(k);
    // A port-forward token is its own entry (a token without the claim must not be served for it, nor the reverse).
    expect(cacheKey([...args, "--port-forward"], info("https://a:1"))).not.toBe(k);
    expect(cacheKey(["--act", "status", "--key", keyFile], {})).toBeUndefined();
    const cred = (ms: number) =>
      JSON.stringify({ status: { token: "t", expirationTimestamp: new Date(ms).toISOString() } });
    const now = Date.now();
    writeCached(join(dir, "c"), k, cred(now + 240_000));
    expect(readCached(join(dir, "c"), k, now)).toContain('"token":"t"');
    expect(readCached(join(dir, "c"), k, now + 200_000)).toBeUndefined();
    writeFileSync(keyFile, '{"kty":"OKP","x":"new"}');
    expect(cacheKey(args, info("https://a:1"))).not.toBe(k);
    chmodSync(join(dir, "c", `exec-credential-${k}.json`), 0o644);
    expect(readCached(join(dir, "c"), k, now)).toBeUndefined();
  });

  it("the kubeconfig's sh guard prints a fresh entry without node, and runs the plugin otherwise", () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-token-guard-"));
    const cred = JSON.stringify({
      status: { token: "t", expirationTimestamp: new Date(Date.now() + 240_000).toISOString() },
    });
    writeCached(join(dir, "podsync"), "k1", cred);
    const guard = (name: string) =>
      execFileSync("/bin/sh", ["-c", CACHE_GUARD, "podsync-token", name, "echo", "MISS"], {
        env: { XDG_CACHE_HOME: dir, HOME: dir },
      }).toString();
    expect(guard(cacheFileName("k1"))).toBe(`${cred}\n`);
    expect(guard(cacheFileName("k2"))).toBe("MISS\n");
    const past = Date.now() / 1000 - 60;
    utimesSync(join(dir, "podsync", `${cacheFileName("k1")}.fresh`), past, past);
    expect(guard(cacheFileName("k1"))).toBe("MISS\n");
  });
});
