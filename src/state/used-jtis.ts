// Used token ids on the node's disk (Node entry): a captured token never acts twice, not even after podsync
// restarts. A ReplayStore over an append-only log `<stateDir>/jti/used.log`, one line per claim:
//   <base64url SHA-256 of iss NUL jti> <expiry, ms since epoch>\n
// so the file holds no raw token ids. A claim is on disk (an O_DSYNC write) before it is granted, so before the
// request acts; claims arriving together share one durable write. Loaded at open, which also rewrites the file
// with only the live entries (dropping a line torn by a crash); rewritten again whenever dead lines outnumber live
// ones. Bounded like MemoryReplayStore: when full of live ids it refuses new tokens rather than forget one.
// Any I/O failure is a StateUnavailableError (503): a token is never granted without its record on disk.
import { createHash } from "node:crypto";
import { fstatSync } from "node:fs";
import { chmod, mkdir, open, readFile, rename, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { ReplayStore } from "../auth/replay.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";
import { appendDurably, DURABLE_APPEND, groupCommit } from "./group-commit.js";

const LINE = /^([A-Za-z0-9_-]{43}) (\d{1,16})$/;
/** Rewrite the log once it holds this many lines more than twice the live entries. */
const COMPACT_SLACK = 1024;

export interface UsedJtiOptions {
  now?: () => number;
  maxEntries?: number;
  /** The state directory's lock (state-dir-lock.ts), taken before the log is loaded. */
  lock?: { acquire(): Promise<void> };
}

export class FileReplayStore implements ReplayStore {
  private readonly seen = new Map<string, number>();
  private readonly now: () => number;
  private readonly maxEntries: number;
  private readonly file: string;
  private readonly lock: UsedJtiOptions["lock"];
  private fh: FileHandle | undefined;
  private opening: Promise<void> | undefined;
  private lines = 0;
  private nextSweep = 0;
  /** Claims arriving together share one durable (O_DSYNC) write; the log is compacted between batches when due. */
  private readonly log = groupCommit(
    async (chunk, n) => {
      try {
        // Never append to a file that is no longer the log (another process renamed a new one over it): the
        // claims would be lost at the next load. It is loaded again instead, which writes every id in memory
        // (this batch's too) into the file now at the path.
        if (!this.fh || !(await this.stillTheLog(this.fh))) await this.reopen();
        if (!this.fh) throw new Error("the used-jti log is not open");
        await appendDurably(this.fh, chunk, "latin1");
        this.lines += n;
      } catch (e) {
        // The handle may be bad (disk gone, file replaced): reopen, and so reload, before the next claim.
        await this.fh?.close().catch(() => undefined);
        this.fh = undefined;
        this.opening = undefined;
        throw e;
      }
    },
    async () => {
      // A failed rewrite leaves fh unset: the next claim reopens (and fails 503 if the disk is still bad).
      if (this.lines > 2 * this.seen.size + COMPACT_SLACK) await this.rewrite().catch(() => (this.opening = undefined));
    },
  );

  constructor(
    /** `<stateDir>/jti`: made with mode 0700, the log with 0600. */
    readonly dir: string,
    o: UsedJtiOptions = {},
  ) {
    this.now = o.now ?? Date.now;
    this.maxEntries = o.maxEntries ?? 1_000_000;
    this.file = join(dir, "used.log");
    this.lock = o.lock;
  }

  /** Load the log (at start-up; a claim retries it if it failed). Throws StateUnavailableError. */
  open(): Promise<void> {
    this.opening ??= this.load().catch((e) => {
      this.opening = undefined;
      throw new StateUnavailableError("used token ids", e);
    });
    return this.opening;
  }

  async claim(key: string, expiresAtMs: number): Promise<boolean> {
    await this.open();
    const id = createHash("sha256").update(key).digest("base64url");
    const t = this.now();
    const until = this.seen.get(id);
    if (until !== undefined && until > t) return false;
    if (t >= this.nextSweep || this.seen.size >= this.maxEntries) this.sweep(t);
    if (this.seen.size >= this.maxEntries) return false;
    // Recorded in memory first, so a concurrent claim of the same id is refused while this one is written.
    this.seen.set(id, expiresAtMs);
    try {
      await this.log.append(`${id} ${Math.ceil(expiresAtMs)}\n`);
    } catch (e) {
      if (this.seen.get(id) === expiresAtMs) this.seen.delete(id);
      throw new StateUnavailableError("used token ids", e);
    }
    return true;
  }

  get size(): number {
    return this.seen.size;
  }

  async close(): Promise<void> {
    await this.log.idle();
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
    this.opening = undefined;
  }

  private async load(): Promise<void> {
    await this.lock?.acquire();
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await chmod(this.dir, 0o700);
    let text = "";
    try {
      text = await readFile(this.file, "latin1");
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw e;
    }
    const t = this.now();
    for (const line of text.split("\n")) {
      const m = LINE.exec(line);
      if (m && Number(m[2]) > t) this.seen.set(m[1]!, Math.max(Number(m[2]), this.seen.get(m[1]!) ?? 0));
    }
    await this.rewrite();
  }

  private async reopen(): Promise<void> {
    const old = this.fh;
    this.fh = undefined;
    this.opening = undefined;
    await old?.close().catch(() => undefined);
    await this.open();
  }

  /** The open handle is still linked: one fstat. A log replaced at the path (another process's rewrite renames
   * its new file over this one) or deleted leaves this one with no link. (A log moved away by hand to another
   * name keeps its link and is not noticed: only a rewrite or a removal replaces the log in podsync's own use.) */
  private async stillTheLog(fh: FileHandle): Promise<boolean> {
    return fstatSync(fh.fd).nlink > 0; // a local fstat: microseconds, no thread-pool round trip
  }

  private sweep(t: number) {
    for (const [k, until] of this.seen) if (until <= t) this.seen.delete(k);
    this.nextSweep = t + 10_000;
  }

  /** Replace the log with the live entries: written beside it, fsync'd, renamed over it, directory fsync'd. */
  private async rewrite(): Promise<void> {
    this.sweep(this.now());
    const tmp = `${this.file}.tmp`;
    const out = await open(tmp, "w", 0o600);
    try {
      let chunk = "";
      for (const [k, until] of this.seen) {
        chunk += `${k} ${Math.ceil(until)}\n`;
        if (chunk.length > 1 << 20) await out.appendFile(chunk, "latin1"), (chunk = "");
      }
      await out.appendFile(chunk, "latin1");
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(tmp, this.file);
    const d = await open(this.dir, "r");
    await d.sync().finally(() => d.close());
    const old = this.fh;
    this.fh = undefined; // until reopened, nothing may be appended to the replaced file
    await old?.close().catch(() => undefined);
    this.fh = await open(this.file, DURABLE_APPEND, 0o600);
    this.lines = this.seen.size;
  }
}
