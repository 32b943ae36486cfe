// The ClusterIP and NodePort allocators, pure (src/services/allocate.ts), and their settings.
import { describe, expect, it } from "vitest";
import {
  allocateServices,
  parseNodePortRange,
  parseServiceCidr,
  type ServiceCidr,
  type ServiceNetwork,
} from "../../src/services/allocate.js";
import { Service } from "../../src/pod/workloads/service.js";
import { Settings } from "../../src/settings/node.js";

const cidrOf = (t: string) => {
  const c = parseServiceCidr(t);
  if (typeof c === "string") throw new Error(c);
  return c;
};
const net = (cidr: ServiceCidr, min = 30000, max = 32767): ServiceNetwork => ({
  cidr,
  nodePorts: { min, max },
  nodePortPolicy: "allow",
});
const svc = (name: string, spec: Record<string, unknown> = {}) =>
  Service.parse({ apiVersion: "v1", kind: "Service", metadata: { name }, spec: { ports: [{ port: 80 }], ...spec } });

describe("PODSYNC_SERVICE_CIDR and PODSYNC_NODEPORT_RANGE", () => {
  it("parses IPv4 and IPv6 networks; refuses host bits, sizes out of bounds and junk", () => {
    expect(cidrOf("10.96.0.0/16")).toMatchObject({ family: "IPv4", size: 65536n });
    expect(cidrOf("fd00:10:96::/112")).toMatchObject({ family: "IPv6", size: 65536n });
    expect(parseServiceCidr("10.96.0.1/16")).toContain("host bits");
    expect(parseServiceCidr("10.0.0.0/8")).toContain("between 8 and 2^20");
    expect(parseServiceCidr("10.96.0.0/30")).toContain("between 8 and 2^20");
    expect(parseServiceCidr("10.96.0.0")).toContain("CIDR");
    expect(parseNodePortRange("30000-32767")).toEqual({ min: 30000, max: 32767 });
    expect(parseNodePortRange("32767-30000")).toContain("port range");
  });
  it("the node's settings take them, with the defaults, and name a bad one", () => {
    const s = Settings.parse({ PODSYNC_DEV_DIR: "/tmp/x" });
    expect(s.PODSYNC_SERVICE_CIDR.text).toBe("10.96.0.0/16");
    expect(s.PODSYNC_NODEPORT_RANGE).toEqual({ min: 30000, max: 32767 });
    expect(s.PODSYNC_POLICY_NODEPORTS).toBe("allow");
    const bad = Settings.safeParse({ PODSYNC_SERVICE_CIDR: "10.96.0.1/16" });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues)).toContain("PODSYNC_SERVICE_CIDR");
  });
});

describe("allocateServices", () => {
  it("never gives the network, first or broadcast address; fills a small range and then says it is full", () => {
    const n = net(cidrOf("10.96.0.0/29")); // 8 addresses: .0 network, .1 reserved, .7 broadcast: 5 to give
    const incoming = Array.from({ length: 6 }, (_, i) => ({ svc: svc(`s${i}`), at: `items[${i}]` }));
    const r = allocateServices(incoming, [], new Map(), n);
    const given = incoming.slice(0, 5).map((x) => x.svc.spec.clusterIP);
    expect(new Set(given).size).toBe(5);
    for (const ip of given) expect(["10.96.0.2", "10.96.0.3", "10.96.0.4", "10.96.0.5", "10.96.0.6"]).toContain(ip);
    expect(r.invalid).toEqual([{ path: "items[5].spec.clusterIP", message: expect.stringContaining("is full") }]);
  });
  it("IPv6: gives an address of the range, written as RFC 5952 text", () => {
    const incoming = [{ svc: svc("v6"), at: "" }];
    expect(allocateServices(incoming, [], new Map(), net(cidrOf("fd00:10:96::/112")))).toEqual({
      invalid: [],
      policy: [],
    });
    expect(incoming[0]!.svc.spec.clusterIP).toMatch(/^fd00:10:96::[0-9a-f]{1,4}$/);
    expect(incoming[0]!.svc.spec.ipFamilies).toEqual(["IPv6"]);
  });
  it("IP families as alloc.go's initIPFamilyFields on a single-stack node", () => {
    const v4 = net(cidrOf("10.96.0.0/16"));
    const one = (spec: Record<string, unknown>, n = v4) => {
      const s = svc("s", spec);
      return { r: allocateServices([{ svc: s, at: "" }], [], new Map(), n), spec: s.spec };
    };
    // PreferDualStack: served with the node's one family, the policy kept.
    expect(one({ ipFamilyPolicy: "PreferDualStack" })).toMatchObject({
      r: { invalid: [] },
      spec: { ipFamilyPolicy: "PreferDualStack", ipFamilies: ["IPv4"] },
    });
    // RequireDualStack, a second family, two families with SingleStack, an IPv6 clusterIP: each at its field.
    expect(one({ ipFamilyPolicy: "RequireDualStack" }).r.invalid).toEqual([
      { path: "spec.ipFamilyPolicy", message: expect.stringContaining("not configured for dual-stack services") },
    ]);
    expect(one({ ipFamilyPolicy: "PreferDualStack", ipFamilies: ["IPv4", "IPv6"] }).r.invalid).toEqual([
      { path: "spec.ipFamilies[1]", message: expect.stringContaining("IPv6 is not configured on this node") },
    ]);
    expect(one({ ipFamilies: ["IPv4", "IPv6"] }).r.invalid).toEqual([
      { path: "spec.ipFamilyPolicy", message: expect.stringContaining("when multiple IP families are specified") },
    ]);
    expect(one({ clusterIP: "fd00::5" }).r.invalid).toEqual([
      { path: "spec.clusterIPs[0]", message: expect.stringContaining("IPv6 is not configured on this node") },
    ]);
    // A headless Service without a selector: RequireDualStack by default, both families listed (its addresses
    // are its endpoints'); with a selector it follows the node's family.
    expect(one({ clusterIP: "None" })).toMatchObject({
      r: { invalid: [] },
      spec: { ipFamilyPolicy: "RequireDualStack", ipFamilies: ["IPv4", "IPv6"] },
    });
    expect(one({ clusterIP: "None", selector: { app: "x" } })).toMatchObject({
      r: { invalid: [] },
      spec: { ipFamilyPolicy: "SingleStack", ipFamilies: ["IPv4"] },
    });
    // An IPv6 node: IPv6 families and addresses, IPv4 refused.
    const v6 = net(cidrOf("fd00:10:96::/112"));
    expect(one({ ipFamilyPolicy: "PreferDualStack" }, v6).spec).toMatchObject({ ipFamilies: ["IPv6"] });
    expect(one({ ipFamilies: ["IPv4"] }, v6).r.invalid).toEqual([
      { path: "spec.ipFamilies[0]", message: expect.stringContaining("IPv4 is not configured on this node") },
    ]);
  });
  it("a requested address is never given to another Service of the same body, whatever their order", () => {
    const a = svc("a");
    const b = svc("b", { clusterIP: "10.96.0.2" });
    const n = net(cidrOf("10.96.0.0/29"));
    allocateServices(
      [
        { svc: a, at: "items[0]" },
        { svc: b, at: "items[1]" },
      ],
      [],
      new Map(),
      n,
    );
    expect(b.spec.clusterIP).toBe("10.96.0.2");
    expect(a.spec.clusterIP).not.toBe("10.96.0.2");
  });
  it("NodePorts from a narrowed range; the same Service's TCP and UDP may share one it asks for", () => {
    const dns = svc("dns", {
      type: "NodePort",
      ports: [
        { name: "udp", port: 53, protocol: "UDP", nodePort: 30053 },
        { name: "tcp", port: 53, protocol: "TCP", nodePort: 30053 },
      ],
    });
    const web = svc("web", { type: "NodePort" });
    const r = allocateServices(
      [
        { svc: dns, at: "items[0]" },
        { svc: web, at: "items[1]" },
      ],
      [],
      new Map(),
      net(cidrOf("10.96.0.0/16"), 30050, 30055),
    );
    expect(r.invalid).toEqual([]);
    expect(web.spec.ports[0]!.nodePort).toBeGreaterThanOrEqual(30050);
    expect(web.spec.ports[0]!.nodePort).toBeLessThanOrEqual(30055);
    expect(web.spec.ports[0]!.nodePort).not.toBe(30053);
  });
});
