// The CLI as a process against a loopback stub of the node, so the test can count the requests and shape the
// answers (cli.e2e.test.ts runs the same commands against the real server and containerd):
// - `get pods -w` lists once, then follows the node's Kubernetes watch (one request, no polling) and prints each
//   change; where the node serves no watch (404) it polls the list instead;
// - `delete --wait=false` asks the node not to wait for the kill (?wait=false);
// - `sync` shows the node's events (a pull) as its progress while the node works.
import { execFile, execFileSync, spawn } from "node:child_process";
import { createServer, type Server, type ServerResponse } from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/wait.js";

const dir = mkdtempSync(join(tmpdir(), "podsync-cli-watch-"));

const pod = (name: string, phase: string, rv: number) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    namespace: "default",
    uid: `uid-${name}`,
    resourceVersion: String(rv),
    creationTimestamp: new Date().toISOString(),
  },
  spec: { containers: [{ name: "main", image: "busybox" }] },
  status: {
    phase,
    conditions: [],
    containerStatuses: [
      {
        name: "main",
        ready: phase === "Running",
        restartCount: 0,
        lastState: {},
        image: "busybox",
        imageID: "",
        state: phase === "Running" ? { running: {} } : { waiting: { reason: phase } },
      },
    ],
  },
});

interface Stub {
  url: string;
  server: Server;
  requests: string[];
  watch?: ServerResponse;
  events?: ServerResponse;
}

async function stub(opts: { watch: boolean; list: () => unknown[] }): Promise<Stub> {
  const s: Stub = { url: "", server: createServer(), requests: [] };
  s.server.on("request", (req, res) => {
    s.requests.push(req.url ?? "");
    const u = new URL(req.url ?? "/", "http://x");
    if (u.pathname === "/healthz") return void res.end(JSON.stringify({ node: "stub" }));
    if (u.pathname === "/v1/pods")
      return void res.end(JSON.stringify({ items: opts.list(), orphans: [], metadata: { resourceVersion: "1" } }));
    if (req.method === "POST" && u.pathname === "/v1/pods/sync") {
      // the node at work: an event while the request is open, the answer later
      setTimeout(
        () =>
          s.events?.write(
            `${JSON.stringify({
              type: "ADDED",
              object: {
                metadata: { name: "web.1", namespace: "default", resourceVersion: "5" },
                involvedObject: { kind: "Pod", name: "web", namespace: "default" },
                reason: "Pulling",
                message: 'Pulling image "example.com/big:1"',
                lastTimestamp: new Date().toISOString(),
              },
            })}\n`,
          ),
        300,
      );
      setTimeout(
        () =>
          res.end(
            JSON.stringify({
              ok: true,
              pod: { namespace: "default", name: "web", uid: "uid-web" },
              actions: {},
              steps: [],
            }),
          ),
        2500,
      );
      return;
    }
    if (u.pathname === "/api/v1/namespaces/default/events" && u.searchParams.get("watch") === "1") {
      expect(u.searchParams.get("fieldSelector")).toBe("involvedObject.name=web");
      res.writeHead(200, { "content-type": "application/json" });
      res.write("");
      s.events = res;
      return;
    }
    if (req.method === "DELETE") {
      res.writeHead(202, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ ok: true, accepted: true, desired: true }));
    }
    if (u.pathname === "/api/v1/pods" && u.searchParams.get("watch") === "1" && opts.watch) {
      expect(req.headers.authorization).toMatch(/^Bearer /);
      res.writeHead(200, { "content-type": "application/json" });
      res.write("");
      s.watch = res;
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ kind: "Status", status: "Failure", code: 404, reason: "NotFound" }));
  });
  await new Promise<void>((r) => s.server.listen(0, "127.0.0.1", r));
  s.url = `http://127.0.0.1:${(s.server.address() as { port: number }).port}`;
  return s;
}

let running: Stub | undefined;
let child: ReturnType<typeof spawn> | undefined;
afterEach(async () => {
  child?.kill();
  running?.watch?.end();
  running?.events?.end();
  await new Promise((r) => running?.server.close(r) ?? r(undefined));
  running = child = undefined;
});

function getW(url: string): { out: () => string; err: () => string } {
  let out = "";
  let err = "";
  child = spawn(process.execPath, ["bin/podsync.mjs", "get", "pods", "-w", "--no-headers"], {
    env: { PATH: process.env["PATH"] ?? "", HOME: dir, PODSYNC_URL: url, PODSYNC_KEY: join(dir, "key.json") },
  });
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (err += b.toString()));
  return { out: () => out, err: () => err };
}

beforeAll(() => {
  execFileSync(process.execPath, ["bin/podsync.mjs", "keygen", "--out", dir], {
    env: { PATH: process.env["PATH"] ?? "", HOME: dir },
  });
});

describe("podsync get -w", () => {
  it("follows the node's watch: one list, one watch, a row per change and per deletion, no polling", async () => {
    running = await stub({ watch: true, list: () => [pod("web", "Pending", 1)] });
    const w = getW(running.url);
    await until("the watch to open", async () => running?.watch !== undefined, 10_000).catch((e: Error) => {
      throw new Error(`${e.message}: ${w.err()} ${running?.requests.join(" ")}`);
    });
    expect(w.out()).toMatch(/^web\s+0\/1\s+Pending\s+0\s+\d+s\n$/);
    const send = (type: string, obj: unknown) => running!.watch!.write(`${JSON.stringify({ type, object: obj })}\n`);
    // the current objects first (as a watch from "now" sends them): the same row is not printed again
    send("ADDED", pod("web", "Pending", 1));
    send("BOOKMARK", { metadata: { resourceVersion: "2" } });
    send("MODIFIED", pod("web", "Running", 3));
    await until("the changed row", async () => /Running/.test(w.out()), 5000);
    send("DELETED", pod("web", "Running", 4));
    await until(
      "the deleted pod's last row",
      async () =>
        w
          .out()
          .split("\n")
          .filter((l) => /Running/.test(l)).length === 2,
      5000,
    );
    expect(w.out().split("\n").filter(Boolean)).toHaveLength(3);
    await new Promise((r) => setTimeout(r, 1500));
    expect(running.requests.filter((r) => r.startsWith("/v1/pods"))).toHaveLength(1);
    expect(running.requests.filter((r) => r.startsWith("/api/v1/pods"))).toEqual([
      "/api/v1/pods?watch=1&allowWatchBookmarks=true",
    ]);
  }, 20_000);

  it("resumes from the last resourceVersion when the server ends the stream", async () => {
    running = await stub({ watch: true, list: () => [pod("web", "Pending", 1)] });
    getW(running.url);
    await until("the watch to open", async () => running?.watch !== undefined, 10_000);
    running.watch!.write(`${JSON.stringify({ type: "MODIFIED", object: pod("web", "Running", 7) })}\n`);
    const first = running.watch!;
    running.watch = undefined;
    first.end();
    await until("the watch to open again", async () => running?.watch !== undefined, 10_000);
    expect(running.requests.filter((r) => r.startsWith("/api/v1/pods")).at(-1)).toBe(
      "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=7",
    );
  }, 20_000);

  it("polls the list where the node serves no watch", async () => {
    let phase = "Pending";
    running = await stub({ watch: false, list: () => [pod("web", phase, 1)] });
    const w = getW(running.url);
    await until("the first row", async () => /Pending/.test(w.out()), 10_000);
    phase = "Running";
    await until("the changed row, from polling", async () => /Running/.test(w.out()), 10_000);
    expect(running.requests.filter((r) => r.startsWith("/v1/pods")).length).toBeGreaterThanOrEqual(2);
  }, 20_000);
});

describe("podsync delete --wait=false", () => {
  it("asks the node not to wait for the kill, and prints no grace countdown", async () => {
    running = await stub({ watch: false, list: () => [pod("web", "Running", 1)] });
    // async: the stub answers from this process
    const out = await new Promise<string>((res, rej) =>
      execFile(
        process.execPath,
        ["bin/podsync.mjs", "delete", "web", "--wait=false"],
        {
          env: {
            PATH: process.env["PATH"] ?? "",
            HOME: dir,
            PODSYNC_URL: running!.url,
            PODSYNC_KEY: join(dir, "key.json"),
          },
        },
        (e, stdout, stderr) => (e ? rej(new Error(stderr)) : res(stdout)),
      ),
    );
    expect(out).toBe('pod "web" deleted\n');
    expect(running.requests.filter((r) => r.startsWith("/v1/pods/"))).toEqual(["/v1/pods/uid-web?wait=false"]);
  });
});

describe("podsync sync's progress", () => {
  it("shows the node's events for the pod while the sync runs", async () => {
    running = await stub({ watch: false, list: () => [] });
    const file = join(dir, "web.yaml");
    writeFileSync(
      file,
      "apiVersion: v1\nkind: Pod\nmetadata: { name: web }\nspec: { containers: [{ name: main, image: example.com/big:1 }] }\n",
    );
    const r = await new Promise<{ stdout: string; stderr: string }>((res, rej) =>
      execFile(
        process.execPath,
        ["bin/podsync.mjs", "sync", file],
        {
          env: {
            PATH: process.env["PATH"] ?? "",
            HOME: dir,
            PODSYNC_URL: running!.url,
            PODSYNC_KEY: join(dir, "key.json"),
          },
        },
        (e, stdout, stderr) => (e ? rej(new Error(stderr)) : res({ stdout, stderr })),
      ),
    );
    // One plain line per pod event (stderr is a pipe here), then the summary.
    expect(r.stderr).toMatch(/^pod\/web: Pulling image "example\.com\/big:1"$/m);
    expect(r.stderr).toMatch(/\nsynced: 0 created, 0 changed, 1 unchanged, 0 warnings\n$/);
    expect(r.stdout).toBe("pod/web (default, uid uid-web): unchanged (converged)\n");
  });
});
