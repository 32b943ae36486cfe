// The CLI as a user drives it: `node bin/podsync.mjs` as a process against the Node server (startNode, dev key,
// file state) on the REAL containerd. Pods are addressed by name; the old uid forms still work; errors are
// printed once with exit code 1. Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import type { Running } from "../../src/node.js";
import { uid, deleteAll } from "../support/pods.js";
import { until } from "../support/wait.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const dir = mkdtempSync(join(tmpdir(), "podsync-cli-e2e-"));
const home = join(dir, "home");
const NS = "cli-e2e";
const made: string[] = [];
const children: ReturnType<typeof spawn>[] = [];
let running: Running;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI with a clean environment: the node's URL and dev key from the environment, a HOME of its own. */
function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((res) =>
    execFile(
      process.execPath,
      ["bin/podsync.mjs", ...args],
      {
        env: {
          PATH: process.env["PATH"] ?? "",
          HOME: home,
          PODSYNC_URL: running?.url ?? "",
          PODSYNC_KEY: join(dir, "dev-key.json"),
          ...env,
        },
      },
      (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

function podYaml(name: string, id: string, extra: { labels?: string } = {}): string {
  made.push(id);
  return [
    "apiVersion: v1",
    "kind: Pod",
    `metadata: { name: ${name}, namespace: ${NS}, uid: ${id}, labels: { app: cli, ${extra.labels ?? "tier: web"} } }`,
    "spec:",
    "  terminationGracePeriodSeconds: 3",
    "  containers:",
    "    - name: main",
    "      image: localhost/busybox:1",
    "      imagePullPolicy: IfNotPresent",
    `      command: ["sh", "-c", "echo started; i=0; while true; do i=$((i+1)); echo tick $i; sleep 1; done"]`,
  ].join("\n");
}

beforeAll(async () => {
  if (skip) return;
  if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
  const { startNode } = await import("../../src/node.js");
  running = await startNode(
    {
      PODSYNC_CRI_ENDPOINT: endpoint,
      PODSYNC_SERVICE_DATAPLANE: "off",
      PODSYNC_PORT: "0",
      PODSYNC_NODE_NAME: "cli-node",
      PODSYNC_ALLOW_EXEC: "true",
      PODSYNC_DEV_DIR: dir,
      PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
      PODSYNC_ROOT_DIR: join(dir, "root"),
    },
    true,
  );
});

afterAll(async () => {
  for (const c of children) c.kill();
  if (skip || !endpoint) return;
  await running?.close();
  const cri = connectGrpc({ endpoint });
  const rt = createPodRuntime(cri, {});
  await deleteAll(rt, made);
  cri.close();
});

describe.skipIf(skip)("podsync CLI, usage", () => {
  it("bare podsync is a usage error; --help and per-command help answer; flags are refused in podsync's words", async () => {
    const bare = await cli([]);
    expect(bare.code).toBe(1);
    expect(bare.stdout).toBe("");
    expect(bare.stderr).toContain("usage: podsync COMMAND");
    const help = await cli(["--help"]);
    expect(help).toMatchObject({ code: 0, stdout: expect.stringContaining("commands:") });
    const getHelp = await cli(["get", "--help"]);
    expect(getHelp.code).toBe(0);
    expect(getHelp.stdout).toMatch(/usage: podsync get[\s\S]*examples:\n {2}podsync get pods/);
    const bad = await cli(["get", "--bogus"]);
    expect(bad).toMatchObject({ code: 1, stdout: "" });
    expect(bad.stderr).toBe("podsync: unknown flag --bogus\nSee 'podsync get --help' for usage.\n");
    const it = await cli(["exec", "-it", "web", "--", "sh"]);
    expect(it.code).toBe(1);
    expect(it.stderr).toContain("exec has no interactive mode (-i, -t)");
    expect(it.stderr).not.toContain("positional argument");
    const typo = await cli(["gte"]);
    expect(typo.stderr).toContain('unknown command "gte"');
  });

  it("names where it looked for a key, and a node that is not there", async () => {
    const none = await cli(["pods"], { PODSYNC_KEY: "" });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no signing key found; looked at:");
    expect(none.stderr).toContain(join(home, ".config/podsync/key.json"));
    expect(none.stderr).toContain("PODSYNC_JWKS_FILE=");
    const refused = await cli(["pods", "--url", "http://127.0.0.1:2"]);
    expect(refused.stderr).toBe(
      "podsync: cannot reach podsync at http://127.0.0.1:2: connection refused: nothing listens there (start the node with `npm start`, or point --url / $PODSYNC_URL at it)\n",
    );
  });
});

describe.skipIf(skip)("podsync CLI against a node", () => {
  const webId = uid("cli-web");
  const web = `web-${webId.slice(-6)}`;

  it("sync, then get/wait/logs/exec/token/delete by name; the uid forms still work", async () => {
    const file = join(dir, "web.yaml");
    writeFileSync(file, podYaml(web, webId));
    const synced = await cli(["sync", file]);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stdout).toMatch(new RegExp(`^pod/${web} \\(${NS}, uid ${webId}\\): create sandbox`));

    const ready = await cli(["wait", "--for=condition=Ready", `pod/${web}`, "-n", NS, "--timeout=30s"]);
    expect(ready, ready.stderr).toMatchObject({ code: 0, stdout: `pod/${web} condition met\n` });

    const table = await cli(["get", web, "-n", NS]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(
      new RegExp(`^NAME\\s+READY\\s+STATUS\\s+RESTARTS\\s+AGE\\n${web}\\s+1/1\\s+Running\\s+0\\s+\\d+s\\n$`),
    );
    const wide = await cli(["get", "pods", "-n", NS, "-o", "wide"]);
    expect(wide.stdout).toMatch(/UID/);
    expect(wide.stdout).toContain(webId);
    expect(wide.stdout).toContain("cli-node");
    expect((await cli(["get", `pod/${web}`, "-n", NS, "-o", "jsonpath={.metadata.uid}"])).stdout).toBe(`${webId}\n`);
    expect((await cli(["get", "pods", "-n", NS, "-o", "name"])).stdout).toBe(`pod/${web}\n`);
    expect((await cli(["get", "pods", "-A", "-l", "app=cli,tier in (web)", "--no-headers"])).stdout).toMatch(
      new RegExp(`^${NS}\\s+${web}\\s+1/1\\s+Running`),
    );
    expect((await cli(["get", "pods", "-A", "-l", "app=cli,tier!=web"])).stdout).toBe(""); // (the node also lists other tests' pods, as orphans)
    const json = JSON.parse((await cli(["get", web, "-n", NS, "-o", "json"])).stdout);
    expect(json).toMatchObject({ kind: "Pod", metadata: { name: web, uid: webId } });
    // the old form: a uid, no namespace
    expect((await cli(["get", webId])).stdout).toContain(web);

    const pods = await cli(["pods"]);
    expect(pods.stdout).toMatch(new RegExp(`^NAMESPACE\\s+NAME[^\\n]*\\n${NS}\\s+${web}\\s`));
    expect(pods.stdout).not.toContain("generation");
    expect(pods.stderr).not.toContain("generation"); // only apply and sync say it (issue 41)
    expect((await cli(["pods", "-q"])).stderr).toBe("");

    const logs = await cli(["logs", web, "-n", NS, "--tail", "1"]);
    expect(logs.stdout).toMatch(/^(started|tick \d+)\n$/);
    expect((await cli(["logs", webId])).stdout).toMatch(/^started\n/);

    const ex = await cli(["exec", web, "-n", NS, "--", "sh", "-c", "echo hi; echo err >&2; exit 3"]);
    expect(ex).toMatchObject({ code: 3, stdout: "hi\n", stderr: "err\n" });
    const nope = await cli(["exec", web, "-n", NS, "--", "no-such-binary"]);
    expect(nope).toMatchObject({ code: 127, stdout: "" });
    expect(nope.stderr).toBe(
      `podsync: the container cannot run "no-such-binary": executable file not found in $PATH (in pod ${NS}/${web})\n`,
    );

    const tok = await cli(["token", "--act", "logs", "--name", web, "-n", NS]);
    expect(tok.code, tok.stderr).toBe(0);
    const r = await fetch(`${running.url}/v1/pods/${webId}/logs?tailLines=1`, {
      headers: { authorization: `Bearer ${tok.stdout.trim()}` },
    });
    expect(r.status).toBe(200);
    const list = await fetch(`${running.url}/v1/pods`, {
      headers: { authorization: `Bearer ${(await cli(["token", "--act", "status"])).stdout.trim()}` },
    });
    expect(list.status).toBe(200);
    expect((await cli(["token", "--act", "logs"])).stderr).toContain("--act logs needs --uid or --name");

    // -w prints the table, then the row again when it changes (the delete below stops the pod)
    const watch = spawn(process.execPath, ["bin/podsync.mjs", "get", "pods", "-n", NS, "-w", "--no-headers"], {
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: home,
        PODSYNC_URL: running.url,
        PODSYNC_KEY: join(dir, "dev-key.json"),
      },
    });
    children.push(watch); // stopped in afterAll too, should the test fail before it stops it
    let watched = "";
    watch.stdout.on("data", (b: Buffer) => (watched += b.toString()));
    const firstRow = new Promise<void>((res) => watch.stdout.once("data", () => res()));
    await firstRow;

    const missing = await cli(["delete", "nope", "-n", NS]);
    expect(missing).toMatchObject({ code: 1, stdout: "" });
    expect(missing.stderr).toBe(`podsync: pods "nope" not found in namespace "${NS}"\n`);
    const other = await cli(["get", web]);
    expect(other.stderr).toContain(`(there is one in "${NS}": add -n ${NS})`);
    expect(other.code).toBe(1);

    const del = await cli(["delete", web, "-n", NS, "--grace-period=1"]);
    expect(del, del.stderr).toMatchObject({ code: 0, stdout: `pod "${web}" deleted\n` });
    expect(del.stderr).toContain("grace period 1s");
    // the row again when the pod changed or went away
    await until(
      "get -w to print the pod again",
      async () => watched.split("\n").filter((l) => l.startsWith(web)).length >= 2,
      10_000,
    );
    watch.kill();
    const gone = await cli(["wait", web, "-n", NS, "--for=delete", "--timeout=5s"]);
    expect(gone.code).toBe(0);
    expect((await cli(["get", web, "-n", NS])).code).toBe(1);
  }, 90_000); // ~20 s alone: some 30 CLI processes, each a node start
});
