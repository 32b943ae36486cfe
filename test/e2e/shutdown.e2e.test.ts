// SIGTERM in kubelet's order, against `dist/node.js` as a process on the REAL containerd (issue #35, 0c): the
// listener stops first, a request that still arrives on an open connection is answered 503 shutting-down, what is
// in flight (a DELETE whose pod takes its grace period to stop) finishes with its real answer, and only then does
// the CRI channel close and the state directory's lock go. A supervisor's restart right after the SIGTERM (same
// port, same state dir) serves. Fails, never skips, without a runtime (unless PODSYNC_SKIP_E2E=1).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { SignJWT, importJWK, type JWK } from "jose";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { uid } from "../support/pods.js";
import { until } from "../support/wait.js";
import { freePort } from "../support/free-port.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const dir = mkdtempSync(join(tmpdir(), "podsync-shutdown-e2e-"));
const NODE = "shutdown-node";
const NS = "shutdown-e2e";
const podUid = uid("stop");
const children: ReturnType<typeof spawn>[] = [];

function start(port: number) {
  const child = spawn(process.execPath, ["dist/node.js"], {
    env: {
      PATH: process.env["PATH"] ?? "",
      PODSYNC_PORT: String(port),
      PODSYNC_NODE_NAME: NODE,
      PODSYNC_DEV_DIR: dir,
      PODSYNC_STATE_DIR: join(dir, "state"),
      PODSYNC_ROOT_DIR: join(dir, "root"),
      PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
      PODSYNC_POLICY: "privileged",
      PODSYNC_CRI_ENDPOINT: endpoint,
      PODSYNC_SERVICE_DATAPLANE: "off",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(child);
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number>((r) => child.once("exit", (c) => r(c ?? -1)));
  return { child, exited, stderr: () => err };
}

async function sign(claims: Record<string, unknown>): Promise<string> {
  const jwk = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { iss: string; alg: string };
  return new SignJWT({ ...claims, jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: jwk.alg, ...(jwk.kid ? { kid: jwk.kid } : {}) })
    .setIssuer(jwk.iss)
    .setAudience(NODE)
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(await importJWK(jwk, jwk.alg));
}

/** One kept-alive connection: requests written as raw HTTP/1.1, the answers as text. */
function connection(port: number): { write: (r: string) => void; text: () => string; closed: Promise<string> } {
  const socket = connect(port, "127.0.0.1");
  let text = "";
  socket.on("data", (d: Buffer) => (text += d.toString()));
  const closed = new Promise<string>((r) => {
    socket.on("close", () => r(text));
    socket.on("error", () => undefined);
  });
  return { write: (r) => socket.write(r), text: () => text, closed };
}

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  if (skip || !endpoint) return;
  const cri = connectGrpc({ endpoint });
  await createPodRuntime(cri, {})
    .delete(podUid, 0)
    .catch(() => undefined);
  cri.close();
});

describe.skipIf(skip)("SIGTERM (issue #35)", () => {
  it("stops admitting, answers 503 shutting-down, lets the in-flight DELETE finish, then exits; a restart at once on the same port and state dir serves", async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = start(port);
    await until("the first node listening", async () => first.stderr().includes("listening on"), 30_000);
    // A pod that ignores SIGTERM: its DELETE takes its 3 s grace period.
    const pod = {
      metadata: { name: "stop", namespace: NS, uid: podUid },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 3,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "IfNotPresent",
            command: ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"],
          },
        ],
      },
    };
    const synced = await fetch(`${url}/v1/pods/sync`, {
      method: "POST",
      headers: { "content-type": "application/jose" },
      body: await sign({ act: "sync", pod }),
    });
    expect(synced.status, await synced.clone().text()).toBe(200);

    const del = await sign({ act: "delete", uid: podUid });
    const status = await sign({ act: "status" });
    const conn = connection(port);
    conn.write(`DELETE /v1/pods/${podUid} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${del}\r\n\r\n`);
    // The DELETE is in flight (its pod's grace period runs) when the stop comes.
    await new Promise((r) => setTimeout(r, 800));
    expect(conn.text()).toBe("");
    first.child.kill("SIGTERM");
    // The supervisor's restart, at once: it waits for the stopping process's lock, then listens on the same port.
    const second = start(port);
    // A request that arrives on the open connection while the node stops.
    await new Promise((r) => setTimeout(r, 300));
    conn.write(`GET /v1/pods HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${status}\r\n\r\n`);

    const answers = await conn.closed;
    const [one, two] = answers.split(/(?=HTTP\/1\.1 )/);
    expect(one).toMatch(/^HTTP\/1\.1 200 /);
    expect(one).toContain('"deleted":true');
    expect(one).not.toContain("Channel has been shut down");
    expect(two).toMatch(/^HTTP\/1\.1 503 /);
    expect(two).toContain("urn:podsync:problem:shutting-down");
    expect(await first.exited).toBe(0);

    await until("the restarted node listening", async () => second.stderr().includes("listening on"), 40_000);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    const pods = await fetch(`${url}/v1/pods`, {
      headers: { authorization: `Bearer ${await sign({ act: "status" })}` },
    });
    expect(pods.status).toBe(200);
    expect(second.stderr()).not.toContain("in use");
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  }, 90_000);
});
