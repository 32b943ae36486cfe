// `npm start`'s entry as a user runs it (the build, which test/support/build.ts brings up to date): a separate
// process, settings from the environment.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, ["dist/node.js"], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number>((r) => child.once("exit", (c) => r(c ?? -1)));
  return { child, exited, stderr: () => err };
}

describe("dist/node.js (npm start)", () => {
  it("serves on localhost, makes a dev key on first run and says how to use it; stops on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-start-"));
    const p = start({
      PODSYNC_PORT: "0",
      PODSYNC_DEV_DIR: dir,
      PODSYNC_CRI_ENDPOINT: "unix:///nonexistent/podsync.sock",
    });
    const deadline = Date.now() + 20_000;
    while (!/listening on (http:\/\/127\.0\.0\.1:\d+)/.test(p.stderr()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(p.stderr())![1]!;
    expect(p.stderr()).toContain(`dev key: ${join(dir, "dev-key.json")}`);
    expect(p.stderr()).toContain(`npx podsync sync examples/pod.yaml --url ${url} --key ${join(dir, "dev-key.json")}`);
    expect(p.stderr()).toContain(
      "policy:  baseline (PODSYNC_POLICY: pods beyond the baseline Pod Security Standard are refused",
    );
    expect(p.stderr()).toContain("exec: off (PODSYNC_ALLOW_EXEC=true turns it on)");
    expect(p.stderr()).toMatch(/warning: \/nonexistent\/podsync\.sock does not exist/);
    expect(await (await fetch(`${url}/healthz`)).json()).toMatchObject({ ok: true });
    expect((await fetch(`${url}/readyz`)).status).toBe(503);
    p.child.kill("SIGTERM");
    expect(await p.exited).toBe(0);
  });

  it("a port in use is one line, no stack, exit code 1", async () => {
    const { createServer } = await import("node:net");
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    const port = (taken.address() as { port: number }).port;
    try {
      const p = start({
        PODSYNC_PORT: String(port),
        PODSYNC_DEV_DIR: mkdtempSync(join(tmpdir(), "podsync-start-")),
        PODSYNC_CRI_ENDPOINT: "unix:///nonexistent/podsync.sock",
      });
      expect(await p.exited).toBe(1);
      expect(p.stderr()).toBe(
        `podsync: cannot listen on 127.0.0.1:${port}: the port is in use (another podsync? stop it, or set PODSYNC_PORT to a free port)\n`,
      );
    } finally {
      taken.close();
    }
  });

  it("refuses bad settings at start-up, naming each, with exit code 1", async () => {
    const p = start({ PODSYNC_PORT: "99999", PODSYNC_ALGORITHMS: "none" });
    expect(await p.exited).toBe(1);
    expect(p.stderr()).toMatch(/podsync: invalid settings:/);
    expect(p.stderr()).toMatch(/PODSYNC_PORT: must be at most 65535/);
    expect(p.stderr()).toMatch(/PODSYNC_ALGORITHMS/);
  });
});
