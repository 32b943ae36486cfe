// npm run bench:workload-store: what one change to the node's workload store costs with 1,000 workloads stored
// (src/state/workloads.ts, an append-only log with compaction). No runtime: the store on the state dir's disk
// (a temp dir; BENCH_STATE_DIR to choose one). Measured per change, over 200 of each: a controller's status write,
// a put of one Deployment (its Secret unchanged, so not sealed again), and a put with a changed Secret; wall time
// (median, p95) and bytes written (appends plus compactions, amortised) against the record's size. Prints a table
// and writes bench/results/workload-store-<time>.json.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { FileWorkloadStore } from "../src/state/workloads.js";
import { importSealKey, newSealKeyBytes } from "../src/state/secret-seal.js";
import { Deployment } from "../src/pod/workloads/schema.js";
import type { StoredWorkload } from "../src/controllers/store.js";

const N = 1000;
const CHANGES = 200;
const dir = process.env["BENCH_STATE_DIR"] ?? mkdtempSync(join(tmpdir(), "podsync-bench-wl-store-"));
const key = importSealKey(newSealKeyBytes());

const deployment = (i: number) =>
  Deployment.parse({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: `web-${i}`, namespace: "default", uid: `uid-${i}`, labels: { app: `web-${i}` } },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: `web-${i}` } },
      template: {
        metadata: { labels: { app: `web-${i}` } },
        spec: {
          containers: [
            {
              name: "main",
              image: "localhost/busybox:1",
              command: ["sh", "-c", "httpd -f -p 8080"],
              env: [{ name: "MODE", value: "production" }],
              ports: [{ containerPort: 8080 }],
              resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { memory: "128Mi" } },
            },
          ],
        },
      },
    },
  });
const entry = (i: number, password = "c2VjcmV0"): StoredWorkload => ({
  workload: deployment(i),
  audit: { iss: "bench", iat: 1 },
  storedAt: Date.now(),
  generation: 1,
  objects: { secrets: [{ apiVersion: "v1", kind: "Secret", metadata: { name: "creds" }, data: { password } }] },
});

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)]!, p95: s[Math.floor(s.length * 0.95)]! };
};

async function measure(store: FileWorkloadStore, change: (i: number) => Promise<void>) {
  const ms: number[] = [];
  const before = store.bytesWritten;
  for (let i = 0; i < CHANGES; i++) {
    const t0 = performance.now();
    await change(i);
    ms.push(performance.now() - t0);
  }
  return { ...stats(ms), bytesPerChange: Math.round((store.bytesWritten - before) / CHANGES) };
}

async function main() {
  const store = new FileWorkloadStore(dir, () => key);
  await store.putAll(Array.from({ length: N }, (_, i) => entry(i)));
  const recordBytes = JSON.stringify(entry(0)).length;
  const status = await measure(store, (i) =>
    store.setStatus(`Deployment/default/web-${i % N}`, `uid-${i % N}`, {
      observedGeneration: 1,
      replicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
      updatedReplicas: 3,
    }),
  );
  const put = await measure(store, (i) => store.put(entry((i * 7) % N)));
  const resealed = await measure(store, (i) =>
    store.put(entry((i * 11) % N, Buffer.from(`pw-${i}`).toString("base64"))),
  );
  const rows = { status, put, resealed };
  console.log(`workload store, ${N} workloads stored, ${CHANGES} changes each (record: ${recordBytes} B)`);
  console.log("change             median ms   p95 ms   bytes/change (amortised)   x record");
  for (const [name, r] of Object.entries(rows))
    console.log(
      `${name.padEnd(18)} ${r.median.toFixed(2).padStart(9)} ${r.p95.toFixed(2).padStart(8)} ${String(r.bytesPerChange).padStart(26)} ${(r.bytesPerChange / recordBytes).toFixed(2).padStart(9)}`,
    );
  await store.close();
  const out = resolve("bench/results");
  mkdirSync(out, { recursive: true });
  const file = join(out, `workload-store-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ n: N, changes: CHANGES, recordBytes, cpus: cpus().length, rows }, null, 1)}\n`,
  );
  console.log(`wrote ${file}`);
}

await main();
