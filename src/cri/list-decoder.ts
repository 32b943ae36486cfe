// Decoding a list answer (ListPodSandbox, ListContainers) item by item, reusing the item decoded last time when
// its bytes are the same. A relist asks for the same objects every period and almost none changed (an item's bytes
// hold its id, state and createdAt, labels and annotations), so most of the protobuf decoding of a relist, which
// was its main cost, is a Map lookup instead. The key is the item's bytes themselves (its maps' entries in one
// order, below), so a changed object is never mistaken for its old self. Items handed out are shared between
// answers: callers read them and never change them.
//
// Two generations bound the memory: items are looked up in the current and the previous one; when the current one
// holds more than twice the largest answer seen (64 at least) it becomes the previous (an item a later answer does
// not ask for again is gone after two turns). A relist's answer is the largest, so it always fits in one
// generation; the items the pods' own filtered lists add as their containers change turn them over. (A fixed
// 1024 kept up to 2048 items of a 30-pod node, most of them objects long gone: 3-4 MiB of heap, bytes and
// decoded messages, on a node after a burst of syncs.)
//
// The key does not depend on the order of a map's entries. containerd encodes a Go map (an object's labels and
// annotations) in Go's random map order, so the same container comes back with its labels in another order on most
// relists, and a key of the bytes as sent missed for nearly every item with two labels or more (seen on containerd
// 1.6: 5 of 6 containers decoded again on every relist). A map's entries are sorted in the key; anything else keeps
// its order, and an item whose map repeats a key (where the last entry wins, so order matters) keeps its bytes.
// Node only (Buffer): the grpc-js transport uses it.
import { create, fromBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";

export interface ListDecoder<O> {
  decode(buf: Uint8Array): O;
  /** Items decoded from bytes (not reused), since the decoder was made: for tests and the bench. */
  readonly decoded: number;
}

/** `list` is the answer's schema, whose field `field` (a repeated message of `item`'s schema, field number 1) is
 * the only field it has. Any other shape is decoded whole, as usual. */
export function cachingListDecoder<L extends DescMessage, I extends DescMessage>(
  list: L,
  item: I,
  field: string,
): ListDecoder<MessageShape<L>> {
  const TAG = (1 << 3) | 2; // field 1, length-delimited
  const keyOf = itemKey(new Set(item.fields.filter((f) => f.fieldKind === "map").map((f) => f.number)));
  let cur = new Map<string, MessageShape<I>>();
  let prev = new Map<string, MessageShape<I>>();
  let decoded = 0;
  let max = 64;

  return {
    decode(buf) {
      const items: MessageShape<I>[] = [];
      let pos = 0;
      while (pos < buf.length) {
        const end = fieldEnd(buf, pos);
        if (end < 0 || fieldTag !== TAG) return fromBinary(list, buf);
        const bytes = buf.subarray(at, end);
        pos = end;
        const key = keyOf(bytes);
        let m = cur.get(key);
        if (!m) {
          m = prev.get(key);
          if (!m) {
            m = fromBinary(item, bytes);
            decoded++;
          }
          cur.set(key, m);
        }
        items.push(m);
      }
      // Room for two of the largest answers; past that the current generation turns over.
      max = Math.max(max, 2 * items.length);
      if (cur.size > max) {
        prev = cur;
        cur = new Map();
      }
      // `field` is the list's one repeated field of `item` (the caller's contract above), which the types cannot name.
      return create(list, { [field]: items } as MessageInitShape<L>);
    },
    get decoded() {
      return decoded;
    },
  };
}

// The answer's and its items' parser: a relist splits the answer and keys every item, so it reads tags and lengths
// in place and allocates only the key itself. `at` is where the last varint ended; -1 means the bytes ran out.
let at = 0;
function varint(b: Uint8Array, pos: number): number {
  let v = 0;
  for (let mul = 1; pos < b.length && mul < 2 ** 63; mul *= 128) {
    const x = b[pos++]!;
    v += (x & 0x7f) * mul;
    if (x < 0x80) {
      at = pos;
      return v;
    }
  }
  at = -1;
  return 0;
}

/** The end of the field whose tag is at `pos` (-1 where it does not parse, or runs past the end); its tag is left
 * in `fieldTag`, and for a length-delimited field `at` is where its payload starts. */
let fieldTag = 0;
function fieldEnd(b: Uint8Array, pos: number): number {
  fieldTag = varint(b, pos);
  if (at < 0) return -1;
  let end: number;
  switch (fieldTag & 7) {
    case 0:
      varint(b, at);
      end = at;
      break;
    case 1:
      end = at + 8;
      break;
    case 2: {
      const len = varint(b, at);
      end = at < 0 ? -1 : at + len;
      break;
    }
    case 5:
      end = at + 4;
      break;
    default:
      return -1; // groups: not in the CRI
  }
  return end >= 0 && end <= b.length ? end : -1;
}

/** Byte order of the ranges [a, a + an) and [b, b + bn) of `buf`. */
function compareRanges(buf: Uint8Array, a: number, an: number, b: number, bn: number): number {
  const n = Math.min(an, bn);
  for (let i = 0; i < n; i++) {
    const d = buf[a + i]! - buf[b + i]!;
    if (d) return d;
  }
  return an - bn;
}

/** The key of an item's bytes: the bytes themselves (as a latin1 string), with the entries of each map field
 * (`maps`: their field numbers) moved to the end and sorted by their keys. A message decodes the same from either:
 * a map's entries are a set when their keys differ, and the other fields keep their order. Bytes that do not parse
 * as fields, or a map that repeats a key (the last entry wins, so its order matters), keep their order. */
function itemKey(maps: ReadonlySet<number>) {
  /** Per map entry: field number, start, end, key start, key length (flat, reused). */
  const e: number[] = [];
  return (bytes: Uint8Array): string => {
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const raw = () => buf.toString("latin1");
    if (maps.size === 0) return raw();
    e.length = 0;
    for (let pos = 0; pos < buf.length; ) {
      const end = fieldEnd(buf, pos);
      if (end < 0) return raw();
      const n = Math.floor(fieldTag / 8);
      if ((fieldTag & 7) === 2 && maps.has(n)) {
        // The entry's key: its field 1, first in the entry as every encoder writes it (fieldEnd left `at` at the
        // entry's payload).
        const keyStart = at;
        if (buf[keyStart] !== 0x0a) return raw();
        const keyEnd = fieldEnd(buf, keyStart);
        if (keyEnd < 0 || keyEnd > end) return raw();
        e.push(n, pos, end, keyStart, keyEnd - keyStart);
      }
      pos = end;
    }
    const count = e.length / 5;
    if (count === 0) return raw();
    const order = Array.from({ length: count }, (_, i) => i * 5);
    order.sort((x, y) => e[x]! - e[y]! || compareRanges(buf, e[x + 3]!, e[x + 4]!, e[y + 3]!, e[y + 4]!));
    const out = Buffer.allocUnsafe(buf.length);
    let w = 0;
    let from = 0;
    for (let i = 0; i < e.length; i += 5) {
      w += buf.copy(out, w, from, e[i + 1]);
      from = e[i + 2]!;
    }
    w += buf.copy(out, w, from, buf.length);
    for (let k = 0; k < count; k++) {
      const x = order[k]!;
      const y = order[k - 1];
      if (y !== undefined && e[x] === e[y] && compareRanges(buf, e[x + 3]!, e[x + 4]!, e[y + 3]!, e[y + 4]!) === 0)
        return raw();
      w += buf.copy(out, w, e[x + 1], e[x + 2]);
    }
    return out.toString("latin1", 0, w);
  };
}
