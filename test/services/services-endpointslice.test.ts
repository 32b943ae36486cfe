// The EndpointSlice controller's computation (staging/src/k8s.io/endpointslice utils_test.go TestPodToEndpoint,
// TestGetEndpointPorts, FindPort; reconciler_test.go's placeholder slice and grouping by ports) and the v1
// Endpoints derived from the slices.
import { describe, expect, it } from "vitest";
import { Service } from "../../src/pod/workloads/service.js";
import {
  computeEndpointSlices,
  endpointPorts,
  findPort,
  podToEndpoint,
  type EndpointPod,
} from "../../src/services/endpointslice/slices.js";
import { endpointsFromSlices } from "../../src/services/endpointslice/endpoints.js";
import { computeAll, createServiceSource } from "../../src/services/source.js";

const service = (spec: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) =>
  Service.parse({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "foo", namespace: "default", uid: "svc-uid", ...meta },
    spec: {
      selector: { app: "web" },
      clusterIP: "10.96.0.10",
      ports: [{ name: "http", port: 80, targetPort: 8080 }],
      ...spec,
    },
  });

const pod = (
  name: string,
  o: {
    ready?: boolean;
    ip?: string;
    deleting?: boolean;
    phase?: string;
    labels?: Record<string, string>;
    hostname?: string;
    subdomain?: string;
    ports?: { name?: string; containerPort: number; protocol?: string }[][];
    ns?: string;
  } = {},
): EndpointPod => ({
  metadata: {
    name,
    namespace: o.ns ?? "default",
    uid: `uid-${name}`,
    labels: o.labels ?? { app: "web" },
    ...(o.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
  },
  spec: {
    nodeName: "node-1",
    ...(o.hostname ? { hostname: o.hostname } : {}),
    ...(o.subdomain ? { subdomain: o.subdomain } : {}),
    containers: (o.ports ?? [[]]).map((ports) => ({ ports })),
  },
  status: {
    phase: o.phase ?? "Running",
    podIPs: [{ ip: o.ip ?? "10.244.78.5" }],
    conditions: [{ type: "Ready", status: (o.ready ?? true) ? "True" : "False" }],
  },
});

describe("podToEndpoint (utils_test.go TestPodToEndpoint)", () => {
  const cases: [
    string,
    EndpointPod,
    Record<string, unknown>,
    { ready: boolean; serving: boolean; terminating: boolean },
  ][] = [
    ["Ready pod", pod("p"), {}, { ready: true, serving: true, terminating: false }],
    ["Unready pod", pod("p", { ready: false }), {}, { ready: false, serving: false, terminating: false }],
    [
      "Unready pod + publishNotReadyAddresses",
      pod("p", { ready: false }),
      { publishNotReadyAddresses: true },
      { ready: true, serving: false, terminating: false },
    ],
    ["Ready and terminating pod", pod("p", { deleting: true }), {}, { ready: false, serving: true, terminating: true }],
    [
      "Ready and terminating pod + publishNotReadyAddresses",
      pod("p", { deleting: true }),
      { publishNotReadyAddresses: true },
      { ready: true, serving: true, terminating: true },
    ],
    [
      "Not ready and terminating pod",
      pod("p", { deleting: true, ready: false }),
      {},
      { ready: false, serving: false, terminating: true },
    ],
  ];
  for (const [name, p, spec, conditions] of cases)
    it(name, () => {
      const ep = podToEndpoint(p, service(spec), "IPv4");
      expect(ep).toEqual({
        addresses: ["10.244.78.5"],
        conditions,
        nodeName: "node-1",
        targetRef: { kind: "Pod", namespace: "default", name: "p", uid: "uid-p" },
      });
    });

  it("Ready pod + hostname (headless Service it names as subdomain): hostname set; another subdomain: not", () => {
    const headless = service({ clusterIP: "None" }, { name: "nginx" });
    expect(podToEndpoint(pod("web-0", { hostname: "web-0", subdomain: "nginx" }), headless, "IPv4").hostname).toBe(
      "web-0",
    );
    expect(
      podToEndpoint(pod("web-0", { hostname: "web-0", subdomain: "other" }), headless, "IPv4").hostname,
    ).toBeUndefined();
  });
  it("an IPv6 slice takes no IPv4 address", () => {
    expect(podToEndpoint(pod("p"), service(), "IPv6").addresses).toEqual([]);
  });
});

describe("FindPort / getEndpointPorts", () => {
  const named = pod("p", {
    ports: [
      [{ name: "http", containerPort: 8080, protocol: "TCP" }],
      [{ name: "http", containerPort: 9090, protocol: "UDP" }],
    ],
  });
  it("a number is itself; a name is the first container port of that name and protocol", () => {
    expect(findPort(named, { targetPort: 1234, protocol: "TCP" })).toBe(1234);
    expect(findPort(named, { targetPort: "http", protocol: "TCP" })).toBe(8080);
    expect(findPort(named, { targetPort: "http", protocol: "UDP" })).toBe(9090);
    expect(findPort(named, { targetPort: "nope", protocol: "TCP" })).toBeUndefined();
  });
  it("a sidecar's (init container, restartPolicy Always) named port counts; a plain init container's does not", () => {
    const p = pod("p");
    p.spec!.initContainers = [
      { restartPolicy: "Always", ports: [{ name: "metrics", containerPort: 9100 }] },
      { ports: [{ name: "other", containerPort: 9200 }] },
    ];
    expect(findPort(p, { targetPort: "metrics", protocol: "TCP" })).toBe(9100);
    expect(findPort(p, { targetPort: "other", protocol: "TCP" })).toBeUndefined();
  });
  it("a port the pod cannot resolve is left out of its endpoint ports", () => {
    const s = service({
      ports: [
        { name: "http", port: 80, targetPort: "http" },
        { name: "admin", port: 81, targetPort: "admin" },
      ],
    });
    expect(endpointPorts(s, named)).toEqual([{ name: "http", port: 8080, protocol: "TCP" }]);
  });
});

describe("computeEndpointSlices (the reconciler)", () => {
  it("one slice of the selected, running pods with an IP, labelled and owned as the controller does", () => {
    const pods = [
      pod("b", { ip: "10.244.78.6" }),
      pod("a", { ip: "10.244.78.5", ready: false }),
      pod("other", { labels: { app: "db" } }),
      pod("done", { phase: "Succeeded" }),
      pod("elsewhere", { ns: "prod" }),
    ];
    const [slice, ...rest] = computeEndpointSlices(service({}, { labels: { tier: "front" } }), pods);
    expect(rest).toEqual([]);
    expect(slice!.metadata.name).toMatch(/^foo-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(slice!.metadata.labels).toEqual({
      tier: "front",
      "kubernetes.io/service-name": "foo",
      "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    });
    expect(slice!.metadata.ownerReferences).toEqual([
      { apiVersion: "v1", kind: "Service", name: "foo", uid: "svc-uid", controller: true, blockOwnerDeletion: true },
    ]);
    expect(slice!.addressType).toBe("IPv4");
    expect(slice!.ports).toEqual([{ name: "http", port: 8080, protocol: "TCP" }]);
    expect(slice!.endpoints.map((e) => [e.targetRef.name, e.conditions.ready])).toEqual([
      ["a", false],
      ["b", true],
    ]);
    // The same inputs give the same name (no random suffix to churn watches after a restart).
    expect(computeEndpointSlices(service(), pods)[0]!.metadata.name).toBe(slice!.metadata.name);
  });
  it("pods resolving a named targetPort to different numbers go to different slices", () => {
    const s = service({ ports: [{ name: "http", port: 80, targetPort: "http" }] });
    const slices = computeEndpointSlices(s, [
      pod("a", { ports: [[{ name: "http", containerPort: 8080 }]] }),
      pod("b", { ip: "10.244.78.6", ports: [[{ name: "http", containerPort: 9090 }]] }),
    ]);
    expect(slices.map((x) => [x.ports[0]!.port, x.endpoints[0]!.targetRef.name]).sort()).toEqual([
      [8080, "a"],
      [9090, "b"],
    ]);
  });
  it("a selector matching nothing gives one placeholder slice with no endpoints", () => {
    const slices = computeEndpointSlices(service({ selector: { app: "none" } }), [pod("a")]);
    expect(slices).toHaveLength(1);
    expect(slices[0]!.endpoints).toEqual([]);
    expect(slices[0]!.ports).toEqual([]);
  });
  it("no selector, or ExternalName: no managed slices", () => {
    const noSelector = Service.parse({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "ext" },
      spec: { ports: [{ port: 80 }] },
    });
    expect(computeEndpointSlices(noSelector, [pod("a")])).toEqual([]);
    const ext = Service.parse({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "ext" },
      spec: { type: "ExternalName", externalName: "example.test" },
    });
    expect(computeEndpointSlices(ext, [pod("a")])).toEqual([]);
  });
  it("more than 100 endpoints split into slices of at most 100", () => {
    const pods = Array.from({ length: 150 }, (_, i) =>
      pod(`p${String(i).padStart(3, "0")}`, { ip: `10.244.${i >> 8}.${i & 255}` }),
    );
    const slices = computeEndpointSlices(service(), pods);
    expect(slices.map((x) => x.endpoints.length)).toEqual([100, 50]);
    expect(new Set(slices.map((x) => x.metadata.name)).size).toBe(2);
  });
  it("a headless Service's slices carry service.kubernetes.io/headless", () => {
    const s = service({ clusterIP: "None", ipFamilies: ["IPv4"] });
    expect(computeEndpointSlices(s, [pod("a")])[0]!.metadata.labels["service.kubernetes.io/headless"]).toBe("");
  });
});

describe("v1 Endpoints from the slices", () => {
  it("ready addresses, not-ready ones apart, terminating ones left out, with the ports", () => {
    const s = service();
    const pods = [
      pod("a"),
      pod("b", { ip: "10.244.78.6", ready: false }),
      pod("c", { ip: "10.244.78.7", deleting: true }),
    ];
    const ep = endpointsFromSlices(s, computeEndpointSlices(s, pods))!;
    expect(ep.subsets).toEqual([
      {
        addresses: [expect.objectContaining({ ip: "10.244.78.5" })],
        notReadyAddresses: [expect.objectContaining({ ip: "10.244.78.6" })],
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      },
    ]);
  });
  it("computeAll: slices and Endpoints for every Service", () => {
    const r = computeAll([service(), service({ selector: { app: "db" } }, { name: "db", uid: "db-uid" })], [pod("a")]);
    expect(r.endpointSlices.map((x) => [x.metadata.labels["kubernetes.io/service-name"], x.endpoints.length])).toEqual([
      ["foo", 1],
      ["db", 0],
    ]);
    expect(r.endpoints.map((e) => [e.metadata.name, e.subsets.length])).toEqual([
      ["foo", 1],
      ["db", 0],
    ]);
  });
});

describe("createServiceSource (what the data plane subscribes to)", () => {
  const feed = <T>(items: T[]) => {
    const subs = new Set<() => void>();
    return {
      items,
      list: () => items,
      subscribe: (cb: () => void) => (subs.add(cb), () => subs.delete(cb)),
      fire: () => {
        for (const cb of subs) cb();
      },
    };
  };
  it("tells subscribers once per change, coalescing a burst; a no-op feed change tells nobody", async () => {
    const services = feed([service()]);
    const pods = feed([pod("a")]);
    const source = createServiceSource({ services, pods });
    await source.refresh();
    const v1 = source.snapshot();
    expect(v1.endpointSlices[0]!.endpoints[0]!.conditions.ready).toBe(true);
    let told = 0;
    source.subscribe(() => told++);
    pods.fire();
    await source.refresh();
    expect(told).toBe(0);
    // The pod turns not ready: one notice for a burst of three feed events.
    pods.items[0] = pod("a", { ready: false });
    pods.fire();
    pods.fire();
    services.fire();
    await new Promise((r) => setTimeout(r, 0));
    await source.refresh();
    expect(told).toBe(1);
    const v2 = source.snapshot();
    expect(v2.version).toBe(v1.version + 1);
    expect(v2.endpointSlices[0]!.endpoints[0]!.conditions.ready).toBe(false);
    // The earlier snapshot is untouched.
    expect(v1.endpointSlices[0]!.endpoints[0]!.conditions.ready).toBe(true);
    source.stop();
  });
});
