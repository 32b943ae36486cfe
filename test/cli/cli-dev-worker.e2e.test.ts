// `npm run dev:worker` as the docs show it (issue 41): one process that starts cri-proxy on the lab's containerd and
// the Worker in workerd with a node entry, and prints the settings. The test takes those lines as they are printed
// and drives `podsync` (sync, get pods, delete) and the real kubectl (get pods, get deploy) with them, then stops it
// with Ctrl-C's signal to its process group. Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { until } from "../support/wait.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const KUBECTL = process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl";
const dir = mkdtempSync(join(tmpdir(), "podsync-dev-worker-"));
const NS = `devw-${Date.now().toString(36)}`;

let dev: ChildProcess;
let out = "";
let err = "";
/** The settings it printed: `export NAME=value` lines. */
const settings: Record<string, string> = {};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[]): Promise<Run> {
  return new Promise((res) =>
    execFile(
      file,
      args,
      { env: { ...process.env, HOME: join(dir, "home"), ...settings }, timeout: 60_000 },
      (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}
const podsync = (...args: string[]) => run(process.execPath, ["bin/podsync.mjs", ...args]);

describe.skipIf(skip)("npm run dev:worker: the Worker, cri-proxy and a node in one command", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the dev worker e2e: ${setupError}`);
    if (!existsSync(KUBECTL)) throw new Error(`kubectl is missing at ${KUBECTL} (or set PODSYNC_KUBECTL)`);
    // Its own process group, as a terminal's foreground job: Ctrl-C signals the whole group.
    dev = spawn("npm", ["run", "--silent", "dev:worker", "--", "--port", "0", "--dir", join(dir, "dev")], {
      env: { ...process.env, PODSYNC_CRI_ENDPOINT: endpoint },
      detached: true,
    });
    dev.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    dev.stderr!.on("data", (b: Buffer) => (err += b.toString()));
    await until("its settings", async () => out.includes("export KUBECONFIG="), 120_000, 200).catch((e: Error) => {
      throw new Error(`${e.message}; it printed:\n${out}\n${err}`);
    });
    for (const m of out.matchAll(/^export (\w+)=(.*)$/gm)) settings[m[1]!] = m[2]!;
  }, 150_000);

  afterAll(async () => {
    // What a failed test left: its pod, and the process group.
    if (!dev || dev.exitCode !== null || dev.signalCode !== null) return;
    await podsync("delete", "web", "-n", NS, "--grace-period=0");
    process.kill(-dev.pid!, "SIGINT");
  }, 60_000);

  it("prints what podsync and kubectl need; both work with it as printed; Ctrl-C stops it", async () => {
    expect(Object.keys(settings).sort()).toEqual(["KUBECONFIG", "NODE_EXTRA_CA_CERTS", "PODSYNC_KEY", "PODSYNC_URL"]);
    expect(settings["PODSYNC_URL"]).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/nodes\/dev-node$/);
    const file = join(dir, "web.yaml");
    writeFileSync(
      file,
      [
        "apiVersion: v1",
        "kind: Pod",
        `metadata: { name: web, namespace: ${NS} }`,
        "spec:",
        "  terminationGracePeriodSeconds: 1",
        "  containers:",
        "    - name: main",
        "      image: localhost/busybox:1",
        "      imagePullPolicy: IfNotPresent",
        '      command: ["sh", "-c", "sleep 3600"]',
        // An exec probe, as the examples have: the Worker runs it through cri-proxy's ExecSync.
        '      readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1 }',
      ].join("\n"),
    );
    const synced = await podsync("sync", "-f", file);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stderr).toMatch(/^synced: 1 created/m);
    const get = await until(
      "web Ready through the Worker's exec probe",
      async () => {
        const r = await podsync("get", "pods", "-n", NS, "--no-headers");
        return r.code === 0 && /^web\s+1\/1\s+Running/.test(r.stdout) ? r : undefined;
      },
      60_000,
    );
    expect(get.stdout).toMatch(/^web\s+1\/1\s+Running\s+0\s+\d+s\n$/);
    const k = await run(KUBECTL, ["get", "pods", "-n", NS]);
    expect(k.code, k.stderr).toBe(0);
    expect(k.stdout).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+1\/1\s+Running\s+0\s+\S+\n$/);
    // The Worker's Kubernetes API serves the workload kinds too (a Deployment of no replicas: no pods to wait for).
    writeFileSync(
      join(dir, "idle.yaml"),
      [
        "apiVersion: apps/v1",
        "kind: Deployment",
        `metadata: { name: idle, namespace: ${NS} }`,
        "spec:",
        "  replicas: 0",
        "  selector: { matchLabels: { app: idle } }",
        "  template:",
        "    metadata: { labels: { app: idle } }",
        "    spec: { containers: [{ name: main, image: localhost/busybox:1, imagePullPolicy: IfNotPresent }] }",
      ].join("\n"),
    );
    expect((await podsync("sync", "-f", join(dir, "idle.yaml"), "-q")).code).toBe(0);
    const kd = await run(KUBECTL, ["get", "deploy", "-n", NS]);
    expect(kd.code, kd.stderr).toBe(0);
    expect(kd.stdout).toMatch(/^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\nidle\s+0\/0\s+0\s+0\s+\S+\n$/);
    expect((await podsync("delete", "deploy", "idle", "-n", NS)).code).toBe(0);
    expect((await podsync("delete", "web", "-n", NS, "--grace-period=0")).code).toBe(0);

    // Ctrl-C: the Worker and cri-proxy stop (npm itself ends by the signal, as on a terminal), the address no
    // longer answers and no cri-proxy of its dir is left.
    const exited = new Promise<{ code: number | null; signal: string | null }>((res) =>
      dev.once("exit", (code, signal) => res({ code, signal })),
    );
    process.kill(-dev.pid!, "SIGINT");
    expect([
      { code: 0, signal: null },
      { code: null, signal: "SIGINT" },
    ]).toContainEqual(await exited);
    await until(
      "cri-proxy to stop",
      async () => (await run("pgrep", ["-f", join(dir, "dev", "logs")])).code === 1,
      20_000,
      300,
    );
    await until(
      "nothing to answer at the Worker's address",
      async () => (await podsync("get", "pods", "-n", NS)).stderr.includes("cannot reach podsync"),
      20_000,
      300,
    );
  }, 150_000);
});
