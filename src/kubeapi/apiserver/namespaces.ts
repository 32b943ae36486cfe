// Namespaces, read-only: the namespaces the node's objects use (a pod, a workload, an event), each `Active`,
// created when the oldest of its objects was. The hub follows its sources: any change to a source hub makes the
// set again (once per tick), so a watch sees a namespace come and go as its last object does. With the Table
// kubectl prints (printNamespace: NAME STATUS AGE), so `kubectl get ns` and kubens work.
import { humanDuration, type TableColumn } from "../table.js";
import { type KubeObject, type RvClock, WatchHub } from "../watch-hub.js";

export interface V1Namespace extends KubeObject {
  apiVersion: "v1";
  kind: "Namespace";
  metadata: {
    name: string;
    uid: string;
    resourceVersion?: string;
    creationTimestamp: string;
    labels: Record<string, string>;
  };
  spec: { finalizers: string[] };
  status: { phase: "Active" };
}

type Timestamped = KubeObject & { metadata: { creationTimestamp?: string | null } };
/** What a source hub needs to give: its objects, and a watch of its changes. */
interface Source {
  list(): readonly Timestamped[];
  readonly resourceVersion: number;
  watch(w: { since: number; filter: () => boolean; send: () => void }): () => void;
}

/** A stable uid per name (the same across restarts): the name's SHA-1 shaped as a UUID. */
async function uidOf(name: string): Promise<string> {
  const h = new Uint8Array(await crypto.subtle.digest("SHA-1", new TextEncoder().encode(`namespace/${name}`)));
  const x = [...h.slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-5${x.slice(13, 16)}-a${x.slice(17, 20)}-${x.slice(20, 32)}`;
}

/** The namespaces of the sources' objects, with the oldest creationTimestamp each (pure). */
export function namespacesOf(objects: Iterable<Timestamped>) {
  const oldest = new Map<string, string>();
  for (const o of objects) {
    const ns = o.metadata.namespace;
    if (!ns) continue;
    const t = o.metadata.creationTimestamp ?? "";
    const had = oldest.get(ns);
    if (had === undefined || (t && (had === "" || t < had))) oldest.set(ns, t);
  }
  return oldest;
}

export interface NamespaceFeed {
  hub: WatchHub<V1Namespace>;
  /** Make the set again from the sources now (a list or get calls it first). */
  load(): Promise<void>;
}

export function createNamespaceFeed(clock: RvClock, sources: () => readonly Source[], now = Date.now): NamespaceFeed {
  const hub = new WatchHub<V1Namespace>(clock, { key: (n) => n.metadata.name });
  const uids = new Map<string, string>();
  const load = async () => {
    const found = namespacesOf(sources().flatMap((s) => s.list()));
    const out: V1Namespace[] = [];
    for (const [name, t] of [...found].sort()) {
      let uid = uids.get(name);
      if (!uid) uids.set(name, (uid = await uidOf(name)));
      out.push({
        apiVersion: "v1",
        kind: "Namespace",
        metadata: {
          name,
          uid,
          creationTimestamp: t || new Date(Math.floor(now() / 1000) * 1000).toISOString().replace(".000Z", "Z"),
          // The API server labels every namespace with its name (NamespaceDefaultLabelName).
          labels: { "kubernetes.io/metadata.name": name },
        },
        spec: { finalizers: ["kubernetes"] },
        status: { phase: "Active" },
      });
    }
    hub.replaceAll(out);
  };
  // Follow the sources: a change to any of them makes the set again, once per tick.
  let queued = false;
  const again = () => {
    if (queued) return;
    queued = true;
    setTimeout(() => {
      queued = false;
      void load().catch(() => undefined);
    }, 0).unref?.();
  };
  let following = false;
  const follow = () => {
    if (following) return;
    following = true;
    for (const s of sources()) s.watch({ since: s.resourceVersion, filter: () => true, send: again });
  };
  return {
    hub,
    load: async () => {
      follow();
      await load();
    },
  };
}

/** printNamespace's columns (pkg/printers/internalversion/printers.go). */
export const NAMESPACE_COLUMNS: TableColumn[] = [
  { name: "Name", type: "string", format: "name", description: "Name must be unique within a namespace.", priority: 0 },
  { name: "Status", type: "string", format: "", description: "The status of the namespace", priority: 0 },
  {
    name: "Age",
    type: "string",
    format: "",
    description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
    priority: 0,
  },
];

export const namespaceCells = (n: V1Namespace, now: number): string[] => [
  n.metadata.name,
  n.status.phase,
  humanDuration(now - Date.parse(n.metadata.creationTimestamp)),
];
