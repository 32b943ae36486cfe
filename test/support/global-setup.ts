// Starts the project's lab containerd (scripts/containerd-lab.sh) once for the whole run (idempotent) and
// hands its socket to the end-to-end suites. Set PODSYNC_CRI_ENDPOINT to use a runtime you already run.
// The e2e suites fail, not skip, when no runtime can be had: set PODSYNC_SKIP_E2E=1 to leave them out on purpose.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

const labScript = fileURLToPath(new URL("../../scripts/containerd-lab.sh", import.meta.url));

export default function setup(project: TestProject) {
  let endpoint = process.env.PODSYNC_CRI_ENDPOINT ?? "";
  let error = "";
  if (!endpoint && process.env.PODSYNC_SKIP_E2E !== "1") {
    // An apt install on a fresh machine can take minutes; the script's stderr says what it did or why it failed.
    const run = spawnSync("bash", [labScript, "start"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 600_000,
    });
    const sock = run.status === 0 ? (run.stdout.trim().split("\n").pop() ?? "") : "";
    if (sock) {
      endpoint = `unix://${sock}`;
      if (run.stderr) process.stderr.write(run.stderr);
    } else {
      const why = run.error
        ? String(run.error)
        : run.stderr.trim() || `exit ${run.status ?? run.signal}, no socket printed`;
      error = `scripts/containerd-lab.sh start failed: ${why} (or set PODSYNC_CRI_ENDPOINT to a runtime you run)`;
    }
  }
  project.provide("criEndpoint", endpoint);
  project.provide("criError", error);
  project.provide("skipE2E", process.env.PODSYNC_SKIP_E2E === "1");
}

declare module "vitest" {
  export interface ProvidedContext {
    criEndpoint: string;
    criError: string;
    skipE2E: boolean;
  }
}
