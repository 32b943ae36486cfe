// The CRI log reader: format, partial lines, tail from the end in bounded memory, since, timestamps,
// limitBytes, a torn last record, and follow across appends and rotation.
import { appendFileSync, mkdtempSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixedNanoTime, parseCRILogRecord } from "../../src/logs/cri-log-format.js";
import { readLogs, tailStart, type LogOptions } from "../../src/logs/read-logs.js";
import type { LogFiles, LogHandle } from "../../src/logs/log-files.js";
import { nodeLogFiles } from "../../src/host/logs/log-files.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const T = (s: number) => new Date(Date.UTC(2026, 11, 2, 10, 0, s)).toISOString().replace(".000Z", ".123456789Z");

/** A log in memory; `reads` counts the bytes the reader asked for. */
function memFile(text: string | (() => Uint8Array)) {
  const stats = { reads: 0 };
  const bytes = () => (typeof text === "string" ? enc.encode(text) : text());
  const files: LogFiles = {
    async open() {
      const h: LogHandle = {
        id: "1",
        size: async () => bytes().length,
        async read(off, len) {
          const b = bytes().subarray(off, off + len);
          stats.reads += b.length;
          return b;
        },
        pathId: async () => "1",
        close: async () => undefined,
      };
      return h;
    },
  };
  return { files, stats };
}

async function read(files: LogFiles, o: LogOptions = {}) {
  const out: Uint8Array[] = [];
  await readLogs(files, "/x.log", o, async (b) => void out.push(b));
  return dec.decode(Buffer.concat(out));
}

const LOG = `${[
  `${T(1)} stdout F one`,
  `${T(2)} stderr F two (stderr)`,
  `${T(3)} stdout P thr`,
  `${T(3)} stdout P e`,
  `${T(4)} stdout F e joined`,
  `${T(5)} stdout F `,
  `${T(6)} stdout F six`,
].join("\n")}\n`;

describe("CRI log format (kubelet parseCRILog)", () => {
  it("parses time, stream, tag and content; refuses other formats", () => {
    expect(parseCRILogRecord(enc.encode(`${T(1)} stderr P:x part`))).toMatchObject({
      stream: "stderr",
      partial: true,
      content: enc.encode("part"),
    });
    expect(parseCRILogRecord(enc.encode(`${T(1)} stdout F`))).toMatchObject({
      partial: false,
      content: new Uint8Array(),
    });
    expect(parseCRILogRecord(enc.encode(`not a log line`))).toBeUndefined();
    expect(parseCRILogRecord(enc.encode(`${T(1)} stdin F x`))).toBeUndefined();
    expect(fixedNanoTime("2026-12-02T10:00:01.5Z")).toBe("2026-12-02T10:00:01.500000000Z");
  });
});

describe("readLogs", () => {
  it("whole log: stdout and stderr in order, partial records joined, empty lines kept", async () => {
    expect(await read(memFile(LOG).files)).toBe("one\ntwo (stderr)\nthree joined\n\nsix\n");
  });

  it("tailLines counts joined lines; 0 prints nothing; more than there are prints all", async () => {
    const { files } = memFile(LOG);
    expect(await read(files, { tailLines: 1 })).toBe("six\n");
    expect(await read(files, { tailLines: 3 })).toBe("three joined\n\nsix\n");
    expect(await read(files, { tailLines: 0 })).toBe("");
    expect(await read(files, { tailLines: 100 })).toBe("one\ntwo (stderr)\nthree joined\n\nsix\n");
  });

  it("sinceMs, timestamps (RFC3339Nano, fixed width) and limitBytes (a line is cut, as in kubelet)", async () => {
    const { files } = memFile(LOG);
    expect(await read(files, { sinceMs: Date.parse(T(4)) })).toBe("\nsix\n");
    expect(await read(files, { tailLines: 1, timestamps: true })).toBe(`${T(6)} six\n`);
    expect(await read(files, { limitBytes: 6 })).toBe("one\ntw");
  });

  it("a torn last record is not printed and does not break the reader", async () => {
    const { files } = memFile(`${LOG}${T(7)} stdout F sev`);
    expect(await read(files)).toBe("one\ntwo (stderr)\nthree joined\n\nsix\n");
    expect(await read(files, { tailLines: 1 })).toBe("six\n");
  });

  it("tails a 1 GiB log reading only its end", async () => {
    // A virtual 1 GiB file: only the bytes asked for are made.
    const size = 2 ** 30;
    const line = enc.encode(`${T(1)} stdout F ${"x".repeat(60)}\n`);
    const handle: LogHandle = {
      id: "big",
      size: async () => size,
      async read(off, len) {
        const n = Math.max(0, Math.min(len, size - off));
        stats.reads += n;
        const out = new Uint8Array(n);
        for (let i = 0; i < n; i++) out[i] = line[(off + i) % line.length]!;
        return out;
      },
      pathId: async () => "big",
      close: async () => undefined,
    };
    const stats = { reads: 0 };
    const files: LogFiles = { open: async () => handle };
    const start = await tailStart(handle, 10);
    expect(size - start).toBeLessThan(11 * line.length);
    expect(stats.reads).toBeLessThan(256 * 1024);
    stats.reads = 0;
    const text = await read(files, { tailLines: 3 });
    expect(text.split("\n").filter(Boolean)).toHaveLength(3);
    expect(stats.reads).toBeLessThan(512 * 1024);
  });

  it("tail across chunk boundaries on a real file matches the whole read", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-logs-"));
    const file = join(dir, "0.log");
    const lines: string[] = [];
    for (let i = 0; i < 5000; i++)
      lines.push(
        i % 7 === 0
          ? `${T(1)} stdout P part-${i}-\n${T(1)} stdout F end-${i}`
          : `${T(1)} ${i % 2 ? "stderr" : "stdout"} F line-${i} ${"y".repeat(i % 50)}`,
      );
    writeFileSync(file, `${lines.join("\n")}\n`);
    const all: Uint8Array[] = [];
    await readLogs(nodeLogFiles, file, {}, async (b) => void all.push(b));
    const allLines = dec.decode(Buffer.concat(all)).split("\n").slice(0, -1);
    expect(await read(nodeLogFiles)).toBe(""); // no file at /x.log: nothing, not an error
    expect(allLines).toHaveLength(5000);
    for (const n of [1, 2, 999, 4999]) {
      const out: Uint8Array[] = [];
      await readLogs(nodeLogFiles, file, { tailLines: n }, async (b) => void out.push(b));
      expect(dec.decode(Buffer.concat(out)).split("\n").slice(0, -1)).toEqual(allLines.slice(-n));
    }
  });

  it("follow: sees appended lines, completes a torn record, goes on across rotation, ends when the container stops", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-follow-"));
    const file = join(dir, "0.log");
    writeFileSync(file, `${T(1)} stdout F first\n${T(2)} stdout F sec`);
    let running = true;
    const got: string[] = [];
    const done = readLogs(nodeLogFiles, file, { follow: true }, async (b) => void got.push(dec.decode(b)), {
      running: async () => running,
      maxMs: 20_000,
      pollMs: 20,
      checkMs: 20,
    });
    const until = async (want: string) => {
      for (let i = 0; i < 500 && !got.join("").includes(want); i++) await new Promise((r) => setTimeout(r, 10));
      expect(got.join("")).toContain(want);
    };
    await until("first\n");
    appendFileSync(file, `ond\n`);
    await until("second\n");
    appendFileSync(file, `${T(3)} stdout F before rotation\n`);
    renameSync(file, `${file}.20261202-100000`);
    writeFileSync(file, `${T(4)} stdout F after rotation\n`);
    await until("after rotation\n");
    appendFileSync(file, `${T(5)} stdout F last words\n`);
    running = false;
    await done;
    expect(got.join("")).toBe("first\nsecond\nbefore rotation\nafter rotation\nlast words\n");
  });

  it("follow ends at its maximum duration and when the caller goes away", async () => {
    const { files } = memFile(LOG);
    const t0 = Date.now();
    await readLogs(files, "/x.log", { follow: true, tailLines: 0 }, async () => undefined, {
      running: async () => true,
      maxMs: 100,
      pollMs: 10,
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
    const ac = new AbortController();
    const p = readLogs(files, "/x.log", { follow: true }, async () => undefined, {
      running: async () => true,
      maxMs: 60_000,
      signal: ac.signal,
    });
    ac.abort();
    await p;
  });
});
