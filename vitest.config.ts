import { readdirSync, readFileSync } from "node:fs";
import { configDefaults, defineConfig } from "vitest/config";

/** What makes a test file need a process of its own: a runtime, a child process, a server, the environment, mocks,
 * process-wide hooks. A file with none of them (and no `.e2e.` in its name) runs in the project `unit`, which
 * shares one module graph per worker (isolate: false): importing src/ costs about a second per isolated file, most
 * of the suite's time outside the tests themselves. */
const NEEDS_ISOLATION =
  /criEndpoint|spawn|execFile|wrangler|startNode|unstable_dev|process\.env|process\.chdir|process\.on\(|globalThis\.|vi\.(mock|stub|useFakeTimers|spyOn)/;
const unit = readdirSync("test", { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".test.ts") && !f.includes(".e2e."))
  .map((f) => `test/${f}`)
  .filter((f) => !NEEDS_ISOLATION.test(readFileSync(f, "utf8")));

/** The suite's one timed assertion (crash → restart within 1 s, issue #21) runs after everything else, alone: beside
 * another real-containerd file on these 2 cores, containerd's and runc's own work took it past 1 s (1.1 s once). */
const timed = ["test/pleg/runtime-events.e2e.test.ts"];
/* The files that run the Services data plane (the nftables table `inet podsync` and the cluster DNS on the bridge's
 * gateway: one of each per machine: services.e2e, services-dataplane.e2e, readme.e2e) run in the main pool, one at a
 * time among themselves under test/support/machine-lock.ts; every other node the suite starts has
 * PODSYNC_SERVICE_DATAPLANE=off (below, and in each test's own settings). */

export default defineConfig({
  test: {
    globalSetup: ["test/support/build.ts", "test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Three files at a time on the 2-core machine: most of a real-containerd file's time is spent waiting for
    // containerd, runc, kubectl or workerd, not on this process's CPU. `.ci/run` on fresh clones (2026-12-08, one
    // run each): 2 workers 652 s, 3 workers 576 s, 4 workers 558 s; 3 workers and a shorter quiet-loop test 523 s.
    // The timed file still runs alone (below).
    fileParallelism: true,
    maxWorkers: 3,
    // A node a test starts leaves the Services data plane off unless the test says otherwise (see above).
    env: { PODSYNC_SERVICE_DATAPLANE: "off" },
    // The JSON report lets .ci/run print a plain "N passed, N failed" closing line.
    reporters: ["default", ["json", { outputFile: ".vitest-report.json" }]],
    projects: [
      {
        extends: true,
        test: {
          name: "podsync",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...timed, ...unit],
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: "unit", include: unit, isolate: false, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: "timed", include: timed, sequence: { groupOrder: 1 } } },
    ],
  },
});
