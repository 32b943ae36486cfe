#!/usr/bin/env node
// Builds dist/, the compiled JavaScript that `npm start` and the bins run (no TypeScript at run time).
//   node bin/build.mjs             incremental tsc -p tsconfig.build.json (`npm run build`, `prepare`)
//   node bin/build.mjs --if-stale  only when src/ or a tsconfig changed since the last good build (`prestart`)
// The staleness check is a stat of each source file (~2 ms), so a fresh dist/ costs nothing, and a `git pull`
// (which gives the files it changes a new mtime) is built by the next start instead of running old code.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// Written after a build that passed, removed when one fails. Not tsc's .tsbuildinfo: tsc writes that one even
// when the build fails, and leaves it alone when a file was only touched.
const stamp = join(root, "dist", ".built");

/** Newest mtime of the inputs; directories count too, so removing or renaming a file is a change. */
function newestInput() {
  let newest = 0;
  const walk = (path) => {
    const st = statSync(path);
    newest = Math.max(newest, st.mtimeMs);
    if (st.isDirectory()) for (const e of readdirSync(path)) walk(join(path, e));
  };
  walk(join(root, "src"));
  for (const f of ["tsconfig.json", "tsconfig.build.json"]) newest = Math.max(newest, statSync(join(root, f)).mtimeMs);
  return newest;
}

/** Runs the build; false (tsc's errors printed to stderr) if it failed. */
export function build() {
  let tsc;
  try {
    tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc");
  } catch {
    console.error("podsync: typescript is not installed, so dist/ cannot be built (npm ci)");
    return false;
  }
  // tsc's stdout to our stderr: a bin's stdout is its answer (`podsync sign … > pod.jws`).
  const r = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], {
    cwd: root,
    stdio: ["ignore", 2, 2],
  });
  if (r.status !== 0) {
    rmSync(stamp, { force: true });
    console.error("podsync: the build failed (dist/ is left as it was); fix the errors above");
    return false;
  }
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
  return true;
}

/** Builds only if dist/ is missing or older than its sources. */
export function buildIfStale() {
  // A copy without the sources runs the dist/ it was given.
  if (!existsSync(join(root, "src")) || !existsSync(join(root, "tsconfig.build.json"))) return true;
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= newestInput()) return true;
  console.error("podsync: dist/ is missing or older than src/: building it (tsc -p tsconfig.build.json)");
  return build();
}

// Run as the program (`node bin/build.mjs`), not imported by a bin or by `npm start`'s preload, whose main module
// (dist/node.js) may not exist yet: a fresh checkout whose dist/ was never built, which the preload then builds.
const main = process.argv[1] && existsSync(process.argv[1]) ? realpathSync(process.argv[1]) : undefined;
if (main === fileURLToPath(import.meta.url))
  process.exitCode = (process.argv.includes("--if-stale") ? buildIfStale() : build()) ? 0 : 1;
