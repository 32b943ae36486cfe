// The node's key for sealing Secrets in the desired-state store (secret-seal.ts): 32 random bytes in
// <stateDir>/secrets.key, mode 0600 in a 0700 directory, made on first use. Made with O_EXCL, so two
// processes starting together end up with the same key; never logged or echoed.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { importSealKey } from "./secret-seal.js";
import { StateUnavailableError } from "./state-unavailable.js";

export const SEAL_KEY_FILE = "secrets.key";

export async function loadSealKey(stateDir: string): Promise<CryptoKey> {
  const file = join(stateDir, SEAL_KEY_FILE);
  try {
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    try {
      await writeFile(file, randomBytes(32), { flag: "wx", mode: 0o600 });
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
