// The CRI container log format (kubelet pkg/kubelet/kuberuntime/logs/logs.go parseCRILog):
//   2016-10-06T00:17:09.669794202Z stdout P log content 1
//   2016-10-06T00:17:09.669794203Z stderr F log content 2
// A "P" (partial) record continues in the next record of the same stream; "F" ends a line. kubelet writes
// the fragments as they come (so a `tail` counts file records); podsync joins them into one line and counts
// lines, which is what a reader of `logs --tail` means.

export type LogStream = "stdout" | "stderr";

export interface LogRecord {
  /** ms since epoch; the nanoseconds beyond ms are kept in `time` for output. */
  ms: number;
  /** The timestamp as written (RFC3339Nano). */
  time: string;
  stream: LogStream;
  partial: boolean;
  content: Uint8Array;
}

const SPACE = 0x20;
const NL = 0x0a;
const ascii = new TextDecoder("latin1");

/** One record (without its trailing newline), or undefined if it is not CRI format. */
export function parseCRILogRecord(line: Uint8Array): LogRecord | undefined {
  const a = line.indexOf(SPACE);
  if (a < 0) return undefined;
  const b = line.indexOf(SPACE, a + 1);
  if (b < 0) return undefined;
  const c = line.indexOf(SPACE, b + 1);
  // A record with empty content may end right after the tag.
  const tagEnd = c < 0 ? line.length : c;
  const time = ascii.decode(line.subarray(0, a));
  const ms = Date.parse(time);
  if (!Number.isFinite(ms)) return undefined;
  const stream = ascii.decode(line.subarray(a + 1, b));
  if (stream !== "stdout" && stream !== "stderr") return undefined;
  // Tags are ':'-separated and forward compatible; the first says partial or full.
  const tag = ascii.decode(line.subarray(b + 1, tagEnd)).split(":")[0];
  return { ms, time, stream, partial: tag === "P", content: c < 0 ? new Uint8Array() : line.subarray(c + 1) };
}

/** A joined log line: the fragments of one stream up to and including its "F" record. */
export interface LogLine {
  ms: number;
  time: string;
  stream: LogStream;
  content: Uint8Array;
}

/** Joins partial records into lines, per stream (stdout and stderr fragments may interleave). */
export class LineJoiner {
  private readonly pending = new Map<LogStream, LogRecord[]>();

  /** The line this record completes, if any. */
  push(r: LogRecord): LogLine | undefined {
    const parts = this.pending.get(r.stream);
    if (r.partial) {
      if (parts) parts.push(r);
      else this.pending.set(r.stream, [r]);
      return undefined;
    }
    if (!parts) return { ms: r.ms, time: r.time, stream: r.stream, content: r.content };
    this.pending.delete(r.stream);
    const first = parts[0]!;
    return {
      ms: first.ms,
      time: first.time,
      stream: r.stream,
      content: concat([...parts.map((p) => p.content), r.content]),
    };
  }
}

export function concat(chunks: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of chunks) n += c.byteLength;
  const out = new Uint8Array(n);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

/** kubelet's RFC3339NanoFixed output form: always nine fractional digits. */
export function fixedNanoTime(time: string): string {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(time);
  if (!m) return time;
  return `${m[1]}.${(m[2] ?? "").padEnd(9, "0").slice(0, 9)}${m[3]}`;
}

/** Split a byte buffer into newline-terminated records; the rest (a torn last line) is returned apart. */
export function splitRecords(buf: Uint8Array): { records: Uint8Array[]; rest: Uint8Array } {
  const records: Uint8Array[] = [];
  let start = 0;
  for (let i = buf.indexOf(NL); i >= 0; i = buf.indexOf(NL, start)) {
    records.push(buf.subarray(start, i));
    start = i + 1;
  }
  return { records, rest: buf.subarray(start) };
}
