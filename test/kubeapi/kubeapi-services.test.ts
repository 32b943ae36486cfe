// Services, EndpointSlices and Endpoints on the Kubernetes API's read side, without a runtime: the Services from
// the workload store, the pods from their hub, the slices computed by the service source; kubectl's Table
// columns (printers.go), label selectors, and a watch that sees a pod leave its slice's ready endpoints.
import { describe, expect, it } from "vitest";
import { SignJWT } from "jose";
import { createKubeApi } from "../../src/kubeapi/routes.js";
import { RvClock, WatchHub } from "../../src/kubeapi/watch-hub.js";
import { EventRecorder } from "../../src/kubeapi/events.js";
import { createWorkloadFeed } from "../../src/kubeapi/kinds/workload-feed.js";
import { createEndpointsFeed } from "../../src/kubeapi/kinds/endpoints-feed.js";
import { MemoryWorkloadStore } from "../../src/controllers/store.js";
import { createVerifier } from "../../src/auth/verify.js";
import { MemoryReplayStore } from "../../src/auth/replay.js";
import type { V1Node } from "../../src/kubeapi/node-object.js";
import type { V1Pod } from "../../src/status/api-status.js";
import type { PodRuntime } from "../../src/kubelet/pod-runtime.js";
import { Service } from "../../src/pod/workloads/service.js";
import { validatePod } from "../../src/pod/validate.js";
import { createServiceSource } from "../../src/services/source.js";
import { makeKey, ISSUER, NODE } from "../support/http.js";

const audit = { iss: ISSUER, kid: undefined, jti: "j", iat: 1 };
const service = (name: string, spec: Record<string, unknown>) =>
  Service.parse({ apiVersion: "v1", kind: "Service", metadata: { name, uid: `uid-${name}` }, spec });

const v1Pod = (name: string, ip: string, ready: boolean): V1Pod => {
  const pod = validatePod({
    metadata: { name, uid: `uid-${name}`, labels: { app: "web" } },
    spec: { containers: [{ name: "c", image: "localhost/busybox:1", ports: [{ name: "http", containerPort: 8080 }] }] },
  });
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { ...pod.metadata, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: pod.spec,
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: ready ? "True" : "False", lastProbeTime: null, lastTransitionTime: null }],
      podIP: ip,
      podIPs: [{ ip }],
      containerStatuses: [],
      qosClass: "BestEffort",
    },
  };
};

describe("Services and their endpoints on the read side", async () => {
  const key = await makeKey("EdDSA", "k1");
  const verifier = createVerifier({
    keys: { jwks: { keys: [key.publicJwk] } },
    issuers: [ISSUER],
    audience: [NODE],
    replay: new MemoryReplayStore(),
  });
  const read = await new SignJWT({ act: "read" })
    .setProtectedHeader({ alg: "EdDSA", kid: "k1" })
    .setIssuer(ISSUER)
    .setAudience(NODE)
    .setIssuedAt()
    .setExpirationTime("2m")
    .setJti(crypto.randomUUID())
    .sign(key.privateKey);
  const clock = new RvClock(100);
  const feed = createWorkloadFeed(clock, new MemoryWorkloadStore());
  const at = Date.now() - 60_000;
  await feed.store.putAll(
    [
      service("web", {
        selector: { app: "web" },
        clusterIP: "10.96.0.20",
        type: "NodePort",
        ports: [{ name: "http", port: 80, targetPort: "http", nodePort: 30080 }],
      }),
      service("ext", { type: "ExternalName", externalName: "db.example.test" }),
    ].map((workload) => ({ workload, audit, storedAt: at, generation: 1 })),
  );
  const pods = new WatchHub<V1Pod>(clock, { key: (p) => p.metadata.uid });
  pods.replaceAll([v1Pod("web-a", "10.244.78.10", true), v1Pod("web-b", "10.244.78.11", true)]);
  const source = createServiceSource({
    services: {
      list: async () =>
        (await feed.store.list()).map((s) => s.workload).filter((w): w is Service => w.kind === "Service"),
      subscribe: (cb) => feed.hubs.Service.watch({ since: undefined, filter: () => true, send: cb }),
    },
    pods: {
      list: () => pods.list(),
      subscribe: (cb) => pods.watch({ since: undefined, filter: () => true, send: cb }),
    },
  });
  await source.refresh();
  const app = createKubeApi({
    verifier,
    pods,
    events: new EventRecorder(clock, NODE),
    node: { hub: new WatchHub<V1Node>(clock, { key: (n) => n.metadata.name }), refresh: async () => undefined },
    runtime: {} as PodRuntime,
    podsyncVersion: "x",
    arch: "amd64",
    allowExec: false,
    followMaxMs: 1000,
    workloads: feed,
    endpoints: createEndpointsFeed(clock, source),
    // A fixed clock: the AGE cells are the same however long the suite takes.
    now: () => at + 60_000,
  });
  const get = (path: string, headers: Record<string, string> = {}) =>
    app.request(path, { headers: { authorization: `Bearer ${read}`, ...headers } });
  const TABLE = { accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" };

  it("get svc: printers.go's columns and cells", async () => {
    const t = await (await get("/api/v1/namespaces/default/services", TABLE)).json();
    expect(t.columnDefinitions.map((c: { name: string; priority: number }) => `${c.name}:${c.priority}`)).toEqual([
      "Name:0",
      "Type:0",
      "Cluster-IP:0",
      "External-IP:0",
      "Port(s):0",
      "Age:0",
      "Selector:1",
    ]);
    expect(t.rows.map((r: { cells: unknown[] }) => r.cells)).toEqual([
      ["ext", "ExternalName", "<none>", "db.example.test", "<none>", "60s", "<none>"],
      ["web", "NodePort", "10.96.0.20", "<none>", "80:30080/TCP", "60s", "app=web"],
    ]);
    const one = await (await get("/api/v1/namespaces/default/services/web")).json();
    expect(one).toMatchObject({ apiVersion: "v1", kind: "Service", status: { loadBalancer: {} } });
  });

  it("get endpointslices (by the service-name label) and endpoints", async () => {
    const list = await (
      await get(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io/service-name%3Dweb",
      )
    ).json();
    expect(list).toMatchObject({ kind: "EndpointSliceList", apiVersion: "discovery.k8s.io/v1" });
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({
      addressType: "IPv4",
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      endpoints: [
        { addresses: ["10.244.78.10"], conditions: { ready: true } },
        { addresses: ["10.244.78.11"], conditions: { ready: true } },
      ],
    });
    const t = await (await get("/apis/discovery.k8s.io/v1/endpointslices", TABLE)).json();
    expect(t.columnDefinitions.map((c: { name: string }) => c.name)).toEqual([
      "Name",
      "AddressType",
      "Ports",
      "Endpoints",
      "Age",
    ]);
    expect(t.rows[0].cells.slice(1, 4)).toEqual(["IPv4", "8080", "10.244.78.10,10.244.78.11"]);
    const ep = await (await get("/api/v1/namespaces/default/endpoints", TABLE)).json();
    expect(ep.rows.map((r: { cells: unknown[] }) => r.cells.slice(0, 2))).toEqual([
      ["web", "10.244.78.10:8080,10.244.78.11:8080"],
    ]);
  });

  it("a watch on endpointslices sees a pod that turns not ready leave the ready endpoints", async () => {
    const res = await get("/apis/discovery.k8s.io/v1/endpointslices?watch=1");
    const reader = res.body!.getReader();
    const events: { type: string; object: { endpoints: { addresses: string[]; conditions: { ready: boolean } }[] } }[] =
      [];
    let buf = "";
    const next = async () => {
      while (!buf.includes("\n")) {
        const { value } = await reader.read();
        buf += new TextDecoder().decode(value);
      }
      const i = buf.indexOf("\n");
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      return JSON.parse(line);
    };
    events.push(await next());
    expect(events[0]!.type).toBe("ADDED");
    pods.upsert(v1Pod("web-b", "10.244.78.11", false));
    const modified = await next();
    expect(modified.type).toBe("MODIFIED");
    expect(
      modified.object.endpoints.map((e: { addresses: string[]; conditions: { ready: boolean } }) => [
        e.addresses[0],
        e.conditions.ready,
      ]),
    ).toEqual([
      ["10.244.78.10", true],
      ["10.244.78.11", false],
    ]);
    await reader.cancel();
  });
});
