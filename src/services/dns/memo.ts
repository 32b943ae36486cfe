// Replies encoded before, for the answerer's hot path. Two keys: the reply's shape (the question as asked, RD,
// EDNS, the size limit, the transport: what makes two replies differ besides the id), and the query's own bytes
// after its id, so a repeated query is found without decoding it (the bytes say everything the shape says, and
// more: two queries that differ only in an EDNS cookie are two entries). A local reply holds while the index it
// was answered from does; a forwarded one while the cache holds the same entry at the same age in seconds.
// Bounded: each map is cleared when full.
export interface MemoEntry {
  buf: Buffer;
  /** A forwarded reply's cache key, and the cache entry's store time and age when it was encoded. */
  cacheKey?: string;
  storedAt?: number;
  aged?: number;
}

const MAX = 4096;
/** Queries longer than this are not keyed by their bytes (a query is ~30–80 bytes; 512 is the classic UDP size). */
const RAW_MAX = 512;

export class ReplyMemo {
  private readonly byShape = new Map<string, MemoEntry>();
  private readonly byQuery = new Map<string, string>();
  private index: unknown;

  /** The key of a query's bytes (undefined when too long to key). */
  static queryKey(msg: Buffer, tcp: boolean): string | undefined {
    return msg.length <= RAW_MAX ? `${tcp ? "t" : "u"}${msg.toString("latin1", 2)}` : undefined;
  }

  /** Drops the local replies when the index is not the one they were answered from, and every query's link (a
   * name forwarded before may be the cluster's now: a PTR for a new ClusterIP). */
  useIndex(index: unknown): void {
    if (index === this.index) return;
    for (const [k, m] of this.byShape) if (m.cacheKey === undefined) this.byShape.delete(k);
    this.byQuery.clear();
    this.index = index;
  }

  get(shape: string): MemoEntry | undefined {
    return this.byShape.get(shape);
  }

  /** The entry a query with these bytes was answered with, if still held. */
  forQuery(queryKey: string): MemoEntry | undefined {
    const shape = this.byQuery.get(queryKey);
    return shape === undefined ? undefined : this.byShape.get(shape);
  }

  set(shape: string, e: MemoEntry, queryKey: string | undefined): void {
    if (this.byShape.size >= MAX) this.byShape.clear();
    this.byShape.set(shape, e);
    this.link(queryKey, shape);
  }

  /** Remembers that a query with these bytes has this shape. */
  link(queryKey: string | undefined, shape: string): void {
    if (queryKey === undefined) return;
    if (this.byQuery.size >= MAX) this.byQuery.clear();
    this.byQuery.set(queryKey, shape);
  }
}

/** The memo's copy with this query's id (the one field of the reply that differs between two such queries). */
export function withId(buf: Buffer, id: number): Buffer {
  const out = Buffer.from(buf);
  out.writeUInt16BE(id, 0);
  return out;
}
