// Preload (`node --import`) that writes every module a process loaded to $PODSYNC_MODULE_LOG when it exits: the ES
// modules through a load hook (module-log-hooks.mjs), the CommonJS ones from require's cache. For the tests of what
// an idle node loads (test/node-lazy-modules.test.ts).
import { appendFileSync } from "node:fs";
import { createRequire, register } from "node:module";

register("./module-log-hooks.mjs", import.meta.url);
const require = createRequire(import.meta.url);
process.on("exit", () => {
  const file = process.env["PODSYNC_MODULE_LOG"];
  if (file)
    appendFileSync(
      file,
      Object.keys(require.cache)
        .map((f) => `file://${f}\n`)
        .join(""),
    );
});
