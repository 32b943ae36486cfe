// The tests that spawn `node dist/node.js` or bin/*.mjs run the build: bring dist/ up to date once, before any
// test file (a no-op check of ~2 ms plus a node start when nothing changed; an incremental tsc when something did).
import { execFileSync } from "node:child_process";

export default function setup() {
  execFileSync(process.execPath, ["bin/build.mjs", "--if-stale"], { stdio: "inherit" });
}
