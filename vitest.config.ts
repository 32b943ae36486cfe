import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/build.ts", "test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The real-containerd suites share one runtime; keep files from stepping on each other's CPU.
    fileParallelism: true,
    maxWorkers: 2,
    // The JSON report lets .ci/run print a plain "N passed, N failed" closing line.
    reporters: ["default", ["json", { outputFile: ".vitest-report.json" }]],
  },
});
