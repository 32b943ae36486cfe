// The data plane's start-up where the kernel part cannot be had (nft missing): it says so and reports itself
// unavailable, writing nothing; the pod network read from a CNI configuration; the settings' validation.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startServiceDataplane } from "../../src/services/dataplane.js";
import { cniConfDirFromStatusInfo, readPodNetwork, resolvConfServers } from "../../src/services/node-network.js";
import { servicesRefusalFor } from "../../src/services/node-dataplane.js";
import { nftCli } from "../../src/services/proxy/nft.js";
import { flushServiceTable } from "../../src/services/proxy/flush.js";
import { memoryServiceSource } from "../../src/services/types.js";
import { loadSettings } from "../../src/settings/node.js";

describe("the Services data plane without nft", () => {
  it("reports itself unavailable, says why, and refuses syncs", async () => {
    const logs: Record<string, unknown>[] = [];
    const dp = await startServiceDataplane({
      source: memoryServiceSource({
        services: [
          { metadata: { name: "a", namespace: "default" }, spec: { clusterIP: "10.96.0.5", ports: [{ port: 80 }] } },
        ],
      }),
      settings: { serviceCIDRs: ["10.96.0.0/16"], clusterDomain: "cluster.local", nft: nftCli("/nonexistent/nft") },
      log: (r) => logs.push(r),
    });
    const h = dp.health();
    expect(h.available).toBe(false);
    expect(h.proxy?.reason).toMatch(/not installed \(Debian: apt-get install nftables\)/);
    expect(logs).toContainEqual(expect.objectContaining({ proxier: "unavailable" }));
    await expect(dp.proxier!.sync()).rejects.toThrow(/not installed/);
    await dp.stop();
    const f = await flushServiceTable("podsync", nftCli("/nonexistent/nft"));
    expect(f).toMatchObject({ ok: false, error: expect.stringMatching(/cannot flush inet podsync: .*not installed/) });
  });
});

describe("the proxier after a failed transaction", () => {
  it("retries with a full sync that reconciles the kernel's table", async () => {
    // The real nft, with the second transaction refused once (as a kernel out of memory would).
    const real = nftCli();
    let applies = 0;
    const faulty = {
      ...real,
      apply: (script: readonly string[]) =>
        ++applies === 2 ? Promise.reject(new Error("injected")) : real.apply(script),
    };
    const table = `podsync-retry-${process.pid}`;
    const svc = (ip: string) => ({
      metadata: { name: `s${ip.split(".").pop()}`, namespace: "default" },
      spec: { clusterIP: ip, ports: [{ port: 80 }] },
    });
    const source = memoryServiceSource({ services: [svc("10.96.5.1")] });
    const logs: Record<string, unknown>[] = [];
    const { startProxier } = await import("../../src/services/proxy/proxier.js");
    const p = await startProxier({
      source,
      settings: { table, serviceCIDRs: ["10.96.0.0/16"] },
      nft: faulty,
      retryMs: 100,
      log: (r) => logs.push(r),
    });
    try {
      source.set({ services: [svc("10.96.5.1"), svc("10.96.5.2")] });
      await expect(p.sync()).rejects.toThrow(/injected/);
      expect(p.health()).toMatchObject({ failures: 1, reason: "injected" });
      expect(logs).toContainEqual(expect.objectContaining({ proxier: "sync failed" }));
      // The retry comes by itself, as a full sync.
      for (let i = 0; i < 50 && p.health().syncs < 2; i++) await new Promise((r) => setTimeout(r, 50));
      expect(p.health()).toMatchObject({ available: true, lastSync: { full: true } });
      expect(p.health().reason).toBeUndefined();
      const listed = await real.list(table);
      expect(listed?.sets).toContain("no-endpoint-services");
      const { execFileSync } = await import("node:child_process");
      expect(execFileSync("nft", ["list", "map", "inet", table, "no-endpoint-services"]).toString()).toContain(
        "10.96.5.2",
      );
    } finally {
      await p.stop();
      await real.deleteTable(table);
    }
  });
});

describe("the proxier's transactions", () => {
  it("writes one transaction per batch of changes through one nft process, none started per change", async () => {
    const nft = nftCli();
    const table = `podsync-count-${process.pid}`;
    const eps = (n: number) => ({
      metadata: { name: "web-a", namespace: "default", labels: { "kubernetes.io/service-name": "web" } },
      addressType: "IPv4" as const,
      endpoints: Array.from({ length: n }, (_, i) => ({
        addresses: [`10.244.78.${10 + i}`],
        conditions: { ready: true, serving: true, terminating: false },
      })),
      ports: [{ name: "http", port: 8080, protocol: "TCP" as const }],
    });
    const services = [
      {
        metadata: { name: "web", namespace: "default" },
        spec: { clusterIP: "10.96.7.7", ports: [{ name: "http", port: 80, targetPort: 8080 }] },
      },
    ];
    const source = memoryServiceSource({ services, endpointSlices: [eps(3)] });
    const { startProxier } = await import("../../src/services/proxy/proxier.js");
    const p = await startProxier({ source, settings: { table, serviceCIDRs: ["10.96.0.0/16"] }, nft });
    try {
      // The probe's listing and the first (full) sync: two lines to the one process.
      expect(nft.stats?.()).toEqual({ processes: 1, transactions: 2 });
      // One endpoint going away: one transaction, kube-proxy's granularity (the service chain's dispatch rule
      // rewritten, the endpoint chain flushed and deleted), no map or other chain touched.
      source.set({ endpointSlices: [eps(2)] });
      await p.sync();
      expect(nft.stats?.()).toEqual({ processes: 1, transactions: 3 });
      expect(p.health().lastSync).toMatchObject({ full: false, commands: 4 });
      // Three changes in one turn of the event loop: one transaction, for where they end.
      source.set({ endpointSlices: [eps(3)] });
      source.set({ endpointSlices: [eps(2)] });
      source.set({ endpointSlices: [eps(1)] });
      await p.sync();
      expect(nft.stats?.()).toEqual({ processes: 1, transactions: 4 });
      // Changes that end where the kernel is: none.
      source.set({ endpointSlices: [eps(3)] });
      source.set({ endpointSlices: [eps(1)] });
      await p.sync();
      expect(nft.stats?.()).toEqual({ processes: 1, transactions: 4 });
      // The last endpoint going: two map elements (service-ips out, no-endpoint-services in) and the chains.
      source.set({ endpointSlices: [eps(0)] });
      await p.sync();
      expect(nft.stats?.()).toEqual({ processes: 1, transactions: 5 });
      const { execFileSync } = await import("node:child_process");
      expect(execFileSync("nft", ["list", "map", "inet", table, "no-endpoint-services"]).toString()).toContain(
        "10.96.7.7 . tcp . 80",
      );
    } finally {
      await p.stop();
      await nft.deleteTable(table);
    }
  });
});

describe("the node's pod network from its CNI configuration", () => {
  it("reads the bridge, its gateway (the subnet's first address unless given) and the subnet", () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-cni-"));
    writeFileSync(join(dir, "00-junk.conf"), "{not json");
    writeFileSync(
      join(dir, "10-lab.conflist"),
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "podsync-lab",
        plugins: [
          {
            type: "bridge",
            bridge: "podsync0",
            isGateway: true,
            ipam: { type: "host-local", ranges: [[{ subnet: "10.244.78.0/24" }]] },
          },
          { type: "portmap" },
        ],
      }),
    );
    expect(readPodNetwork(dir)).toEqual({
      bridge: "podsync0",
      gateway: "10.244.78.1",
      subnet: "10.244.78.0/24",
      file: join(dir, "10-lab.conflist"),
    });
    writeFileSync(
      join(dir, "05-gw.conf"),
      JSON.stringify({ type: "bridge", ipam: { subnet: "10.88.0.0/16", gateway: "10.88.0.254" } }),
    );
    expect(readPodNetwork(dir)).toMatchObject({ bridge: "cni0", gateway: "10.88.0.254", subnet: "10.88.0.0/16" });
    expect(readPodNetwork(join(dir, "missing"))).toBeUndefined();
    const rc = join(dir, "resolv.conf");
    writeFileSync(rc, "nameserver 192.0.2.53\n# nameserver 192.0.2.1\nnameserver 192.0.2.54 ; x\n");
    expect(resolvConfServers(rc)).toEqual(["192.0.2.53", "192.0.2.54"]);
  });
});

describe("settings", () => {
  it("validates the Service CIDR and the DNS upstreams, naming the setting", () => {
    const s = loadSettings({ PODSYNC_DNS_UPSTREAM: "192.0.2.53, [2001:db8::1]:5353,127.0.0.1:5300" });
    expect(s.PODSYNC_SERVICE_CIDR.text).toBe("10.96.0.0/16");
    expect(s.PODSYNC_SERVICE_DATAPLANE).toBe("auto");
    expect(s.PODSYNC_CNI_CONF_DIR).toBeUndefined();
    expect(s.PODSYNC_DNS_UPSTREAM).toEqual(["192.0.2.53", "[2001:db8::1]:5353", "127.0.0.1:5300"]);
    expect(() => loadSettings({ PODSYNC_SERVICE_CIDR: "10.96.0.0/33" })).toThrow(/PODSYNC_SERVICE_CIDR.*CIDR/s);
    expect(() => loadSettings({ PODSYNC_DNS_UPSTREAM: "dns.example:53" })).toThrow(
      /PODSYNC_DNS_UPSTREAM.*host\[:port\]/s,
    );
    expect(() => loadSettings({ PODSYNC_SERVICE_DATAPLANE: "yes" })).toThrow(/PODSYNC_SERVICE_DATAPLANE.*on, off/s);
  });
});

describe("servicesRefusalFor: Services refused, never half-applied", () => {
  const plane = (available: boolean) => ({
    health: () => ({ available, proxy: { available, reason: "nft: not found", syncs: 0, failures: 0 } }),
  });
  it("off refuses nothing; a wanted data plane that is missing or unavailable refuses with the reason", () => {
    expect(servicesRefusalFor("off", undefined)).toBeUndefined();
    expect(servicesRefusalFor("auto", undefined)).toMatch(/needs root.*PODSYNC_SERVICE_DATAPLANE=off/);
    expect(servicesRefusalFor("on", plane(false))).toMatch(/unavailable: nft: not found/);
    // Rules but no cluster DNS (no bridge network found, no PODSYNC_CLUSTER_DNS): names would not resolve.
    expect(servicesRefusalFor("auto", plane(true))).toMatch(/cluster DNS, which has no address.*PODSYNC_CNI_CONF_DIR/);
    const withDns = (available: boolean) => ({
      health: () => ({
        ...plane(available).health(),
        dns: { listening: true, address: "10.244.78.1", port: 53, queries: 0, cacheEntries: 0 },
      }),
    });
    expect(servicesRefusalFor("on", withDns(true))).toBeUndefined();
    expect(servicesRefusalFor("auto", withDns(true))).toBeUndefined();
    // IPv6 is not served by the data plane (IPv4 maps only): refused, not kept unrouted.
    expect(servicesRefusalFor("auto", withDns(true), "fd00:96::/112")).toMatch(/IPv4 PODSYNC_SERVICE_CIDR/);
    expect(servicesRefusalFor("off", undefined, "fd00:96::/112")).toBeUndefined();
  });
});

describe("the runtime's CNI directory (containerd's verbose CRI Status)", () => {
  it("is read from info.config's cni.confDir; anything else says nothing", () => {
    const config = JSON.stringify({ containerd: {}, cni: { binDir: "/usr/lib/cni", confDir: "/tmp/lab/cni" } });
    expect(cniConfDirFromStatusInfo({ config })).toBe("/tmp/lab/cni");
    expect(cniConfDirFromStatusInfo({ config: "{not json" })).toBeUndefined();
    expect(cniConfDirFromStatusInfo({ config: JSON.stringify({ cni: { confDir: "relative" } }) })).toBeUndefined();
    expect(cniConfDirFromStatusInfo({})).toBeUndefined();
    expect(cniConfDirFromStatusInfo(undefined)).toBeUndefined();
  });
});

describe("the test harness leaves the data plane off", () => {
  // The default is auto (on as root), and there is one `inet podsync` table and one DNS address per machine, so
  // every node a test or bench starts must say PODSYNC_SERVICE_DATAPLANE itself, or inherit the suite's `off`
  // (vitest.config.ts `env`) by spreading process.env; the data plane's own files run one at a time
  // (test/support/machine-lock.ts). startNode takes the settings it is given, not process.env, so a file that calls
  // it names the setting (a file that spread process.env for kubectl passed the looser check, and its node took the
  // README test's table). The check reads whole files; the machine's data plane hold
  // (src/services/dataplane-hold.ts) is what keeps a node that slips through from overwriting another's rules.
  it("every file that starts a node names the setting or inherits the suite's", () => {
    const spawns = /"dist\/node\.js"|"serve"/;
    const offenders = (readdirSync("test", { recursive: true }) as string[])
      .filter((f) => f.endsWith(".ts"))
      .map((f) => join("test", f))
      .filter((f) => {
        const text = readFileSync(f, "utf8");
        if (text.includes("PODSYNC_SERVICE_DATAPLANE")) return false;
        return /startNode\(/.test(text) || (spawns.test(text) && !text.includes("...process.env"));
      });
    expect(offenders).toEqual([]);
  });
});
