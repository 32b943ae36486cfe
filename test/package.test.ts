// The package as people get it: `npm pack`, then `npm install -g` of the tarball into an empty prefix, then the
// installed bins from an empty directory, with no source tree anywhere near. The tarball holds only what ships.
// Dependencies come from npm's cache when it has them (--prefer-offline; after `npm ci` it has them all).
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const run = (cmd: string, args: string[], o: { cwd?: string; env?: Record<string, string> } = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((res) =>
    execFile(
      cmd,
      args,
      { cwd: o.cwd ?? process.cwd(), env: { ...process.env, ...o.env }, maxBuffer: 16 * 1024 * 1024 },
      (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );

describe("the npm package", () => {
  it("packs only what ships; installs into an empty prefix; podsync --help, keygen and serve work there", async () => {
    const tmp = mkdtempSync(join(tmpdir(), "podsync-pack-"));
    // dist/ is built by the suite's global setup; the pack itself runs no scripts.
    const pack = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", tmp]);
    expect(pack.code, pack.stderr).toBe(0);
    const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
    const files = info!.files.map((f) => f.path);
    expect(files).toContain("dist/cli/main.js");
    expect(files).toContain("dist/node.js");
    expect(files).toContain("bin/podsync.mjs");
    expect(files).toContain("README.md");
    expect(
      files.filter(
        (f) => /^(src|test|bench|scripts|proto|\.podsync)\//.test(f) || f.endsWith(".ts") || f.includes(".tsbuildinfo"),
      ),
    ).toEqual([]);

    const prefix = join(tmp, "prefix");
    const install = await run(
      "npm",
      [
        "install",
        "-g",
        "--prefix",
        prefix,
        "--prefer-offline",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        join(tmp, info!.filename),
      ],
      { cwd: tmp },
    );
    expect(install.code, install.stderr).toBe(0);
    const bin = join(prefix, "bin", "podsync");
    const empty = join(tmp, "empty");
    const home = join(tmp, "home");
    mkdirSync(empty);
    const env = { HOME: home, XDG_CONFIG_HOME: "", PODSYNC_KEY: "", PODSYNC_URL: "" };

    const help = await run(bin, ["--help"], { cwd: empty, env });
    expect(help, help.stderr).toMatchObject({ code: 0, stdout: expect.stringContaining("usage: podsync COMMAND") });
    const keygen = await run(bin, ["keygen"], { cwd: empty, env });
    expect(keygen.code, keygen.stderr).toBe(0);
    const key = join(home, ".config", "podsync", "key.json");
    expect(keygen.stdout).toContain(`wrote ${key}`);
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(existsSync(join(home, ".config", "podsync", "jwks.json"))).toBe(true);
    expect(keygen.stderr).toContain(`PODSYNC_JWKS_FILE=${join(home, ".config", "podsync", "jwks.json")}`);
    expect((await run(bin, ["keygen"], { cwd: empty, env })).stderr).toContain("already exists; keeping it");

    // The server from the installed package: it starts, prints its banner, and stops on SIGTERM.
    const serve = spawn(bin, ["serve"], {
      cwd: empty,
      env: { ...process.env, ...env, PODSYNC_PORT: "0", PODSYNC_CRI_ENDPOINT: "unix:///nonexistent/podsync.sock" },
    });
    let err = "";
    serve.stderr.on("data", (b: Buffer) => (err += b.toString()));
    const exited = new Promise<number>((r) => serve.once("exit", (c) => r(c ?? -1)));
    const deadline = Date.now() + 20_000;
    while (!err.includes("listening on") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(err).toMatch(/podsync listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(existsSync(join(empty, ".podsync", "dev-key.json"))).toBe(true);
    expect(await run(bin, ["--version"], { cwd: empty, env })).toMatchObject({ code: 0, stdout: "podsync 0.1.0\n" });
    // sync and kubeconfig from the installed package, against that server, with an example the package ships
    // (a workload is stored without the runtime, which this server does not have).
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(err)![1]!;
    const at = { ...env, PODSYNC_URL: url, PODSYNC_KEY: join(empty, ".podsync", "dev-key.json") };
    const example = join(prefix, "lib", "node_modules", "podsync", "examples", "deployment.yaml");
    const synced = await run(bin, ["sync", "-f", example, "-q"], { cwd: empty, env: at });
    expect(synced, synced.stderr).toMatchObject({ code: 0, stdout: expect.stringContaining("deployment.apps/web") });
    const kc = await run(bin, ["kubeconfig"], { cwd: empty, env: at });
    expect(kc.code, kc.stderr).toBe(0);
    expect(kc.stdout).toContain("certificate-authority-data");
    serve.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 300_000);
});
