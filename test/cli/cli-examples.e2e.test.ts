// Every file name the CLI's help texts show exists under examples/ and runs (issue 41): the test reads each
// command's --help, refuses a YAML name outside examples/, and syncs each example to a lab node (startNode on the
// REAL containerd), then checks it ran: the rollouts finish (rollout status, exit 0), the Job completes, the
// CronJob is kept, the StatefulSet's claim is there; examples/empty.yaml (apply --prune-all) empties the node.
// sync's progress is checked as a pipe sees it and apply's through a pseudo-terminal (issue 41 item 7); the
// StatefulSet's claim outlives it in get pvc, the CLI's and kubectl's.
// Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Running } from "../../src/node.js";
import { commands } from "../../src/cli/registry.js";
import { until } from "../support/wait.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const dir = mkdtempSync(join(tmpdir(), "podsync-cli-examples-e2e-"));
let running: Running;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) =>
    execFile(
      process.execPath,
      ["bin/podsync.mjs", ...args],
      {
        env: {
          PATH: process.env["PATH"] ?? "",
          HOME: join(dir, "home"),
          PODSYNC_URL: running?.url ?? "",
          PODSYNC_KEY: join(dir, "dev-key.json"),
        },
      },
      (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** A command on a pseudo-terminal (util-linux script): what the terminal shows, stdout and stderr together. */
function script(command: string): Promise<{ code: number; stdout: string }> {
  return new Promise((res) =>
    execFile(
      "script",
      ["-qec", command, "/dev/null"],
      {
        env: {
          PATH: process.env["PATH"] ?? "",
          HOME: join(dir, "home"),
          PODSYNC_URL: running?.url ?? "",
          PODSYNC_KEY: join(dir, "dev-key.json"),
        },
      },
      (e, stdout) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout }),
    ),
  );
}

beforeAll(async () => {
  if (skip) return;
  if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
  const { startNode } = await import("../../src/node.js");
  running = await startNode(
    {
      PODSYNC_CRI_ENDPOINT: endpoint,
      PODSYNC_PORT: "0",
      PODSYNC_NODE_NAME: "cli-examples-node",
      PODSYNC_SERVICE_DATAPLANE: "off",
      PODSYNC_DEV_DIR: dir,
      PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
      PODSYNC_ROOT_DIR: join(dir, "root"),
    },
    true,
  );
}, 180_000); // a node on a loaded machine can take over a minute to start

afterAll(async () => {
  if (skip || !endpoint || !running) return;
  await cli(["apply", "-f", "examples/empty.yaml", "--prune-all"]);
  await running.close();
});

describe.skipIf(skip)("the examples the help texts name", () => {
  it("exist, and each runs on a lab node", async () => {
    // What `podsync CMD --help` prints of each command: its usage, help and examples (main.ts commandHelp).
    const loaded = await Promise.all(Object.values(commands).map(async (e) => (await e.load()).default));
    const text = loaded.flatMap((c) => [...c.usage, c.help, ...(c.examples ?? [])]).join("\n");
    const yaml = [...text.matchAll(/[\w./~-]+\.ya?ml\b/g)].map((m) => m[0]);
    expect(yaml.filter((f) => !f.startsWith("examples/"))).toEqual([]); // no made-up file names
    const files = [...new Set(yaml)];
    for (const f of ["pod", "deployment", "statefulset", "daemonset", "job", "cronjob", "empty"])
      expect(files).toContain(`examples/${f}.yaml`);
    for (const f of files) expect(existsSync(f), f).toBe(true);

    for (const f of files.filter((f) => f !== "examples/empty.yaml")) {
      const r = await cli(["sync", "-f", f, "-q"]);
      expect(r.code, `${f}: ${r.stderr}`).toBe(0);
    }
    // A pod's sync with its progress, as a pipe sees it: the heading, then one plain line per event of the pod.
    const progressPod = join(dir, "progress.yaml");
    const name = `progress-${Date.now().toString(36)}`;
    writeFileSync(
      progressPod,
      readFileSync("examples/pod.yaml", "utf8")
        .replace(/name: hello/, `name: ${name}`)
        .replace(/\n\s*uid: .*/, ""),
    );
    const synced = await cli(["sync", "-f", progressPod]);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stderr).toMatch(
      new RegExp(`^syncing: pulling images, starting containers \\(\\d+s\\)\npod/${name}: `),
    );
    expect(synced.stderr).toMatch(new RegExp(`^pod/${name}: Started container main$`, "m"));
    expect(synced.stderr).toMatch(/^synced: 1 created, 0 changed, 0 unchanged, 0 warnings\n$/m);
    expect(synced.stderr).not.toContain(String.fromCharCode(27));
    for (const w of ["deployment/web", "statefulset/db", "daemonset/agent"]) {
      const r = await cli(["rollout", "status", w, "--timeout=120s"]);
      expect(r.code, `${w}: ${r.stdout}${r.stderr}`).toBe(0);
    }
    await until(
      "the Job's three completions",
      async () => (await cli(["get", "job", "count", "-o", "jsonpath={.status.succeeded}"])).stdout.trim() === "3",
      120_000,
      500,
    );
    expect((await cli(["get", "cronjob", "tick", "-o", "name"])).stdout).toBe("cronjob.batch/tick\n");
    expect((await cli(["logs", "sts/db"])).stdout).toContain("starts: 1");
    expect((await cli(["volumes"])).stdout).toContain("data-db-0");
    // The StatefulSet's claim where users look: get pvc, kubectl's columns, Bound.
    const pvc = await cli(["get", "pvc"]);
    expect(pvc.stdout).toMatch(/^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+/);
    expect(pvc.stdout).toMatch(/^data-db-0\s+Bound\s/m);
    await until(
      "hello's log",
      async () => (await cli(["logs", "hello"])).stdout.includes("hello from hello"),
      60_000,
      500,
    );

    // On a terminal (a pseudo-terminal from script): the block of pods rewritten in place, then the summary.
    const emptied = await script("node bin/podsync.mjs apply -f examples/empty.yaml --prune-all");
    expect(emptied.code, emptied.stdout).toBe(0);
    const esc = String.fromCharCode(27);
    expect(emptied.stdout).toMatch(new RegExp(`${esc}\\[\\d+F${esc}\\[Japplying generation \\d+: `));
    expect(emptied.stdout).toMatch(/pod\/\S+: Stopping container main\r?\n/);
    expect(emptied.stdout).toMatch(/generation \d+: 0 created, 0 configured, 0 unchanged, \d+ deleted, 0 warnings/);
    // Every workload leaves the desired state (a kill the loaded lab runtime times out is retried by the loop).
    for (const w of ["deployment/web", "statefulset/db", "daemonset/agent", "job/count", "cronjob/tick"])
      expect(emptied.stdout).toContain(`${w} deleted`);
    // The workloads are gone (their pods go at the controllers' next pass; another node's pods on the same lab
    // runtime would be listed as orphans, so pods are not counted here).
    expect((await cli(["get", "deploy,sts,ds,job,cj", "-A", "-o", "name"])).stdout).toBe("");
    // The StatefulSet is gone; its claim (kept: persistentVolumeClaimRetentionPolicy Retain, the default) still lists
    // as a Bound claim, in the CLI and in kubectl against the node's Kubernetes API.
    expect((await cli(["get", "pvc"])).stdout).toMatch(/^data-db-0\s+Bound\s/m);
    const kc = await cli(["kubeconfig", "--server", running.tls!.url]);
    expect(kc.code, kc.stderr).toBe(0);
    writeFileSync(join(dir, "kubeconfig"), kc.stdout);
    const k = await new Promise<{ code: number; stdout: string; stderr: string }>((res) =>
      execFile(
        process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl",
        ["get", "pvc"],
        { env: { ...process.env, HOME: join(dir, "home"), KUBECONFIG: join(dir, "kubeconfig") }, timeout: 60_000 },
        (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(k.code, k.stderr).toBe(0);
    expect(k.stdout).toMatch(/^data-db-0\s+Bound\s/m);
  }, 600_000);
});
