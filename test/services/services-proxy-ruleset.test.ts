// The proxier's pure decision against kube-proxy's own expectations: TestOverallNFTablesRules
// (pkg/proxy/nftables/proxier_test.go), in podsync's `inet podsync` table (so `dnat ip to`), without the
// LoadBalancer and externalIPs parts podsync does not serve; and the incremental transactions.
import { describe, expect, it } from "vitest";
import { desiredRuleset, type RulesetSettings } from "../../src/services/proxy/ruleset.js";
import { fullSyncScript, incrementalScript, renderRuleset } from "../../src/services/proxy/transaction.js";
import { hashAndTruncate } from "../../src/services/proxy/names.js";
import type { EndpointSlice, Service } from "../../src/services/types.js";

const settings: RulesetSettings = {
  table: "podsync",
  serviceCIDRs: ["172.30.0.0/16"],
  podCIDR: "10.0.0.0/8",
  nodeName: "test-node",
};
const svc = (ns: string, name: string, ip: string, spec: Partial<Service["spec"]> = {}): Service => ({
  metadata: { name, namespace: ns },
  spec: { clusterIP: ip, ports: [{ name: "p80", port: 80, protocol: "TCP" }], ...spec },
});
const slice = (ns: string, name: string, eps: EndpointSlice["endpoints"], port = 80): EndpointSlice => ({
  metadata: { namespace: ns, name: `${name}-1`, labels: { "kubernetes.io/service-name": name } },
  addressType: "IPv4",
  endpoints: eps,
  ports: [{ name: "p80", port, protocol: "TCP" }],
});
const T = "inet podsync";

const BASE = `
add table ${T} { comment "rules for podsync" ; }
add set ${T} cluster-ips { type ipv4_addr ; comment "Active ClusterIPs" ; }
add map ${T} no-endpoint-nodeports { type inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to service nodeports with no endpoints" ; }
add map ${T} no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to services with no endpoints" ; }
add map ${T} service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }
add map ${T} service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }
add chain ${T} filter-prerouting-pre-dnat { type filter hook prerouting priority -110 ; }
add chain ${T} filter-output-pre-dnat { type filter hook output priority -110 ; }
add chain ${T} filter-forward { type filter hook forward priority 0 ; }
add chain ${T} filter-input { type filter hook input priority 0 ; }
add chain ${T} filter-output { type filter hook output priority 0 ; }
add chain ${T} nat-prerouting { type nat hook prerouting priority -100 ; }
add chain ${T} nat-output { type nat hook output priority -100 ; }
add chain ${T} nat-postrouting { type nat hook postrouting priority 100 ; }
add chain ${T} cluster-ips-check
add chain ${T} service-endpoints-check
add chain ${T} nodeport-endpoints-check
add chain ${T} reject-chain { comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ; }
add chain ${T} services
add chain ${T} mark-for-masquerade
add chain ${T} masquerading
add rule ${T} filter-forward ct state new jump service-endpoints-check
add rule ${T} filter-forward ct state new jump cluster-ips-check
add rule ${T} filter-input ct state new jump nodeport-endpoints-check
add rule ${T} filter-input ct state new jump service-endpoints-check
add rule ${T} filter-output ct state new jump service-endpoints-check
add rule ${T} filter-output ct state new jump cluster-ips-check
add rule ${T} nat-prerouting jump services
add rule ${T} nat-output jump services
add rule ${T} nat-postrouting jump masquerading
add rule ${T} cluster-ips-check ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"
add rule ${T} cluster-ips-check ip daddr { 172.30.0.0/16 } drop comment "Drop traffic to unallocated ClusterIPs"
add rule ${T} service-endpoints-check ip daddr . meta l4proto . th dport vmap @no-endpoint-services
add rule ${T} nodeport-endpoints-check ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports
add rule ${T} reject-chain reject
add rule ${T} services ip daddr . meta l4proto . th dport vmap @service-ips
add rule ${T} services fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports
add rule ${T} mark-for-masquerade mark set mark or 0x4000
add rule ${T} masquerading mark and 0x4000 == 0 return
add rule ${T} masquerading mark set mark xor 0x4000
add rule ${T} masquerading masquerade fully-random
`;
const lines = (s: string) =>
  s
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .sort();

describe("desiredRuleset (TestOverallNFTablesRules)", () => {
  it("names chains as kube-proxy does (hashAndTruncate)", () => {
    expect(hashAndTruncate("ns1/svc1/tcp/p80")).toBe("ULMVA6XW-ns1/svc1/tcp/p80");
    expect(hashAndTruncate("ns1/svc1/tcp/p80__10.180.0.1/80")).toBe("5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80");
    expect(hashAndTruncate("x".repeat(300))).toHaveLength(240);
  });

  it("produces upstream's rules for ClusterIP, NodePort, Local policy, affinity and no endpoints", () => {
    const services = [
      svc("ns1", "svc1", "172.30.0.41"),
      svc("ns2", "svc2", "172.30.0.42", {
        type: "NodePort",
        externalTrafficPolicy: "Local",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3001 }],
      }),
      svc("ns3", "svc3", "172.30.0.43", {
        type: "NodePort",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3003 }],
      }),
      svc("ns4", "svc4", "172.30.0.44", {
        type: "NodePort",
        ports: [{ name: "p80", port: 80, protocol: "TCP", targetPort: 80 }],
      }),
      svc("ns5", "svc5", "172.30.0.45", {
        type: "NodePort",
        externalTrafficPolicy: "Cluster",
        ports: [{ name: "p80", port: 80, protocol: "TCP", nodePort: 3002 }],
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
      }),
      svc("ns6", "svc6", "172.30.0.46", { type: "ClusterIP" }),
    ];
    const slices = [
      slice("ns1", "svc1", [{ addresses: ["10.180.0.1"] }]),
      // No nodeName: not local, so the Local external policy has no endpoints.
      slice("ns2", "svc2", [{ addresses: ["10.180.0.2"] }]),
      slice("ns3", "svc3", [{ addresses: ["10.180.0.3"] }]),
      slice("ns4", "svc4", [{ addresses: ["10.180.0.4"] }, { addresses: ["10.180.0.5"], nodeName: "test-node" }]),
      slice("ns5", "svc5", [{ addresses: ["10.180.0.3"] }]),
    ];
    const want = `${BASE}
# svc1
add chain ${T} service-ULMVA6XW-ns1/svc1/tcp/p80
add rule ${T} service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule ${T} service-ULMVA6XW-ns1/svc1/tcp/p80 numgen random mod 1 vmap { 0 : goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 }
add chain ${T} endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
add rule ${T} endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 ip saddr 10.180.0.1 jump mark-for-masquerade
add rule ${T} endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 meta l4proto tcp dnat ip to 10.180.0.1:80
add element ${T} cluster-ips { 172.30.0.41 }
add element ${T} service-ips { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
# svc2
add chain ${T} service-42NFTM6N-ns2/svc2/tcp/p80
add rule ${T} service-42NFTM6N-ns2/svc2/tcp/p80 ip daddr 172.30.0.42 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule ${T} service-42NFTM6N-ns2/svc2/tcp/p80 numgen random mod 1 vmap { 0 : goto endpoint-SGOXE6O3-ns2/svc2/tcp/p80__10.180.0.2/80 }
add chain ${T} external-42NFTM6N-ns2/svc2/tcp/p80
add rule ${T} external-42NFTM6N-ns2/svc2/tcp/p80 ip saddr 10.0.0.0/8 goto service-42NFTM6N-ns2/svc2/tcp/p80 comment "short-circuit pod traffic"
add rule ${T} external-42NFTM6N-ns2/svc2/tcp/p80 fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"
add rule ${T} external-42NFTM6N-ns2/svc2/tcp/p80 fib saddr type local goto service-42NFTM6N-ns2/svc2/tcp/p80 comment "short-circuit local traffic"
add chain ${T} endpoint-SGOXE6O3-ns2/svc2/tcp/p80__10.180.0.2/80
add rule ${T} endpoint-SGOXE6O3-ns2/svc2/tcp/p80__10.180.0.2/80 ip saddr 10.180.0.2 jump mark-for-masquerade
add rule ${T} endpoint-SGOXE6O3-ns2/svc2/tcp/p80__10.180.0.2/80 meta l4proto tcp dnat ip to 10.180.0.2:80
add element ${T} cluster-ips { 172.30.0.42 }
add element ${T} service-ips { 172.30.0.42 . tcp . 80 : goto service-42NFTM6N-ns2/svc2/tcp/p80 }
add element ${T} service-nodeports { tcp . 3001 : goto external-42NFTM6N-ns2/svc2/tcp/p80 }
add element ${T} no-endpoint-nodeports { tcp . 3001 comment "ns2/svc2:p80" : drop }
# svc3
add chain ${T} service-4AT6LBPK-ns3/svc3/tcp/p80
add rule ${T} service-4AT6LBPK-ns3/svc3/tcp/p80 ip daddr 172.30.0.43 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule ${T} service-4AT6LBPK-ns3/svc3/tcp/p80 numgen random mod 1 vmap { 0 : goto endpoint-UEIP74TE-ns3/svc3/tcp/p80__10.180.0.3/80 }
add chain ${T} external-4AT6LBPK-ns3/svc3/tcp/p80
add rule ${T} external-4AT6LBPK-ns3/svc3/tcp/p80 jump mark-for-masquerade
add rule ${T} external-4AT6LBPK-ns3/svc3/tcp/p80 goto service-4AT6LBPK-ns3/svc3/tcp/p80
add chain ${T} endpoint-UEIP74TE-ns3/svc3/tcp/p80__10.180.0.3/80
add rule ${T} endpoint-UEIP74TE-ns3/svc3/tcp/p80__10.180.0.3/80 ip saddr 10.180.0.3 jump mark-for-masquerade
add rule ${T} endpoint-UEIP74TE-ns3/svc3/tcp/p80__10.180.0.3/80 meta l4proto tcp dnat ip to 10.180.0.3:80
add element ${T} cluster-ips { 172.30.0.43 }
add element ${T} service-ips { 172.30.0.43 . tcp . 80 : goto service-4AT6LBPK-ns3/svc3/tcp/p80 }
add element ${T} service-nodeports { tcp . 3003 : goto external-4AT6LBPK-ns3/svc3/tcp/p80 }
# svc4 (upstream's externalIP left out; no nodePort set, so no nodeports element)
add chain ${T} service-LAUZTJTB-ns4/svc4/tcp/p80
add rule ${T} service-LAUZTJTB-ns4/svc4/tcp/p80 ip daddr 172.30.0.44 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule ${T} service-LAUZTJTB-ns4/svc4/tcp/p80 numgen random mod 2 vmap { 0 : goto endpoint-UNZV3OEC-ns4/svc4/tcp/p80__10.180.0.4/80 , 1 : goto endpoint-5RFCDDV7-ns4/svc4/tcp/p80__10.180.0.5/80 }
add chain ${T} external-LAUZTJTB-ns4/svc4/tcp/p80
add rule ${T} external-LAUZTJTB-ns4/svc4/tcp/p80 jump mark-for-masquerade
add rule ${T} external-LAUZTJTB-ns4/svc4/tcp/p80 goto service-LAUZTJTB-ns4/svc4/tcp/p80
add chain ${T} endpoint-5RFCDDV7-ns4/svc4/tcp/p80__10.180.0.5/80
add rule ${T} endpoint-5RFCDDV7-ns4/svc4/tcp/p80__10.180.0.5/80 ip saddr 10.180.0.5 jump mark-for-masquerade
add rule ${T} endpoint-5RFCDDV7-ns4/svc4/tcp/p80__10.180.0.5/80 meta l4proto tcp dnat ip to 10.180.0.5:80
add chain ${T} endpoint-UNZV3OEC-ns4/svc4/tcp/p80__10.180.0.4/80
add rule ${T} endpoint-UNZV3OEC-ns4/svc4/tcp/p80__10.180.0.4/80 ip saddr 10.180.0.4 jump mark-for-masquerade
add rule ${T} endpoint-UNZV3OEC-ns4/svc4/tcp/p80__10.180.0.4/80 meta l4proto tcp dnat ip to 10.180.0.4:80
add element ${T} cluster-ips { 172.30.0.44 }
add element ${T} service-ips { 172.30.0.44 . tcp . 80 : goto service-LAUZTJTB-ns4/svc4/tcp/p80 }
# svc5
add set ${T} affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }
add chain ${T} service-HVFWP5L3-ns5/svc5/tcp/p80
add rule ${T} service-HVFWP5L3-ns5/svc5/tcp/p80 ip daddr 172.30.0.45 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule ${T} service-HVFWP5L3-ns5/svc5/tcp/p80 ip saddr @affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 goto endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80
add rule ${T} service-HVFWP5L3-ns5/svc5/tcp/p80 numgen random mod 1 vmap { 0 : goto endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 }
add chain ${T} external-HVFWP5L3-ns5/svc5/tcp/p80
add rule ${T} external-HVFWP5L3-ns5/svc5/tcp/p80 jump mark-for-masquerade
add rule ${T} external-HVFWP5L3-ns5/svc5/tcp/p80 goto service-HVFWP5L3-ns5/svc5/tcp/p80
add chain ${T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80
add rule ${T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 ip saddr 10.180.0.3 jump mark-for-masquerade
add rule ${T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 update @affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 { ip saddr }
add rule ${T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 meta l4proto tcp dnat ip to 10.180.0.3:80
add element ${T} cluster-ips { 172.30.0.45 }
add element ${T} service-ips { 172.30.0.45 . tcp . 80 : goto service-HVFWP5L3-ns5/svc5/tcp/p80 }
add element ${T} service-nodeports { tcp . 3002 : goto external-HVFWP5L3-ns5/svc5/tcp/p80 }
# svc6
add element ${T} cluster-ips { 172.30.0.46 }
add element ${T} no-endpoint-services { 172.30.0.46 . tcp . 80 comment "ns6/svc6:p80" : goto reject-chain }
`;
    expect(lines(renderRuleset(desiredRuleset(services, slices, settings)).join("\n"))).toEqual(lines(want));
  });

  it("skips headless and ExternalName Services, and uses ready endpoints, else serving+terminating ones", () => {
    const rs = desiredRuleset(
      [
        svc("ns", "headless", "None"),
        svc("ns", "ext", "", { type: "ExternalName", externalName: "example.org" }),
        svc("ns", "web", "172.30.0.10"),
        svc("ns", "term", "172.30.0.11"),
      ],
      [
        slice("ns", "web", [
          { addresses: ["10.180.0.1"], conditions: { ready: false } },
          { addresses: ["10.180.0.2"], conditions: { ready: true } },
        ]),
        slice("ns", "term", [
          { addresses: ["10.180.0.3"], conditions: { ready: false, serving: true, terminating: true } },
          { addresses: ["10.180.0.4"], conditions: { ready: false, serving: false, terminating: true } },
        ]),
      ],
      settings,
    );
    const text = renderRuleset(rs).join("\n");
    expect([...rs.sets.get("cluster-ips")!.elements!.keys()]).toEqual(["172.30.0.10", "172.30.0.11"]);
    expect(text).toContain("dnat ip to 10.180.0.2:80");
    expect(text).not.toContain("10.180.0.1:80");
    expect(text).toContain("dnat ip to 10.180.0.3:80");
    expect(text).not.toContain("10.180.0.4:80");
  });

  it("maps port to the slice's port (targetPort), per protocol", () => {
    const rs = desiredRuleset(
      [svc("ns", "dns", "172.30.0.10", { ports: [{ name: "dns", port: 53, protocol: "UDP", targetPort: 5353 }] })],
      [
        {
          metadata: { namespace: "ns", labels: { "kubernetes.io/service-name": "dns" } },
          addressType: "IPv4",
          endpoints: [{ addresses: ["10.180.0.9"] }],
          ports: [{ name: "dns", port: 5353, protocol: "UDP" }],
        },
      ],
      settings,
    );
    const text = renderRuleset(rs).join("\n");
    expect(text).toContain("add element inet podsync service-ips { 172.30.0.10 . udp . 53 : goto service-");
    expect(text).toContain("meta l4proto udp dnat ip to 10.180.0.9:5353");
  });
});

describe("transactions", () => {
  const base = [svc("ns", "web", "172.30.0.10")];
  const eps = (ips: string[]) => [
    slice(
      "ns",
      "web",
      ips.map((a) => ({ addresses: [a] })),
    ),
  ];

  it("one endpoint removed: its chain goes, the service chain's rule is rewritten, no map is touched", () => {
    const a = desiredRuleset(base, eps(["10.180.0.1", "10.180.0.2"]), settings);
    const b = desiredRuleset(base, eps(["10.180.0.1"]), settings);
    const script = incrementalScript(a, b)!;
    expect(script.filter((l) => l.includes("element"))).toEqual([]);
    expect(script.filter((l) => l.startsWith("delete chain"))).toHaveLength(1);
    expect(script.some((l) => l.startsWith("delete chain") && l.includes("10.180.0.2/80"))).toBe(true);
    expect(script.filter((l) => l.startsWith("flush chain") && l.includes("service-"))).toHaveLength(1);
    expect(script.length).toBeLessThanOrEqual(5);
  });

  it("the last endpoint gone: the ClusterIP moves from service-ips to no-endpoint-services (reject)", () => {
    const a = desiredRuleset(base, eps(["10.180.0.1"]), settings);
    const b = desiredRuleset(base, eps([]), settings);
    const script = incrementalScript(a, b)!;
    expect(script).toContain("delete element inet podsync service-ips { 172.30.0.10 . tcp . 80 }");
    expect(script).toContain(
      'add element inet podsync no-endpoint-services { 172.30.0.10 . tcp . 80 comment "ns/web:p80" : goto reject-chain }',
    );
    expect(incrementalScript(b, b)).toEqual([]);
  });

  it("a full sync deletes what the table holds that is no longer wanted, after flushing it", () => {
    const want = desiredRuleset(base, eps(["10.180.0.1"]), settings);
    const script = fullSyncScript(want, {
      chains: ["services", "endpoint-X-ns/old/tcp/__10.0.0.1/80"],
      sets: ["affinity-X"],
    });
    const flush = script.indexOf("flush chain inet podsync endpoint-X-ns/old/tcp/__10.0.0.1/80");
    const del = script.indexOf("delete chain inet podsync endpoint-X-ns/old/tcp/__10.0.0.1/80");
    expect(flush).toBeGreaterThan(0);
    expect(del).toBeGreaterThan(flush);
    expect(script).toContain("delete set inet podsync affinity-X");
    // It never names any table but its own.
    expect(script.every((l) => l.includes(" inet podsync"))).toBe(true);
  });
});
