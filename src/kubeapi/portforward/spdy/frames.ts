// Package kubeapi/portforward/spdy — SPDY/3.1 framing and header compression, read on the way through.
// Pure: imports only node: built-ins.
//
// SPDY/3.1 framing, ported from moby/spdystream's spdy package (types.go, read.go, write.go), the framer under
// apimachinery's util/httpstream/spdy that kubectl and containerd's streaming server both use. A frame is 8 bytes
// of header and a body: a control frame (high bit set) carries version 3, its type, flags and a 24-bit length; a
// data frame carries its 31-bit stream id, flags and length. Header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are a
// 32-bit count of name/value pairs, each a 32-bit length and bytes (values joined by NUL), zlib-compressed with
// the SPDY/3 dictionary as one stream per direction of a connection (headers.ts).

export const SPDY_VERSION = 3;

export const FrameType = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
} as const;

export const FLAG_FIN = 0x01;
export const FLAG_UNIDIRECTIONAL = 0x02;
/** spdystream's frame limit (MaxDataLength): the 24-bit length field. */
export const MAX_FRAME_LENGTH = 0xffffff;
/** SPDY/3.1's initial per-stream (and session) flow-control window. */
export const INITIAL_WINDOW = 64 * 1024;

export const RstStatus = {
  PROTOCOL_ERROR: 1,
  INVALID_STREAM: 2,
  REFUSED_STREAM: 3,
  CANCEL: 5,
  INTERNAL_ERROR: 6,
  FLOW_CONTROL_ERROR: 7,
} as const;

export type Frame =
  | { kind: "data"; streamId: number; flags: number; data: Buffer }
  | { kind: "syn_stream"; streamId: number; associatedTo: number; priority: number; flags: number; block: Buffer }
  | { kind: "syn_reply"; streamId: number; flags: number; block: Buffer }
  | { kind: "headers"; streamId: number; flags: number; block: Buffer }
  | { kind: "rst_stream"; streamId: number; status: number }
  | { kind: "settings"; flags: number; entries: { flags: number; id: number; value: number }[] }
  | { kind: "ping"; id: number }
  | { kind: "goaway"; lastGoodStreamId: number; status: number }
  | { kind: "window_update"; streamId: number; delta: number }
  | { kind: "unknown"; type: number; flags: number; body: Buffer };

export class SpdyProtocolError extends Error {}

function control(type: number, flags: number, body: Buffer): Buffer {
  if (body.length > MAX_FRAME_LENGTH) throw new SpdyProtocolError(`a control frame of ${body.length} bytes`);
  const h = Buffer.alloc(8);
  h.writeUInt32BE((0x8000 | SPDY_VERSION) * 0x10000 + type, 0);
  h.writeUInt32BE(flags * 0x1000000 + body.length, 4);
  return Buffer.concat([h, body]);
}

const u32 = (...values: number[]) => {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, i * 4));
  return b;
};

/** One frame as bytes (a header block is given already compressed: headers.ts). */
export function encodeFrame(f: Frame): Buffer {
  switch (f.kind) {
    case "data": {
      if (f.data.length > MAX_FRAME_LENGTH) throw new SpdyProtocolError(`a data frame of ${f.data.length} bytes`);
      return Buffer.concat([u32(f.streamId & 0x7fffffff, f.flags * 0x1000000 + f.data.length), f.data]);
    }
    case "syn_stream": {
      const b = Buffer.alloc(10);
      b.writeUInt32BE(f.streamId & 0x7fffffff, 0);
      b.writeUInt32BE(f.associatedTo & 0x7fffffff, 4);
      b[8] = (f.priority & 7) << 5;
      return control(FrameType.SYN_STREAM, f.flags, Buffer.concat([b, f.block]));
    }
    case "syn_reply":
      return control(FrameType.SYN_REPLY, f.flags, Buffer.concat([u32(f.streamId & 0x7fffffff), f.block]));
    case "headers":
      return control(FrameType.HEADERS, f.flags, Buffer.concat([u32(f.streamId & 0x7fffffff), f.block]));
    case "rst_stream":
      return control(FrameType.RST_STREAM, 0, u32(f.streamId & 0x7fffffff, f.status));
    case "settings": {
      const body = Buffer.alloc(4 + f.entries.length * 8);
      body.writeUInt32BE(f.entries.length, 0);
      f.entries.forEach((e, i) => {
        body.writeUInt32BE(e.flags * 0x1000000 + (e.id & 0xffffff), 4 + i * 8);
        body.writeUInt32BE(e.value >>> 0, 8 + i * 8);
      });
      return control(FrameType.SETTINGS, f.flags, body);
    }
    case "ping":
      return control(FrameType.PING, 0, u32(f.id));
    case "goaway":
      return control(FrameType.GOAWAY, 0, u32(f.lastGoodStreamId & 0x7fffffff, f.status));
    case "window_update":
      return control(FrameType.WINDOW_UPDATE, 0, u32(f.streamId & 0x7fffffff, f.delta & 0x7fffffff));
    case "unknown":
      return control(f.type, f.flags, f.body);
  }
}

function need(body: Buffer, n: number, what: string): void {
  if (body.length < n) throw new SpdyProtocolError(`${what} frame of ${body.length} bytes (at least ${n})`);
}

function decodeControl(type: number, flags: number, body: Buffer): Frame {
  const id = () => body.readUInt32BE(0) & 0x7fffffff;
  switch (type) {
    case FrameType.SYN_STREAM:
      need(body, 10, "a SYN_STREAM");
      return {
        kind: "syn_stream",
        streamId: id(),
        associatedTo: body.readUInt32BE(4) & 0x7fffffff,
        priority: body[8]! >> 5,
        flags,
        block: body.subarray(10),
      };
    case FrameType.SYN_REPLY:
    case FrameType.HEADERS:
      need(body, 4, type === FrameType.HEADERS ? "a HEADERS" : "a SYN_REPLY");
      return {
        kind: type === FrameType.HEADERS ? "headers" : "syn_reply",
        streamId: id(),
        flags,
        block: body.subarray(4),
      };
    case FrameType.RST_STREAM:
      need(body, 8, "a RST_STREAM");
      return { kind: "rst_stream", streamId: id(), status: body.readUInt32BE(4) };
    case FrameType.SETTINGS: {
      need(body, 4, "a SETTINGS");
      const n = body.readUInt32BE(0);
      need(body, 4 + n * 8, "a SETTINGS");
      const entries = Array.from({ length: n }, (_, i) => ({
        flags: body[4 + i * 8]!,
        id: body.readUInt32BE(4 + i * 8) & 0xffffff,
        value: body.readUInt32BE(8 + i * 8),
      }));
      return { kind: "settings", flags, entries };
    }
    case FrameType.PING:
      need(body, 4, "a PING");
      return { kind: "ping", id: body.readUInt32BE(0) };
    case FrameType.GOAWAY:
      need(body, 8, "a GOAWAY");
      return { kind: "goaway", lastGoodStreamId: id(), status: body.readUInt32BE(4) };
    case FrameType.WINDOW_UPDATE:
      need(body, 8, "a WINDOW_UPDATE");
      return { kind: "window_update", streamId: id(), delta: body.readUInt32BE(4) & 0x7fffffff };
    default:
      return { kind: "unknown", type, flags, body };
  }
}

/** Frames out of a byte stream cut anywhere: push what arrives, get the whole frames it completes. A control
 * frame over `maxControlBytes` is a protocol error, not held. With `skipData` a data frame is given at its header,
 * with no payload, and its payload bytes are passed over as they come (never held): what an observer needs. */
export class FrameParser {
  private buf: Buffer = Buffer.alloc(0);
  private skip = 0;
  constructor(private readonly o: { maxControlBytes?: number; skipData?: boolean } = {}) {}

  push(chunk: Buffer): Frame[] {
    let c = chunk;
    if (this.skip > 0) {
      const n = Math.min(this.skip, c.length);
      this.skip -= n;
      c = c.subarray(n);
    }
    this.buf = this.buf.length ? Buffer.concat([this.buf, c]) : c;
    const out: Frame[] = [];
    while (this.buf.length >= 8) {
      const w0 = this.buf.readUInt32BE(0);
      const w1 = this.buf.readUInt32BE(4);
      const length = w1 & 0xffffff;
      const flags = w1 >>> 24;
      const isControl = (w0 & 0x80000000) !== 0;
      if (!isControl && (w0 & 0x7fffffff) === 0) throw new SpdyProtocolError("a data frame on stream 0");
      if (!isControl && this.o.skipData) {
        out.push({ kind: "data", streamId: w0 & 0x7fffffff, flags, data: Buffer.alloc(0) });
        const n = Math.min(length, this.buf.length - 8);
        this.skip = length - n;
        this.buf = this.buf.subarray(8 + n);
        continue;
      }
      if (isControl && length > (this.o.maxControlBytes ?? MAX_FRAME_LENGTH))
        throw new SpdyProtocolError(`a control frame of ${length} bytes`);
      if (this.buf.length < 8 + length) break;
      const body = Buffer.from(this.buf.subarray(8, 8 + length));
      if (isControl) {
        const version = (w0 >>> 16) & 0x7fff;
        if (version !== SPDY_VERSION) throw new SpdyProtocolError(`SPDY version ${version}, not ${SPDY_VERSION}`);
        out.push(decodeControl(w0 & 0xffff, flags, body));
      } else out.push({ kind: "data", streamId: w0 & 0x7fffffff, flags, data: body });
      this.buf = this.buf.subarray(8 + length);
    }
    return out;
  }
}

/** A header block before compression (write.go writeHeaderValueBlock): names lower-cased, values joined by NUL. */
export function encodeHeaderBlock(headers: Record<string, string | string[]>): Buffer {
  const parts: Buffer[] = [u32(Object.keys(headers).length)];
  for (const [name, value] of Object.entries(headers)) {
    const n = Buffer.from(name.toLowerCase());
    const v = Buffer.from(Array.isArray(value) ? value.join("\0") : value);
    parts.push(u32(n.length), n, u32(v.length), v);
  }
  return Buffer.concat(parts);
}

/** read.go parseHeaderValueBlock: each name once, lower-case; values split at NUL. */
export function decodeHeaderBlock(b: Buffer): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  let at = 0;
  const take = (what: string) => {
    if (at + 4 > b.length) throw new SpdyProtocolError(`a header block cut short in ${what}`);
    const n = b.readUInt32BE(at);
    at += 4;
    if (at + n > b.length) throw new SpdyProtocolError(`a header block cut short in ${what}`);
    const s = b.subarray(at, at + n).toString("utf8");
    at += n;
    return s;
  };
  if (b.length < 4) throw new SpdyProtocolError("a header block cut short in its count");
  const count = b.readUInt32BE(0);
  at = 4;
  for (let i = 0; i < count; i++) {
    const name = take("a name");
    if (name !== name.toLowerCase()) throw new SpdyProtocolError(`header ${JSON.stringify(name)} is not lower-case`);
    if (Object.hasOwn(out, name)) throw new SpdyProtocolError(`header ${JSON.stringify(name)} twice`);
    out[name] = take("a value").split("\0");
  }
  return out;
}
