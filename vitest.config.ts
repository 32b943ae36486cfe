import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The real-containerd suites share one runtime; keep files from stepping on each other's CPU.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
