// The node's fleet identity under PODSYNC_STATE_DIR/fleet/ (mode 0600): its own ES256 key pair, made on first start,
// and its enrollment (the fleet it joined), so a restart needs no join token. Connection tokens are signed here.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from "jose";

export interface Enrollment {
  url: string;
  node: string;
  fleet: string;
  enrolledAt: string;
}

export class FleetIdentity {
  private constructor(
    readonly dir: string,
    private readonly privateJwk: JWK,
  ) {}

  /** The key pair in `<stateDir>/fleet/key.json`, made once. */
  static async load(stateDir: string): Promise<FleetIdentity> {
    const dir = join(stateDir, "fleet");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, "key.json");
    if (!existsSync(file)) {
      const { privateKey } = await generateKeyPair("ES256", { extractable: true });
      writePrivate(file, { ...(await exportJWK(privateKey)), alg: "ES256" });
    }
    chmodSync(file, 0o600);
    return new FleetIdentity(dir, JSON.parse(readFileSync(file, "utf8")) as JWK);
  }

  /** The public half, for enrollment. */
  get publicJwk(): JWK {
    const { kty, crv, x, y } = this.privateJwk;
    return { kty, crv, x, y } as JWK;
  }

  enrollment(): Enrollment | undefined {
    const file = join(this.dir, "enrollment.json");
    return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Enrollment) : undefined;
  }

  saveEnrollment(e: Enrollment): void {
    writePrivate(join(this.dir, "enrollment.json"), e);
  }

  /** A connection token: sub = the node, aud = the fleet, 60 s. `nowMs`: the node's clock (tests skew it). */
  async connectionToken(node: string, fleet: string, nowMs = Date.now()): Promise<string> {
    const iat = Math.floor(nowMs / 1000);
    return new SignJWT({})
      .setProtectedHeader({ alg: "ES256", typ: "JWT" })
      .setSubject(node)
      .setAudience(fleet)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 60)
      .setJti(crypto.randomUUID())
      .sign(await importJWK(this.privateJwk, "ES256"));
  }
}

/** Written whole (a temporary file renamed over), readable by the owner only. */
function writePrivate(file: string, value: unknown): void {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}
