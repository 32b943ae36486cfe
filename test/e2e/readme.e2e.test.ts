// The README's quickstart as a new user runs it: every ```sh block of README.md, in order, in a fresh copy of the
// repository (the files git tracks or would track, as they are on disk: no dist/, no .podsync/), against the lab
// containerd. Each line runs as written in one bash script (set -e), except:
//   - `npm test` is left out (this suite is what runs it);
//   - `npm ci` links the checkout's node_modules instead of installing (installing is npm's job), then runs what
//     npm ci runs after installing: `prepare`, which builds dist/ from nothing;
//   - `npm start` runs in the background (the README's "leave it running"), replacing a node an earlier block
//     started (the README's "stop it and start it"), and the script goes on once the node says it is listening;
//   - a command that follows (`logs -f`, `get -w`) runs for a few seconds, then is stopped, as Ctrl-C would.
// The node listens on a free port, and PODSYNC_URL says so (the README names no port in its commands), so a podsync
// a developer runs on the default port is not touched. HOME is a fresh directory. The node runs the Services data
// plane as a user's would (the default, auto: root), so this file is in the project `dataplane` (one at a time);
// its cluster DNS forwards only to a closed port on 127.0.0.1 (every name the app asks is the cluster's).
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { flushServiceTable } from "../../src/services/proxy/flush.js";
import { freePort } from "../support/free-port.js";
import { MACHINE_LOCK_WAIT_MS, machineLock } from "../support/machine-lock.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const root = process.cwd();

/** The README's ```sh blocks, and the script they make (see the header). */
/** The lab dir the quickstart's `npm run lab:start` must name: the one whose socket this run was given (the lab
 * script keeps its pid file beside the socket), so the README never starts or reaches a containerd in the default
 * lab dir (/tmp/podsync-lab) while the suite runs on another. */
function labDirOf(endpoint: string): string {
  const sock = endpoint.replace(/^unix:\/\//, "");
  const dir = dirname(sock);
  if (sock.endsWith("/containerd.sock") && existsSync(join(dir, "containerd.pid"))) return dir;
  throw new Error(
    `the README test runs the quickstart's lab:start, which needs the lab containerd: ${endpoint} is not a lab's socket (scripts/containerd-lab.sh; set PODSYNC_LAB_DIR and PODSYNC_CRI_ENDPOINT to one lab)`,
  );
}

function quickstartScript(readme: string): string {
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  const lines: string[] = [];
  for (const line of blocks.join("\n").split("\n")) {
    const cmd = line.replace(/\s+#.*$/, "").trim();
    if (!cmd || cmd.startsWith("#")) continue;
    const parts = cmd.split(/\s*&&\s*/).filter((p) => p !== "npm test");
    const out = parts.map((p) =>
      p === "npm ci"
        ? 'ln -sfn "$NODE_MODULES" node_modules && npm run -s prepare'
        : /(^|\s)npm start$/.test(p)
          ? `start_node ${p.replace(/\s*npm start$/, "")}`
          : /\blogs\b.* (-f|--follow)( |$)/.test(p) || /\bget\b.* (-w|--watch)( |$)/.test(p)
            ? `follow ${p}`
            : p,
    );
    if (out.length) lines.push(out.join(" && "));
  }
  return [
    "set -euo pipefail",
    'node_pid=""',
    // Each backgrounded command gets a process group of its own (setsid), so stopping it stops its children too.
    'stop_node() { if [ -n "$node_pid" ]; then kill -- -"$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true; node_pid=""; fi; }',
    "trap stop_node EXIT",
    // `npm start` backgrounded; its node process is npm's child, so the whole group is stopped.
    // The wait ends when the node says it listens, or when it has exited.
    'start_node() { stop_node; ( [ $# -gt 0 ] && export "$@"; exec setsid npm start ) > node.log 2>&1 & node_pid=$!; echo "$node_pid" > node.pid; for _ in $(seq 1 1800); do grep -q "listening on" node.log && return 0; kill -0 "$node_pid" 2>/dev/null || break; sleep 0.1; done; cat node.log >&2; return 1; }',
    // Still following a second after its first output is the success; a follow that ended by itself answers with
    // its own exit code. Its first output is waited for (up to 60 s, polled): `npx podsync` alone takes ~4 s to
    // start on a loaded machine, so a fixed window saw nothing.
    'follow() { local out; out=$(mktemp); setsid "$@" > >(tee "$out") & local pid=$!; for _ in $(seq 1 600); do [ -s "$out" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done; sleep 1; if kill -0 "$pid" 2>/dev/null; then kill -- -"$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; else wait "$pid"; fi; rm -f "$out"; }',
    ...lines,
  ].join("\n");
}

/** The quickstart's script and the node it started (its own session), stopped in afterAll if a timeout left them
 * running: nothing of this file may go on after it (the clean-up below would race it). */
let script: ReturnType<typeof spawn> | undefined;
let nodePidFile = "";

/** The quickstart's node runs the machine's one data plane: one such file at a time (test/support/machine-lock.ts). */
let release: (() => void) | undefined;
beforeAll(async () => {
  if (!skip) release = await machineLock("dataplane");
}, MACHINE_LOCK_WAIT_MS);

afterAll(async () => {
  if (skip || !endpoint) return release?.();
  if (script && script.exitCode === null) {
    script.kill("SIGKILL");
    try {
      process.kill(-Number(readFileSync(nodePidFile, "utf8").trim()), "SIGTERM");
    } catch {
      // no node running
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  // The quickstart deletes its pod; if it failed half way, the pod goes here.
  const cri = connectGrpc({ endpoint });
  const rt = createPodRuntime(cri, {});
  await rt.delete("6f1c2a3e-0d4b-4c55-9a8e-1b2c3d4e5f60", 0).catch(() => undefined);
  // examples/app.yaml's pods (uids the node derived), and the data plane's table.
  const left = await cri.listPodSandbox({}).catch(() => ({ items: [] }));
  for (const sb of left.items)
    if (sb.metadata?.namespace === "default" && ["web", "greeter"].includes(sb.metadata.name))
      await rt.delete(sb.metadata.uid, 0).catch(() => undefined);
  cri.close();
  await flushServiceTable();
  release?.();
});

describe.skipIf(skip)("README.md", () => {
  it("the script keeps every command but npm test, with the node in the background", () => {
    const s = quickstartScript(
      "```sh\nnpm ci && npm start     # x\nnpm test   # y\n```\ntext\n```sh\nA=1 B=2 npm start\nnpx podsync logs x -f   # z\nnpx podsync apply -f f.yaml\n```\n",
    );
    const real = quickstartScript(readFileSync(join(root, "README.md"), "utf8")).split("\n");
    expect(real).toContain("follow npx podsync logs hello -f");
    expect(real).toContain("follow kubectl get pods -w");
    expect(real).toContain("follow kubectl logs -f hello");
    expect(real).toContain("npx podsync apply -f examples/pod.yaml --dry-run");
    expect(real.filter((l) => /(^|&& )start_node( |$)/.test(l))).toHaveLength(2);
    expect(s.split("\n").slice(-4)).toEqual([
      'ln -sfn "$NODE_MODULES" node_modules && npm run -s prepare && start_node ',
      "start_node A=1 B=2",
      "follow npx podsync logs x -f",
      "npx podsync apply -f f.yaml",
    ]);
  });

  it("its quickstart works as written, in a fresh copy, on the lab containerd", async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    const dir = mkdtempSync(join(tmpdir(), "podsync-readme-"));
    const copy = join(dir, "podsync");
    const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: root,
      encoding: "utf8",
    })
      .split("\0")
      .filter(Boolean);
    for (const f of files) {
      mkdirSync(dirname(join(copy, f)), { recursive: true });
      try {
        cpSync(join(root, f), join(copy, f));
      } catch {
        // a file git tracks but the worktree deleted: not in a fresh copy either
      }
    }
    const text = quickstartScript(readFileSync(join(root, "README.md"), "utf8"));
    writeFileSync(join(dir, "quickstart.sh"), text);
    const port = await freePort();
    const home = join(dir, "home");
    mkdirSync(home);
    const env = {
      PATH: process.env["PATH"] ?? "",
      HOME: home,
      NODE_MODULES: join(root, "node_modules"),
      PODSYNC_CRI_ENDPOINT: endpoint,
      PODSYNC_PORT: String(port),
      PODSYNC_URL: `http://127.0.0.1:${port}`,
      // the node's state and pod data in the copy, as a user's would be (dev mode keeps state beside the dev key)
      PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
      PODSYNC_ROOT_DIR: join(dir, "root"),
      PODSYNC_DNS_UPSTREAM: `127.0.0.1:${await freePort()}`,
      // `npm run lab:start` in the README: the lab this run uses (its socket's), never the default one.
      PODSYNC_LAB_DIR: labDirOf(endpoint),
    };
    nodePidFile = join(copy, "node.pid");
    const child = spawn("bash", [join(dir, "quickstart.sh")], { cwd: copy, env });
    script = child;
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number>((r) => child.once("exit", (c) => r(c ?? -1)));
    const log = () =>
      `stdout:\n${stdout}\nstderr:\n${stderr}\nnode:\n${(() => {
        try {
          return readFileSync(join(copy, "node.log"), "utf8");
        } catch {
          return "";
        }
      })()}`;
    expect(code, log()).toBe(0);
    expect(stdout).toMatch(/^pod\/hello \(default, uid 6f1c2a3e-0d4b-4c55-9a8e-1b2c3d4e5f60\): create sandbox/m);
    expect(stdout).toContain("pod/hello condition met");
    // AGE as kubectl's HumanDuration writes it: 45s, 2m5s, 12m (a loaded machine takes minutes to get here).
    expect(stdout).toMatch(
      /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+UID\nhello\s+1\/1\s+Running\s+0\s+(\d+[smh])+\s+[\d.]+\s+\S+\s+6f1c2a3e-/m,
    );
    expect(stdout).toMatch(/^hello from hello\nhello is up \(1\)\n/m);
    // kubectl, with the kubeconfig the README makes: the pod in its table, then its log
    expect(stdout).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nhello\s+1\/1\s+Running\s+0\s+(\d+[smh])+\n/m);
    expect(stdout.split("hello from hello").length).toBeGreaterThanOrEqual(3);
    expect(stdout).toContain("pod/hello unchanged (dry run)");
    expect(stdout).toContain('pod "hello" deleted');
    // The two-service app: web reached greeter by name (cluster DNS, ClusterIP), and the host reached web.
    expect(stdout).toContain("service/greeter created");
    expect(stdout).toContain("pod/web condition met");
    expect(stdout.split("greeter says: hello from greeter").length, log()).toBeGreaterThanOrEqual(3);
    expect(stdout).toContain('service "greeter" deleted');
    expect(stdout).toContain('pod "greeter" deleted');
  }, 480_000);
});
