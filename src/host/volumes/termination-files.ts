// Termination-message files on this node's own filesystem (the Node entry), as kubelet makes them:
// an empty file with a random 8-hex-digit name under the pod's container dir, chmod 0666 whatever the umask,
// so a container running as any user can write its message.
import { chmod, mkdir, open, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import type { TerminationMessageFiles } from "../../kuberuntime/termination-message.js";

export const nodeTerminationFiles: TerminationMessageFiles = {
  async create(dir) {
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const path = `${dir}/${randomBytes(4).toString("hex")}`;
    await writeFile(path, "", { flag: "wx" });
    await chmod(path, 0o666);
    return path;
  },
  async readTail(path, maxBytes) {
    let fh;
    try {
      fh = await open(path, "r");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
    try {
      const size = (await fh.stat()).size;
      const len = Math.min(size, maxBytes);
      const buf = new Uint8Array(len);
      const { bytesRead } = await fh.read(buf, 0, len, size - len);
      return buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  },
};
