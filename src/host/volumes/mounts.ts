// This process's view of the mount table (/proc/self/mountinfo), for removals and subPath binds that must
// not cross or stack mounts blindly.
import { existsSync, realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
const unescapeMount = (p: string) => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** Every mount of this process's namespace, in mountinfo's order: its point (canonical) and filesystem type. */
export async function mountTable(): Promise<{ point: string; fstype: string }[]> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const f = line.split(" ");
      const sep = f.indexOf("-");
      return { point: unescapeMount(f[4] ?? ""), fstype: f[sep + 1] ?? "" };
    });
}

/** Mount points at or under `dir` (canonical), deepest first; a stacked mount is listed once per layer. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const out = (await mountTable()).map((m) => m.point).filter((p) => p === dir || p.startsWith(`${dir}/`));
  return out.sort((a, b) => b.split("/").length - a.split("/").length);
}

/** PODSYNC_ROOT_DIR with its symlinks resolved when it exists (read once at start-up): mountinfo and the runtime
 * name canonical paths, and the paths podsync compares with them are made under the root dir. */
export const canonicalRootDir = (dir: string): string => (existsSync(dir) ? realpathSync(dir) : dir);
