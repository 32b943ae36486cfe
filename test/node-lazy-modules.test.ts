// What an idle node loads follows its configuration (issue #42 item 2): the fleet link (ws) only with a
// PODSYNC_FLEET_ setting, the Services data plane (proxier, DNS, dns-packet) only where it may run, prom-client only
// when /metrics is served. dist/node.js as `npm start` runs it, its modules logged by test/support/module-log.mjs.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/** The modules (paths under the repository, node_modules/<package> for a dependency) a node loaded by the time it
 * listened, with `env`; it is stopped (SIGTERM) once listening. */
async function loaded(env: Record<string, string>): Promise<Set<string>> {
  const dir = mkdtempSync(join(tmpdir(), "podsync-modules-"));
  const log = join(dir, "modules.log");
  const child = spawn(process.execPath, ["--import", "./test/support/module-log.mjs", "dist/node.js"], {
    env: {
      PATH: process.env["PATH"] ?? "",
      PODSYNC_PORT: "0",
      PODSYNC_DEV_DIR: join(dir, "dev"),
      PODSYNC_STATE_DIR: join(dir, "state"),
      PODSYNC_CRI_ENDPOINT: "unix:///nonexistent/podsync.sock",
      PODSYNC_MODULE_LOG: log,
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number>((r) => child.once("exit", (c) => r(c ?? -1)));
  for (const end = Date.now() + 30_000; !/listening on http/.test(err) && Date.now() < end; )
    await new Promise((r) => setTimeout(r, 50));
  expect(err).toMatch(/listening on http/);
  child.kill("SIGTERM");
  expect(await exited).toBe(0);
  return new Set(
    readFileSync(log, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((u) => {
        const p = decodeURIComponent(u.replace(/^file:\/\//, "")).replace(`${process.cwd()}/`, "");
        const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(p);
        return m ? `node_modules/${m[1]}` : p;
      }),
  );
}

describe("an idle node loads what its configuration uses", () => {
  it("metrics off, data plane off, no fleet: no prom-client, no data plane, no fleet link", async () => {
    const mods = await loaded({ PODSYNC_METRICS: "off", PODSYNC_SERVICE_DATAPLANE: "off" });
    expect(mods.has("dist/node.js")).toBe(true);
    for (const m of [
      "node_modules/prom-client",
      "dist/host/metrics/metrics.js",
      "node_modules/dns-packet",
      "dist/services/dataplane.js",
      "dist/services/dns/server.js",
      "dist/services/proxy/proxier.js",
      "node_modules/ws",
      "dist/http/fleet/node-link.js",
    ])
      expect(mods, m).not.toContain(m);
    // The Service model (EndpointSlices for the Kubernetes API) runs with the data plane off.
    expect(mods).toContain("dist/services/source.js");
  });

  it("metrics served (the default): prom-client is loaded", async () => {
    const mods = await loaded({ PODSYNC_SERVICE_DATAPLANE: "off" });
    expect(mods).toContain("node_modules/prom-client");
    expect(mods).toContain("dist/host/metrics/metrics.js");
  });

  it("a fleet setting without PODSYNC_FLEET_URL is still checked: a bad one is a settings error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "podsync-modules-"));
    const child = spawn(process.execPath, ["dist/node.js"], {
      env: {
        PATH: process.env["PATH"] ?? "",
        PODSYNC_PORT: "0",
        PODSYNC_DEV_DIR: join(dir, "dev"),
        PODSYNC_STATE_DIR: join(dir, "state"),
        PODSYNC_CRI_ENDPOINT: "unix:///nonexistent/podsync.sock",
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_FLEET_HEARTBEAT_MS: "soon",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    expect(await new Promise<number>((r) => child.once("exit", (c) => r(c ?? -1)))).toBe(1);
    expect(err).toMatch(/invalid fleet settings:\n {2}PODSYNC_FLEET_HEARTBEAT_MS: /);
  });
});
