// The dependency rule of docs/architecture.md, checked on the code: every import between packages of src/ goes to a
// lower layer, or is one of the few edges listed below with its reason. A new upward or sideways import fails here;
// so does a listed edge that no longer exists, so the lists stay true. Also: no package folder over about 15 files.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve("src");

/** Each package's layer, lowest first (docs/architecture.md, "Rules"). A package imports only lower layers. */
const LAYERS: readonly (readonly string[])[] = [
  ["gen", "util", "types", "pod"], // the model: generated CRI types, zod schemas, small pure helpers
  ["cri"], // the runtime's client
  ["container"], // kubelet's pkg/kubelet/container
  ["volumemanager", "lifecycle", "logs"], // pieces of the kubelet port that kuberuntime composes
  ["kuberuntime"], // the kubelet port: computePodActions, SyncPod, the CRI-level pod status
  ["status"], // generateAPIPodStatus, above the runtime
  ["kubelet"], // the pod runtime: kuberuntime's steps and status's v1 status behind one front door
  ["prober", "pleg", "podworkers", "syncloop", "metrics", "controllers", "eviction", "services", "stats"], // the agent
  ["auth"], // the node owner's rules: token verification and scopes, the policy and pod security checks
  ["usecases"], // what the node does for a request (plan, sync, apply-set, delete, reads, logs, exec), one admission
  ["http", "kubeapi"], // fronts: parse, authorise, call a use case, render
  ["host", "state", "settings"], // adapters behind the agent's ports, and the settings schema
  ["node", "worker", "workers", "cli", "proxy", "fleet"], // entry points
];

/** Same-layer edges that are part of the design, each with why. */
const ALLOWED_SIDEWAYS: Record<string, string> = {
  "syncloop -> pleg": "the sync loop takes the PLEG's events and relists, and the desired-state port",
  "syncloop -> prober": "the sync loop starts and stops a pod's probe workers, as kubelet's syncLoop does",
  "syncloop -> eviction": "the loop runs the eviction manager's pass, as kubelet's syncLoop does",
  "syncloop -> metrics": "the loop reports its passes through the metrics port",
  "syncloop -> podworkers": "the sync loop dispatches each pod's sync to its pod worker, as kubelet's syncLoop does",
  "pleg -> metrics": "the PLEG counts runtime events and relists through the metrics port",
  "controllers -> pleg": "controllers hand their pods to the desired-state port the loop owns",
  "cli -> node": "`podsync serve` runs the node entry in its own process",
  "worker -> workers": "the Worker entry composes its Durable Objects",
  "proxy -> host": "cri-proxy reads the node's files through the host adapters",
};

/** Edges against the rule that exist today, each to be removed by the issue named (#36: the architecture round). */
const KNOWN_DEBT: Record<string, string> = {};

/** Folders over the size rule today, each to be split by the issue named. */
const KNOWN_LARGE: Record<string, string> = {};
const MAX_FILES = 15;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** The package of a file: its first folder under src/, or the file's own name for src/node.ts and src/worker.ts. */
function packageOf(path: string): string | undefined {
  const rel = relative(SRC, path);
  if (rel.startsWith("..")) return undefined; // outside src/ (package.json)
  const parts = rel.split("/");
  return parts.length === 1 ? parts[0]!.replace(/\.(ts|js)$/, "") : parts[0];
}

const layerOf = (pkg: string): number => LAYERS.findIndex((l) => l.includes(pkg));

function packageEdges(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    if (relative(SRC, file).startsWith("gen/")) continue;
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
      const from = packageOf(file);
      const to = packageOf(resolve(dirname(file), m[1]!));
      if (!from || !to || from === to) continue;
      const key = `${from} -> ${to}`;
      edges.set(key, [...(edges.get(key) ?? []), relative(SRC, file)]);
    }
  }
  return edges;
}

describe("the dependency rule (docs/architecture.md)", () => {
  const edges = packageEdges();

  it("every package of src/ has a layer", () => {
    const pkgs = new Set([...edges.keys()].flatMap((e) => e.split(" -> ")));
    expect([...pkgs].filter((p) => layerOf(p) < 0)).toEqual([]);
  });

  it("imports go downward, or are a listed edge", () => {
    const bad: string[] = [];
    for (const [edge, files] of edges) {
      const [from, to] = edge.split(" -> ") as [string, string];
      if (layerOf(to) < layerOf(from)) continue;
      if (edge in ALLOWED_SIDEWAYS || edge in KNOWN_DEBT) continue;
      bad.push(`${edge} (${files.slice(0, 3).join(", ")})`);
    }
    expect(bad).toEqual([]);
  });

  it("the listed exceptions still exist (a removed one comes off the list)", () => {
    const gone = Object.keys(KNOWN_DEBT).filter((e) => !edges.has(e));
    expect(gone).toEqual([]);
  });

  it(`no package folder holds more than ${MAX_FILES} source files, but those listed`, () => {
    const large: string[] = [];
    const walk = (dir: string) => {
      const entries = readdirSync(dir);
      const n = entries.filter((f) => f.endsWith(".ts")).length;
      const name = relative(SRC, dir);
      if (n > MAX_FILES && !(name in KNOWN_LARGE) && !name.startsWith("gen")) large.push(`${name}: ${n}`);
      for (const e of entries) if (statSync(join(dir, e)).isDirectory()) walk(join(dir, e));
    };
    walk(SRC);
    expect(large).toEqual([]);
  });
});
