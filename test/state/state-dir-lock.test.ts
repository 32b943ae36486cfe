// One podsync process per state directory (src/state/state-dir-lock.ts): a second `npm start` on the same
// directory refuses to start before it reads anything there, naming the directory and the holder's pid; a lock
// left by kill -9 is taken over; and the used-jti log is never appended to once another process replaced it.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileReplayStore } from "../../src/state/used-jtis.js";
import { LOCK_FILE, StateDirInUseError, StateDirLock } from "../../src/state/state-dir-lock.js";
import { until } from "../support/wait.js";

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, ["dist/node.js"], {
    env: { ...process.env, PODSYNC_CRI_ENDPOINT: "unix:///nonexistent/podsync.sock", PODSYNC_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string>((r) => child.once("exit", (c, sig) => r(c ?? sig ?? -1)));
  return { child, exited, stderr: () => err };
}
const listening = (p: ReturnType<typeof start>) =>
  until("the server to listen", async () => /listening on http/.test(p.stderr()));

describe("one process per state directory", () => {
  it("a second npm start on the same directory refuses before loading anything, naming the directory and the holder's pid; after kill -9 the next start takes the lock over", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-lock-"));
    const state = join(dir, "state");
    const first = start({ PODSYNC_DEV_DIR: dir, PODSYNC_STATE_DIR: state });
    let third: ReturnType<typeof start> | undefined;
    try {
      await listening(first);
      const log = join(state, "jti", "used.log");
      const before = statSync(log);
      const second = start({ PODSYNC_DEV_DIR: dir, PODSYNC_STATE_DIR: state });
      expect(await second.exited).toBe(1);
      expect(second.stderr()).toContain(
        `podsync: the state directory ${state} is in use by another podsync process (pid ${first.child.pid})`,
      );
      // It did not load (and so did not compact: rename a new log over) the used-jti log.
      const after = statSync(log);
      expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
      expect(JSON.parse(readFileSync(join(state, LOCK_FILE), "utf8"))).toMatchObject({ pid: first.child.pid });

      first.child.kill("SIGKILL");
      await first.exited;
      // The lock file survives kill -9; its holder is gone, so the next start takes it over.
      third = start({ PODSYNC_DEV_DIR: dir, PODSYNC_STATE_DIR: state });
      await listening(third);
      expect(JSON.parse(readFileSync(join(state, LOCK_FILE), "utf8"))).toMatchObject({ pid: third.child.pid });
      third.child.kill("SIGTERM");
      expect(await third.exited).toBe(0);
      // A clean stop gives the lock up.
      expect(() => statSync(join(state, LOCK_FILE))).toThrow(/ENOENT/);
    } finally {
      first.child.kill("SIGKILL");
      third?.child.kill("SIGKILL");
    }
  });

  it("a lock naming a live process of another start time (a reused pid) is stale; one of a live holder refuses", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-lock-"));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: 4242, start: 1 }));
    const reused = new StateDirLock(dir, {
      pid: 7,
      alive: () => true,
      startOf: async (pid) => (pid === 4242 ? 99 : 5),
    });
    await reused.acquire();
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8"))).toEqual({ pid: 7, start: 5 });
    const other = new StateDirLock(dir, { pid: 8, alive: () => true, startOf: async (pid) => (pid === 7 ? 5 : 6) });
    const e = await other.acquire().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(StateDirInUseError);
    expect((e as StateDirInUseError).pid).toBe(7);
    await reused.release();
    await other.acquire();
    await other.release();
  });

  it("a holder that says it is stopping (SIGTERM) is waited for: the next start takes the lock once it is let go; past its deadline it refuses again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-lock-"));
    const holder = new StateDirLock(dir, { pid: 7, alive: () => true, startOf: async () => 5 });
    await holder.acquire();
    await holder.markStopping(Date.now() + 10_000);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8"))).toMatchObject({
      pid: 7,
      stopping: expect.any(Number),
    });
    const next = new StateDirLock(dir, { pid: 8, alive: () => true, startOf: async () => 5 });
    let taken = false;
    const waiting = next.acquire().then(() => (taken = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(taken).toBe(false);
    await holder.release();
    await waiting;
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8"))).toEqual({ pid: 8, start: 5 });
    // A holder whose stop ran past its deadline (and the slack) is a live holder again: refused.
    await next.markStopping(Date.now() - 10_000);
    const late = new StateDirLock(dir, { pid: 9, alive: () => true, startOf: async () => 5 });
    expect(await late.acquire().catch((x: unknown) => x)).toBeInstanceOf(StateDirInUseError);
    await next.release();
  });
});

describe("the used-jti log", () => {
  it("is never appended to once another process renamed a new log over it: it is loaded again, keeping every claim", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "podsync-jti-")), "jti");
    const a = new FileReplayStore(dir);
    expect(await a.claim("iss\u0000one", Date.now() + 60_000)).toBe(true);
    // A second process opens the same directory: its load compacts the log (a new file renamed over it).
    const b = new FileReplayStore(dir);
    expect(await b.claim("iss\u0000two", Date.now() + 60_000)).toBe(true);
    await b.close();
    expect(await a.claim("iss\u0000three", Date.now() + 60_000)).toBe(true);
    await a.close();
    const c = new FileReplayStore(dir);
    for (const k of ["one", "two", "three"]) expect(await c.claim(`iss\u0000${k}`, Date.now() + 60_000)).toBe(false);
    await c.close();
  });
});
