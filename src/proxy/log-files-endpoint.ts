// cri-proxy's log-reading endpoint: fetch-only callers (Workers) read container log files through it with
// the same random-access shape the engine's log reader uses on Node (stat + bounded range reads), so tail,
// since and follow work the same. Only regular files under the node's pod log directory are served,
// resolved with realpath so a symlink cannot point the proxy elsewhere; a read is at most MAX_READ bytes.
//   GET /podsync/v1/logs/stat?path=P          → 200 {"id": "dev:ino", "size": n} | 404
//   GET /podsync/v1/logs/read?path=P&id=I&offset=O&length=L → 200 bytes | 404 | 409 (another file is at P now)
import { open, realpath, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";

export const LOGS_PREFIX = "/podsync/v1/logs/";
export const MAX_READ = 256 * 1024;

const idOf = (s: { dev: number; ino: number }) => `${s.dev}:${s.ino}`;

/** The real path of `path` if it is a regular file inside `dir` (itself resolved), else undefined. */
async function resolveInside(path: string, dir: string): Promise<string | undefined> {
  if (!path.startsWith("/")) return undefined;
  try {
    const [real, root] = await Promise.all([realpath(path), realpath(dir)]);
    if (!real.startsWith(root.endsWith("/") ? root : `${root}/`)) return undefined;
    return (await stat(real)).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

export async function serveLogFiles(req: IncomingMessage, res: ServerResponse, podLogsDir: string): Promise<void> {
  const url = new URL(req.url ?? "/", "http://proxy");
  if (req.method !== "GET") return json(res, 405, { error: "GET only" });
  const path = await resolveInside(url.searchParams.get("path") ?? "", podLogsDir);
  if (!path) return json(res, 404, { error: "no such log file under the pod log directory" });
  if (url.pathname === `${LOGS_PREFIX}stat`) {
    const s = await stat(path);
    return json(res, 200, { id: idOf(s), size: s.size });
  }
  if (url.pathname !== `${LOGS_PREFIX}read`) return json(res, 404, { error: "unknown log endpoint" });
  const offset = Number(url.searchParams.get("offset"));
  const length = Number(url.searchParams.get("length"));
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0 || length > MAX_READ)
    return json(res, 400, { error: `offset must be a non-negative integer and length at most ${MAX_READ}` });
  const fh = await open(path, "r");
  try {
    // The caller reads the file it opened: after a rotation another file sits at the path.
    if (idOf(await fh.stat()) !== url.searchParams.get("id"))
      return json(res, 409, { error: "the file at this path has changed (rotated)" });
    const buf = Buffer.alloc(length);
    const { bytesRead } = await fh.read(buf, 0, length, offset);
    res
      .writeHead(200, { "content-type": "application/octet-stream", "content-length": String(bytesRead) })
      .end(buf.subarray(0, bytesRead));
  } finally {
    await fh.close();
  }
}
