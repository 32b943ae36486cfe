// A file written in one step for the node's state stores: a temp file beside it (`.<name>.tmp`), written and
// fsync'd, then renamed over it; a failure removes the temp file. A crash leaves the old file or the new one,
// never a torn one (the stores delete `.tmp` leftovers when they load). Making the rename durable (fsync of the
// directory) is the caller's: a batch of writes shares one.
import * as nodeFs from "node:fs/promises";
import { basename, dirname, join } from "node:path";

export type AtomicFs = Pick<typeof nodeFs, "open" | "rename" | "unlink">;

export async function writeFileAtomic(path: string, data: string, fs: AtomicFs = nodeFs): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.tmp`);
  try {
    const fh = await fs.open(tmp, "w", 0o600);
    try {
      await fh.writeFile(data, "utf8");
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, path);
  } catch (e) {
    await fs.unlink(tmp).catch(() => undefined);
    throw e;
  }
}
