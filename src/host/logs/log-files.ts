// Package host/logs/ — container log files: read on this node or through cri-proxy, and rotated (log manager).
// Implements logs/'s LogFiles port; imports cri/ and logs/ below it; never agent, HTTP or entry points.
//
// Container log files on this node's own filesystem (the Node entry). The handle keeps its file open, so
// a rotation (rename + new file at the path) lets the reader drain the old file before it moves on.
import { open, stat } from "node:fs/promises";
import type { LogFiles, LogHandle } from "../../logs/log-files.js";

const idOf = (s: { dev: number; ino: number }) => `${s.dev}:${s.ino}`;

export const nodeLogFiles: LogFiles = {
  async open(path) {
    let fh;
    try {
      fh = await open(path, "r");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
    const st = await fh.stat();
    const handle: LogHandle = {
      id: idOf(st),
      size: async () => (await fh.stat()).size,
      async read(offset, length) {
        const buf = new Uint8Array(length);
        const { bytesRead } = await fh.read(buf, 0, length, offset);
        return buf.subarray(0, bytesRead);
      },
      async pathId() {
        try {
          return idOf(await stat(path));
        } catch {
          return undefined;
        }
      },
      close: () => fh.close(),
    };
    return handle;
  },
};
