// Decoding a list answer (ListPodSandbox, ListContainers) item by item, reusing the item decoded last time when
// its bytes are the same. A relist asks for the same objects every period and almost none changed (an item's bytes
// hold its id, state and createdAt, labels and annotations), so most of the protobuf decoding of a relist, which
// was its main cost, is a Map lookup instead. The key is the item's bytes themselves, so a changed object is never
// mistaken for its old self. Items handed out are shared between answers: callers read them and never change them.
//
// Two generations bound the memory: items are looked up in the current and the previous one; when the current one
// holds more than twice the largest answer seen (64 at least) it becomes the previous (an item a later answer does
// not ask for again is gone after two turns). A relist's answer is the largest, so it always fits in one
// generation; the items the pods' own filtered lists add as their containers change turn them over. (A fixed
// 1024 kept up to 2048 items of a 30-pod node, most of them objects long gone: 3-4 MiB of heap, bytes and
// decoded messages, on a node after a burst of syncs.)
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
  let cur = new Map<string, MessageShape<I>>();
  let prev = new Map<string, MessageShape<I>>();
  let decoded = 0;
  let max = 64;

  return {
    decode(buf) {
      const items: MessageShape<I>[] = [];
      let pos = 0;
      while (pos < buf.length) {
        if (buf[pos] !== TAG) return fromBinary(list, buf);
        let len = 0;
        let shift = 0;
        let b: number;
        pos++;
        do {
          if (pos >= buf.length || shift > 28) return fromBinary(list, buf);
          b = buf[pos++]!;
          len |= (b & 0x7f) << shift;
          shift += 7;
        } while (b & 0x80);
        const end = pos + len;
        if (len < 0 || end > buf.length) return fromBinary(list, buf);
        const bytes = buf.subarray(pos, end);
        pos = end;
        const key = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
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
