// Streams with back-pressure and a budget (issue 34, items 3 and 9), against the REAL containerd: a kubectl-style
// exec client that never reads `cat /dev/zero`, and one that pushes stdin to a process that never reads it, leave
// the server's RSS within a bound (measured here: the server runs in this process, the clients in their own),
// while a second exec keeps flowing; open watches, exec and log streams are capped per token and per node with a
// 429 (a Status on the Kubernetes paths, a problem on podsync's).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { importJWK, SignJWT, type JWK } from "jose";
import type { Running } from "../../src/node.js";
import { until } from "../support/wait.js";
import { StreamBudget } from "../../src/usecases/streams/budget.js";
import { openFileLimit } from "../../src/host/serving/fd-limit.js";
import { uid } from "../support/pods.js";

const endpoint = inject("criEndpoint");
const setupError = inject("criError");
const skip = inject("skipE2E");

const NODE = "streams-e2e";
const NS = `streams-${uid("")
  .replace(/[^a-z0-9]/g, "")
  .slice(-8)}`;
const POD_UID = uid("streams");
const dir = mkdtempSync(join(tmpdir(), "podsync-streams-e2e-"));
const CLIENT = fileURLToPath(new URL("../support/exec-client.mjs", import.meta.url));
/** The server's bound per direction (PODSYNC_STREAM_BUFFER_BYTES) is 1 MiB; what a stalled session may add to the
 * process, with room for the runtime's own frames in flight and the allocator's slack. Without back-pressure the
 * same 8 s grew it by 146 MiB here (the runtime's output rate on this machine, past the kernel's socket buffers). */
const RSS_BOUND = 64 * 1024 * 1024;
let running: Running;
let key: JWK & { alg: string };
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

const execUrl = (command: string[], stdin = false) =>
  `${running.url.replace(/^http/, "ws")}/api/v1/namespaces/${NS}/pods/sink/exec?${command
    .map((c) => `command=${encodeURIComponent(c)}`)
    .join("&")}&stdout=true&stderr=true${stdin ? "&stdin=true" : ""}`;

/** An exec client in its own process; its output lines so far. */
function client(url: string, token: string, mode: "stall" | "count" | "push") {
  const child = spawn(process.execPath, [CLIENT, url, token, mode], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return { out: () => out, child, exited };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server's memory growth while a client misbehaves (a memory bound, not a timing one): the peak of RSS and of
 * the memory held by Buffers (external), each over its start, sampled every 100 ms until `stop`. RSS alone can hide
 * a queue that reuses pages an earlier test freed; the Buffers a queue holds cannot hide. */
function memorySampler(): { stop: () => { rss: number; buffers: number } } {
  const before = process.memoryUsage();
  const peak = { rss: 0, buffers: 0 };
  const sample = () => {
    const m = process.memoryUsage();
    peak.rss = Math.max(peak.rss, m.rss - before.rss);
    peak.buffers = Math.max(peak.buffers, m.external - before.external);
  };
  const t = setInterval(sample, 100);
  return { stop: () => (clearInterval(t), sample(), peak) };
}

/** Bytes the container's `cat` has written so far (its /proc/<pid>/io wchar), read with a signed ExecSync. */
const CAT_WCHAR =
  'for p in /proc/[0-9]*; do read c < $p/comm 2>/dev/null; [ "$c" = cat ] || continue; while read k v; do [ "$k" = wchar: ] && echo $v; done < $p/io; done';
async function catWritten(): Promise<number> {
  const r = await fetch(`${running.url}/v1/pods/${POD_UID}/exec`, {
    method: "POST",
    headers: { "content-type": "application/jose" },
    body: await sign({ act: "exec", uid: POD_UID, command: ["sh", "-c", CAT_WCHAR] }),
  });
  const j = (await r.json()) as { stdout: { data: string } };
  return Number(j.stdout.data.trim());
}

describe("the stream budget's arithmetic", () => {
  it("holds the node's cap below the open-file limit, releases once per slot, and reads the limit from /proc", () => {
    expect(StreamBudget.limitsFor(256, 32, 20_000)).toEqual({ perNode: 256, perToken: 32 });
    // An exec holds two sockets; half the descriptors stay for everything else: 1024 / 2 / 2.
    expect(StreamBudget.limitsFor(256, 32, 1024)).toEqual({ perNode: 256, perToken: 32 });
    expect(StreamBudget.limitsFor(1000, 2000, 1024)).toEqual({ perNode: 256, perToken: 256 });
    const b = new StreamBudget({ perNode: 2, perToken: 1 });
    const r = b.take("a", "watch");
    expect(() => b.take("a", "log")).toThrow(/PODSYNC_MAX_STREAMS_PER_TOKEN=1/);
    b.take("b", "exec");
    expect(() => b.take("c", "exec")).toThrow(/PODSYNC_MAX_STREAMS=2/);
    r();
    r();
    expect(b.size).toBe(1);
    expect(openFileLimit()).toBeGreaterThan(0);
    expect(openFileLimit("/nonexistent")).toBeUndefined();
  });
});

describe.skipIf(skip)("streams: back-pressure and a budget", () => {
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
        PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
        PODSYNC_ROOT_DIR: join(dir, "root"),
        PODSYNC_RELIST_INTERVAL_MS: "300",
        PODSYNC_ALLOW_EXEC: "true",
        PODSYNC_MAX_STREAMS: "6",
        PODSYNC_MAX_STREAMS_PER_TOKEN: "2",
      },
      true,
    );
    key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { alg: string };
    const pod = {
      metadata: { name: "sink", namespace: NS, uid: POD_UID },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "localhost/busybox:1",
            imagePullPolicy: "IfNotPresent",
            command: ["sh", "-c", "while true; do echo tick; sleep 0.2; done"],
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
    const token = await sign({ act: "read" });
    await until("the pod in the Kubernetes API", async () => {
      const g = await fetch(`${running.url}/api/v1/namespaces/${NS}/pods/sink`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return g.ok && ((await g.json()) as { status: { phase: string } }).status.phase === "Running";
    });
  }, 120_000);

  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    await fetch(`${running.url}/v1/pods/${POD_UID}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await sign({ act: "delete", uid: POD_UID })}` },
    }).catch(() => undefined);
    await running?.close();
  }, 60_000);

  it("a client that never reads `cat /dev/zero` stops it, within a memory bound; another exec flows", async () => {
    const stall = client(execUrl(["cat", "/dev/zero"]), await sign({ act: "read", exec: true }), "stall");
    await until(
      "the stalled client's first 16 MiB (the runtime's output at full rate)",
      async () => stall.out().includes("stalled"),
      30_000,
    );
    // The producer stops: once the sockets' kernel buffers and the server's bound are full, `cat` is blocked in
    // write(2) (without back-pressure it never is: the server reads on and queues). Memory is measured meanwhile.
    // Stopped: the same count over three readings a second apart; memory is measured until 5 s after that.
    const sampler = memorySampler();
    const seen: number[] = [];
    await until(
      "the stalled session's `cat` to stop writing",
      async () => {
        seen.push(await catWritten());
        const [a, b, c] = seen.slice(-3);
        return seen.length >= 3 && a === b && b === c;
      },
      90_000,
      1000,
    );
    await sleep(5000);
    const grown = sampler.stop();
    expect(grown.rss, `RSS grew by ${(grown.rss / 2 ** 20).toFixed(1)} MiB`).toBeLessThan(RSS_BOUND);
    expect(grown.buffers, `Buffers grew by ${(grown.buffers / 2 ** 20).toFixed(1)} MiB`).toBeLessThan(RSS_BOUND);
    // A second session, beside the stalled one, reads its 8 MiB to the end.
    const count = client(
      execUrl(["sh", "-c", "dd if=/dev/zero bs=65536 count=128 2>/dev/null"]),
      await sign({ act: "read", exec: true }),
      "count",
    );
    await count.exited;
    expect(count.out()).toContain("bytes 8388608 ");
    stall.child.kill("SIGKILL");
    await stall.exited;
  }, 150_000);

  it("stdin pushed to a process that never reads it holds the server's memory to a bound", async () => {
    const push = client(execUrl(["sleep", "3600"], true), await sign({ act: "read", exec: true }), "push");
    await until("the pushing client", async () => push.out().includes("pushing"), 30_000);
    const sampler = memorySampler();
    await sleep(8000);
    const grown = sampler.stop();
    expect(grown.rss, `RSS grew by ${(grown.rss / 2 ** 20).toFixed(1)} MiB`).toBeLessThan(RSS_BOUND);
    expect(grown.buffers, `Buffers grew by ${(grown.buffers / 2 ** 20).toFixed(1)} MiB`).toBeLessThan(RSS_BOUND);
    push.child.kill("SIGKILL");
    await push.exited;
  }, 90_000);

  it("caps open streams per token (429 Status) and per node (429 problem), and frees a slot when one ends", async () => {
    const token = await sign({ act: "read" });
    const auth = { authorization: `Bearer ${token}` };
    const watches: AbortController[] = [];
    const openWatch = async (t: Record<string, string>) => {
      const ac = new AbortController();
      const r = await fetch(`${running.url}/api/v1/namespaces/${NS}/pods?watch=true`, {
        headers: t,
        signal: ac.signal,
      });
      watches.push(ac);
      return r;
    };
    // Slots are released as the server sees the earlier tests' sessions close: the stdin pusher's was paused, so its
    // client's end is noticed by a liveness ping (every 2 s) that fails. Wait until all six are free.
    await until(
      "every slot free",
      async () => {
        const probes = await Promise.all(
          Array.from({ length: 6 }, async () => openWatch({ authorization: `Bearer ${await sign({ act: "read" })}` })),
        );
        for (const w of watches.splice(0)) w.abort();
        return probes.every((r) => r.status === 200);
      },
      30_000,
      500,
    );
    await sleep(200);
    expect((await openWatch(auth)).status).toBe(200);
    expect((await openWatch(auth)).status).toBe(200);
    const third = await openWatch(auth);
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).toBe("1");
    const status = (await third.json()) as { kind: string; reason: string; code: number; message: string };
    expect(status).toMatchObject({ kind: "Status", reason: "TooManyRequests", code: 429 });
    expect(status.message).toContain("PODSYNC_MAX_STREAMS_PER_TOKEN=2");
    // Two more tokens fill the node's six slots; then podsync's own log route is refused with a problem.
    for (let i = 0; i < 2; i++) {
      const other = { authorization: `Bearer ${await sign({ act: "read" })}` };
      expect((await openWatch(other)).status).toBe(200);
      expect((await openWatch(other)).status).toBe(200);
    }
    const logs = () =>
      sign({ act: "logs", uid: POD_UID }).then((t) =>
        fetch(`${running.url}/v1/pods/${POD_UID}/logs?follow=true`, { headers: { authorization: `Bearer ${t}` } }),
      );
    const refused = await logs();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("content-type")).toBe("application/problem+json");
    const problem = (await refused.json()) as { type: string; detail: string };
    expect(problem.type).toBe("urn:podsync:problem:too-many-streams");
    expect(problem.detail).toContain("PODSYNC_MAX_STREAMS=6");
    // An exec over the cap is refused at the upgrade with the Status.
    const exec = client(execUrl(["true"]), await sign({ act: "read", exec: true }), "count");
    await exec.exited;
    expect(exec.out()).toMatch(/^refused 429 .*TooManyRequests/);
    // A watch closed by its client gives its slot back.
    watches[0]!.abort();
    const again = await until("a slot freed", async () => {
      const r = await logs();
      if (r.status === 200) return r;
      await r.body?.cancel();
      return undefined;
    });
    expect(again.status).toBe(200);
    await again.body?.cancel();
    for (const w of watches) w.abort();
  }, 60_000);
});
