// Package logs/ (kubelet's kuberuntime/logs) — the CRI log format and ReadLogs over a log-file interface.
// Imports container/ only; file I/O behind LogFiles (src/host/ implements it).
//
// ReadLogs (kubelet pkg/kubelet/kuberuntime/logs/logs.go) over a random-access log file, in bounded
// memory: `tailLines` is found by reading backwards from the end in chunks (kubelet's
// tail.FindTailLineStartIndex), so a 1 GiB log is tailed without reading it whole. Then records are read
// forwards, joined into lines, filtered by `since`, prefixed with timestamps when asked, cut at `limitBytes`.
// With `follow` the reader waits at the end of the file for more, reopens the path when the file was
// rotated (after draining the old one), and ends when the container has stopped and everything is read,
// when the caller goes away, or at the server's maximum duration.
//
// Differences from kubelet, deliberate: partial records are joined into one line before `tailLines` counts
// (kubelet counts file records); a torn last record (no newline yet) is not printed unless following, when
// it is read once it is complete (kubelet prints it as is).
import { LineJoiner, fixedNanoTime, parseCRILogRecord, splitRecords, concat, type LogLine } from "./cri-log-format.js";
import type { LogFiles, LogHandle } from "./log-files.js";

export interface LogOptions {
  tailLines?: number | undefined;
  limitBytes?: number | undefined;
  /** Lines older than this (ms since epoch) are skipped. */
  sinceMs?: number | undefined;
  timestamps?: boolean | undefined;
  follow?: boolean | undefined;
}

export interface FollowControl {
  /** Whether the container still runs (and so may write more). Asked at most every `checkMs`. */
  running(): Promise<boolean>;
  signal?: AbortSignal | undefined;
  /** The longest a follow may last (ms). */
  maxMs: number;
  /** How often to look for new bytes at the end of the file. */
  pollMs?: number;
  /** kubelet's logForceCheckPeriod: how often to ask whether the container still runs. */
  checkMs?: number;
}

const CHUNK = 64 * 1024;
/** A record longer than this is cut (containerd splits lines at 16 KiB, so this only bounds a corrupt file). */
const MAX_RECORD = 1024 * 1024;
const NL = 0x0a;
const enc = new TextEncoder();

/** The offset of the first record of the last `lines` lines (kubelet's FindTailLineStartIndex), reading
 * backwards a chunk at a time; memory holds one chunk plus the record being examined. */
export async function tailStart(h: LogHandle, lines: number, size?: number): Promise<number> {
  let bufStart = size ?? (await h.size());
  let buf: Uint8Array = new Uint8Array();
  const more = async (): Promise<boolean> => {
    if (bufStart === 0) return false;
    const from = Math.max(0, bufStart - CHUNK);
    buf = concat([await h.read(from, bufStart - from), buf]);
    bufStart = from;
    return true;
  };
  // The end of the last complete record: a torn last record is not a line yet.
  let recEnd = -1;
  while (recEnd < 0) {
    const i = buf.lastIndexOf(NL);
    if (i >= 0) recEnd = i + 1;
    else if (buf.length > MAX_RECORD || !(await more())) return bufStart;
  }
  let complete = 0;
  for (;;) {
    buf = buf.length > recEnd + CHUNK ? buf.slice(0, recEnd) : buf.subarray(0, recEnd);
    const nl = recEnd >= 2 ? buf.lastIndexOf(NL, recEnd - 2) : -1;
    // The record starts in an earlier chunk: read it (a record over MAX_RECORD is cut there instead).
    if (nl < 0 && recEnd <= MAX_RECORD && (await more())) {
      recEnd = buf.length;
      continue;
    }
    const start = nl + 1;
    const rec = parseCRILogRecord(buf.subarray(start, recEnd - 1));
    // An F record closes a line; so does an unparsable one (it prints as nothing, as in kubelet).
    if (!rec?.partial) {
      if (complete === lines) return bufStart + recEnd;
      complete++;
    }
    if (start === 0 && bufStart === 0) return 0;
    recEnd = start;
  }
}

/** Renders lines as `kubectl logs` prints them, within `limitBytes`. */
class LineWriter {
  private remain: number;
  constructor(
    private readonly o: LogOptions,
    private readonly write: (bytes: Uint8Array) => Promise<void>,
  ) {
    this.remain = o.limitBytes ?? Infinity;
  }
  get full(): boolean {
    return this.remain <= 0;
  }
  async line(l: LogLine): Promise<void> {
    if (this.o.sinceMs !== undefined && l.ms < this.o.sinceMs) return;
    let out = concat(
      this.o.timestamps
        ? [enc.encode(`${fixedNanoTime(l.time)} `), l.content, enc.encode("\n")]
        : [l.content, enc.encode("\n")],
    );
    if (out.length > this.remain) out = out.subarray(0, this.remain);
    this.remain -= out.length;
    await this.write(out);
  }
}

/** Reads the log at `path` into `write`. Returns when done (see the header). */
export async function readLogs(
  files: LogFiles,
  path: string,
  o: LogOptions,
  write: (bytes: Uint8Array) => Promise<void>,
  follow?: FollowControl,
): Promise<void> {
  let h = await files.open(path);
  if (!h) return;
  const out = new LineWriter(o, write);
  const joiner = new LineJoiner();
  const deadline = follow ? Date.now() + follow.maxMs : 0;
  let lastCheck = 0;
  try {
    // Without follow, the log as it is when the request came: `--tail=2` of a busy container is 2 lines, not 2 plus
    // whatever it wrote while they were read.
    const size = await h.size();
    const end = o.follow ? Infinity : size;
    let offset = o.tailLines !== undefined ? await tailStart(h, o.tailLines, size) : 0;
    let rest: Uint8Array = new Uint8Array();
    let running = true;
    let draining = false;
    for (;;) {
      // Read what is there now.
      for (;;) {
        if (out.full || follow?.signal?.aborted) return;
        const want = Math.min(CHUNK, end - offset);
        const bytes = want > 0 ? await h.read(offset, want) : new Uint8Array();
        if (bytes.length === 0) break;
        offset += bytes.length;
        const { records, rest: torn } = splitRecords(rest.length ? concat([rest, bytes]) : bytes);
        rest = torn.length > MAX_RECORD ? new Uint8Array() : torn.slice();
        for (const r of records) {
          const rec = parseCRILogRecord(r);
          if (!rec) continue; // kubelet skips unparsable lines too
          const line = joiner.push(rec);
          if (line) await out.line(line);
          if (out.full) return;
        }
      }
      if (!o.follow || !follow) return;
      if (!running || Date.now() >= deadline || follow.signal?.aborted) return;
      // Rotated: drain the old file once more (it may have grown after the last read and before the
      // rename), then go on with the new one from its start.
      const now = await h.pathId();
      if (now !== undefined && now !== h.id) {
        if (!draining) {
          draining = true;
          continue;
        }
        draining = false;
        const next = await files.open(path);
        if (next) {
          await h.close();
          h = next;
          offset = 0;
          rest = new Uint8Array();
          continue;
        }
      }
      if (Date.now() - lastCheck >= (follow.checkMs ?? 1000)) {
        lastCheck = Date.now();
        // One more pass after the container stopped: what it wrote last is read before the end.
        if (!(await follow.running())) running = false;
      }
      if (running) await sleep(follow.pollMs ?? 250, follow.signal);
    }
  } finally {
    await h.close();
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((res) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      res();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
