// A lab containerd of a test's own (scripts/containerd-lab.sh with PODSYNC_LAB_DIR), for tests that stop or
// kill the runtime: the shared lab is in use by the other e2e files of the same run.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";

export function ownLab(name: string) {
  const dir = `/tmp/podsync-lab-${name}-${process.pid}`;
  const script = join(process.cwd(), "scripts/containerd-lab.sh");
  const run = (cmd: "start" | "stop") =>
    spawnSync("bash", [script, cmd], {
      env: { ...process.env, PODSYNC_LAB_DIR: dir },
      encoding: "utf8",
      timeout: 300_000,
    });
  return {
    dir,
    sock: `${dir}/containerd.sock`,
    /** Start it (or, when it runs, just answer); the script's result. */
    start: () => run("start"),
    /** Remove its pods, stop it, free their netns and IPs, then remove its directory. */
    stop() {
      run("stop");
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        /* a mount left busy: /tmp is cleaned at boot */
      }
    },
  };
}
