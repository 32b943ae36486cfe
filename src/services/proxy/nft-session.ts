// One long-lived `nft -j -i` process that the proxier's probe and transactions go through, so a change costs a line
// written to a pipe instead of a process start. Measured on the shared 2-core machine (load ~17): starting any
// process from node took 45–80 ms (`/bin/true`), `nft -f -` with a 4-command transaction 140–230 ms, of which
// nft's own work (cache, parse, one netlink batch) is a few ms. kube-proxy execs `nft -f -` per transaction
// (knftables' realNFTables.Run) and bounds how often with minSyncPeriod (1 s, BoundedFrequencyRunner); podsync has
// no minimum period, so the process start is what a change would wait for.
//
// nft's interactive mode (src/cli.c `cli_complete`) runs each input line with `nft_run_cmd_from_buffer`: one line
// is one batch, one atomic transaction, exactly as `nft -f -` takes a file. A transaction is its commands joined
// with "; " on one line, or, when long, `include "file"` (parsed into the same batch). -j makes listings JSON;
// text commands still parse (libnftables falls back to its text parser). nft prints nothing for a good transaction
// and its error records on stderr for a bad one, so each line is followed by a marker, `list table inet
// podsync--marker-N`, a table that never exists: its error on stderr says the line before it is done, and
// whatever stderr said since the previous marker is that line's error. A listing's JSON is one line on stdout.
// Each line goes into the CLI's in-memory history, so the process is replaced after MAX_BYTES of input; HOME is
// set to a directory that does not exist, so no history file is read or written.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MARKER = "podsync--marker-";
const MAX_BYTES = 8 << 20;
/** Longer transactions go through a file: the CLI reads its input a byte per read(2), which made a 1,761-command
 * line (170 KB) take ~2 s; from a file it is parsed as `nft -f` parses it. */
const INLINE_MAX = 16 << 10;
const TIMEOUT_MS = 60_000;

export interface SessionResult {
  /** nft's error text; empty when the line took. */
  error: string;
  /** A listing's JSON (one line); empty for a transaction. */
  output: string;
}

interface Pending {
  n: number;
  listing: boolean;
  settle: (r: SessionResult | Error) => void;
}

export interface NftSession {
  /** Runs one transaction (commands without newlines), or with `listing` one command whose JSON is wanted. */
  run(commands: readonly string[], listing?: boolean): Promise<SessionResult>;
  /** Starts the process now (it is started at the first run otherwise). */
  warm(): void;
  /** nft processes started and lines run so far (what a test counts). */
  stats(): { processes: number; lines: number };
  close(): void;
}

export function nftSession(bin = "nft"): NftSession {
  let child: ChildProcessWithoutNullStreams | undefined;
  let written = 0;
  let seq = 0;
  let stderr = "";
  let stdout = "";
  let dir: string | undefined;
  let processes = 0;
  const pending: Pending[] = [];

  /** The process and its pipes keep the node's event loop alive only while something is under way. */
  const hold = (on: boolean) => {
    if (!child) return;
    for (const h of [child, child.stdin, child.stdout, child.stderr])
      if ("ref" in h && typeof h.ref === "function" && "unref" in h && typeof h.unref === "function")
        on ? h.ref() : h.unref();
  };
  const settle = () => {
    for (let head = pending[0]; head; head = pending[0]) {
      const done = takeMarker(stderr, head.n);
      if (!done) return;
      let output = "";
      if (head.listing && !done.error) {
        // stdout's pipe is read apart from stderr's: wait for the JSON. A CLI built with readline may write its
        // prompt before it, so the JSON starts where `{"nftables"` does.
        const at = stdout.indexOf('{"nftables"');
        const eol = at < 0 ? -1 : stdout.indexOf("\n", at);
        if (eol < 0) return;
        output = stdout.slice(at, eol);
        stdout = stdout.slice(eol + 1);
      }
      stderr = done.rest;
      pending.shift();
      head.settle({ error: done.error, output });
    }
    if (!pending.some((p) => p.listing)) stdout = ""; // nothing waits for it (a prompt, say): kept from growing
    hold(false);
  };
  const start = (): ChildProcessWithoutNullStreams => {
    const c = spawn(bin, ["-j", "-i"], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, HOME: "/nonexistent" },
    });
    c.stdout.setEncoding("utf8");
    c.stderr.setEncoding("utf8");
    c.stdout.on("data", (d: string) => {
      stdout += d;
      settle();
    });
    c.stderr.on("data", (d: string) => {
      stderr += d;
      settle();
    });
    c.stdin.on("error", () => undefined);
    const gone = (e: Error) => {
      if (child !== c && child !== undefined) return;
      child = undefined;
      stderr = stdout = "";
      for (const p of pending.splice(0)) p.settle(e);
    };
    c.on("error", (e) => gone(e));
    c.on("exit", (code, signal) => gone(new Error(`${bin} -i exited (${signal ?? code})`)));
    written = 0;
    processes++;
    return c;
  };

  return {
    run(commands, listing = false) {
      if (child && written > MAX_BYTES && pending.length === 0) {
        child.stdin.end();
        child = undefined;
      }
      child ??= start();
      const c = child;
      const n = ++seq;
      const file = longScript(commands, n, () => (dir ??= mkdtempSync(join(tmpdir(), "podsync-nft-"))));
      const text = file ? `include "${file}"` : commands.join("; ");
      const line = `${text}\nlist table inet ${MARKER}${n}\n`;
      written += line.length;
      return new Promise<SessionResult>((resolve, reject) => {
        const timer = setTimeout(() => {
          c.kill("SIGKILL"); // its exit settles every pending line
        }, TIMEOUT_MS);
        timer.unref();
        pending.push({
          n,
          listing,
          settle: (r) => {
            clearTimeout(timer);
            if (file) rmQuietly(file);
            r instanceof Error ? reject(r) : resolve(r);
          },
        });
        hold(true);
        c.stdin.write(line);
      });
    },
    stats: () => ({ processes, lines: seq }),
    warm() {
      if (child) return;
      child = start();
      hold(false);
    },
    close() {
      child?.stdin.end();
      child = undefined;
      if (dir) rmSync(dir, { recursive: true, force: true });
      dir = undefined;
    },
  };
}

/** Where line n's marker is in stderr: the line's error text (what stderr said before the marker's own "Error:"
 * line) and what follows the marker's echo; undefined until it has come. */
function takeMarker(stderr: string, n: number): { error: string; rest: string } | undefined {
  const s = stderr.replace(/^[ \t^]*\^[ \t^]*\n/, ""); // a previous marker's caret line, arrived after its echo
  const echoLine = `list table inet ${MARKER}${n}\n`;
  const echo = s.indexOf(echoLine);
  if (echo < 0) return undefined;
  const error = s
    .slice(0, echo)
    .replace(/[^\n]*\n$/, "")
    .trim();
  return { error, rest: s.slice(echo + echoLine.length) };
}

/** A transaction too long for one line, written to a file of its own (0600, in a 0700 directory). */
function longScript(commands: readonly string[], n: number, dir: () => string): string | undefined {
  if (commands.reduce((len, c) => len + c.length + 2, 0) <= INLINE_MAX) return undefined;
  const file = join(dir(), `tx-${n}.nft`);
  writeFileSync(file, `${commands.join("\n")}\n`, { mode: 0o600 });
  return file;
}

function rmQuietly(file: string) {
  try {
    unlinkSync(file);
  } catch {
    // gone with its directory
  }
}
