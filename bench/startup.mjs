#!/usr/bin/env node
// Start-up of the HTTP server as a user runs it: spawn COMMAND (default `node dist/node.js`) on a free port,
// time spawn -> the "listening on" line -> first 200 from /healthz, then read the idle resident memory of the
// whole process tree (npm and tsx start child processes) after IDLE_MS. Plain JS so that it needs no build.
//   node bench/startup.mjs [--runs N] [--idle-ms MS] [-- COMMAND ARG...]
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const sep = process.argv.indexOf("--");
const { values } = parseArgs({
  args: process.argv.slice(2, sep < 0 ? undefined : sep),
  options: { runs: { type: "string", default: "5" }, "idle-ms": { type: "string", default: "2000" } },
});
const cmd = sep < 0 ? ["node", "dist/node.js"] : process.argv.slice(sep + 1);
const runs = Number(values.runs);
const idleMs = Number(values["idle-ms"]);

/** Resident KiB of pid and all its descendants (Linux /proc). */
function treeRssKiB(root) {
  const children = new Map();
  const rss = new Map();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const status = readFileSync(`/proc/${d}/status`, "utf8");
      const ppid = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
      rss.set(Number(d), Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      // the process went away while we read
    }
  }
  let total = 0;
  const stack = [root];
  while (stack.length) {
    const p = stack.pop();
    total += rss.get(p) ?? 0;
    stack.push(...(children.get(p) ?? []));
  }
  return total;
}

async function once() {
  const env = {
    ...process.env,
    PODSYNC_PORT: "0",
    PODSYNC_DEV_DIR: mkdtempSync(join(tmpdir(), "podsync-startup-")),
    PODSYNC_CRI_ENDPOINT: process.env.PODSYNC_CRI_ENDPOINT ?? "unix:///nonexistent/podsync.sock",
  };
  const t0 = performance.now();
  // detached: its own process group, so that npm's children are stopped with it.
  const child = spawn(cmd[0], cmd.slice(1), { env, stdio: ["ignore", "ignore", "pipe"], detached: true });
  let err = "";
  const url = await new Promise((res, rej) => {
    child.stderr.on("data", (d) => {
      err += d;
      const m = /listening on (http:\/\/[^\s]+)/.exec(err);
      if (m) res(m[1]);
    });
    child.once("exit", (c) => rej(new Error(`exited ${c} before listening:\n${err}`)));
  });
  const listening = performance.now() - t0;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  const healthy = performance.now() - t0;
  await new Promise((r) => setTimeout(r, idleMs));
  const rssMiB = treeRssKiB(child.pid) / 1024;
  const exited = new Promise((r) => child.once("exit", r));
  process.kill(-child.pid, "SIGTERM");
  await exited;
  return { listening, healthy, rssMiB };
}

const results = [];
await once(); // warm-up (file cache, dev key)
for (let i = 0; i < runs; i++) results.push(await once());
const stat = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const med = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return `min ${s[0].toFixed(0)}  median ${med.toFixed(0)}  max ${s[s.length - 1].toFixed(0)}`;
};
console.log(`${cmd.join(" ")}  (${runs} runs after 1 warm-up)`);
console.log(`  spawn -> "listening on" (ms):   ${stat(results.map((r) => r.listening))}`);
console.log(`  spawn -> /healthz 200 (ms):     ${stat(results.map((r) => r.healthy))}`);
console.log(`  RSS after ${idleMs} ms idle (MiB): ${stat(results.map((r) => r.rssMiB))}`);
