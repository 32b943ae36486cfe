// @kubernetes/client-node 1.4.0 against a node, as a user's program: `node client-node.mjs <ns> <pod>` with
// KUBECONFIG set. Prints one JSON line per check: list, informer, log follow (the client sends `pretty=<follow>`,
// log.js), exec.
import { PassThrough, Writable } from "node:stream";
import * as k8s from "@kubernetes/client-node";

const [ns, pod] = process.argv.slice(2);
const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const core = kc.makeApiClient(k8s.CoreV1Api);
const out = (check, value) => console.log(JSON.stringify({ check, ...value }));
const withTimeout = (p, ms, what) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`${what}: timed out`)), ms))]);

const list = await core.listNamespacedPod({ namespace: ns });
out("list", { names: list.items.map((p) => p.metadata.name).sort() });

const informer = k8s.makeInformer(kc, `/api/v1/namespaces/${ns}/pods`, () => core.listNamespacedPod({ namespace: ns }));
const added = new Promise((res) => informer.on("add", (p) => p.metadata.name === pod && res(p.metadata.name)));
await informer.start();
out("informer", { added: await withTimeout(added, 20_000, "informer") });
await informer.stop();

const logs = new PassThrough();
let text = "";
logs.on("data", (b) => (text += b.toString()));
const req = await new k8s.Log(kc).log(ns, pod, "main", logs, { follow: true, tailLines: 2 });
await withTimeout(
  new Promise((res) => {
    const t = setInterval(() => text.split("\n").length > 3 && (clearInterval(t), res()), 100);
  }),
  20_000,
  "log follow",
);
req.abort();
out("log", { lines: text.split("\n").filter(Boolean).slice(0, 3) });

let stdout = "";
const sink = new Writable({ write: (b, _e, cb) => ((stdout += b.toString()), cb()) });
const status = await withTimeout(
  new Promise((res, rej) =>
    new k8s.Exec(kc).exec(ns, pod, "main", ["echo", "hi from exec"], sink, null, null, false, (s) => res(s)).catch(rej),
  ),
  20_000,
  "exec",
);
out("exec", { stdout, status: status.status });
process.exit(0);
