// npx tsx bench/refused-replicas.ts [DEPLOYMENTS] [REPLICAS] [PASSES]: what refused replicas cost the controllers
// (issue #34 item 7). DEPLOYMENTS Deployments (default 200) of REPLICAS replicas (default 1000) whose pods no node
// admits (a nodeSelector the node lacks), on memory stores (no runtime: admission refuses every pod before any CRI
// call), PASSES back-to-back controller passes (default 6). Prints the first pass and the mean of the later ones:
// wall ms, CPU ms and pods built (the generateName suffixes drawn) per pass.
import { createControllers } from "../src/controllers/run.js";
import { MemoryWorkloadStore, type StoredWorkload } from "../src/controllers/store.js";
import { MemoryDesiredState } from "../src/pleg/desired-state.js";
import { Deployment } from "../src/pod/workloads/schema.js";

const [deployments = 200, replicas = 1000, passes = 6] = process.argv.slice(2).map(Number);
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const workloads = new MemoryWorkloadStore();
let built = 0;
const c = createControllers({
  workloads,
  desired: new MemoryDesiredState(),
  runtime: { delete: () => Promise.reject(new Error("nothing is deleted here")) },
  nodeName: "bench",
  node: { name: "bench", labels: { "kubernetes.io/hostname": "bench" }, taints: [], allocatable: { pods: 110 } },
  suffix: () => (built++).toString(36).padStart(5, "b").slice(-5),
});
const entries: StoredWorkload[] = Array.from({ length: deployments }, (_, i) => ({
  workload: Deployment.parse({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: `w${i}`, namespace: "bench", uid: `u${i}` },
    spec: {
      replicas,
      selector: { matchLabels: { app: `w${i}` } },
      template: {
        metadata: { labels: { app: `w${i}` } },
        spec: { nodeSelector: { disk: "ssd" }, containers: [{ name: "c", image: "localhost/busybox:1" }] },
      },
    },
  }),
  audit: { iss: "bench", iat: 0 },
  storedAt: 0,
  generation: 1,
}));
await workloads.putAll(entries);

const rows: { wallMs: number; cpuMs: number; built: number }[] = [];
for (let i = 0; i < passes; i++) {
  const [t, cpu, b] = [performance.now(), cpuMs(), built];
  await c.pass(Date.now(), () => undefined);
  rows.push({ wallMs: performance.now() - t, cpuMs: cpuMs() - cpu, built: built - b });
}
const later = rows.slice(1);
const mean = (k: keyof (typeof rows)[number]) => Math.round(later.reduce((n, r) => n + r[k], 0) / later.length);
console.log(
  JSON.stringify({
    deployments,
    replicas,
    first: { wallMs: Math.round(rows[0]!.wallMs), cpuMs: Math.round(rows[0]!.cpuMs), built: rows[0]!.built },
    laterMean: { wallMs: mean("wallMs"), cpuMs: mean("cpuMs"), built: mean("built") },
  }),
);
