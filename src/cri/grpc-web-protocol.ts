// gRPC-Web's wire format (the gRPC over HTTP/1.1 spec, binary mode): length-prefixed frames, the last one a
// trailer frame (flag 0x80) holding `grpc-status`/`grpc-message` lines. The fetch transport and cri-proxy
// both speak it, so it lives apart from either.

export function encodeFrame(flag: number, payload: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + payload.byteLength);
  out[0] = flag;
  new DataView(out.buffer).setUint32(1, payload.byteLength, false);
  out.set(payload, 5);
  return out;
}

export interface Frame {
  flag: number;
  payload: Uint8Array;
}

/** Split a gRPC-Web body into frames; throws on a truncated or oversized frame. */
export function decodeFrames(body: Uint8Array, max = 16 * 1024 * 1024): Frame[] {
  const frames: Frame[] = [];
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let off = 0;
  while (off < body.byteLength) {
    if (body.byteLength - off < 5) throw new Error("truncated gRPC-Web frame header");
    const flag = body[off]!;
    const len = view.getUint32(off + 1, false);
    if (len > max) throw new Error(`gRPC-Web frame of ${len} bytes is over the ${max} byte limit`);
    if (body.byteLength - off - 5 < len) throw new Error("truncated gRPC-Web frame");
    frames.push({ flag, payload: body.subarray(off + 5, off + 5 + len) });
    off += 5 + len;
  }
  return frames;
}

export function parseTrailers(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0) m.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return m;
}
