// Real clients nobody on this project wrote, as processes, against a lab node on the REAL containerd (issue 40):
// kubectl 1.30-1.33 (explain, apply to its 403, auth can-i, top pod/node, debug to its refusal, get with trailing
// slashes, namespaces), @kubernetes/client-node 1.4.0 (list, informer, log follow with `pretty=`, exec) and
// Debian's python3-kubernetes (list, watch=True, log follow=True, exec stdout=True: it sends booleans as `True`).
// A missing client fails this suite, it never skips it (unless PODSYNC_SKIP_E2E=1, as for every e2e suite).
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { importJWK, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Running } from "../../src/node.js";
import { uid } from "../support/pods.js";
import { until } from "../support/wait.js";
import { writeKubeconfig } from "../support/kubeconfig.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

/** The Cloud SDK's bundled kubectls beside /usr/bin/kubectl's dispatcher (docs/kubectl.md). */
const KUBECTL_DIR = process.env["PODSYNC_KUBECTL_DIR"] ?? "/usr/lib/google-cloud-sdk/bin";
const VERSIONS = ["1.30", "1.31", "1.32", "1.33"];
/** Debian's python3, with python3-kubernetes (not a pyenv or venv one). */
const PYTHON = process.env["PODSYNC_PYTHON"] ?? "/usr/bin/python3";
const NODE = "clients-e2e";
const NS = `clients-${uid("")
  .replace(/[^a-z0-9]/g, "")
  .slice(-8)}`;
const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "podsync-clients-e2e-"));
let running: Running;
let key: JWK & { alg: string };

async function sign(claims: Record<string, unknown>): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, ...(key.kid ? { kid: key.kid } : {}) })
    .setIssuer("podsync-dev")
    .setAudience(NODE)
    .setIssuedAt()
    .setExpirationTime("5m")
    .setJti(crypto.randomUUID())
    .sign(await importJWK(key, key.alg));
}

function run(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((res) =>
    execFile(
      cmd,
      args,
      { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig"), ...env }, timeout: 90_000 },
      (e, out, err) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

const kubectl = (v: string, ...args: string[]) =>
  run(join(KUBECTL_DIR, `kubectl.${v}`), [...args, "--cache-dir", join(dir, `cache-${v}`)]);

/** A kubeconfig for the node with a static read token (`exec` as asked). */
async function kubeconfigFile(file: string, exec: boolean) {
  const token = await sign({ act: "read", ...(exec ? { exec: true } : {}) });
  writeKubeconfig(file, { name: NODE, tls: running.tls!, token, namespace: NS });
}

const lines = (out: string) =>
  out
    .trim()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe.skipIf(skip)("real clients against the node's Kubernetes API", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    for (const v of VERSIONS)
      if (!existsSync(join(KUBECTL_DIR, `kubectl.${v}`)))
        throw new Error(`kubectl.${v} is missing in ${KUBECTL_DIR} (set PODSYNC_KUBECTL_DIR)`);
    const py = await run(PYTHON, ["-c", "import kubernetes"]);
    if (py.code !== 0)
      throw new Error(`${PYTHON} has no kubernetes module: apt-get install python3-kubernetes (${py.err.trim()})`);
    const { startNode } = await import("../../src/node.js");
    running = await startNode(
      {
        PODSYNC_CRI_ENDPOINT: endpoint,
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_PORT: "0",
        PODSYNC_NODE_NAME: NODE,
        PODSYNC_POLICY: "privileged",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_STATE_DIR: join(dir, "state"),
        PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
        PODSYNC_RELIST_INTERVAL_MS: "300",
        PODSYNC_ALLOW_EXEC: "true",
      },
      true,
    );
    if (!running.tls) throw new Error("the server serves no TLS");
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { alg: string };
    await kubeconfigFile(join(dir, "kubeconfig"), true);
    await kubeconfigFile(join(dir, "kubeconfig-noexec"), false);
    const r = await fetch(`${running.url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await sign({
        act: "sync",
        items: [
          {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "web", namespace: NS, uid: uid("web"), labels: { app: "web" } },
            spec: {
              terminationGracePeriodSeconds: 1,
              containers: [
                {
                  name: "main",
                  image: "localhost/busybox:1",
                  imagePullPolicy: "IfNotPresent",
                  command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.2; done"],
                },
              ],
            },
          },
          {
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name: "site", namespace: NS, uid: uid("site") },
            spec: {
              replicas: 1,
              selector: { matchLabels: { app: "site" } },
              template: {
                metadata: { labels: { app: "site" } },
                spec: {
                  terminationGracePeriodSeconds: 1,
                  containers: [
                    {
                      name: "main",
                      image: "localhost/busybox:1",
                      imagePullPolicy: "IfNotPresent",
                      command: ["sleep", "3600"],
                    },
                  ],
                },
              },
            },
          },
        ],
      }),
    });
    expect(r.status, await r.clone().text()).toBe(200);
    await until(
      "the pod runs",
      async () => ((await kubectl("1.33", "get", "pod", "web")).out.includes("Running") ? true : undefined),
      60_000,
    );
  }, 180_000);

  afterAll(async () => {
    if (!running) return;
    await fetch(`${running.url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await sign({ act: "sync", items: [] }),
    }).catch(() => undefined);
    await running.close();
  }, 60_000);

  describe.each(VERSIONS)("kubectl %s", (v) => {
    it("get with trailing slashes; get ns lists the node's namespaces (kubens)", async () => {
      for (const p of ["/api/", "/apis/", "/api/v1/", "/version/"]) {
        const r = await kubectl(v, "get", "--raw", p);
        expect(r.code, `${p}: ${r.err}`).toBe(0);
        expect(JSON.parse(r.out)).toBeTypeOf("object");
      }
      const ns = await kubectl(v, "get", "ns");
      expect(ns.out).toMatch(new RegExp(`^${NS}\\s+Active\\s+\\d+`, "m"));
      expect(ns.out.split("\n")[0]).toMatch(/^NAME\s+STATUS\s+AGE/);
      const missing = await kubectl(v, "get", "--raw", "/openapi/v3/apis/nope/v1");
      expect(missing.err).toContain("NotFound");
    }, 120_000);

    it("explain pod.spec.containers prints upstream's text", async () => {
      const r = await kubectl(v, "explain", "pod.spec.containers");
      expect(r.code, r.err).toBe(0);
      expect(r.out).toContain("FIELD: containers <[]Container>");
      expect(r.out.replace(/\s+/g, " ")).toContain("List of containers belonging to the pod.");
    }, 120_000);

    it("apply validates, sends its request, and gets the 403 naming the signed way", async () => {
      const file = join(dir, `apply-${v}.yaml`);
      writeFileSync(
        file,
        `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: other, namespace: ${NS}}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: main, image: localhost/busybox:1}]}\n`,
      );
      const r = await kubectl(v, "apply", "-f", file);
      expect(r.code).not.toBe(0);
      expect(r.err).not.toContain("openapi");
      expect(r.err).toContain("Error from server (Forbidden)");
      expect(r.err).toContain("podsync apply FILE");
    }, 120_000);

    it("auth can-i prints yes or no for the token", async () => {
      expect((await kubectl(v, "auth", "can-i", "list", "pods")).out.trim()).toBe("yes");
      expect((await kubectl(v, "auth", "can-i", "watch", "deployments.apps")).out.trim()).toBe("yes");
      const del = await kubectl(v, "auth", "can-i", "delete", "pods");
      expect(del.code).toBe(1);
      expect(del.out.trim()).toMatch(/^no/);
      expect((await kubectl(v, "auth", "can-i", "create", "pods", "--subresource=exec")).out.trim()).toBe("yes");
      const noExec = await run(join(KUBECTL_DIR, `kubectl.${v}`), ["auth", "can-i", "create", "pods/exec"], {
        KUBECONFIG: join(dir, "kubeconfig-noexec"),
      });
      expect(noExec.out.trim()).toMatch(/^no/);
    }, 120_000);

    it("top pod and top node", async () => {
      const pod = await kubectl(v, "top", "pod");
      expect(pod.code, pod.err).toBe(0);
      expect(pod.out).toMatch(/^web\s+\d+m\s+\d+Mi/m);
      const node = await kubectl(v, "top", "node");
      expect(node.code, node.err).toBe(0);
      expect(node.out).toMatch(new RegExp(`^${NODE}\\s+\\d+m\\s+\\d+%\\s+\\d+Mi`, "m"));
    }, 120_000);

    it("debug reaches a clear refusal, not a panic", async () => {
      const r = await kubectl(v, "debug", "web", "--image=localhost/busybox:1", "--profile=general");
      expect(r.code).not.toBe(0);
      expect(r.err).not.toMatch(/panic|nil pointer/);
      expect(r.err).toContain('pods "web" is forbidden');
    }, 120_000);
  });

  it("@kubernetes/client-node 1.4.0: list, informer, log follow (with pretty=), exec", async () => {
    const r = await run(process.execPath, [join(here, "clients", "client-node.mjs"), NS, "web"]);
    expect(r.code, r.err).toBe(0);
    const got = lines(r.out);
    expect(got.find((x) => x["check"] === "list")?.["names"]).toContain("web");
    expect(got.find((x) => x["check"] === "informer")?.["added"]).toBe("web");
    expect(got.find((x) => x["check"] === "log")?.["lines"]).toEqual([
      expect.stringMatching(/^line \d+$/),
      expect.stringMatching(/^line \d+$/),
      expect.stringMatching(/^line \d+$/),
    ]);
    expect(got.find((x) => x["check"] === "exec")).toMatchObject({ stdout: "hi from exec\n", status: "Success" });
  }, 120_000);

  it("Debian's python3-kubernetes: list, watch=True, log follow=True, exec stdout=True", async () => {
    const r = await run(PYTHON, [join(here, "clients", "python-client.py"), NS, "web"]);
    expect(r.code, r.err).toBe(0);
    const got = lines(r.out);
    expect(got.find((x) => x["check"] === "list")?.["names"]).toContain("web");
    expect(got.find((x) => x["check"] === "watch")?.["events"]).toEqual([["ADDED", expect.any(String)]]);
    expect(got.find((x) => x["check"] === "log")?.["lines"]).toHaveLength(3);
    expect(got.find((x) => x["check"] === "exec")?.["stdout"]).toBe("hi from exec\n");
  }, 120_000);
});
