// One podsync process per state directory (Node entry). Two processes on one directory lose data: the second
// compacts the used-jti log (a rename over the file) while the first keeps appending to the unlinked inode, so
// every token the first spends from then on can be replayed after its next restart.
//
// The lock is `<stateDir>/podsync.lock`, holding {"pid", "start"} (the holder's pid and its start time, field
// 22 of /proc/<pid>/stat, so a pid reused by another process is not taken for the holder). It is taken with
// link(2) of a fully written temp file, which fails if the lock exists: never a half-written lock. It is held
// for the process's life and removed by close. What survives kill -9 (or a power cut) is the file: the next
// start finds its holder gone (no such pid, or a pid started at another time) and takes the lock over, under a
// `podsync.lock.takeover` directory (mkdir is atomic), so two starts racing over one stale lock cannot both win.
// No native module: flock(2) is not in Node's standard library.
// A holder that is shutting down (SIGTERM) says so in the file ({"stopping": <deadline ms>}); a start that finds
// it waits for the lock until that deadline (and a little more) instead of refusing, so a supervisor's restart
// right after the stop takes the directory over as soon as the old process lets it go.
import * as nodeFs from "node:fs/promises";
import { join } from "node:path";
import { StateUnavailableError } from "../pleg/state-unavailable.js";

export const LOCK_FILE = "podsync.lock";
/** A takeover directory older than this was left by a start that died mid-takeover. */
const TAKEOVER_STALE_MS = 10_000;

/** Another live process holds the state directory. */
export class StateDirInUseError extends Error {
  constructor(
    readonly dir: string,
    readonly pid: number | undefined,
    why?: string,
  ) {
    super(
      why ??
        `the state directory ${dir} is in use by another podsync process (pid ${pid}); one process per state directory (stop that one, or set PODSYNC_STATE_DIR to another directory). Nothing was loaded.`,
    );
  }
}

interface Holder {
  pid: number;
  /** Start time in clock ticks since boot (Linux), or undefined where /proc is not there. */
  start?: number | undefined;
  /** The holder is shutting down and will have let the lock go by then (ms since the epoch). */
  stopping?: number | undefined;
}

/** How long past a stopping holder's deadline a start still waits for it. */
const STOPPING_SLACK_MS = 5_000;
/** How often a start waiting for a stopping holder looks again. */
const STOPPING_POLL_MS = 50;

export interface StateDirLockOptions {
  pid?: number;
  /** The start time of a process (tests stub it). */
  startOf?: (pid: number) => Promise<number | undefined>;
  /** Whether a pid names a live process (tests stub it). */
  alive?: (pid: number) => boolean;
}

/** A process's start time from /proc/<pid>/stat (after the command, which may hold spaces or parentheses). */
async function procStart(pid: number): Promise<number | undefined> {
  try {
    const stat = await nodeFs.readFile(`/proc/${pid}/stat`, "utf8");
    const start = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
    return Number.isSafeInteger(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process with this pid exists (the lock's default liveness check). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, owned by someone else.
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

export class StateDirLock {
  readonly file: string;
  private readonly pid: number;
  private readonly startOf: (pid: number) => Promise<number | undefined>;
  private readonly alive: (pid: number) => boolean;
  private acquiring: Promise<void> | undefined;
  private mine: string | undefined;

  constructor(
    readonly dir: string,
    o: StateDirLockOptions = {},
  ) {
    this.file = join(dir, LOCK_FILE);
    this.pid = o.pid ?? process.pid;
    this.startOf = o.startOf ?? procStart;
    this.alive = o.alive ?? pidAlive;
  }

  /** Take the lock (once; a call after an I/O failure tries again). Throws StateDirInUseError when a live
   * process holds it, StateUnavailableError when the directory cannot be used. */
  acquire(): Promise<void> {
    this.acquiring ??= this.take().catch((e) => {
      this.acquiring = undefined;
      throw e instanceof StateDirInUseError ? e : new StateUnavailableError("its lock", e);
    });
    return this.acquiring;
  }

  /** Say in the lock that this process is shutting down and lets the lock go by `deadline` (ms): a start meanwhile
   * waits for it rather than refusing. The file is replaced in one step (rename), still this process's. */
  async markStopping(deadline: number): Promise<void> {
    const mine = this.mine;
    if (mine === undefined) return;
    const holder = parseHolder(mine);
    if (!holder) return;
    const text = `${JSON.stringify({ ...holder, stopping: deadline })}\n`;
    const tmp = join(this.dir, `.${LOCK_FILE}.${this.pid}.stopping.tmp`);
    try {
      await nodeFs.writeFile(tmp, text, { mode: 0o600 });
      if ((await nodeFs.readFile(this.file, "utf8").catch(() => "")) !== mine) return;
      await nodeFs.rename(tmp, this.file);
      this.mine = text;
    } catch {
      // Not said: a start meanwhile refuses as for any live holder.
    } finally {
      await nodeFs.unlink(tmp).catch(() => undefined);
    }
  }

  /** Give the lock up (only if the file is still this process's). */
  async release(): Promise<void> {
    const mine = this.mine;
    this.mine = undefined;
    this.acquiring = undefined;
    if (mine === undefined) return;
    if ((await nodeFs.readFile(this.file, "utf8").catch(() => "")) === mine)
      await nodeFs.unlink(this.file).catch(() => undefined);
  }

  private async take(): Promise<void> {
    await nodeFs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const me: Holder = { pid: this.pid, start: await this.startOf(this.pid) };
    const text = `${JSON.stringify(me)}\n`;
    const tmp = join(this.dir, `.${LOCK_FILE}.${this.pid}.tmp`);
    await nodeFs.writeFile(tmp, text, { mode: 0o600 });
    try {
      for (;;) {
        try {
          await nodeFs.link(tmp, this.file);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
          // A holder shutting down: wait for it to let go, then take the lock as if free.
          const wait = await this.takeOver(tmp);
          if (wait) {
            await new Promise((r) => setTimeout(r, STOPPING_POLL_MS));
            continue;
          }
        }
        break;
      }
      this.mine = text;
    } finally {
      await nodeFs.unlink(tmp).catch(() => undefined);
    }
  }

  /** The lock exists: refuse if its holder lives (true: it is stopping, wait for it), else replace it, one
   * starter at a time. */
  private async takeOver(tmp: string, retry = true): Promise<boolean> {
    const guard = `${this.file}.takeover`;
    try {
      await nodeFs.mkdir(guard, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const st = await nodeFs.stat(guard).catch(() => undefined);
      if (retry && st && Date.now() - st.mtimeMs > TAKEOVER_STALE_MS) {
        await nodeFs.rmdir(guard).catch(() => undefined);
        return this.takeOver(tmp, false);
      }
      // Another start is taking it over: if the holder is one that is stopping, wait with it.
      const holder = parseHolder(await nodeFs.readFile(this.file, "utf8").catch(() => ""));
      if (holder?.stopping !== undefined && Date.now() < holder.stopping + STOPPING_SLACK_MS) return true;
      throw new StateDirInUseError(
        this.dir,
        undefined,
        `the state directory ${this.dir} is being taken over by another starting podsync process (${guard} exists); one process per state directory. Nothing was loaded.`,
      );
    }
    try {
      const text = await nodeFs.readFile(this.file, "utf8").catch((e: NodeJS.ErrnoException) => {
        if (e.code === "ENOENT") return undefined; // let go meanwhile: link again
        throw e;
      });
      if (text === undefined) return true;
      const holder = parseHolder(text);
      if (holder && (await this.holds(holder))) {
        if (holder.stopping !== undefined && Date.now() < holder.stopping + STOPPING_SLACK_MS) return true;
        throw new StateDirInUseError(this.dir, holder.pid);
      }
      // Stale (its process is gone, or the file is not a lock podsync wrote): replaced in one step.
      await nodeFs.rename(tmp, this.file);
      return false;
    } finally {
      await nodeFs.rmdir(guard).catch(() => undefined);
    }
  }

  private async holds(h: Holder): Promise<boolean> {
    if (!this.alive(h.pid)) return false;
    if (h.start === undefined) return true;
    const start = await this.startOf(h.pid);
    return start === undefined || start === h.start;
  }
}

function parseHolder(text: string): Holder | undefined {
  try {
    const j = JSON.parse(text) as Holder;
    return Number.isSafeInteger(j.pid) && j.pid > 0
      ? {
          pid: j.pid,
          start: typeof j.start === "number" ? j.start : undefined,
          ...(typeof j.stopping === "number" ? { stopping: j.stopping } : {}),
        }
      : undefined;
  } catch {
    return undefined;
  }
}
