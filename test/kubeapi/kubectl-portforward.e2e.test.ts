// kubectl port-forward (and exec for kubectl 1.27–1.29) over SPDY against the Node server on the REAL containerd:
// the Cloud SDK's versioned kubectl binaries beside /usr/bin/kubectl. 1.30 upgrades to plain SPDY/3.1; 1.33
// tunnels SPDY through a WebSocket (`SPDY/3.1+portforward.k8s.io`); 1.28 execs over SPDY (v4.channel.k8s.io).
// A request goes through each forward to a busybox httpd in the pod.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { importJWK, SignJWT, type JWK } from "jose";
import type { Running } from "../../src/node.js";
import { until } from "../support/wait.js";
import { uid } from "../support/pods.js";
import { writeKubeconfig } from "../support/kubeconfig.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const BIN = dirname(realpathSync(process.env["PODSYNC_KUBECTL"] ?? "/usr/bin/kubectl"));
const kubectlOf = (v: string) => join(BIN, `kubectl.${v}`);
const NODE = "pf-e2e";
const NS = `pf-e2e-${uid("")
  .replace(/[^a-z0-9]/g, "")
  .slice(-8)}`;
const dir = mkdtempSync(join(tmpdir(), "podsync-pf-e2e-"));
let running: Running;
let key: JWK & { alg: string };
const WEB = uid("web");
const children: ChildProcess[] = [];

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

function kubectl(version: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((res) =>
    execFile(
      kubectlOf(version),
      args,
      { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") }, timeout: 60_000 },
      (e, out, err) => res({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

/** `kubectl port-forward pod/web :8080` until it prints its local port; the process and its output so far. */
async function portForward(
  version: string,
  ...extra: string[]
): Promise<{ port: number; out: () => string; child: ChildProcess }> {
  const child = spawn(kubectlOf(version), ["port-forward", "pod/web", ":8080", ...extra], {
    env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") },
  });
  children.push(child);
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  const port = await until(
    `kubectl ${version} port-forward listening`,
    async () => {
      const m = /Forwarding from 127\.0\.0\.1:(\d+) -> 8080/.exec(out);
      if (!m && child.exitCode !== null) throw new Error(`kubectl ${version} port-forward exited: ${out}`);
      return m ? Number(m[1]) : undefined;
    },
    30_000,
  );
  return { port, out: () => out, child };
}

describe.skipIf(skip)("kubectl port-forward and SPDY exec against the node", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    for (const v of ["1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33"])
      if (!existsSync(kubectlOf(v))) throw new Error(`kubectl ${v} is missing at ${kubectlOf(v)}`);
    const { startNode } = await import("../../src/node.js");
    running = await startNode(
      {
        PODSYNC_CRI_ENDPOINT: endpoint,
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_PORT: "0",
        PODSYNC_NODE_NAME: NODE,
        PODSYNC_POLICY: "privileged",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
        PODSYNC_RELIST_INTERVAL_MS: "300",
        PODSYNC_ALLOW_EXEC: "true",
        PODSYNC_ALLOW_PORT_FORWARD: "true",
      },
      true,
    );
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { alg: string };
    if (!running.tls) throw new Error("the server serves no TLS");
    writeKubeconfig(join(dir, "kubeconfig"), {
      name: NODE,
      tls: running.tls,
      token: await sign({ act: "read", exec: true, portForward: true }),
      namespace: NS,
    });
    const pod = {
      metadata: { name: "web", namespace: NS, uid: WEB },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "IfNotPresent",
            command: [
              "sh",
              "-c",
              "mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 8080 -h /www",
            ],
          },
        ],
      },
    };
    const r = await fetch(`${running.url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await sign({ act: "sync", pod }),
    });
    expect(r.status, await r.clone().text()).toBe(200);
    await until(
      "the pod running in kubectl's view",
      async () => {
        const g = await kubectl("1.30", "get", "pod", "web", "--no-headers");
        return /Running/.test(g.out) || undefined;
      },
      60_000,
    );
  }, 120_000);

  afterAll(async () => {
    for (const c of children) c.kill();
    await fetch(`${running.url}/v1/pods/${WEB}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await sign({ act: "delete", uid: WEB })}` },
    }).catch(() => undefined);
    await running?.close();
  }, 60_000);

  // 1.27–1.30 upgrade to plain SPDY/3.1; 1.31+ tunnel it through a WebSocket.
  for (const version of ["1.27", "1.29", "1.30", "1.31", "1.32", "1.33"])
    it(`kubectl ${version} port-forward (${version >= "1.31" ? "SPDY tunnelled through a WebSocket" : "plain SPDY/3.1"}): requests reach the pod's httpd`, async () => {
      const tunnel = version >= "1.31";
      const pf = await portForward(version, "-v=4");
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`http://127.0.0.1:${pf.port}/`);
        expect(r.status).toBe(200);
        expect(await r.text()).toBe("hello-from-pod\n");
      }
      // Two at once: each connection is its own stream pair in the one session.
      const both = await Promise.all([1, 2].map(() => fetch(`http://127.0.0.1:${pf.port}/`).then((r) => r.text())));
      expect(both).toEqual(["hello-from-pod\n", "hello-from-pod\n"]);
      // The tunnel's -v=4 log names the protocol negotiated there (and a fallback to plain SPDY when it is refused).
      if (tunnel) expect(pf.out()).toMatch(/negotiated protocol: portforward\.k8s\.io/);
      expect(pf.out()).not.toMatch(/fallback/i);
      expect(pf.out()).not.toMatch(/error/i);
      pf.child.kill();
    }, 90_000);

  it("a port nothing listens on: kubectl reports the runtime's error", async () => {
    const child = spawn(kubectlOf("1.30"), ["port-forward", "pod/web", ":9"], {
      env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") },
    });
    children.push(child);
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    const port = await until(
      "listening",
      async () => Number(/127\.0\.0\.1:(\d+) -> 9/.exec(out)?.[1]) || undefined,
      30_000,
    );
    await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined);
    await until(
      "kubectl names the refused port",
      async () => /(connection refused|failed to connect)/i.test(out) || undefined,
      30_000,
    );
    child.kill();
  }, 60_000);

  it("auth can-i create pods --subresource=portforward: yes with the token, no without the claim", async () => {
    const yes = await kubectl("1.30", "auth", "can-i", "create", "pods", "--subresource=portforward");
    expect(yes.out.trim()).toBe("yes");
    const no = await kubectl(
      "1.30",
      "--token",
      await sign({ act: "read" }),
      "auth",
      "can-i",
      "create",
      "pods",
      "--subresource=portforward",
    );
    expect(no.out.trim()).toMatch(/^no - this read token does not allow port-forward/);
  }, 60_000);

  it("port-forward with a token minted without it is refused, naming --port-forward", async () => {
    const r = await kubectl(
      "1.30",
      "--token",
      await sign({ act: "read", exec: true }),
      "port-forward",
      "pod/web",
      ":8080",
    );
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/does not allow port-forward/);
  }, 60_000);

  it("kubectl 1.27 and 1.29 over SPDY: get, exec", async () => {
    for (const v of ["1.27", "1.29"]) {
      const get = await kubectl(v, "get", "pods");
      expect(get.out, get.err).toMatch(/^web\s+1\/1\s+Running/m);
      const hi = await kubectl(v, "exec", "web", "--", "echo", `hi-${v}`);
      expect(hi.code, hi.err).toBe(0);
      expect(hi.out).toBe(`hi-${v}\n`);
    }
  }, 90_000);

  it("kubectl 1.28 exec over SPDY: output, stdin, the exit code, and -it with a TTY", async () => {
    const hi = await kubectl("1.28", "exec", "web", "--", "echo", "hi");
    expect(hi.code, hi.err).toBe(0);
    expect(hi.out).toBe("hi\n");
    const failing = await kubectl("1.28", "exec", "web", "--", "sh", "-c", "echo oops >&2; exit 7");
    expect(failing.code).toBe(7);
    expect(failing.err).toContain("oops");
    const stdin = await new Promise<string>((res, rej) => {
      const c = spawn(kubectlOf("1.28"), ["exec", "-i", "web", "--", "cat"], {
        env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") },
      });
      let out = "";
      c.stdout.on("data", (b: Buffer) => (out += b.toString()));
      c.on("error", rej);
      c.on("close", () => res(out));
      c.stdin.end("through-stdin\n");
    });
    expect(stdin).toBe("through-stdin\n");
    // util-linux script gives kubectl a pseudo-terminal: -it opens the SPDY resize stream and a TTY end to end.
    const tty = await new Promise<string>((res) =>
      execFile(
        "script",
        ["-qec", `${kubectlOf("1.28")} exec -it web -- sh -c 'tty; echo tty-ok'`, "/dev/null"],
        { env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig") }, timeout: 60_000 },
        (_e, out) => res(out),
      ),
    );
    expect(tty).toMatch(/\/dev\/pts\/\d+\r?\n/);
    expect(tty).toContain("tty-ok");
  }, 90_000);
});
