// A bounded DNS answer cache for forwarded names, as CoreDNS's cache plugin keeps one: keyed by name, type and class,
// held for the answer's smallest TTL (a denial for its SOA's minimum), capped (success 3600 s, denial 1800 s: the
// plugin's defaults) and size-bounded, the least recently used entry evicted first.
import type { Answer, Packet } from "dns-packet";

export interface CacheOptions {
  maxEntries?: number;
  maxTtlS?: number;
  maxDenialTtlS?: number;
  now?: () => number;
}

interface Entry {
  packet: Packet;
  storedAt: number;
  expires: number;
}

const ttlOf = (r: Answer) => ("ttl" in r && typeof r.ttl === "number" ? r.ttl : 0);

export class DnsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly max: number;
  private readonly maxTtl: number;
  private readonly maxDenial: number;
  private readonly now: () => number;
  hits = 0;
  misses = 0;

  constructor(o: CacheOptions = {}) {
    this.max = o.maxEntries ?? 10_000;
    this.maxTtl = o.maxTtlS ?? 3600;
    this.maxDenial = o.maxDenialTtlS ?? 1800;
    this.now = o.now ?? Date.now;
  }

  static key(name: string, type: string, cls = "IN"): string {
    const n = name.toLowerCase();
    return `${n.endsWith(".") ? n.slice(0, -1) : n}|${type}|${cls}`;
  }

  /** The entry's store time and its age in whole seconds (what get() lowers the TTLs by), without copying it;
   * undefined when absent or expired. A reply encoded from get() is the same while both are. */
  age(key: string): { storedAt: number; aged: number } | undefined {
    const e = this.entries.get(key);
    const now = this.now();
    if (!e || e.expires <= now) return undefined;
    return { storedAt: e.storedAt, aged: Math.floor((now - e.storedAt) / 1000) };
  }

  /** Counts a hit served from a reply encoded earlier, and keeps the entry most recently used. */
  touch(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.entries.set(key, e);
    this.hits++;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The cached answer with its TTLs lowered by the time it has been held; undefined when absent or expired. */
  get(key: string): Packet | undefined {
    const e = this.entries.get(key);
    const now = this.now();
    if (!e || e.expires <= now) {
      if (e) this.entries.delete(key);
      this.misses++;
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, e); // most recently used last
    this.hits++;
    const aged = Math.floor((now - e.storedAt) / 1000);
    const age = (rs: Answer[] | undefined) =>
      (rs ?? []).map((r) => (r.type === "OPT" ? r : { ...r, ttl: Math.max(0, ttlOf(r) - aged) }));
    return {
      ...e.packet,
      answers: age(e.packet.answers),
      authorities: age(e.packet.authorities),
      additionals: age(e.packet.additionals),
    };
  }

  /** Stores a NOERROR or NXDOMAIN answer; anything else (SERVFAIL, truncated) is not kept. */
  put(key: string, packet: Packet): void {
    const rcode = (packet as { rcode?: string }).rcode;
    if ((rcode !== "NOERROR" && rcode !== "NXDOMAIN") || (packet.flags ?? 0) & (1 << 9)) return;
    const answers = packet.answers ?? [];
    let ttl: number;
    if (answers.length > 0 && rcode === "NOERROR") ttl = Math.min(this.maxTtl, ...answers.map(ttlOf));
    else {
      const soa = (packet.authorities ?? []).find((r) => r.type === "SOA");
      const min = soa && soa.type === "SOA" ? Math.min(ttlOf(soa), soa.data.minimum ?? 0) : 0;
      ttl = Math.min(this.maxDenial, min);
    }
    if (ttl <= 0) return;
    const now = this.now();
    this.entries.delete(key);
    this.entries.set(key, { packet, storedAt: now, expires: now + ttl * 1000 });
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }
}
