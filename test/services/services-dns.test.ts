// The cluster DNS: CoreDNS kubernetes-plugin answers from hand-built Services and EndpointSlices (records.ts, pure),
// and the server over real UDP and TCP sockets on loopback, forwarding only to a stub resolver started here on
// 127.0.0.1 (never the machine's resolver): cache, FORMERR, junk, TCP, ExternalName, binding when the address
// appears.
import { execFileSync, spawnSync } from "node:child_process";
import { createSocket, type Socket } from "node:dgram";
import { connect } from "node:net";
import * as dnsPacket from "dns-packet";
import type { Answer, Packet, RecordType } from "dns-packet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAnswerer } from "../../src/services/dns/answer.js";
import { DnsCache } from "../../src/services/dns/cache.js";
import { parseUpstream } from "../../src/services/dns/forward.js";
import { buildIndex, isLocal, lookup } from "../../src/services/dns/records.js";
import { startDnsServer, type DnsServer } from "../../src/services/dns/server.js";
import { memoryServiceSource, type EndpointSlice, type Service } from "../../src/services/types.js";

const services: Service[] = [
  {
    metadata: { name: "redis-master", namespace: "default" },
    spec: {
      clusterIP: "10.96.0.10",
      ports: [
        { name: "redis", port: 6379, protocol: "TCP" },
        { port: 9121, protocol: "TCP" },
      ],
    },
  },
  { metadata: { name: "nginx", namespace: "web" }, spec: { clusterIP: "None", ports: [{ name: "http", port: 80 }] } },
  { metadata: { name: "ext", namespace: "default" }, spec: { type: "ExternalName", externalName: "example.org" } },
];
const slices: EndpointSlice[] = [
  {
    metadata: { namespace: "web", name: "nginx-abc", labels: { "kubernetes.io/service-name": "nginx" } },
    addressType: "IPv4",
    endpoints: [
      { addresses: ["10.244.78.10"], hostname: "web-0", conditions: { ready: true } },
      { addresses: ["10.244.78.11"], hostname: "web-1", conditions: { ready: true } },
      { addresses: ["10.244.78.12"], hostname: "web-2", conditions: { ready: false } },
      { addresses: ["10.244.78.13"], conditions: { ready: true } },
    ],
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
  },
];
const index = buildIndex({ services, endpointSlices: slices }, "cluster.local", 1);
/** dns-packet decodes the rcode by name; its types leave it out. */
const rcode = (p: Packet) => (p as { rcode?: string }).rcode;
const data = (rs: Answer[]) => rs.map((r) => ("data" in r ? r.data : undefined));

describe("records (CoreDNS kubernetes plugin)", () => {
  it("A for a ClusterIP Service, case-insensitive, TTL 5", () => {
    const r = lookup(index, "Redis-Master.default.svc.cluster.local", "A");
    expect(rcode(r)).toBe("NOERROR");
    expect(r.answers).toEqual([
      { name: "Redis-Master.default.svc.cluster.local", type: "A", ttl: 5, data: "10.96.0.10" },
    ]);
  });
  it("a headless Service gives its ready endpoints; hostname records for StatefulSet pods", () => {
    expect(data(lookup(index, "nginx.web.svc.cluster.local", "A").answers)).toEqual([
      "10.244.78.10",
      "10.244.78.11",
      "10.244.78.13",
    ]);
    expect(data(lookup(index, "web-0.nginx.web.svc.cluster.local", "A").answers)).toEqual(["10.244.78.10"]);
    expect(data(lookup(index, "10-244-78-13.nginx.web.svc.cluster.local", "A").answers)).toEqual(["10.244.78.13"]);
    expect(lookup(index, "web-2.nginx.web.svc.cluster.local", "A").rcode).toBe("NXDOMAIN");
  });
  it("SRV for named ports: the ClusterIP's, and one per endpoint of a headless Service", () => {
    const r = lookup(index, "_redis._tcp.redis-master.default.svc.cluster.local", "SRV");
    expect(r.answers).toEqual([
      {
        name: "_redis._tcp.redis-master.default.svc.cluster.local",
        type: "SRV",
        ttl: 5,
        data: { priority: 0, weight: 100, port: 6379, target: "redis-master.default.svc.cluster.local" },
      },
    ]);
    expect(data(r.additionals)).toEqual(["10.96.0.10"]);
    const h = lookup(index, "_http._tcp.nginx.web.svc.cluster.local", "SRV");
    expect(h.answers.map((a) => (a.type === "SRV" ? `${a.data.target}:${a.data.port}` : ""))).toEqual([
      "web-0.nginx.web.svc.cluster.local:8080",
      "web-1.nginx.web.svc.cluster.local:8080",
      "10-244-78-13.nginx.web.svc.cluster.local:8080",
    ]);
    expect(lookup(index, "_nope._tcp.redis-master.default.svc.cluster.local", "SRV").rcode).toBe("NXDOMAIN");
  });
  it("PTR for ClusterIPs and named endpoints", () => {
    expect(data(lookup(index, "10.0.96.10.in-addr.arpa", "PTR").answers)).toEqual([
      "redis-master.default.svc.cluster.local",
    ]);
    expect(data(lookup(index, "10.78.244.10.in-addr.arpa", "PTR").answers)).toEqual([
      "web-0.nginx.web.svc.cluster.local",
    ]);
  });
  it("ExternalName is a CNAME; pod A records; dns-version", () => {
    expect(lookup(index, "ext.default.svc.cluster.local", "A").answers).toEqual([
      { name: "ext.default.svc.cluster.local", type: "CNAME", ttl: 5, data: "example.org" },
    ]);
    expect(data(lookup(index, "10-244-78-99.default.pod.cluster.local", "A").answers)).toEqual(["10.244.78.99"]);
    expect(data(lookup(index, "dns-version.cluster.local", "TXT").answers)).toEqual([["1.1.0"]]);
  });
  it("NXDOMAIN inside the domain with the SOA in authority; NODATA for a name without that type", () => {
    const nx = lookup(index, "nope.default.svc.cluster.local", "A");
    expect(rcode(nx)).toBe("NXDOMAIN");
    expect(nx.authorities[0]).toMatchObject({
      name: "cluster.local",
      type: "SOA",
      data: { mname: "ns.dns.cluster.local", rname: "hostmaster.cluster.local", minimum: 5 },
    });
    expect(lookup(index, "redis-master.nowhere.svc.cluster.local", "A").rcode).toBe("NXDOMAIN");
    expect(lookup(index, "x.y.z.cluster.local", "A").rcode).toBe("NXDOMAIN");
    const nodata = lookup(index, "redis-master.default.svc.cluster.local", "AAAA");
    expect(rcode(nodata)).toBe("NOERROR");
    expect(nodata.answers).toEqual([]);
    expect(nodata.authorities[0]?.type).toBe("SOA");
    expect(lookup(index, "default.svc.cluster.local", "A").rcode).toBe("NOERROR");
  });
});

describe("records for IPv6 Services (a node whose PODSYNC_SERVICE_CIDR is IPv6)", () => {
  const v6 = buildIndex(
    {
      services: [
        {
          metadata: { name: "api", namespace: "default" },
          spec: { clusterIP: "fd00:10:96::a", clusterIPs: ["fd00:10:96::a"], ports: [{ name: "http", port: 80 }] },
        },
        { metadata: { name: "db", namespace: "default" }, spec: { clusterIP: "None" } },
      ],
      endpointSlices: [
        {
          metadata: { namespace: "default", labels: { "kubernetes.io/service-name": "db" } },
          addressType: "IPv6",
          endpoints: [
            { addresses: ["fd00:10:244::5"], hostname: "db-0", conditions: { ready: true } },
            { addresses: ["fd00:10:244::6"], conditions: { ready: true } },
          ],
        },
      ],
    },
    "cluster.local",
    1,
  );
  it("AAAA for the ClusterIP and a headless Service's endpoints, no A; PTR from ip6.arpa", () => {
    expect(data(lookup(v6, "api.default.svc.cluster.local", "AAAA").answers)).toEqual(["fd00:10:96::a"]);
    expect(lookup(v6, "api.default.svc.cluster.local", "A")).toMatchObject({ rcode: "NOERROR", answers: [] });
    expect(data(lookup(v6, "db-0.db.default.svc.cluster.local", "AAAA").answers)).toEqual(["fd00:10:244::5"]);
    expect(data(lookup(v6, "fd00-10-244--6.db.default.svc.cluster.local", "AAAA").answers)).toEqual(["fd00:10:244::6"]);
    // fd00:10:96::a, nibble by nibble, backwards.
    const rev = `${"a.0.0.0.".concat("0.0.0.0.".repeat(4))}6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa`;
    expect(isLocal(v6, rev)).toBe(true);
    expect(data(lookup(v6, rev, "PTR").answers)).toEqual(["api.default.svc.cluster.local"]);
    expect(isLocal(v6, `${"0.".repeat(32)}ip6.arpa`)).toBe(false); // not a Service's: forwarded
  });
});

describe("cache", () => {
  const answer = (name: string, ttl: number): Packet =>
    ({
      type: "response",
      rcode: "NOERROR",
      questions: [{ name, type: "A" }],
      answers: [{ name, type: "A", ttl, data: "192.0.2.1" }],
    }) as Packet;
  it("respects the TTL and ages it", () => {
    let now = 0;
    const c = new DnsCache({ now: () => now });
    c.put("a", answer("a", 10));
    now = 4000;
    expect(c.get("a")?.answers?.[0]).toMatchObject({ ttl: 6 });
    now = 10_000;
    expect(c.get("a")).toBeUndefined();
  });
  it("is bounded: the least recently used entry goes first", () => {
    const c = new DnsCache({ maxEntries: 2 });
    c.put("a", answer("a", 60));
    c.put("b", answer("b", 60));
    c.get("a");
    c.put("c", answer("c", 60));
    expect(c.size).toBe(2);
    expect(c.get("b")).toBeUndefined();
    expect(c.get("a")).toBeDefined();
  });
});

/** A stub upstream resolver on 127.0.0.1: example.org A 192.0.2.99 (TTL 60), everything else NXDOMAIN. */
async function stubResolver(): Promise<{ port: number; queries: () => number; close: () => void }> {
  const sock: Socket = createSocket("udp4");
  let n = 0;
  sock.on("message", (msg, r) => {
    n++;
    const q = dnsPacket.decode(msg);
    const name = q.questions![0]!.name;
    const known = name === "example.org" && q.questions![0]!.type === "A";
    const out = dnsPacket.encode({
      id: q.id,
      type: "response",
      flags: dnsPacket.RECURSION_AVAILABLE | (known ? 0 : 3),
      questions: q.questions,
      answers: known ? [{ name, type: "A", ttl: 60, data: "192.0.2.99" }] : [],
      authorities: known
        ? []
        : [
            {
              name: "org",
              type: "SOA",
              ttl: 30,
              data: { mname: "a.org", rname: "h.org", serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 30 },
            },
          ],
    });
    sock.send(out, r.port, r.address);
  });
  await new Promise<void>((res) => sock.bind(0, "127.0.0.1", () => res()));
  return { port: sock.address().port, queries: () => n, close: () => sock.close() };
}

function udpQuery(port: number, msg: Buffer, timeoutMs = 2000, host = "127.0.0.1"): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const s = createSocket("udp4");
    const t = setTimeout(() => (s.close(), resolve(undefined)), timeoutMs);
    s.on("message", (b) => (clearTimeout(t), s.close(), resolve(b)));
    s.send(msg, port, host);
  });
}
function tcpQuery(port: number, msg: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port });
    let buf = Buffer.alloc(0);
    s.on("error", reject);
    s.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        s.destroy();
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    });
    const len = Buffer.alloc(2);
    len.writeUInt16BE(msg.length);
    s.write(Buffer.concat([len, msg]));
  });
}
const query = (name: string, type: RecordType = "A", id = 4242) =>
  dnsPacket.encode({ id, type: "query", flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type, class: "IN" }] });

describe("the DNS server over UDP and TCP (loopback, stub upstream)", () => {
  let stub: Awaited<ReturnType<typeof stubResolver>>;
  let server: DnsServer;
  let port: number;
  const source = memoryServiceSource({ services, endpointSlices: slices });
  let answerer: ReturnType<typeof createAnswerer>;

  beforeAll(async () => {
    stub = await stubResolver();
    answerer = createAnswerer({
      index: () => buildIndex(source.snapshot(), "cluster.local"),
      upstreams: [parseUpstream(`127.0.0.1:${stub.port}`)],
    });
    // A free port on loopback, then the server on it.
    const probe = createSocket("udp4");
    await new Promise<void>((r) => probe.bind(0, "127.0.0.1", () => r()));
    port = probe.address().port;
    probe.close();
    server = startDnsServer({ address: "127.0.0.1", port, answerer });
    await server.ready();
  });
  afterAll(async () => {
    await server?.close();
    stub?.close();
  });

  it("answers a cluster name over UDP and over TCP, authoritatively", async () => {
    const u = dnsPacket.decode((await udpQuery(port, query("redis-master.default.svc.cluster.local")))!);
    expect(u.id).toBe(4242);
    expect(rcode(u)).toBe("NOERROR");
    expect(u.flag_aa).toBe(true);
    expect(data(u.answers!)).toEqual(["10.96.0.10"]);
    const t = dnsPacket.decode(await tcpQuery(port, query("_http._tcp.nginx.web.svc.cluster.local", "SRV")));
    expect(t.answers).toHaveLength(3);
    const nx = dnsPacket.decode((await udpQuery(port, query("nope.default.svc.cluster.local")))!);
    expect(rcode(nx)).toBe("NXDOMAIN");
    expect(nx.authorities?.[0]?.type).toBe("SOA");
  });

  it("forwards other names to the upstream and answers again from the cache", async () => {
    const before = stub.queries();
    const a = dnsPacket.decode((await udpQuery(port, query("example.org", "A", 7)))!);
    expect(a.id).toBe(7);
    expect(data(a.answers!)).toEqual(["192.0.2.99"]);
    expect(stub.queries()).toBe(before + 1);
    const b = dnsPacket.decode((await udpQuery(port, query("EXAMPLE.org", "A", 8)))!);
    expect(b.id).toBe(8);
    expect(data(b.answers!)).toEqual(["192.0.2.99"]);
    expect(stub.queries()).toBe(before + 1);
    const tcp = dnsPacket.decode(await tcpQuery(port, query("example.org", "A", 9)));
    expect(data(tcp.answers!)).toEqual(["192.0.2.99"]);
  });

  it("follows an ExternalName's CNAME for A through the upstream", async () => {
    const r = dnsPacket.decode((await udpQuery(port, query("ext.default.svc.cluster.local")))!);
    expect(r.answers!.map((a) => a.type)).toEqual(["CNAME", "A"]);
    expect(data(r.answers!)).toEqual(["example.org", "192.0.2.99"]);
  });

  it("answers FORMERR to a malformed query, drops junk, and keeps answering", async () => {
    const bad = Buffer.from(query("redis-master.default.svc.cluster.local"));
    bad.writeUInt16BE(5, 4); // qdcount 5, one question present
    const f = await udpQuery(port, bad);
    expect(f).toBeDefined();
    expect(f!.readUInt16BE(0)).toBe(4242);
    expect(f!.readUInt16BE(2) & 0xf).toBe(1); // FORMERR
    expect(await udpQuery(port, Buffer.from([1, 2, 3]), 300)).toBeUndefined();
    const response = Buffer.from(query("x.cluster.local"));
    response.writeUInt16BE(response.readUInt16BE(2) | 0x8000, 2);
    expect(await udpQuery(port, response, 300)).toBeUndefined();
    const ok = dnsPacket.decode((await udpQuery(port, query("redis-master.default.svc.cluster.local")))!);
    expect(rcode(ok)).toBe("NOERROR");
    expect(answerer.stats.formerr).toBeGreaterThanOrEqual(1);
  });

  it("sees a change of the source at the next query", async () => {
    source.set({
      services: [...services, { metadata: { name: "late", namespace: "default" }, spec: { clusterIP: "10.96.0.77" } }],
    });
    const r = dnsPacket.decode((await udpQuery(port, query("late.default.svc.cluster.local")))!);
    expect(data(r.answers!)).toEqual(["10.96.0.77"]);
  });

  it("EDNS queries get an OPT back; an answer too big for UDP is truncated, and whole over TCP", async () => {
    const big = buildIndex(
      {
        services: [{ metadata: { name: "many", namespace: "default" }, spec: { clusterIP: "None" } }],
        endpointSlices: [
          {
            metadata: { namespace: "default", labels: { "kubernetes.io/service-name": "many" } },
            addressType: "IPv4",
            endpoints: Array.from({ length: 60 }, (_, i) => ({ addresses: [`10.244.78.${i + 10}`] })),
          },
        ],
      },
      "cluster.local",
    );
    const a = createAnswerer({ index: () => big, upstreams: [] });
    const udp = dnsPacket.decode((await a.answer(query("many.default.svc.cluster.local"), false))!);
    expect(udp.flag_tc).toBe(true);
    expect(udp.answers).toEqual([]);
    const tcp = dnsPacket.decode((await a.answer(query("many.default.svc.cluster.local"), true))!);
    expect(tcp.answers).toHaveLength(60);
    const edns = dnsPacket.encode({
      id: 1,
      type: "query",
      questions: [{ name: "many.default.svc.cluster.local", type: "A" }],
      additionals: [
        {
          type: "OPT",
          name: ".",
          udpPayloadSize: 4096,
          extendedRcode: 0,
          ednsVersion: 0,
          flags: 0,
          flag_do: false,
          options: [],
        },
      ],
    });
    const e = dnsPacket.decode((await a.answer(edns, false))!);
    expect(e.flag_tc).toBe(false);
    expect(e.answers).toHaveLength(60);
    expect(e.additionals?.some((x) => x.type === "OPT")).toBe(true);
  });

  it("a repeated query is answered from the encoded reply, with its own id, until the index or the cache's age changes", async () => {
    let now = 1_000_000;
    let idx = index;
    const upstreamCalls: number[] = [];
    // A stub upstream in process: example.net A 192.0.2.1, TTL 60.
    const stubUp = createSocket("udp4");
    stubUp.on("message", (m, r) => {
      const q = dnsPacket.decode(m);
      upstreamCalls.push(q.id ?? 0);
      const answers = [{ name: "example.net", type: "A" as const, ttl: 60, data: "192.0.2.1" }];
      stubUp.send(dnsPacket.encode({ id: q.id, type: "response", questions: q.questions, answers }), r.port, r.address);
    });
    await new Promise<void>((r) => stubUp.bind(0, "127.0.0.1", () => r()));
    try {
      const a = createAnswerer({
        index: () => idx,
        upstreams: [parseUpstream(`127.0.0.1:${stubUp.address().port}`)],
        cache: new DnsCache({ now: () => now }),
      });
      const name = "redis-master.default.svc.cluster.local";
      const one = (await a.answer(query(name, "A", 1), false))!;
      const two = (await a.answer(query(name, "A", 2), false))!;
      expect(dnsPacket.decode(two).id).toBe(2);
      expect(two.subarray(2)).toEqual(one.subarray(2));
      // The memo is keyed by the query's bytes too: a name asked in other letters gets its own question back.
      const upper = dnsPacket.decode((await a.answer(query(name.toUpperCase(), "A", 4), false))!);
      expect(upper.questions![0]!.name).toBe(name.toUpperCase());
      expect(data(upper.answers!)).toEqual(["10.96.0.10"]);
      expect(a.stats).toMatchObject({ local: 3, formerr: 0 });
      // A changed index answers anew.
      idx = buildIndex({ services: [], endpointSlices: [] }, "cluster.local", 2);
      expect(rcode(dnsPacket.decode((await a.answer(query(name, "A", 3), false))!))).toBe("NXDOMAIN");
      // Forwarded: the first goes upstream, the second is the cache's (encoded), the third the memo's; a second
      // later the TTL is one lower.
      const ttl = async (id: number) => dnsPacket.decode((await a.answer(query("example.net", "A", id), false))!);
      expect((await ttl(10)).answers![0]).toMatchObject({ ttl: 60 });
      expect((await ttl(11)).answers![0]).toMatchObject({ ttl: 60 });
      const third = await ttl(12);
      expect(third.id).toBe(12);
      expect(third.answers![0]).toMatchObject({ ttl: 60, data: "192.0.2.1" });
      now += 1000;
      expect((await ttl(13)).answers![0]).toMatchObject({ ttl: 59 });
      expect(upstreamCalls).toHaveLength(1);
      expect(a.cache.hits).toBe(3);
    } finally {
      stubUp.close();
    }
  });

  it("SERVFAIL when no upstream answers", async () => {
    const lonely = createAnswerer({ index: () => index, upstreams: [], cache: new DnsCache() });
    const r = dnsPacket.decode((await lonely.answer(query("example.net"), false))!);
    expect(rcode(r)).toBe("SERVFAIL");
  });

  it("refuses a wildcard address; binds when a missing address appears", async () => {
    expect(() => startDnsServer({ address: "0.0.0.0", port: 53, answerer })).toThrow(/wildcard/);
    // A loopback address of its own, added to lo during the test (os.networkInterfaces lists only assigned ones).
    const addr = "127.0.0.77";
    spawnSync("ip", ["addr", "del", `${addr}/32`, "dev", "lo"]);
    const late = startDnsServer({ address: addr, port, answerer, pollMs: 100 });
    try {
      await new Promise((r) => setTimeout(r, 300));
      expect(late.health()).toMatchObject({
        listening: false,
        reason: expect.stringMatching(/not an address of this node yet/),
      });
      execFileSync("ip", ["addr", "add", `${addr}/32`, "dev", "lo"]);
      await late.ready();
      expect(late.health().listening).toBe(true);
      const r = dnsPacket.decode((await udpQuery(port, query("redis-master.default.svc.cluster.local"), 2000, addr))!);
      expect(data(r.answers!)).toEqual(["10.96.0.10"]);
    } finally {
      await late.close();
      await late.close(); // a second close is harmless
      spawnSync("ip", ["addr", "del", `${addr}/32`, "dev", "lo"]);
    }
  }, 10_000);
});
