// Services through the signed routes (sync, plan, PUT /v1/node/pods) against an in-process runtime: allocation
// of ClusterIPs and NodePorts (honoured, kept across sends, refused when out of range or taken), generations,
// the owner's NodePort policy, the bad input of issue 37 (each a 400 naming the field, nothing stored), and a
// deployment without a service network (a Worker) refusing Services naming the node agent.
import { beforeAll, describe, expect, it } from "vitest";
import type { CriClient } from "../../src/cri/client.js";
import { MemoryWorkloadStore } from "../../src/controllers/store.js";
import { parseServiceCidr, type ServiceNetwork } from "../../src/services/allocate.js";
import { Harness } from "../support/http.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileWorkloadStore } from "../../src/state/workloads.js";
import { importSealKey, newSealKeyBytes } from "../../src/state/secret-seal.js";
import type { WorkloadStore } from "../../src/controllers/store.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let cri: CriClient;
const suite = useFakeCri();
beforeAll(() => ({ cri } = suite));

const cidr = parseServiceCidr("10.96.0.0/16");
if (typeof cidr === "string") throw new Error(cidr);
const network = (o: Partial<ServiceNetwork> = {}): ServiceNetwork => ({
  cidr,
  nodePorts: { min: 30000, max: 32767 },
  nodePortPolicy: "allow",
  ...o,
});

const svc = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name },
  spec: { selector: { app: name }, ports: [{ name: "http", port: 80, targetPort: 8080 }], ...spec },
});

async function node(o: { services?: ServiceNetwork | undefined; workloads?: WorkloadStore } = { services: network() }) {
  const workloads = o.workloads ?? new MemoryWorkloadStore();
  const h = await Harness.start(cri, { workloads, ...(o.services ? { services: o.services } : {}) });
  const send = async (route: "sync" | "plan", items: unknown[]) =>
    h.fetch(`/v1/pods/${route}`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await h.sign({ act: route, items }),
    });
  const put = async (items: unknown[], generation: number) =>
    h.fetch("/v1/node/pods", {
      method: "PUT",
      headers: { "content-type": "application/jose" },
      body: await h.sign({ act: "apply", generation, pods: items }),
    });
  const services = async () =>
    new Map(
      (await workloads.list())
        .filter((s) => s.workload.kind === "Service")
        .map((s) => [s.workload.metadata.name, s] as const),
    );
  return { h, workloads, send, put, services };
}

const clusterIP = (s: { workload: unknown } | undefined) =>
  (s?.workload as { spec: { clusterIP?: string } } | undefined)?.spec.clusterIP;

describe("Services through sync, plan and the PUT set", () => {
  it("allocates a ClusterIP in the range, keeps it when sent again, honours a requested one", async () => {
    const n = await node();
    try {
      const r = await n.send("sync", [svc("web"), svc("db", { clusterIP: "10.96.7.7" })]);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.workloads.map((w: { action: string }) => w.action)).toEqual(["created", "created"]);
      const first = await n.services();
      const ip = clusterIP(first.get("web"))!;
      expect(ip).toMatch(/^10\.96\.\d+\.\d+$/);
      expect(ip).not.toBe("10.96.0.1");
      expect(clusterIP(first.get("db"))).toBe("10.96.7.7");
      // Sent again without one: the same address, unchanged, generation 1.
      const again = await n.send("sync", [svc("web")]);
      expect(again.body.workloads[0].action).toBe("unchanged");
      const second = await n.services();
      expect(clusterIP(second.get("web"))).toBe(ip);
      expect(second.get("web")!.generation).toBe(1);
      // A spec change is a new generation; the address stays.
      await n.send("sync", [svc("web", { ports: [{ name: "http", port: 81, targetPort: 8080 }] })]);
      const third = await n.services();
      expect(third.get("web")!.generation).toBe(2);
      expect(clusterIP(third.get("web"))).toBe(ip);
    } finally {
      await n.h.close();
    }
  });

  it("plan says what a sync would do, with the address it would get, and stores nothing", async () => {
    const n = await node();
    try {
      const r = await n.send("plan", [svc("web", { type: "NodePort" })]);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.workloads).toEqual([expect.objectContaining({ kind: "Service", name: "web", action: "created" })]);
      expect((await n.services()).size).toBe(0);
    } finally {
      await n.h.close();
    }
  });

  it("NodePorts: allocated in the range, a requested one honoured; headless and ExternalName get no address", async () => {
    const n = await node();
    try {
      const r = await n.send("sync", [
        svc("front", { type: "NodePort", ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 30080 }] }),
        svc("api", { type: "NodePort" }),
        svc("peers", { clusterIP: "None" }),
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "ext" },
          spec: { type: "ExternalName", externalName: "db.example.test" },
        },
      ]);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const s = await n.services();
      const port = (name: string) =>
        (s.get(name)!.workload as { spec: { ports: { nodePort?: number }[] } }).spec.ports[0]!.nodePort;
      expect(port("front")).toBe(30080);
      expect(port("api")).toBeGreaterThanOrEqual(30000);
      expect(port("api")).toBeLessThanOrEqual(32767);
      expect(clusterIP(s.get("peers"))).toBe("None");
      expect(clusterIP(s.get("ext"))).toBeUndefined();
    } finally {
      await n.h.close();
    }
  });

  it("the PUT set: its Services are all the node keeps; a dropped one is gone with its address", async () => {
    const n = await node();
    try {
      expect((await n.put([svc("a"), svc("b")], 1)).status).toBe(200);
      const ipA = clusterIP((await n.services()).get("a"));
      const r = await n.put([svc("a")], 2);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const s = await n.services();
      expect([...s.keys()]).toEqual(["a"]);
      expect(clusterIP(s.get("a"))).toBe(ipA);
    } finally {
      await n.h.close();
    }
  });
});

describe("across a restart", () => {
  it("the addresses are stored with the Services: a new process on the same state keeps them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-svc-restart-"));
    const key = importSealKey(newSealKeyBytes());
    const first = await node({ services: network(), workloads: new FileWorkloadStore(dir, () => key) });
    let ip: string | undefined;
    let port: number | undefined;
    try {
      expect((await first.send("sync", [svc("web", { type: "NodePort" })])).status).toBe(200);
      const s = (await first.services()).get("web")!;
      ip = clusterIP(s);
      port = (s.workload as { spec: { ports: { nodePort?: number }[] } }).spec.ports[0]!.nodePort;
    } finally {
      await first.h.close();
    }
    const second = await node({ services: network(), workloads: new FileWorkloadStore(dir, () => key) });
    try {
      const s = (await second.services()).get("web")!;
      expect(clusterIP(s)).toBe(ip);
      // Sent again after the restart, without addresses: unchanged, the same ones.
      const again = await second.send("sync", [svc("web", { type: "NodePort" })]);
      expect(again.body.workloads[0].action).toBe("unchanged");
      const after = (await second.services()).get("web")!;
      expect(clusterIP(after)).toBe(ip);
      expect((after.workload as { spec: { ports: { nodePort?: number }[] } }).spec.ports[0]!.nodePort).toBe(port);
    } finally {
      await second.h.close();
    }
  });
});

describe("bad input: a 400 naming the field, nothing stored", () => {
  const cases: [string, unknown[], string, string][] = [
    [
      "duplicate port names",
      [
        svc("web", {
          ports: [
            { name: "http", port: 80 },
            { name: "http", port: 81 },
          ],
        }),
      ],
      "items[0].spec.ports[1].name",
      "duplicate port name",
    ],
    [
      "port 0",
      [svc("web", { ports: [{ name: "http", port: 0 }] })],
      "items[0].spec.ports[0].port",
      "between 1 and 65535",
    ],
    [
      "a clusterIP out of range",
      [svc("web", { clusterIP: "10.97.0.5" })],
      "items[0].spec.clusterIP",
      "not in the valid range",
    ],
    [
      "a clusterIP already taken (in the same body)",
      [svc("a", { clusterIP: "10.96.3.3" }), svc("b", { clusterIP: "10.96.3.3" })],
      "items[1].spec.clusterIP",
      "already allocated",
    ],
    [
      "an IP family the node's range is not",
      [svc("web", { ipFamilies: ["IPv6"] })],
      "items[0].spec.ipFamilies[0]",
      "IPv6 is not configured on this node",
    ],
    [
      "a nodePort out of range",
      [svc("web", { type: "NodePort", ports: [{ name: "http", port: 80, nodePort: 8080 }] })],
      "items[0].spec.ports[0].nodePort",
      "not in the valid range",
    ],
    [
      "a nodePort already taken",
      [
        svc("a", { type: "NodePort", ports: [{ name: "http", port: 80, nodePort: 30001 }] }),
        svc("b", { type: "NodePort", ports: [{ name: "http", port: 80, nodePort: 30001 }] }),
      ],
      "items[1].spec.ports[0].nodePort",
      "already allocated",
    ],
    [
      "a selector on an ExternalName Service",
      [svc("ext", { type: "ExternalName", externalName: "db.example.test", ports: [] })],
      "items[0].spec.selector",
      "ExternalName",
    ],
    [
      "a targetPort name resolving to different ports in one pod",
      [
        svc("web", { ports: [{ name: "http", port: 80, targetPort: "web" }] }),
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "web" },
          spec: {
            selector: { matchLabels: { app: "web" } },
            template: {
              metadata: { labels: { app: "web" } },
              spec: {
                containers: [
                  { name: "a", image: "localhost/busybox:1", ports: [{ name: "web", containerPort: 8080 }] },
                  { name: "b", image: "localhost/busybox:1", ports: [{ name: "web", containerPort: 9090 }] },
                ],
              },
            },
          },
        },
      ],
      "items[0].spec.ports[0].targetPort",
      "resolves to different ports",
    ],
  ];
  for (const [name, items, path, message] of cases)
    it(name, async () => {
      const n = await node();
      try {
        // Taken by a stored Service too, for the taken cases: store the first alone, then send both.
        const r = await n.send("sync", items);
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(r.body.errors).toEqual(
          expect.arrayContaining([expect.objectContaining({ path, message: expect.stringContaining(message) })]),
        );
        expect(await n.workloads.list()).toEqual([]);
      } finally {
        await n.h.close();
      }
    });

  it("an address or port a stored Service holds is taken", async () => {
    const n = await node();
    try {
      await n.send("sync", [
        svc("a", { type: "NodePort", clusterIP: "10.96.3.3", ports: [{ name: "h", port: 80, nodePort: 30002 }] }),
      ]);
      const ip = await n.send("sync", [svc("b", { clusterIP: "10.96.3.3" })]);
      expect(ip.status).toBe(400);
      expect(ip.body.errors[0]).toMatchObject({
        path: "items[0].spec.clusterIP",
        message: expect.stringContaining("default/a"),
      });
      const port = await n.send("sync", [
        svc("c", { type: "NodePort", ports: [{ name: "h", port: 80, nodePort: 30002 }] }),
      ]);
      expect(port.status).toBe(400);
      expect(port.body.errors[0].path).toBe("items[0].spec.ports[0].nodePort");
      expect((await n.services()).size).toBe(1);
    } finally {
      await n.h.close();
    }
  });

  it("a selector matching nothing is fine", async () => {
    const n = await node();
    try {
      expect((await n.send("sync", [svc("lonely")])).status).toBe(200);
    } finally {
      await n.h.close();
    }
  });
});

describe("policy and deployments without Services", () => {
  it("PODSYNC_POLICY_NODEPORTS=forbid refuses NodePort and LoadBalancer Services (403 policy), ClusterIP is fine", async () => {
    const n = await node({ services: network({ nodePortPolicy: "forbid" }) });
    try {
      const r = await n.send("sync", [svc("web", { type: "NodePort" })]);
      expect(r.status).toBe(403);
      expect(r.body.errors[0]).toMatchObject({
        path: "items[0].spec.type",
        message: expect.stringContaining("PODSYNC_POLICY_NODEPORTS"),
      });
      expect((await n.send("sync", [svc("web")])).status).toBe(200);
    } finally {
      await n.h.close();
    }
  });

  it("a deployment without a service network (a Worker through cri-proxy) refuses Services naming the node agent", async () => {
    const n = await node({ services: undefined });
    try {
      const r = await n.send("sync", [svc("web")]);
      expect(r.status).toBe(501);
      expect(r.body.detail ?? r.body.title).toBeDefined();
      expect(JSON.stringify(r.body)).toContain("node agent");
      expect(r.body.errors[0].path).toBe("items[0].kind");
      expect(await n.workloads.list()).toEqual([]);
    } finally {
      await n.h.close();
    }
  });
});
