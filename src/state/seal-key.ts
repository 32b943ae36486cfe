// The node's key for sealing Secrets in the desired-state store (secret-seal.ts): 32 random bytes in
// <stateDir>/secrets.key, mode 0600 in a 0700 directory, made on first use. Made with O_EXCL, so two
// processes starting together end up with the same key; never logged or echoed.
import { randomBytes } from "node:crypto";
import { mkdir, open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { importSealKey } from "./secret-seal.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";

export const SEAL_KEY_FILE = "secrets.key";

export async function loadSealKey(stateDir: string): Promise<CryptoKey> {
  const file = join(stateDir, SEAL_KEY_FILE);
  try {
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    try {
      // Durable before any Secret is sealed with it: the key file and its directory entry are fsync'd.
      const fh = await open(file, "wx", 0o600);
      try {
        await fh.writeFile(randomBytes(32));
        await fh.sync();
      } finally {
        await fh.close();
      }
      const d = await open(stateDir, "r");
      await d.sync().finally(() => d.close());
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const raw = await readFile(file);
    if (raw.byteLength !== 32) throw new Error(`${file} is not a 32-byte key`);
    return await importSealKey(new Uint8Array(raw));
  } catch (e) {
    throw new StateUnavailableError("the key that seals stored Secrets", e);
  }
}
