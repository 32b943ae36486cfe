// The CLI against a Workers node: `node bin/podsync.mjs` as a process with --url pointing at the Worker's
// `/nodes/{node}` (workerd, through cri-proxy on the REAL containerd), as a fleet operator would use it: sync,
// get, logs, delete by name. Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK } from "jose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startProxy, type RunningProxy } from "../../src/proxy/cri-proxy.js";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { ISSUER, makeKey } from "../support/http.js";
import { startWorkerd, type Workerd } from "../support/workerd.js";
import { uid } from "../support/pods.js";
import { until } from "../support/wait.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");
const TOKEN = "cli-worker-proxy-token";
const NODE = "cli-worker-node";
const NS = "cli-worker";
const dir = mkdtempSync(join(tmpdir(), "podsync-cli-worker-"));
const id = uid("cliw");

let proxy: RunningProxy;
let worker: Workerd;
let url = "";

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) =>
    execFile(
      process.execPath,
      ["bin/podsync.mjs", ...args],
      { env: { PATH: process.env["PATH"] ?? "", HOME: dir, PODSYNC_URL: url, PODSYNC_KEY: join(dir, "key.json") } },
      (e, stdout, stderr) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

describe.skipIf(skip)("the CLI against a Workers node (workerd, cri-proxy, real containerd)", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the CLI-on-Workers e2e: ${setupError}`);
    // The proxy serves the node's pod logs; the Worker tells containerd to write them there.
    proxy = await startProxy({
      upstream: endpoint,
      grpcWebListen: "127.0.0.1:0",
      token: TOKEN,
      policy: { level: "privileged", hostPathAllow: [] },
      podLogsDir: join(dir, "logs"),
    });
    const key = await makeKey("EdDSA", "cliw-1");
    // The private key as `podsync keygen` writes it: a JWK with its kid, alg and issuer.
    writeFileSync(
      join(dir, "key.json"),
      JSON.stringify({ ...(await exportJWK(key.privateKey)), kid: key.kid, alg: key.alg, iss: ISSUER }),
    );
    let base: URL;
    ({ worker, base } = await startWorkerd({
      nodes: { [NODE]: { url: `http://127.0.0.1:${proxy.grpcWebPort}` } },
      jwk: key.publicJwk,
      proxyToken: TOKEN,
      env: { PODSYNC_POLICY: "privileged", PODSYNC_POD_LOGS_DIR: join(dir, "logs") },
    }));
    url = new URL(`/nodes/${NODE}`, base).toString();
  }, 120_000);

  afterAll(async () => {
    await worker?.dispose();
    if (endpoint) {
      const cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
      await createPodRuntime(cri)
        .delete(id, 0)
        .catch(() => undefined);
      cri.close();
    }
    await proxy?.shutdown(100);
  });

  it("sync, get, logs and delete by name", async () => {
    const file = join(dir, "pod.yaml");
    writeFileSync(
      file,
      [
        "apiVersion: v1",
        "kind: Pod",
        `metadata: { name: web, namespace: ${NS}, uid: ${id} }`,
        "spec:",
        "  hostNetwork: true",
        "  terminationGracePeriodSeconds: 1",
        "  containers:",
        "    - name: main",
        "      image: localhost/busybox:1",
        "      imagePullPolicy: IfNotPresent",
        '      command: ["sh", "-c", "echo hello from the worker; sleep 1d"]',
      ].join("\n"),
    );
    const sync = await cli(["sync", file]);
    expect(sync, sync.stderr).toMatchObject({ code: 0 });
    expect(sync.stdout).toContain(`pod/web (${NS}, uid ${id}): create sandbox`);

    const get = await cli(["get", "pods", "-n", NS, "--no-headers"]);
    expect(get, get.stderr).toMatchObject({ code: 0 });
    expect(get.stdout).toMatch(/^web\s+1\/1\s+Running\s+0\s+\d+s\n$/);

    let logs = { code: -1, stdout: "", stderr: "" };
    await until(
      "the pod's log line",
      async () => (logs = await cli(["logs", "web", "-n", NS])).stdout === "hello from the worker\n",
      20_000,
    ).catch((e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(logs)}`);
    });

    const del = await cli(["delete", "web", "-n", NS]);
    expect(del, del.stderr).toMatchObject({ code: 0, stdout: 'pod "web" deleted\n' });
    const after = await cli(["get", "web", "-n", NS]);
    expect(after.code).toBe(1);
    expect(after.stderr).toContain(`pods "web" not found in namespace "${NS}"`);
  }, 120_000);
});
