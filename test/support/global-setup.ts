// Starts the real containerd from ../shared/cri-lab once for the whole run (idempotent) and hands its
// socket to the end-to-end suites. Set PODSYNC_CRI_ENDPOINT to use a runtime you already run.
// The e2e suites fail, not skip, when no runtime can be had: set PODSYNC_SKIP_E2E=1 to leave them out on purpose.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { TestProject } from "vitest/node";

export default function setup(project: TestProject) {
  let endpoint = process.env.PODSYNC_CRI_ENDPOINT ?? "";
  let error = "";
  if (!endpoint && process.env.PODSYNC_SKIP_E2E !== "1") {
    const script = resolve(process.env.CRI_LAB ?? "../shared/cri-lab", "start-containerd.sh");
    if (!existsSync(script)) error = `cri-lab not found at ${script} (set CRI_LAB or PODSYNC_CRI_ENDPOINT)`;
    else {
      try {
        const out = execFileSync("bash", [script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 300_000 });
        const sock = out.trim().split("\n").pop() ?? "";
        endpoint = sock ? `unix://${sock}` : "";
        if (!endpoint) error = "start-containerd.sh printed no socket";
      } catch (e) {
        error = `start-containerd.sh failed: ${(e as { stderr?: string }).stderr ?? String(e)}`;
      }
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
