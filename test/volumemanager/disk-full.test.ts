// The state directory's disk fills up (a small tmpfs, filled behind podsync's back): signed requests get 503
// state-unavailable and nothing acts; the node agent's loop keeps the current set running; freeing space
// recovers with no restart. The Node entry (startNode) in front of the in-process CRI runtime. Needs root (mount).
import { execFileSync } from "node:child_process";
import { mkdtempSync, openSync, rmSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeServer } from "../support/fake-cri.js";
import { Harness, ISSUER, makeKey, NODE, type TestKey } from "../support/http.js";
import { uid } from "../support/pods.js";
import { until } from "../support/wait.js";
import { startNode, type Running } from "../../src/node.js";
import { useFakeCri } from "../support/fake-cri-suite.js";

let fake: FakeServer;
let key: TestKey;
let signer: Harness;
let server: Running;
const mnt = mkdtempSync(join(tmpdir(), "podsync-full-"));
const filler = join(mnt, "filler");

const suite = useFakeCri();
beforeAll(async () => {
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", mnt]);
  ({ fake } = suite);
  key = await makeKey("EdDSA", "full-1");
  signer = new Harness([key], undefined as never);
  server = await startNode(
    {
      PODSYNC_CRI_ENDPOINT: fake.endpoint,
      PODSYNC_SERVICE_DATAPLANE: "off",
      PODSYNC_PORT: "0",
      PODSYNC_NODE_NAME: NODE,
      PODSYNC_JWKS: JSON.stringify({ keys: [key.publicJwk] }),
      PODSYNC_ISSUERS: ISSUER,
      PODSYNC_STATE_DIR: join(mnt, "state"),
      // The loop relists every 200 ms (the in-process runtime serves no containerd events).
      PODSYNC_RELIST_INTERVAL_MS: "200",
      PODSYNC_RUNTIME_EVENTS: "off",
      PODSYNC_METRICS: "off",
    },
    true,
  );
});
afterAll(async () => {
  await server?.close();
  execFileSync("umount", [mnt]);
});

const podInput = (name: string) => ({
  metadata: { name, namespace: "full", uid: uid(name) },
  spec: {
    terminationGracePeriodSeconds: 0,
    containers: [{ name: "main", image: "localhost/busybox:1", command: ["sleep", "1d"] }],
  },
});
const call = async (method: string, path: string, token: string, bearer = false) => {
  const r = await fetch(`${server.url}${path}`, {
    method,
    headers: bearer ? { authorization: `Bearer ${token}` } : { "content-type": "application/jose" },
    ...(bearer ? {} : { body: token }),
  });
  return { status: r.status, body: (await r.json()) as any };
};
const sync = async (pod: unknown) => call("POST", "/v1/pods/sync", await signer.sign({ act: "sync", pod }));
const running = (id: string) =>
  [...fake.runtime.containers.values()].filter((c) => c.config.labels["io.kubernetes.pod.uid"] === id && c.state === 1);
const sandboxesOf = (id: string) => [...fake.runtime.sandboxes.values()].filter((s) => s.config.metadata?.uid === id);

/** Write until the filesystem is full. */
function fill() {
  const fd = openSync(filler, "w");
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
  } finally {
    closeSync(fd);
  }
}

describe("the state directory's disk is full", () => {
  it("503 state-unavailable and nothing acts; the loop keeps the set running; freeing space recovers with no restart", async () => {
    const a = podInput("full-a");
    expect((await sync(a)).status).toBe(200);
    const [first] = await until(
      "pod a to run",
      async () => running(a.metadata.uid).length === 1 && running(a.metadata.uid),
    );
    fill();

    const b = podInput("full-b");
    const refused = await sync(b);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body).toMatchObject({
      type: "urn:podsync:problem:state-unavailable",
      detail: expect.stringContaining("ENOSPC"),
    });
    expect(sandboxesOf(b.metadata.uid)).toEqual([]);
    const del = await call(
      "DELETE",
      `/v1/pods/${a.metadata.uid}`,
      await signer.sign({ act: "delete", uid: a.metadata.uid, gracePeriodSeconds: 0 }),
      true,
    );
    expect(del.status).toBe(503);
    const put = await call("PUT", "/v1/node/pods", await signer.sign({ act: "apply", generation: 1, pods: [b] }));
    expect(put.status).toBe(503);
    expect(running(a.metadata.uid)).toHaveLength(1);

    // The loop needs no write: a container that dies is brought back while the disk is full.
    fake.runtime.exit(first!.id, 137);
    await until(
      "the loop to restart pod a's container",
      async () => running(a.metadata.uid).length === 1 && running(a.metadata.uid)[0]!.id !== first!.id,
    );

    // Space again: the same server takes signed requests.
    rmSync(filler);
    const ok = await until("a sync to be stored again", async () => {
      const r = await sync(b);
      return r.status === 200 && r;
    });
    expect(ok.body.ok).toBe(true);
    expect(running(b.metadata.uid)).toHaveLength(1);
    const gone = await call(
      "DELETE",
      `/v1/pods/${a.metadata.uid}`,
      await signer.sign({ act: "delete", uid: a.metadata.uid, gracePeriodSeconds: 0 }),
      true,
    );
    expect(gone.status).toBe(200);
    await call(
      "DELETE",
      `/v1/pods/${b.metadata.uid}`,
      await signer.sign({ act: "delete", uid: b.metadata.uid, gracePeriodSeconds: 0 }),
      true,
    );
  }, 90_000);
});
