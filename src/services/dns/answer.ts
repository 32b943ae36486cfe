// One DNS message in, one out (or none): decoding with dns-packet, the cluster's names answered from the index
// (records.ts), everything else forwarded through the cache. Malformed input is answered FORMERR when it has a
// header to answer, and dropped otherwise; it never throws. Transport-free: server.ts calls it for UDP and TCP.
import * as dnsPacket from "dns-packet";
import type { Answer, OptAnswer, Packet, Question, RecordType } from "dns-packet";
import { DnsCache } from "./cache.js";
import { forward, type Upstream } from "./forward.js";
import { type DnsIndex, isLocal, lookup } from "./records.js";

const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
const AA = dnsPacket.AUTHORITATIVE_ANSWER;
const RD = dnsPacket.RECURSION_DESIRED;
const RA = dnsPacket.RECURSION_AVAILABLE;
const TC = dnsPacket.TRUNCATED_RESPONSE;

export interface Answerer {
  /** The reply to send, or undefined to send nothing (not a query, or too short to have a header). */
  answer(msg: Buffer, tcp: boolean): Promise<Buffer | undefined>;
  stats: { queries: number; local: number; forwarded: number; formerr: number; servfail: number; dropped: number };
  cache: DnsCache;
}

export interface AnswererOptions {
  index: () => DnsIndex;
  upstreams: readonly Upstream[];
  cache?: DnsCache;
  forwardTimeoutMs?: number;
}

/** A header-only reply with this id and rcode (what a packet too broken to decode gets). */
function bare(id: number, rcode: number): Buffer {
  return dnsPacket.encode({ id, type: "response", flags: RA | rcode, questions: [], answers: [] });
}

/** The EDNS OPT record an EDNS query gets back: 1232 bytes, the DNS flag day 2020 size. */
const opt: OptAnswer = {
  type: "OPT",
  name: ".",
  udpPayloadSize: 1232,
  extendedRcode: 0,
  ednsVersion: 0,
  flags: 0,
  flag_do: false,
  options: [],
};

const udpLimit = (q: Packet) => {
  const opt = (q.additionals ?? []).find((a) => a.type === "OPT");
  const size = opt && "udpPayloadSize" in opt ? Number(opt.udpPayloadSize) : 512;
  return Math.max(512, Math.min(size || 512, 4096));
};

/** A reply encoded before, for the same question and reply shape: a local one while the index is the same, a
 * forwarded one while the cache holds the same entry at the same age in seconds. */
interface Memo {
  buf: Buffer;
  storedAt?: number;
  aged?: number;
}
const MEMO_MAX = 4096;

/** The memo's copy with this query's id (the one field of the reply that differs between two such queries). */
function withId(buf: Buffer, id: number): Buffer {
  const out = Buffer.from(buf);
  out.writeUInt16BE(id, 0);
  return out;
}

export function createAnswerer(o: AnswererOptions): Answerer {
  const cache = o.cache ?? new DnsCache();
  const stats = { queries: 0, local: 0, forwarded: 0, formerr: 0, servfail: 0, dropped: 0 };
  // Repeated queries (every pod asks the same few names, each with its search path) are answered from encoded
  // replies: a decode of the query, a Map hit and a copy, no answer objects and no encode (bounded: cleared when
  // full; local ones dropped when the index changes).
  const memo = new Map<string, Memo>();
  let memoIndex: DnsIndex | undefined;
  const remember = (key: string, m: Memo) => {
    if (memo.size >= MEMO_MAX) memo.clear();
    memo.set(key, m);
  };

  const reply = (
    q: Packet,
    rcode: number,
    answers: Answer[],
    authorities: Answer[],
    additionals: Answer[],
    aa: boolean,
    tcp: boolean,
  ) => {
    const rd = (q.flags ?? 0) & RD;
    const edns = (q.additionals ?? []).some((a) => a.type === "OPT");
    const packet: Packet = {
      id: q.id ?? 0,
      type: "response",
      flags: (aa ? AA : 0) | rd | RA | rcode,
      questions: q.questions ?? [],
      answers,
      authorities,
      additionals: [...additionals, ...(edns ? [opt] : [])],
    };
    const buf = dnsPacket.encode(packet);
    if (tcp || buf.length <= udpLimit(q)) return buf;
    return dnsPacket.encode({
      ...packet,
      flags: (packet.flags ?? 0) | TC,
      answers: [],
      authorities: [],
      additionals: [],
    });
  };

  /** The cache's copy, or the upstreams' answer (then cached). */
  async function forwarded(question: Question, msg: Buffer, tcp: boolean): Promise<Packet | Buffer> {
    const key = DnsCache.key(question.name, question.type, question.class ?? "IN");
    const hit = cache.get(key);
    if (hit) return hit;
    const raw = await forward(o.upstreams, msg, tcp, o.forwardTimeoutMs);
    try {
      cache.put(key, dnsPacket.decode(raw));
    } catch {
      // An upstream answer dns-packet cannot read is passed on, not cached.
    }
    return raw;
  }

  /** For A/AAAA, an ExternalName's CNAME is followed (CoreDNS resolves the target through its upstream). */
  async function follow(index: DnsIndex, target: string, type: RecordType, depth: number): Promise<Answer[]> {
    if (depth > 4) return [];
    if (isLocal(index, target)) {
      const r = lookup(index, target, type);
      const last = r.answers.at(-1);
      if (last?.type === "CNAME") return [...r.answers, ...(await follow(index, String(last.data), type, depth + 1))];
      return r.answers;
    }
    const sub: Packet = {
      id: Math.floor(Math.random() * 65535),
      type: "query",
      flags: RD,
      questions: [{ name: target, type, class: "IN" }],
    };
    const got = await forwarded(sub.questions![0]!, dnsPacket.encode(sub), false).catch(() => undefined);
    if (!got) return [];
    const p = Buffer.isBuffer(got) ? dnsPacket.decode(got) : got;
    return p.answers ?? [];
  }

  async function answer(msg: Buffer, tcp: boolean): Promise<Buffer | undefined> {
    stats.queries++;
    if (msg.length < 12) {
      stats.dropped++;
      return undefined;
    }
    const id = msg.readUInt16BE(0);
    if (msg.readUInt16BE(2) & 0x8000) {
      stats.dropped++; // a response: never answered (no loops between resolvers)
      return undefined;
    }
    let q: Packet;
    try {
      q = dnsPacket.decode(msg);
    } catch {
      stats.formerr++;
      return bare(id, RCODE.FORMERR);
    }
    const question = q.questions?.[0];
    if (!question || (q.questions?.length ?? 0) !== 1 || typeof question.name !== "string") {
      stats.formerr++;
      return bare(id, RCODE.FORMERR);
    }
    if (((q.flags ?? 0) >> 11) & 0xf) return reply(q, RCODE.NOTIMP, [], [], [], false, tcp); // only QUERY
    const index = o.index();
    if (index !== memoIndex) {
      for (const [k, m] of memo) if (m.storedAt === undefined) memo.delete(k);
      memoIndex = index;
    }
    // What makes two replies differ besides the id: the question as asked, RD, EDNS and the size limit.
    const edns = (q.additionals ?? []).some((a) => a.type === "OPT");
    const shape = `${question.name}|${question.type}|${question.class}|${(q.flags ?? 0) & RD}|${edns}|${tcp ? 0 : udpLimit(q)}`;
    if (isLocal(index, question.name)) {
      stats.local++;
      const m = memo.get(shape);
      if (m) return withId(m.buf, id);
      const r = lookup(index, question.name, question.type);
      let answers = r.answers;
      const last = answers.at(-1);
      const followed = last?.type === "CNAME" && (question.type === "A" || question.type === "AAAA");
      if (followed) answers = [...answers, ...(await follow(index, String(last.data), question.type, 0))];
      const buf = reply(q, RCODE[r.rcode], answers, r.authorities, r.additionals, true, tcp);
      // An ExternalName's target came from upstream: not kept past its own cache entry, so not memoised.
      if (!followed && o.index() === index) remember(shape, { buf });
      return buf;
    }
    stats.forwarded++;
    const ckey = DnsCache.key(question.name, question.type, question.class ?? "IN");
    const held = cache.age(ckey);
    const m = held && memo.get(shape);
    if (m && held && m.storedAt === held.storedAt && m.aged === held.aged) {
      cache.touch(ckey);
      return withId(m.buf, id);
    }
    try {
      const got = await forwarded(question, msg, tcp);
      if (Buffer.isBuffer(got)) return got;
      const rc = RCODE[((got as { rcode?: string }).rcode ?? "NOERROR") as keyof typeof RCODE] ?? 0;
      const buf = reply(
        q,
        rc,
        got.answers ?? [],
        got.authorities ?? [],
        (got.additionals ?? []).filter((a) => a.type !== "OPT"),
        false,
        tcp,
      );
      const now = cache.age(ckey);
      if (now) remember(shape, { buf, ...now });
      return buf;
    } catch {
      stats.servfail++;
      return reply(q, RCODE.SERVFAIL, [], [], [], false, tcp);
    }
  }

  return {
    answer: (msg, tcp) =>
      answer(msg, tcp).catch(() => {
        stats.servfail++;
        return msg.length >= 12 ? bare(msg.readUInt16BE(0), RCODE.SERVFAIL) : undefined;
      }),
    stats,
    cache,
  };
}
