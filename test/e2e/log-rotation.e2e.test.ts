// Container log rotation as kubelet's container_log_manager.go (issue 34, item 6), against the REAL containerd: a
// pod writing lines fast on a node with PODSYNC_CONTAINER_LOG_MAX_SIZE=64Ki and PODSYNC_CONTAINER_LOG_MAX_FILES=3 keeps
// at most 3 files per container (the live one, one rotated uncompressed, one gzipped), bounded in total, rotated
// with CRI ReopenContainerLog; `logs -f` goes on across rotations and a plain `logs` reads the live file. Plus
// kubelet's file choice (planRotation) as a table.
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { importJWK, SignJWT, type JWK } from "jose";
import type { Running } from "../../src/node.js";
import { planRotation, rotationTimestamp } from "../../src/logs/rotation.js";
import { until } from "../support/wait.js";
import { uid } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const NODE = "logrot-e2e";
const POD_UID = uid("logrot");
const MAX_SIZE = 64 * 1024;
const dir = mkdtempSync(join(tmpdir(), "podsync-logrot-e2e-"));
const logs = join(dir, "logs");
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

/** The container's log directory (<logs>/<ns>_<name>_<uid>/main) and its files with their sizes. */
function files(): { name: string; size: number }[] {
  const podDir = readdirSync(logs).find((d) => d.endsWith(POD_UID));
  if (!podDir) return [];
  const c = join(logs, podDir, "main");
  return readdirSync(c).map((name) => ({ name, size: statSync(join(c, name)).size }));
}

describe("kubelet's choice of files (removeExcessLogs, cleanupUnusedLogs, compress all but the newest)", () => {
  it("keeps maxFiles-2 rotated files, drops .tmp and logs already compressed, gzips all but those compressed", () => {
    const l = "/x/0.log";
    expect(
      planRotation(
        [
          `${l}.20260101-000003`,
          `${l}.20260101-000001.gz`,
          `${l}.20260101-000002.gz`,
          `${l}.20260101-000002`,
          `${l}.20260101-000004.tmp`,
        ],
        3,
      ),
    ).toEqual({
      remove: [
        `${l}.20260101-000002`,
        `${l}.20260101-000004.tmp`,
        `${l}.20260101-000001.gz`,
        `${l}.20260101-000002.gz`,
      ],
      compress: [`${l}.20260101-000003`],
    });
    expect(planRotation([`${l}.20260101-000001`], 5)).toEqual({ remove: [], compress: [`${l}.20260101-000001`] });
    expect(rotationTimestamp(Date.UTC(2026, 0, 2, 3, 4, 5))).toBe("20260102-030405");
  });
});

describe.skipIf(skip)("container log rotation on real containerd", () => {
  beforeAll(async () => {
    if (!endpoint) throw new Error(`no containerd for the e2e suite: ${setupError}`);
    const { startNode } = await import("../../src/node.js");
    running = await startNode(
      {
        PODSYNC_CRI_ENDPOINT: endpoint,
        PODSYNC_SERVICE_DATAPLANE: "off",
        PODSYNC_PORT: "0",
        PODSYNC_HOST: "127.0.0.1",
        PODSYNC_NODE_NAME: NODE,
        PODSYNC_TLS: "false",
        PODSYNC_DEV_DIR: dir,
        PODSYNC_POD_LOGS_DIR: logs,
        PODSYNC_ROOT_DIR: join(dir, "root"),
        PODSYNC_RELIST_INTERVAL_MS: "300",
        PODSYNC_CONTAINER_LOG_MAX_SIZE: "64Ki",
        PODSYNC_CONTAINER_LOG_MAX_FILES: "3",
        PODSYNC_CONTAINER_LOG_MONITOR_INTERVAL_MS: "200",
      },
      true,
    );
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { alg: string };
    const pod = {
      metadata: { name: "chatty", namespace: "default", uid: POD_UID },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "IfNotPresent",
            // Numbered lines, so a follow can tell it missed none across a rotation; 40 lines, then 20 ms.
            command: [
              "sh",
              "-c",
              "i=0; while true; do for k in 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9; do i=$((i+1)); echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done; sleep 0.02; done",
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
  }, 120_000);

  afterAll(async () => {
    await fetch(`${running.url}/v1/pods/${POD_UID}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await sign({ act: "delete", uid: POD_UID })}` },
    }).catch(() => undefined);
    await running?.close();
  }, 60_000);

  it("rotates at the size, keeps at most maxFiles files, bounded in total; logs -f reads on across rotations", async () => {
    // A follow from the start, read while the log rotates under it.
    const follow = await fetch(`${running.url}/v1/pods/${POD_UID}/logs?follow=true`, {
      headers: { authorization: `Bearer ${await sign({ act: "logs", uid: POD_UID })}` },
    });
    expect(follow.status).toBe(200);
    const reader = follow.body!.getReader();
    let text = "";
    let read = 0;
    const dec = new TextDecoder();
    let maxFilesSeen = 0;
    let maxTotal = 0;
    let gz = false;
    // Read 256 KiB of the log (4 times the size: several rotations), watching the files meanwhile.
    while (read < 256 * 1024) {
      const { value, done } = await reader.read();
      if (done) break;
      read += value.length;
      text = (text + dec.decode(value, { stream: true })).slice(-4096);
      const f = files();
      maxFilesSeen = Math.max(maxFilesSeen, f.length);
      maxTotal = Math.max(
        maxTotal,
        f.reduce((n, x) => n + x.size, 0),
      );
      gz ||= f.some((x) => x.name.endsWith(".gz"));
    }
    await reader.cancel();
    expect(read).toBeGreaterThanOrEqual(256 * 1024);
    const f = files();
    expect(
      f.some((x) => /^0\.log\.\d{8}-\d{6}(\.gz)?$/.test(x.name)),
      JSON.stringify(f),
    ).toBe(true);
    expect(gz).toBe(true);
    // The live log, maxFiles-2 kept rotated files and the one rotated last (a .tmp may show while one is gzipped).
    expect(maxFilesSeen).toBeLessThanOrEqual(4);
    expect(f.filter((x) => !x.name.endsWith(".tmp")).length).toBeLessThanOrEqual(3);
    // Bounded: each file may pass the size by what the container writes between two passes (as in kubelet), and
    // there are at most maxFiles of them.
    expect(maxTotal).toBeLessThan(8 * MAX_SIZE);
    // The follow went on across rotations: the lines it read last are in order, none missing.
    const nums = [...text.matchAll(/line-(\d+)-/g)].map((m) => Number(m[1]));
    expect(nums.length).toBeGreaterThan(10);
    expect(nums.slice(1).every((n, i) => n === nums[i]! + 1)).toBe(true);
    // A plain read after rotations reads the live file (just rotated, it may hold one line or none yet).
    const tail = await fetch(`${running.url}/v1/pods/${POD_UID}/logs?tailLines=2`, {
      headers: { authorization: `Bearer ${await sign({ act: "logs", uid: POD_UID })}` },
    });
    expect(tail.status).toBe(200);
    expect(await tail.text()).toMatch(/^(line-\d+-x+\n){0,2}$/);
  }, 120_000);

  it("unrotated, the same pod's log would have passed the bound: the runtime wrote far more than is kept", async () => {
    const written = await until(
      "the container's line count past 8 sizes' worth",
      async () => {
        const r = await fetch(`${running.url}/v1/pods/${POD_UID}/logs?tailLines=1`, {
          headers: { authorization: `Bearer ${await sign({ act: "logs", uid: POD_UID })}` },
        });
        const n = Number(/line-(\d+)-/.exec(await r.text())?.[1] ?? 0);
        // Each line is 45 bytes of output (more in the CRI log file, with its timestamp and stream).
        return n * 45 > 8 * MAX_SIZE ? n : undefined;
      },
      60_000,
      500,
    );
    expect(written * 45).toBeGreaterThan(
      files()
        .filter((x) => !x.name.endsWith(".gz"))
        .reduce((n, x) => n + x.size, 0),
    );
  }, 90_000);
});
