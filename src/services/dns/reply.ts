// Encoding a reply to a decoded query with dns-packet: the flags, the EDNS OPT record an EDNS query gets back,
// and truncation (TC) for a UDP client's size. Pure.
import * as dnsPacket from "dns-packet";
import type { Answer, OptAnswer, Packet } from "dns-packet";

export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
const AA = dnsPacket.AUTHORITATIVE_ANSWER;
export const RD = dnsPacket.RECURSION_DESIRED;
const RA = dnsPacket.RECURSION_AVAILABLE;
const TC = dnsPacket.TRUNCATED_RESPONSE;

/** A header-only reply with this id and rcode (what a packet too broken to decode gets). */
export function bare(id: number, rcode: number): Buffer {
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

export const hasEdns = (q: Packet) => (q.additionals ?? []).some((a) => a.type === "OPT");

export const udpLimit = (q: Packet) => {
  const o = (q.additionals ?? []).find((a) => a.type === "OPT");
  const size = o && "udpPayloadSize" in o ? Number(o.udpPayloadSize) : 512;
  return Math.max(512, Math.min(size || 512, 4096));
};

export interface ReplyParts {
  rcode: number;
  answers: Answer[];
  authorities: Answer[];
  additionals: Answer[];
  /** Authoritative (the cluster's own names). */
  aa: boolean;
}

/** The reply to q: its id, question and RD; OPT when q had one; over UDP, cut to the header and question with TC
 * when larger than the client takes (it retries over TCP). */
export function encodeReply(q: Packet, p: ReplyParts, tcp: boolean): Buffer {
  const packet: Packet = {
    id: q.id ?? 0,
    type: "response",
    flags: (p.aa ? AA : 0) | ((q.flags ?? 0) & RD) | RA | p.rcode,
    questions: q.questions ?? [],
    answers: p.answers,
    authorities: p.authorities,
    additionals: [...p.additionals, ...(hasEdns(q) ? [opt] : [])],
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
}

export const errorReply = (q: Packet, rcode: number, tcp: boolean) =>
  encodeReply(q, { rcode, answers: [], authorities: [], additionals: [], aa: false }, tcp);
