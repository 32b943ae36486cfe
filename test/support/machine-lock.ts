// A lock shared by the test files that use something this machine has one of (the Services data plane: the nftables
// table `inet podsync` and the cluster DNS on the bridge's gateway). They run in the main pool beside the other files,
// and one at a time among themselves: each holds the lock from its beforeAll to its afterAll.
//
// The lock is a file created exclusively, holding its owner's pid and a token: a file whose owner is gone (a worker
// killed by a timeout) is taken over. (vitest's default pool forks a process per worker: a pid is one holder.)
import { randomUUID } from "node:crypto";
import { openSync, closeSync, linkSync, readFileSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pidAlive } from "../../src/state/state-dir-lock.js";

/** How long a file waits for the lock before its beforeAll fails: the longest holder (the README's quickstart)
 * takes about a minute. */
export const MACHINE_LOCK_WAIT_MS = 300_000;

/** The lock file of the named lock. */
export const lockPath = (name: string) => join(tmpdir(), `podsync-test-${name}.lock`);

function tryTake(file: string, token: string): boolean {
  try {
    const fd = openSync(file, "wx");
    writeSync(fd, `${process.pid} ${token}`);
    closeSync(fd);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  let held: string;
  try {
    held = readFileSync(file, "utf8");
  } catch {
    return false; // released meanwhile: the next try takes it
  }
  // A file being written (empty for a moment) is left to its writer.
  const owner = Number(held.split(" ")[0]);
  if (owner > 0 && !pidAlive(owner)) takeOver(file, held);
  return false;
}

/** Removes the lock file if it still holds `stale` (a dead owner's). Two waiters can find the same dead owner; the
 * first removes its file and takes the lock, so the second must not remove what is there by then. The file is moved
 * aside atomically and checked there; a live holder's file moved by mistake is linked back. */
export function takeOver(file: string, stale: string): void {
  const aside = `${file}.${process.pid}.${randomUUID()}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // gone already
  }
  try {
    if (readFileSync(aside, "utf8") !== stale) linkSync(aside, file);
  } catch {
    // a newer holder made the file meanwhile: it holds the lock
  } finally {
    unlinkSync(aside);
  }
}

/** Waits until this process holds the named lock; resolves to its release. */
export async function machineLock(name: string, waitMs = MACHINE_LOCK_WAIT_MS): Promise<() => void> {
  const file = lockPath(name);
  const token = randomUUID();
  const end = Date.now() + waitMs;
  while (!tryTake(file, token)) {
    if (Date.now() > end) throw new Error(`the machine lock ${file} was held for more than ${waitMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return () => {
    try {
      if (readFileSync(file, "utf8") === `${process.pid} ${token}`) unlinkSync(file);
    } catch {
      // already gone
    }
  };
}
