// Node has no openat(2)/unlinkat(2). A path through /proc/self/fd/<dirfd>/<name> is the same lookup relative to
// a directory already opened: nothing above it is walked again (so no component can be swapped for a symlink
// meanwhile), and the path stays short however deep the directory is.
import { constants } from "node:fs";

/** Linux's O_PATH (the same on x86-64 and arm64); Node does not export it. */
export const O_PATH = 0o10000000;
/** Open the object itself, never a symlink's target. */
export const NOFOLLOW = O_PATH | constants.O_NOFOLLOW;

/** `name` inside the directory open as `fd`; a Buffer name (any bytes a directory entry may hold) gives a Buffer. */
export function at(fd: number, name: string): string;
export function at(fd: number, name: Buffer): Buffer;
export function at(fd: number, name: string | Buffer): string | Buffer {
  return typeof name === "string"
    ? `/proc/self/fd/${fd}/${name}`
    : Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), name]);
}
