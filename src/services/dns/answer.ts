// One DNS message in, one out (or none): decoding with dns-packet, the cluster's names answered from the index
// (records.ts), everything else forwarded through the cache. Malformed input is answered FORMERR when it has a
// header to answer, and dropped otherwise; it never throws. Transport-free: server.ts calls it for UDP and TCP.
//
// The hot path: every pod asks the same few names (each with its search path), so a query whose bytes (after the
// id) were answered before is answered from the encoded reply (memo.ts) without being decoded: a Map hit and a
// copy with its id. No answer objects, no encode, nothing logged per query.
import * as dnsPacket from "dns-packet";
import type { Answer, Packet, Question, RecordType } from "dns-packet";
import { DnsCache } from "./cache.js";
import { forward, type Upstream } from "./forward.js";
import { type MemoEntry, ReplyMemo, withId } from "./memo.js";
import { type DnsIndex, isLocal, lookup } from "./records.js";
import { bare, encodeReply, errorReply, hasEdns, RCODE, RD, udpLimit } from "./reply.js";

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

interface Ctx {
  o: AnswererOptions;
  cache: DnsCache;
  memo: ReplyMemo;
  stats: Answerer["stats"];
}

/** What one query is, once decoded: the question, the memo's key for its reply shape, and its bytes' key. */
interface Query {
  q: Packet;
  question: Question & { name: string };
  shape: string;
  queryKey: string | undefined;
  tcp: boolean;
}

export function createAnswerer(o: AnswererOptions): Answerer {
  const c: Ctx = {
    o,
    cache: o.cache ?? new DnsCache(),
    memo: new ReplyMemo(),
    stats: { queries: 0, local: 0, forwarded: 0, formerr: 0, servfail: 0, dropped: 0 },
  };
  return {
    answer: (msg, tcp) =>
      answer(c, msg, tcp).catch(() => {
        c.stats.servfail++;
        return msg.length >= 12 ? bare(msg.readUInt16BE(0), RCODE.SERVFAIL) : undefined;
      }),
    stats: c.stats,
    cache: c.cache,
  };
}

async function answer(c: Ctx, msg: Buffer, tcp: boolean): Promise<Buffer | undefined> {
  c.stats.queries++;
  if (msg.length < 12 || msg.readUInt16BE(2) & 0x8000) {
    c.stats.dropped++; // no header, or a response: never answered (no loops between resolvers)
    return undefined;
  }
  const id = msg.readUInt16BE(0);
  const index = c.o.index();
  c.memo.useIndex(index);
  const queryKey = ReplyMemo.queryKey(msg, tcp);
  const memoised = queryKey === undefined ? undefined : fromMemo(c, c.memo.forQuery(queryKey), id);
  if (memoised) return memoised;
  const query = decodeQuery(msg, tcp, queryKey);
  if (Buffer.isBuffer(query)) {
    c.stats.formerr++;
    return query;
  }
  if (((query.q.flags ?? 0) >> 11) & 0xf) return errorReply(query.q, RCODE.NOTIMP, tcp); // only QUERY
  if (isLocal(index, query.question.name)) return answerLocal(c, query, index, id);
  return answerForwarded(c, query, msg, id);
}

/** A memoised reply that still holds, with this id. */
function fromMemo(c: Ctx, m: MemoEntry | undefined, id: number): Buffer | undefined {
  if (!m) return undefined;
  if (m.cacheKey === undefined) {
    c.stats.local++;
    return withId(m.buf, id);
  }
  const held = c.cache.age(m.cacheKey);
  if (!held || held.storedAt !== m.storedAt || held.aged !== m.aged) return undefined;
  c.cache.touch(m.cacheKey);
  c.stats.forwarded++;
  return withId(m.buf, id);
}

/** The decoded query, or the FORMERR reply for one that cannot be read or has not exactly one question. */
function decodeQuery(msg: Buffer, tcp: boolean, queryKey: string | undefined): Query | Buffer {
  let q: Packet;
  try {
    q = dnsPacket.decode(msg);
  } catch {
    return bare(msg.readUInt16BE(0), RCODE.FORMERR);
  }
  const question = q.questions?.[0];
  if (!question || (q.questions?.length ?? 0) !== 1 || typeof question.name !== "string")
    return bare(msg.readUInt16BE(0), RCODE.FORMERR);
  // What makes two replies differ besides the id: the question as asked, RD, EDNS and the size limit.
  const shape = `${question.name}|${question.type}|${question.class}|${(q.flags ?? 0) & RD}|${hasEdns(q)}|${tcp ? 0 : udpLimit(q)}`;
  return { q, question: { ...question, name: question.name }, shape, queryKey, tcp };
}

async function answerLocal(c: Ctx, query: Query, index: DnsIndex, id: number): Promise<Buffer> {
  c.stats.local++;
  const { q, question, shape, queryKey, tcp } = query;
  const m = c.memo.get(shape);
  if (m) {
    c.memo.link(queryKey, shape);
    return withId(m.buf, id);
  }
  const r = lookup(index, question.name, question.type);
  let answers = r.answers;
  const last = answers.at(-1);
  const followed = last?.type === "CNAME" && (question.type === "A" || question.type === "AAAA");
  if (followed) answers = [...answers, ...(await follow(c, index, String(last.data), question.type, 0))];
  const buf = encodeReply(
    q,
    { rcode: RCODE[r.rcode], answers, authorities: r.authorities, additionals: r.additionals, aa: true },
    tcp,
  );
  // An ExternalName's target came from upstream: not kept past its own cache entry, so not memoised.
  if (!followed && c.o.index() === index) c.memo.set(shape, { buf }, queryKey);
  return buf;
}

async function answerForwarded(c: Ctx, query: Query, msg: Buffer, id: number): Promise<Buffer> {
  c.stats.forwarded++;
  const { q, question, shape, queryKey, tcp } = query;
  const cacheKey = DnsCache.key(question.name, question.type, question.class ?? "IN");
  const held = c.cache.age(cacheKey);
  const m = held && c.memo.get(shape);
  if (m && held && m.storedAt === held.storedAt && m.aged === held.aged) {
    c.cache.touch(cacheKey);
    c.memo.link(queryKey, shape);
    return withId(m.buf, id);
  }
  try {
    const got = await forwarded(c, question, msg, tcp);
    if (Buffer.isBuffer(got)) return got;
    const rcode = RCODE[((got as { rcode?: string }).rcode ?? "NOERROR") as keyof typeof RCODE] ?? 0;
    const additionals = (got.additionals ?? []).filter((a) => a.type !== "OPT");
    const parts = { rcode, answers: got.answers ?? [], authorities: got.authorities ?? [], additionals, aa: false };
    const buf = encodeReply(q, parts, tcp);
    const now = c.cache.age(cacheKey);
    if (now) c.memo.set(shape, { buf, cacheKey, ...now }, queryKey);
    return buf;
  } catch {
    c.stats.servfail++;
    return errorReply(q, RCODE.SERVFAIL, tcp);
  }
}

/** The cache's copy, or the upstreams' answer (then cached). */
async function forwarded(c: Ctx, question: Question, msg: Buffer, tcp: boolean): Promise<Packet | Buffer> {
  const key = DnsCache.key(question.name, question.type, question.class ?? "IN");
  const hit = c.cache.get(key);
  if (hit) return hit;
  const raw = await forward(c.o.upstreams, msg, tcp, c.o.forwardTimeoutMs);
  try {
    c.cache.put(key, dnsPacket.decode(raw));
  } catch {
    // An upstream answer dns-packet cannot read is passed on, not cached.
  }
  return raw;
}

/** For A/AAAA, an ExternalName's CNAME is followed (CoreDNS resolves the target through its upstream). */
async function follow(c: Ctx, index: DnsIndex, target: string, type: RecordType, depth: number): Promise<Answer[]> {
  if (depth > 4) return [];
  if (isLocal(index, target)) {
    const r = lookup(index, target, type);
    const last = r.answers.at(-1);
    if (last?.type === "CNAME") return [...r.answers, ...(await follow(c, index, String(last.data), type, depth + 1))];
    return r.answers;
  }
  const sub: Packet = {
    id: Math.floor(Math.random() * 65535),
    type: "query",
    flags: RD,
    questions: [{ name: target, type, class: "IN" }],
  };
  const got = await forwarded(c, sub.questions![0]!, dnsPacket.encode(sub), false).catch(() => undefined);
  if (!got) return [];
  const p = Buffer.isBuffer(got) ? dnsPacket.decode(got) : got;
  return p.answers ?? [];
}
