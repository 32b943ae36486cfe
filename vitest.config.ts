import { configDefaults, defineConfig } from "vitest/config";

/** The suite's one timed assertion (crash → restart within 1 s, issue #21) runs after everything else, alone: beside
 * another real-containerd file on these 2 cores, containerd's and runc's own work took it past 1 s (1.1 s once). */
const timed = ["test/runtime-events.e2e.test.ts"];

export default defineConfig({
  test: {
    globalSetup: ["test/support/build.ts", "test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The real-containerd suites share one runtime; keep files from stepping on each other's CPU.
    fileParallelism: true,
    maxWorkers: 2,
    // The JSON report lets .ci/run print a plain "N passed, N failed" closing line.
    reporters: ["default", ["json", { outputFile: ".vitest-report.json" }]],
    projects: [
      {
        extends: true,
        test: {
          name: "podsync",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...timed],
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: "timed", include: timed, sequence: { groupOrder: 1 } } },
    ],
  },
});
