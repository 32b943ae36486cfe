#!/usr/bin/env -S node --max-semi-space-size=4
// The podsync CLI: the compiled dist/cli/main.js, rebuilt first if src/ changed since the last build.
// kubectl's credential plugin (`token --act read --exec-credential`) is answered from its cache first, before the
// build check and the CLI are loaded (dist/cli/token-cache.js uses only node: built-ins).
const hit = process.argv[2] === "token" && process.argv.includes("--exec-credential") && (await cachedCredential());
if (hit) process.stdout.write(`${hit}\n`);
else {
  const { buildIfStale } = await import("./build.mjs");
  if (buildIfStale()) await import("../dist/cli/main.js");
  else process.exitCode = 1;
}

async function cachedCredential() {
  try {
    const c = await import("../dist/cli/token-cache.js");
    const key = c.cacheKey(process.argv.slice(3));
    return key && c.readCached(c.cacheDir(), key);
  } catch {
    return undefined;
  }
}
