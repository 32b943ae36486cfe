// podsync keygen: a signing key pair, the private JWK and the node's public JWKS.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fail } from "../args.js";
import type { SigningAlg } from "../../auth/keys.js";
import type { Command } from "../command.js";

const keygen: Command = {
  usage: ["keygen [--out DIR] [--alg EdDSA|ES256] [--iss ISSUER]"],
  help: "Write DIR/key.json (the private key) and DIR/jwks.json (the public key set: the node's PODSYNC_JWKS_FILE).",
  examples: ["podsync keygen --out ~/.config/podsync"],
  options: { out: { type: "string" }, alg: { type: "string" } },
  async run(ctx) {
    const alg = String(ctx.o["alg"] ?? "EdDSA") as SigningAlg;
    if (alg !== "EdDSA" && alg !== "ES256") fail("--alg must be EdDSA or ES256");
    const dir = String(ctx.o["out"] ?? ".");
    const { generateSigningKey } = await import("../../auth/keys.js");
    const k = await generateSigningKey(alg);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "key.json"), JSON.stringify({ ...k.privateJwk, ...(ctx.iss ? { iss: ctx.iss } : {}) }, null, 2) + "\n", { mode: 0o600 });
    writeFileSync(join(dir, "jwks.json"), JSON.stringify(k.jwks, null, 2) + "\n");
    console.log(`wrote ${join(dir, "key.json")} (private, kid ${k.privateJwk.kid}) and ${join(dir, "jwks.json")} (public: the node's PODSYNC_JWKS_FILE)`);
  },
};
export default keygen;
