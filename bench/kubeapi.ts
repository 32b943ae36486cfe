// npm run bench:kubeapi: what the node's Kubernetes API costs (src/kubeapi/). Prints a table and writes
// bench/results/kubeapi-<time>.json. About four minutes.
//   1. 50 concurrent watchers (GET /api/v1/pods?watch=true&allowWatchBookmarks=true from a list's resourceVersion,
//      as kubectl get -w watches; reading) on a 30-pod node
//      at the default intervals: the runtime calls per second and the server's CPU (% of one core, from /proc)
//      over BENCH_WINDOW_S (60 s) without and with them. Watches are fed by the loop's relist and the syncs'
//      read-backs: no call of their own.
//      Then the same two windows with one pod changing each second (a signed sync of a new label), so every
//      watcher gets a MODIFIED event a second.
//   2. kubectl's `get pods` as a Table of 100 pods: the server's own time per request (its request log's
//      durationMs), BENCH_TABLE_GETS (200) requests one after another.
//   3. kubectl itself (kubectl.1.33, the real process) running `get pods` over TLS, BENCH_KUBECTL_RUNS (15) times
//      each, interleaved: with a static token in the kubeconfig, with the kubeconfig `podsync kubeconfig` makes
//      (its exec plugin runs `podsync token`) and the plugin's cache warm, and with the cache emptied before each
//      run (a miss: the plugin signs). Wall time p50 of each, and the plugin's overhead over the static token.
//      BENCH_KUBECTL_ONLY=1 runs this part alone.
// The server is what `npm start` runs (dist/node.js, rebuilt when stale) with its default settings (file state,
// jti log, request log on stdout, runtime events on, metrics on loopback, relist 1 s); only its runtime is the
// in-process CRI stand-in (test/support/fake-cri.ts), which counts every call and holds 100 pods cheaply.
import { execFile, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { importJWK, SignJWT, type JWK } from "jose";
import { startFakeCri } from "../test/support/fake-cri.js";

// 60 s: each window holds one of every pod's 60 s resyncs (with runtime events up, the loop relists when one is
// due), so the two are alike in what the loop does; shorter windows compare one with resyncs to one without.
const WINDOW_S = Number(process.env["BENCH_WINDOW_S"] ?? 60);
const CHURN_WINDOW_S = Number(process.env["BENCH_CHURN_WINDOW_S"] ?? 20);
const WATCHERS = 50;
const TABLE_GETS = Number(process.env["BENCH_TABLE_GETS"] ?? 200);
const KUBECTL_RUNS = Number(process.env["BENCH_KUBECTL_RUNS"] ?? 15);
const KUBECTL_ONLY = process.env["BENCH_KUBECTL_ONLY"] === "1";
const KUBECTL = process.env["BENCH_KUBECTL"] ?? "/usr/lib/google-cloud-sdk/bin/kubectl.1.33";
const r2 = (n: number) => Math.round(n * 100) / 100;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const procCpuMs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) * 10;
};

execFileSync(process.execPath, ["bin/build.mjs", "--if-stale"], { stdio: "inherit" }); // what npm start runs
const fake = await startFakeCri();
const calls = () => [...fake.runtime.calls.values()].reduce((a, b) => a + b, 0);
const dir = mkdtempSync(join(tmpdir(), "podsync-kubeapi-bench-"));
// BENCH_PROFILE_DIR: the server writes a CPU profile there when it stops (node --cpu-prof).
const profile = process.env["BENCH_PROFILE_DIR"]
  ? ["--cpu-prof", `--cpu-prof-dir=${process.env["BENCH_PROFILE_DIR"]}`]
  : [];
const child = spawn(process.execPath, [...profile, "dist/node.js"], {
  env: {
    ...process.env,
    PODSYNC_CRI_ENDPOINT: fake.endpoint,
    PODSYNC_PORT: "0",
    PODSYNC_NODE_NAME: "bench-node",
    PODSYNC_POLICY: "privileged",
    PODSYNC_DEV_DIR: dir,
    PODSYNC_STATE_DIR: join(dir, "state"),
    PODSYNC_ROOT_DIR: join(dir, "root"),
    PODSYNC_POD_LOGS_DIR: join(dir, "logs"),
  },
  stdio: ["ignore", "pipe", "pipe"],
});
const tableMs: number[] = [];
createInterface({ input: child.stdout! }).on("line", (l) => {
  if (!l.startsWith("{")) return;
  const rec = JSON.parse(l) as { route?: string; durationMs?: number; method?: string };
  if (rec.route === "/api/v1/pods" && rec.method === "GET" && collecting) tableMs.push(rec.durationMs!);
});
let collecting = false;
const started = await new Promise<{ url: string; pid: number }>((res, rej) => {
  let text = "";
  createInterface({ input: child.stderr! }).on("line", (l) => {
    text += `${l}\n`;
    const m = /listening on (http:\/\/\S+)/.exec(l);
    if (m) res({ url: m[1]!, pid: child.pid! });
  });
  child.once("exit", (c) => rej(new Error(`server exited ${c}: ${text}`)));
});
const key = JSON.parse(readFileSync(join(dir, "dev-key.json"), "utf8")) as JWK & { alg: string };
const sign = async (claims: Record<string, unknown>) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, ...(key.kid ? { kid: key.kid } : {}) })
    .setIssuer("podsync-dev")
    .setAudience("bench-node")
    .setIssuedAt()
    .setExpirationTime("5m")
    .setJti(crypto.randomUUID())
    .sign(await importJWK(key, key.alg));
const read = await sign({ act: "read" });

let generation = 0;
const benchPod = (n: number, i: number, labels: Record<string, string> = {}) => ({
  metadata: { name: `p${i}`, namespace: "bench", uid: `kubeapi-bench-${n}-${i}`, labels: { app: "bench", ...labels } },
  spec: {
    hostNetwork: true,
    terminationGracePeriodSeconds: 1,
    containers: [
      { name: "main", image: "localhost/busybox:1", imagePullPolicy: "IfNotPresent", command: ["sleep", "3600"] },
    ],
  },
});
async function setPods(n: number) {
  const pods = Array.from({ length: n }, (_, i) => benchPod(n, i));
  const r = await fetch(`${started.url}/v1/node/pods`, {
    method: "PUT",
    headers: { "content-type": "application/jose" },
    body: await sign({ act: "apply", generation: ++generation, pods }),
  });
  if (r.status !== 200) throw new Error(`PUT /v1/node/pods: ${r.status} ${(await r.text()).slice(0, 2000)}`);
  const end = Date.now() + 180_000;
  for (;;) {
    const res = await fetch(`${started.url}/api/v1/pods`, { headers: { authorization: `Bearer ${read}` } });
    const list = (await res.json()) as { items?: { status: { phase: string } }[] };
    const phases = (list.items ?? []).map((p) => p.status.phase);
    if (phases.length === n && phases.every((p) => p === "Running")) return;
    if (Date.now() > end)
      throw new Error(
        `the ${n} pods were not all Running in the Kubernetes API after 180 s: HTTP ${res.status}, ${JSON.stringify(phases.length ? phases : list).slice(0, 500)}`,
      );
    await sleep(200);
  }
}

/** A window; with `churn`, one pod changes each second (a signed sync of a new label: a MODIFIED event to every
 * watcher, and the same converged sync's CRI calls with or without watchers). */
let rev = 0;
const byMethod = () => new Map(fake.runtime.calls);
async function window(churn = false): Promise<{ callsPerS: number; cpuPct: number; calls: Record<string, number> }> {
  const seconds = churn ? CHURN_WINDOW_S : WINDOW_S;
  const c0 = calls();
  const m0 = byMethod();
  const p0 = procCpuMs(started.pid);
  const end = Date.now() + seconds * 1000;
  if (churn)
    while (Date.now() < end - 1000) {
      const r = await fetch(`${started.url}/v1/pods/sync`, {
        method: "POST",
        headers: { "content-type": "application/jose" },
        body: await sign({ act: "sync", pod: benchPod(30, 0, { rev: String(++rev) }) }),
      });
      if (r.status !== 200) throw new Error(`sync: ${r.status} ${(await r.text()).slice(0, 500)}`);
      await sleep(1000);
    }
  await sleep(Math.max(0, end - Date.now()));
  const m1 = byMethod();
  const byName = Object.fromEntries(
    [...m1].map(([k, v]) => [k, v - (m0.get(k) ?? 0)]).filter(([, v]) => (v as number) > 0),
  );
  return {
    callsPerS: r2((calls() - c0) / seconds),
    cpuPct: r2(((procCpuMs(started.pid) - p0) / (seconds * 1000)) * 100),
    calls: byName,
  };
}

/** kubectl `get pods` wall time (ms) with a kubeconfig. */
function kubectlMs(kubeconfig: string, env: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  return new Promise((res, rej) =>
    execFile(
      KUBECTL,
      ["get", "pods", "-n", "bench"],
      { env: { ...process.env, KUBECONFIG: kubeconfig, ...env } },
      (e, _o, err) => (e ? rej(new Error(`kubectl: ${err}`)) : res(performance.now() - t0)),
    ),
  );
}

/** Part 3: kubectl get pods with a static token, with the plugin (cache warm), with the plugin (cache cold). */
async function kubectlPlugin() {
  const https = started.url.replace(/^http:/, "https:");
  const ca = readFileSync(join(dir, "state", "tls", "serving.crt"), "utf8");
  const staticConfig = join(dir, "kubeconfig-static");
  writeFileSync(
    staticConfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        { name: "b", cluster: { server: https, "certificate-authority-data": Buffer.from(ca).toString("base64") } },
      ],
      users: [{ name: "b", user: { token: await sign({ act: "read" }) } }],
      contexts: [{ name: "b", context: { cluster: "b", user: "b" } }],
      "current-context": "b",
    }),
  );
  const pluginConfig = join(dir, "kubeconfig-plugin");
  writeFileSync(
    pluginConfig,
    execFileSync(process.execPath, [
      "bin/podsync.mjs",
      "kubeconfig",
      "--server",
      https,
      "--key",
      join(dir, "dev-key.json"),
      "--node",
      "bench-node",
    ]),
  );
  const warm = { XDG_CACHE_HOME: join(dir, "cache-warm") };
  const cold = { XDG_CACHE_HOME: join(dir, "cache-cold") };
  await kubectlMs(pluginConfig, warm); // fills the warm cache
  await kubectlMs(staticConfig, {});
  const ms = { static: [] as number[], pluginWarm: [] as number[], pluginCold: [] as number[] };
  for (let i = 0; i < KUBECTL_RUNS; i++) {
    ms.static.push(await kubectlMs(staticConfig, {}));
    ms.pluginWarm.push(await kubectlMs(pluginConfig, warm));
    rmSync(cold.XDG_CACHE_HOME, { recursive: true, force: true });
    ms.pluginCold.push(await kubectlMs(pluginConfig, cold));
  }
  const p50 = (xs: number[]) => r2(pct(xs, 50));
  return {
    kubectl: KUBECTL,
    runs: KUBECTL_RUNS,
    staticMsP50: p50(ms.static),
    pluginWarmMsP50: p50(ms.pluginWarm),
    pluginColdMsP50: p50(ms.pluginCold),
    warmOverheadMsP50: r2(p50(ms.pluginWarm) - p50(ms.static)),
    coldOverheadMsP50: r2(p50(ms.pluginCold) - p50(ms.static)),
  };
}

try {
  if (KUBECTL_ONLY) {
    await setPods(5);
    const k = await kubectlPlugin();
    console.log(
      `kubeapi: kubectl get pods (${k.runs} runs each, p50): static token ${k.staticMsP50} ms; plugin, cache warm ${k.pluginWarmMsP50} ms (+${k.warmOverheadMsP50}); plugin, cache cold ${k.pluginColdMsP50} ms (+${k.coldOverheadMsP50})`,
    );
    mkdirSync(resolve("bench/results"), { recursive: true });
    const out = resolve(`bench/results/kubeapi-kubectl-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    writeFileSync(
      out,
      `${JSON.stringify({ time: new Date().toISOString(), machine: { cpus: cpus().length, node: process.version }, kubectl: k }, null, 2)}\n`,
    );
    console.log(`wrote ${out}`);
    process.exit(0);
  }
  await setPods(30);
  await sleep(3000); // converged: the loop's start-up syncs are behind it
  const idle = await window();
  const idleChurn = await window(true);
  const ac = new AbortController();
  let events = 0;
  // As kubectl get -w and informers watch: from a list's resourceVersion (the list itself is not the watch's cost).
  const rv = (
    (await (await fetch(`${started.url}/api/v1/pods`, { headers: { authorization: `Bearer ${read}` } })).json()) as {
      metadata: { resourceVersion: string };
    }
  ).metadata.resourceVersion;
  const watchers = await Promise.all(
    Array.from({ length: WATCHERS }, async () => {
      const r = await fetch(`${started.url}/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion=${rv}`, {
        headers: { authorization: `Bearer ${read}` },
        signal: ac.signal,
      });
      const reader = r.body!.getReader();
      void (async () => {
        for (;;) {
          const x = await reader.read().catch(() => ({ done: true as const, value: undefined }));
          if (x.done) return;
          events++;
        }
      })();
      return reader;
    }),
  );
  await sleep(10_000); // the watches' set-up behind them (and the collection of what it allocated)
  const watched = await window();
  const watchedChurn = await window(true);
  ac.abort();
  for (const w of watchers) await w.cancel().catch(() => undefined);

  await setPods(100);
  collecting = true;
  for (let i = 0; i < TABLE_GETS; i++) {
    const r = await fetch(`${started.url}/api/v1/pods`, {
      headers: {
        authorization: `Bearer ${read}`,
        accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
      },
    });
    if ((await r.json()).rows.length !== 100) throw new Error("the Table did not hold 100 rows");
  }
  await sleep(200);
  collecting = false;
  const kubectl = await kubectlPlugin();

  const result = {
    time: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    windowS: WINDOW_S,
    churnWindowS: CHURN_WINDOW_S,
    watchers: {
      pods: 30,
      watchers: WATCHERS,
      idle,
      watched,
      extraCallsPerS: r2(watched.callsPerS - idle.callsPerS),
      extraCpuPct: r2(watched.cpuPct - idle.cpuPct),
      chunksRead: events,
    },
    churn: {
      changesPerS: 1,
      idle: idleChurn,
      watched: watchedChurn,
      extraCallsPerS: r2(watchedChurn.callsPerS - idleChurn.callsPerS),
      extraCpuPct: r2(watchedChurn.cpuPct - idleChurn.cpuPct),
    },
    table: {
      pods: 100,
      requests: tableMs.length,
      serverMsP50: pct(tableMs, 50),
      serverMsP99: pct(tableMs, 99),
      serverMsMax: Math.max(...tableMs),
    },
    kubectl,
  };
  console.log(`
kubeapi: 50 watchers on a 30-pod node (dist/node.js, default intervals, ${WINDOW_S} s windows)
                      CRI calls/s   server CPU (% of a core)
  no watchers         ${String(idle.callsPerS).padEnd(13)} ${idle.cpuPct}
  50 watchers         ${String(watched.callsPerS).padEnd(13)} ${watched.cpuPct}
  difference          ${String(result.watchers.extraCallsPerS).padEnd(13)} ${result.watchers.extraCpuPct}
  with one pod changing each second (${CHURN_WINDOW_S} s windows):
  no watchers         ${String(idleChurn.callsPerS).padEnd(13)} ${idleChurn.cpuPct}
  50 watchers         ${String(watchedChurn.callsPerS).padEnd(13)} ${watchedChurn.cpuPct}
  difference          ${String(result.churn.extraCallsPerS).padEnd(13)} ${result.churn.extraCpuPct}
kubeapi: GET /api/v1/pods as a Table of 100 pods, ${tableMs.length} requests: server time p50 ${result.table.serverMsP50} ms, p99 ${result.table.serverMsP99} ms, max ${result.table.serverMsMax} ms
kubeapi: kubectl get pods (${kubectl.runs} runs each, p50): static token ${kubectl.staticMsP50} ms; plugin, cache warm ${kubectl.pluginWarmMsP50} ms (+${kubectl.warmOverheadMsP50}); plugin, cache cold ${kubectl.pluginColdMsP50} ms (+${kubectl.coldOverheadMsP50})`);
  mkdirSync(resolve("bench/results"), { recursive: true });
  const out = resolve(`bench/results/kubeapi-${result.time.replace(/[:.]/g, "-")}.json`);
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${out}`);
} finally {
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  await fake.close();
}
