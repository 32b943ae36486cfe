// Reliability regressions on the shared lab containerd, through the Node server as users run it (startNode:
// file state, its own reconcile loop and prober): a startup probe never restarts a healthy container; a late
// token cannot bring a deleted pod back; a uid-conflict leaves the store as it was; exec output over the
// runtime's message limit is refused naming the limit.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { importJWK, SignJWT, type JWK } from "jose";
import { connectGrpc } from "../../src/cri/grpc-transport.js";
import type { CriClient } from "../../src/cri/client.js";
import { defaultNodeConfig } from "../../src/container/node-config.js";
import { createPodRuntime } from "../../src/kubelet/pod-runtime.js";
import { startNode, type Running } from "../../src/node.js";
import { until } from "../support/wait.js";
import { uid, deleteAll } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const NODE_NAME = "reliability-node";
const node = {
  ...defaultNodeConfig(),
  podLogsDir: mkdtempSync(join(tmpdir(), "podsync-rel-logs-")),
  rootDir: mkdtempSync(join(tmpdir(), "podsync-rel-root-")),
};

const podOf = (name: string, container: Record<string, unknown> = {}, id = uid(name), namespace = "default") => ({
  metadata: { name, namespace, uid: id },
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "main",
        image: "localhost/busybox:1",
        imagePullPolicy: "Never",
        command: ["sleep", "3600"],
        ...container,
      },
    ],
  },
});

describe.skipIf(skip)("reliability on the shared lab containerd", () => {
  let cri: CriClient;
  let server: Running;
  let dir: string;
  const made: string[] = [];
  let key: JWK & { iss: string };

  const sign = async (claims: Record<string, unknown>, iat = 0) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "EdDSA", kid: key.kid! })
      .setIssuer(key.iss)
      .setAudience(NODE_NAME)
      .setIssuedAt(Math.floor(Date.now() / 1000) + iat)
      .setExpirationTime(Math.floor(Date.now() / 1000) + iat + 60)
      .setJti(uid("jti"))
      .sign(await importJWK(key, "EdDSA"));
  const call = async (method: string, path: string, token: string, bearer = false) => {
    const r = await fetch(`${server.url}${path}`, {
      method,
      headers: bearer ? { authorization: `Bearer ${token}` } : { "content-type": "application/jose" },
      ...(bearer ? {} : { body: token }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const sync = async (pod: { metadata: { uid: string } }, iat = 0) => {
    made.push(pod.metadata.uid);
    return call("POST", "/v1/pods/sync", await sign({ act: "sync", pod }, iat));
  };
  const get = async (id: string) => call("GET", `/v1/pods/${id}`, await sign({ act: "status", uid: id }), true);
  const sandboxes = async (id: string) =>
    (await cri.listPodSandbox({ filter: { labelSelector: { "io.kubernetes.pod.uid": id } } })).items;

  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    cri = connectGrpc({ endpoint, timeoutMs: 30_000 });
    dir = mkdtempSync(join(tmpdir(), "podsync-rel-"));
    server = await startNode(
      {
        PODSYNC_PORT: "0",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_STATE_DIR: join(dir, "state"),
        PODSYNC_CRI_ENDPOINT: endpoint,
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_NODE_NAME: NODE_NAME,
        PODSYNC_ALLOW_EXEC: "true",
        PODSYNC_POD_LOGS_DIR: node.podLogsDir,
        PODSYNC_ROOT_DIR: node.rootDir,
      },
      true,
    );
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { iss: string };
  });
  afterAll(async () => {
    await server?.close();
    const rt = createPodRuntime(cri, { node });
    await deleteAll(rt, made);
    cri?.close();
  });

  it("a startupProbe exec [true] with failureThreshold 60 starts the container once: started, ready, restartCount 0", async () => {
    // The pod as reported: an ordinary container, startupProbe exec [true], failureThreshold 60 (periodSeconds 10).
    const p = podOf("startup-ok", { startupProbe: { exec: { command: ["true"] }, failureThreshold: 60 } });
    expect((await sync(p)).status).toBe(200);
    const st = await until("the startup probe to succeed", async () => {
      const r = await get(p.metadata.uid);
      const c = r.body.status?.containerStatuses?.[0];
      return c?.started === true && c;
    });
    expect(st).toMatchObject({ started: true, ready: true, restartCount: 0 });
    // Still the first container a few seconds later (the loop relists every second meanwhile).
    await until("a few relists", async () => Date.now() - Date.parse(st.state.running.startedAt) > 5000);
    expect((await get(p.metadata.uid)).body.status.containerStatuses[0]).toMatchObject({
      restartCount: 0,
      containerID: st.containerID,
    });
  });

  it("a sync token signed 20 s before a DELETE is refused afterwards (409): the deleted pod does not come back", async () => {
    const p = podOf("late-token");
    const late = await sign({ act: "sync", pod: p }, -20);
    expect((await sync(p, -30)).status).toBe(200);
    const d = await call(
      "DELETE",
      `/v1/pods/${p.metadata.uid}`,
      await sign({ act: "delete", uid: p.metadata.uid, gracePeriodSeconds: 0 }),
      true,
    );
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    const r = await call("POST", "/v1/pods/sync", late);
    expect(r.body).toMatchObject({ status: 409, type: "urn:podsync:problem:stale-generation" });
    expect(await sandboxes(p.metadata.uid)).toEqual([]);
    expect((await get(p.metadata.uid)).status).toBe(404);
  });

  it("an intruder syncing a victim's uid while the victim's sandbox is being made: 409 uid-conflict, the victim stays desired and runs", async () => {
    const id = uid("victim");
    const victim = podOf("victim-a", {}, id, "default");
    const pending = sync(victim);
    // As soon as the victim is stored (its sandbox is still being made), the intruder comes.
    await until(
      "the victim to be stored",
      async () => readFileSafe(join(dir, "state", "pods", `${id}.json`)),
      10_000,
      5,
    );
    const intruder = await sync(podOf("intruder-b", {}, id, "other"));
    expect(intruder.body).toMatchObject({ status: 409, type: "urn:podsync:problem:uid-conflict" });
    expect((await pending).status).toBe(200);
    expect(JSON.parse(readFileSync(join(dir, "state", "pods", `${id}.json`), "utf8")).metadata).toMatchObject({
      name: "victim-a",
      namespace: "default",
    });
    expect((await get(id)).body.metadata).toMatchObject({ name: "victim-a", namespace: "default" });
  });
  it("exec whose output is over the runtime's 16 MiB message limit: 502 exec-output-too-large naming the limit (not a bare RESOURCE_EXHAUSTED); output under it is cut at 1 MiB with truncated", async () => {
    const p = podOf("exec-big");
    expect((await sync(p)).status).toBe(200);
    const exec = async (script: string) =>
      call(
        "POST",
        `/v1/pods/${p.metadata.uid}/exec`,
        await sign({ act: "exec", uid: p.metadata.uid, command: ["sh", "-c", script], timeoutSeconds: 60 }),
      );
    // 2^23 bytes, written three times: about 25 MB of stdout.
    const big = await exec("s=x; i=0; while [ $i -lt 23 ]; do s=$s$s; i=$((i+1)); done; echo $s; echo $s; echo $s");
    expect(big.status, JSON.stringify(big.body).slice(0, 300)).toBe(502);
    expect(big.body).toMatchObject({
      type: "urn:podsync:problem:exec-output-too-large",
      limitBytes: 16777216,
      detail: expect.stringContaining("message limit of 16777216 bytes"),
    });
    const cut = await exec("s=x; i=0; while [ $i -lt 21 ]; do s=$s$s; i=$((i+1)); done; echo $s");
    expect(cut.status).toBe(200);
    expect(cut.body.stdout).toMatchObject({ truncated: true, bytes: 2 ** 21 + 1 });
    expect(cut.body.stdout.data).toHaveLength(1024 * 1024);
  });
  it("a configMap item path the node cannot write (a component over 255 bytes) is 400 invalid-pod naming the field; nothing is made on the node", async () => {
    const p = {
      ...podOf("bad-item"),
      spec: {
        ...podOf("bad-item").spec,
        volumes: [{ name: "cfg", configMap: { name: "cfg", items: [{ key: "a", path: "x".repeat(256) }] } }],
      },
    };
    const r = await call(
      "POST",
      "/v1/pods/sync",
      await sign({
        act: "sync",
        pod: p,
        configMaps: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cfg" }, data: { a: "1" } }],
      }),
    );
    expect(r.body).toMatchObject({
      status: 400,
      type: "urn:podsync:problem:invalid-pod",
      errors: [{ path: "pod.spec.volumes[0].configMap.items[0].path", message: expect.stringContaining("255 bytes") }],
    });
    expect(await sandboxes(p.metadata.uid)).toEqual([]);
    expect(existsSync(join(node.rootDir, "pods", p.metadata.uid))).toBe(false);
    expect(existsSync(join(dir, "state", "pods", `${p.metadata.uid}.json`))).toBe(false);
  });
});

function readFileSafe(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}
