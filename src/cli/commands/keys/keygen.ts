// Package cli/commands/keys — keys and credentials: keygen, sign, token (kubectl's plugin), kubeconfig.
// Imports the CLI's client and keys; never the server's packages.
//
// podsync keygen: a signing key pair, the private JWK and the node's public JWKS. Written by default to the
// user's config dir (outside any checkout, so git never sees the private key), where the CLI looks for it.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fail, usage } from "../../args.js";
import type { SigningAlg } from "../../../auth/keys.js";
import type { Command } from "../../command.js";
import { configDir, DEV_ISSUER, trustHint } from "../../keys.js";

const keygen: Command = {
  usage: ["keygen [--out DIR] [--alg EdDSA|ES256] [--iss ISSUER] [--force]"],
  help: `Write DIR/key.json (the private key: podsync signs with it) and DIR/jwks.json (the public key set the node
trusts). DIR defaults to the config dir ($XDG_CONFIG_HOME/podsync, else ~/.config/podsync), the CLI's third place
to look for a key. An existing key.json is kept unless --force.`,
  examples: [
    "podsync keygen",
    "podsync keygen --out /etc/podsync/keys --iss fleet",
    "PODSYNC_JWKS_FILE=~/.config/podsync/jwks.json PODSYNC_ISSUERS=podsync-dev npm start",
  ],
  options: {
    out: { type: "string", help: "the directory (default: the config dir)" },
    alg: { type: "string", help: "EdDSA (default) or ES256" },
    force: { type: "boolean", help: "replace an existing key.json" },
  },
  async run(ctx) {
    const alg = String(ctx.o["alg"] ?? "EdDSA") as SigningAlg;
    if (alg !== "EdDSA" && alg !== "ES256") usage("--alg must be EdDSA or ES256", ctx.command);
    const dir = String(ctx.o["out"] ?? configDir());
    const keyFile = join(dir, "key.json");
    const jwksFile = join(dir, "jwks.json");
    if (existsSync(keyFile) && !ctx.o["force"])
      fail(
        `${keyFile} already exists; keeping it (--force replaces it, and the node must then be given the new jwks.json)`,
      );
    const { generateSigningKey } = await import("../../../auth/keys.js");
    const k = await generateSigningKey(alg);
    const iss = ctx.iss ?? DEV_ISSUER;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(keyFile, `${JSON.stringify({ ...k.privateJwk, iss }, null, 2)}\n`, { mode: 0o600 });
    writeFileSync(jwksFile, `${JSON.stringify(k.jwks, null, 2)}\n`);
    console.log(`wrote ${keyFile} (private, kid ${k.privateJwk.kid}, issuer ${iss}) and ${jwksFile} (public)`);
    ctx.note(`${trustHint(resolve(jwksFile), iss)}`);
  },
};
export default keygen;
