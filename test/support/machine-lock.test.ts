// The test files' machine-wide lock (test/support/machine-lock.ts): one holder at a time, a dead holder's file taken
// over, and a takeover that found a dead holder never removes the lock another waiter has taken since.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { lockPath as fileOf, machineLock, takeOver } from "./machine-lock.js";

const DEAD_PID = 99_999_999; // above any pid_max
const name = () => `unit-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

describe("machine lock", () => {
  it("one holder at a time: a second waiter gets it once the first releases it", async () => {
    const n = name();
    const release = await machineLock(n);
    await expect(machineLock(n, 300)).rejects.toThrow(/held for more than 300 ms/);
    release();
    expect(existsSync(fileOf(n))).toBe(false);
    (await machineLock(n, 1000))();
  });

  it("a dead holder's lock is taken over", async () => {
    const n = name();
    writeFileSync(fileOf(n), `${DEAD_PID} old-token`);
    const release = await machineLock(n, 2000);
    expect(readFileSync(fileOf(n), "utf8")).toMatch(new RegExp(`^${process.pid} `));
    release();
  });

  it("a late takeover of a dead holder leaves the lock a waiter took since in place", async () => {
    const n = name();
    const stale = `${DEAD_PID} old-token`;
    // Another waiter removed the dead holder's file and took the lock; this one read the dead holder before that.
    const release = await machineLock(n);
    const mine = readFileSync(fileOf(n), "utf8");
    takeOver(fileOf(n), stale);
    expect(readFileSync(fileOf(n), "utf8")).toBe(mine);
    release();
    // And the takeover of a file that still holds the dead holder removes it.
    writeFileSync(fileOf(n), stale);
    takeOver(fileOf(n), stale);
    expect(existsSync(fileOf(n))).toBe(false);
  });
});
