// npm run bench: how fast a sync is and what it costs. Prints a table, writes bench/results/<time>.json.
// Loopback only, every loop bounded in time or count. A run takes about a minute on 2 cores.
//   1. converged-pod sync through HTTP (autocannon) vs the raw CRI status read alone (the floor), on the
//      in-process runtime and on real containerd (scripts/containerd-lab.sh) side by side;
//   2. CRI calls per sync for 1, 10, 50 containers;
//   3. computePodActions throughput for 1, 10, 100 containers;
//   4. JWS verification cost (EdDSA, ES256);
//   5. server memory before and after 10 000+ syncs.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, totalmem, platform, release } from "node:os";
import { resolve } from "node:path";
import autocannon from "autocannon";
import { SignJWT } from "jose";
import { connectGrpc } from "../src/cri/grpc-transport.js";
import type { CriClient } from "../src/cri/client.js";
import { Pod, type PodInput } from "../src/pod/schema.js";
import { getPodStatus } from "../src/kuberuntime/pod-status.js";
import { computePodActions } from "../src/kuberuntime/compute-actions.js";
import { hashContainer } from "../src/container/hash.js";
import { createPodRuntime } from "../src/kubelet/pod-runtime.js";
import { createVerifier } from "../src/auth/verify.js";
import { MemoryReplayStore } from "../src/auth/replay.js";
import { makeKey, type TestKey } from "../test/support/http.js";
import { startFakeCri } from "../test/support/fake-cri.js";
import { containerStatus } from "../test/support/status.js";
import { create } from "@bufbuild/protobuf";
import * as api from "../src/gen/runtime/v1/api_pb.js";

const SYNCS = Number(process.env["BENCH_SYNCS"] ?? 10_000);
const FLOOR_SECONDS = 4;
const CONNECTIONS = 8;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const r2 = (n: number) => Math.round(n * 100) / 100;

function podInput(uid: string, n = 1, hostNetwork = true): PodInput {
  return {
    metadata: { name: "bench", uid },
    spec: {
      hostNetwork,
      terminationGracePeriodSeconds: 2,
      containers: Array.from({ length: n }, (_, i) => ({
        name: `c${i}`,
        image: "localhost/busybox:1",
        imagePullPolicy: "IfNotPresent" as const,
        command: ["sleep", "3600"],
      })),
    },
  };
}

async function signer(key: TestKey) {
  let i = 0;
  return (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid })
      .setIssuer("bench")
      .setAudience("bench-node")
      .setIssuedAt()
      .setExpirationTime("50m")
      .setJti(`b-${process.pid}-${i++}`)
      .sign(key.privateKey);
}

/** The floor: the status read a converged sync needs (3 CRI calls), issued directly, CONNECTIONS in flight. */
async function floor(cri: CriClient, uid: string, seconds: number) {
  const lat: number[] = [];
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await getPodStatus(cri, { uid, name: "bench", namespace: "default" });
        lat.push(performance.now() - t0);
      }
    }),
  );
  return { p50: r2(pct(lat, 50)), p99: r2(pct(lat, 99)), rps: Math.round(lat.length / seconds) };
}

async function startServer(endpoint: string, jwks: object): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ["--expose-gc", "--import", "tsx", resolve("bench/server.ts"), endpoint, JSON.stringify(jwks)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const url = await new Promise<string>((res, rej) => {
    child.stdout!.once("data", (d: Buffer) => res((JSON.parse(d.toString().split("\n")[0]!) as { url: string }).url));
    child.once("exit", (c) => rej(new Error(`bench server exited ${c}`)));
  });
  return { url, child };
}

async function mem(url: string) {
  return (await (await fetch(`${url}/__bench/mem`)).json()) as { rss: number; heapUsed: number };
}

/** autocannon against /v1/pods/sync: `amount` requests (at most 120 s), each with its own signed token. */
async function load(url: string, tokens: string[], amount: number) {
  let i = 0;
  const result = await autocannon({
    url: `${url}/v1/pods/sync`,
    connections: CONNECTIONS,
    amount,
    duration: 120,
    method: "POST",
    headers: { "content-type": "application/jose" },
    requests: [{ setupRequest: (req) => ({ ...req, body: tokens[i++ % tokens.length]! }) }],
  });
  if (i > tokens.length) throw new Error(`ran out of tokens (${tokens.length}); replays would be refused`);
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    rps: Math.round(result.requests.average),
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

async function httpVsFloor(label: string, endpoint: string, key: TestKey) {
  const cri = connectGrpc({ endpoint, timeoutMs: 10_000 });
  const uid = `bench-${label.replace(/[^a-z0-9]+/gi, "-")}-${Date.now()}`;
  const pod = Pod.parse(podInput(uid));
  const rt = createPodRuntime(cri);
  const r = await rt.sync(pod);
  if (!r.ok) throw new Error(`${label}: could not create the bench pod: ${JSON.stringify(r.steps)}`);
  const sign = await signer(key);
  // One token per request (a jti acts once), signed up front so signing is not in the measurement.
  const tokens = await Promise.all(
    Array.from({ length: SYNCS + 1000 }, () => sign({ act: "sync", pod: podInput(uid) })),
  );
  const server = await startServer(endpoint, { keys: [key.publicJwk] });
  try {
    await load(server.url, tokens.slice(0, 1000), 1000); // warm-up
    const memBefore = await mem(server.url);
    const fl = await floor(cri, uid, FLOOR_SECONDS);
    const http = await load(server.url, tokens.slice(1000), SYNCS);
    const memAfter = await mem(server.url);
    return { label, floor: fl, http, ratioP50: r2(http.p50 / fl.p50), memBefore, memAfter, syncs: http.total };
  } finally {
    server.child.kill("SIGTERM");
    await rt.delete(uid, 2).catch(() => undefined);
    cri.close();
  }
}

async function callsPerSync() {
  const fake = await startFakeCri();
  fake.runtime.onStart = () => undefined;
  const cri = connectGrpc({ endpoint: fake.endpoint });
  const rows = [];
  for (const n of [1, 10, 50]) {
    const pod = Pod.parse(podInput(`calls-${n}`, n, false));
    const rt = createPodRuntime(cri);
    const first = await rt.sync(pod);
    const conv = await rt.sync(pod);
    const st = await rt.status(pod.metadata.uid);
    rows.push({ containers: n, firstSync: first.criCalls, convergedSync: conv.criCalls, fullStatusRead: st?.criCalls });
  }
  cri.close();
  await fake.close();
  return rows;
}

function computeThroughput() {
  const rows = [];
  for (const n of [1, 10, 100]) {
    const pod = Pod.parse(podInput("cpa", n, false));
    const status = {
      id: "cpa",
      name: "bench",
      namespace: "default",
      ips: [],
      sandboxStatuses: [
        create(api.PodSandboxStatusSchema, {
          id: "s",
          state: api.PodSandboxState.SANDBOX_READY,
          metadata: { attempt: 0 },
          network: { ip: "10.0.0.2" },
        }),
      ],
      containerStatuses: pod.spec.containers.map((c, i) =>
        containerStatus(`id${i}`, c.name, "running", hashContainer(c)),
      ),
    };
    for (let i = 0; i < 2000; i++) computePodActions(pod, status); // warm-up
    const end = performance.now() + 1000;
    let ops = 0;
    const t0 = performance.now();
    while (performance.now() < end) {
      for (let i = 0; i < 100; i++) computePodActions(pod, status);
      ops += 100;
    }
    const secs = (performance.now() - t0) / 1000;
    rows.push({
      containers: n,
      opsPerSec: Math.round(ops / secs),
      usPerCall: r2((secs * 1e6) / ops),
      nsPerContainer: Math.round((secs * 1e9) / ops / n),
    });
  }
  return rows;
}

async function jwsCost() {
  const rows = [];
  for (const alg of ["EdDSA", "ES256"] as const) {
    const key = await makeKey(alg, `k-${alg}`);
    const sign = await signer(key);
    const tokens = await Promise.all(Array.from({ length: 3000 }, () => sign({ act: "sync", pod: podInput("jws") })));
    const v = createVerifier({
      keys: { jwks: { keys: [key.publicJwk] } },
      issuers: ["bench"],
      audience: ["bench-node"],
      replay: new MemoryReplayStore(),
      maxLifetimeSeconds: 3600,
    });
    for (const t of tokens.slice(0, 500)) await v.verify(t);
    const t0 = performance.now();
    for (const t of tokens.slice(500)) await v.verify(t);
    const us = ((performance.now() - t0) * 1000) / (tokens.length - 500);
    rows.push({ alg, usPerVerify: r2(us), verifiesPerSec: Math.round(1e6 / us) });
  }
  return rows;
}

async function main() {
  const started = Date.now();
  const key = await makeKey("EdDSA", "bench-1");
  const fake = await startFakeCri();
  fake.runtime.onStart = () => undefined;
  const results: Record<string, unknown> = {
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
      memGiB: Math.round(totalmem() / 2 ** 30),
      os: `${platform()} ${release()}`,
      node: process.version,
    },
    settings: { syncsPerRuntime: SYNCS, floorSeconds: FLOOR_SECONDS, connections: CONNECTIONS },
  };
  const side: unknown[] = [await httpVsFloor("in-process CRI", fake.endpoint, key)];
  await fake.close();

  let real = process.env["PODSYNC_CRI_ENDPOINT"];
  if (!real) {
    try {
      const sock = execFileSync("bash", ["scripts/containerd-lab.sh", "start"], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      })
        .trim()
        .split("\n")
        .pop();
      if (sock) real = `unix://${sock}`;
    } catch {
      // The script said why on stderr.
    }
  }
  if (real) side.push(await httpVsFloor("containerd", real, key));
  else
    console.error(
      "bench: no containerd (the lab did not start; or set PODSYNC_CRI_ENDPOINT); the real-runtime column is left out",
    );
  results["convergedSync"] = side;
  results["criCallsPerSync"] = await callsPerSync();
  results["computePodActions"] = computeThroughput();
  results["jwsVerify"] = await jwsCost();
  results["seconds"] = Math.round((Date.now() - started) / 1000);

  console.log("\nConverged-pod sync (no actions), HTTP through the function vs the raw CRI status read (the floor)");
  console.table(
    (side as any[]).map((s) => ({
      runtime: s.label,
      "floor p50 ms": s.floor.p50,
      "floor p99 ms": s.floor.p99,
      "floor ops/s": s.floor.rps,
      "sync p50 ms": s.http.p50,
      "sync p99 ms": s.http.p99,
      "sync req/s": s.http.rps,
      "p50 ratio": s.ratioP50,
      "non-2xx": s.http.non2xx,
    })),
  );
  console.log(
    `Server memory (after GC) around ${(side as any[]).map((s) => `${s.syncs} syncs on ${s.label}: heap ${(s.memBefore.heapUsed / 2 ** 20).toFixed(1)} → ${(s.memAfter.heapUsed / 2 ** 20).toFixed(1)} MiB, rss ${(s.memBefore.rss / 2 ** 20).toFixed(0)} → ${(s.memAfter.rss / 2 ** 20).toFixed(0)} MiB`).join("; ")}`,
  );
  console.log(
    "\nCRI calls per sync (a converged sync needs ListPodSandbox + ListContainers + PodSandboxStatus = 3, whatever the size)",
  );
  console.table(results["criCallsPerSync"]);
  console.log("\ncomputePodActions (pure, converged pod)");
  console.table(results["computePodActions"]);
  console.log("\nJWS verification (jose, incl. claim checks and replay store)");
  console.table(results["jwsVerify"]);
  mkdirSync("bench/results", { recursive: true });
  const file = `bench/results/${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${file} (${results["seconds"]} s)`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
