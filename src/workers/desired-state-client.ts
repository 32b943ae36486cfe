// DurableDesiredState and DurableWorkloadStore, the Worker routes' DesiredState and WorkloadStore over the node's
// NodeDesiredState object. Guarantees: every isolate serving a node sees one store; generation and iat checks run
// inside the object, atomic with the write; a change of the workloads kicks the object's alarm (its controllers run
// at once).
import {
  StaleGenerationError,
  type DesiredPod,
  type DesiredState,
  type RemoveOptions,
  type ReplaceOptions,
} from "../pleg/desired-state.js";
import type { Tombstone } from "../pleg/tombstones.js";
import { UidConflictError } from "../kuberuntime/pod-identity.js";
import type { PodRef } from "../container/types.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";
import type { PodProbeResults } from "../status/api-status.js";
import type { StoredWorkload, WorkloadStore } from "../controllers/store.js";
import type { DONamespace } from "./durable-object.js";
import { reportJSON, type KubeReport } from "./node-kube.js";
import { probeResultsFrom, type ProbeResultsJSON } from "./probe-results-json.js";

export /** The header DurableDesiredState names its node in. */
const NODE_HEADER = "podsync-node";
/** The node object's paths for the Kubernetes API (the rest of the path is the API's). */
export const KUBE_PREFIX = "/kube";

/** One operation of the node's object (NodeDesiredState): its answer, or the store's errors as the object
 * reported them (409: a stale generation or a uid conflict; anything else: the state is unavailable). */
export async function callNode<T>(ns: DONamespace, node: string, op: string, arg: unknown = null): Promise<T> {
  let r: Response;
  try {
    // The object learns its node's name from its callers (an id made from a name does not carry it), for
    // the reconcile alarm.
    r = await ns
      .get(ns.idFromName(node))
      .fetch(`https://desired/${op}`, { method: "POST", headers: { [NODE_HEADER]: node }, body: JSON.stringify(arg) });
  } catch (e) {
    throw new StateUnavailableError("the desired state (the node's Durable Object)", e);
  }
  if (r.status === 409) {
    const j = (await r.json()) as {
      message: string;
      current?: number;
      pod?: PodRef;
      holder?: { name: string; namespace: string };
    };
    if (j.pod && j.holder) throw new UidConflictError(j.pod, j.holder);
    throw new StaleGenerationError(j.message, j.current);
  }
  if (!r.ok)
    throw new StateUnavailableError(
      "the desired state (the node's Durable Object)",
      new Error(`it answered ${r.status}`),
    );
  return (await r.json()) as T;
}

/** The node's desired state, kept by its Durable Object (NodeDesiredState): every isolate serving the node
 * sees one store, and the generation and iat checks run inside the object, atomic with the write. */
export class DurableDesiredState implements DesiredState {
  constructor(
    private readonly ns: DONamespace,
    private readonly node: string,
  ) {}
  private call<T>(op: string, arg: unknown = null): Promise<T> {
    return callNode<T>(this.ns, this.node, op, arg);
  }
  list = () => this.call<DesiredPod[]>("list");
  get = async (uid: string) => (await this.call<DesiredPod | null>("get", { uid })) ?? undefined;
  put = (entry: DesiredPod) => this.call<void>("put", entry);
  remove = (uid: string, opts?: RemoveOptions) =>
    this.call<boolean>("remove", { uid, ...(opts?.iat !== undefined ? { iat: opts.iat } : {}) });
  tombstone = async (uid: string) => (await this.call<Tombstone | null>("tombstone", { uid })) ?? undefined;
  generation = () => this.call<number>("generation");
  replace = (generation: number, entries: DesiredPod[], opts?: ReplaceOptions) =>
    this.call<{ removed: string[] }>("replace", { generation, entries, iat: opts?.iat ?? null });
  /** A Kubernetes API request for the node object (the path relative to the node: /api/v1/pods, /version, ...),
   * passing on its method, headers, query and signal, and the object's answer as it streams. */
  kube = (req: Request, path: string): Promise<Response> => {
    const url = new URL(req.url);
    const headers = new Headers(req.headers);
    headers.set(NODE_HEADER, this.node);
    return this.ns.get(this.ns.idFromName(this.node)).fetch(new URL(KUBE_PREFIX + path + url.search, url).toString(), {
      method: req.method,
      headers,
      signal: req.signal,
      ...(req.method === "GET" || req.method === "HEAD" ? {} : { body: req.body }),
    });
  };
  /** A route's sync or delete, for the Kubernetes API's pods and events. */
  report = (r: KubeReport) => this.call<null>("kube-report", reportJSON(r));
  /** The node object's probe results for these pods (its alarm runs the probes). */
  probeResults = async (uids: string[]): Promise<Map<string, PodProbeResults>> =>
    new Map(
      Object.entries(await this.call<Record<string, ProbeResultsJSON>>("probe-results", { uids })).map(([uid, j]) => [
        uid,
        probeResultsFrom(j),
      ]),
    );
}

/** The node's workloads, kept by its Durable Object (NodeDesiredState), whose alarm runs their controllers. */
export class DurableWorkloadStore implements WorkloadStore {
  constructor(
    private readonly ns: DONamespace,
    private readonly node: string,
  ) {}
  private call<T>(op: string, arg: unknown = null): Promise<T> {
    return callNode<T>(this.ns, this.node, `workloads/${op}`, arg);
  }
  list = () => this.call<StoredWorkload[]>("list");
  put = (entry: StoredWorkload) => this.call<void>("putAll", { entries: [entry] });
  putAll = (entries: StoredWorkload[]) => this.call<void>("putAll", { entries });
  setStatus = (key: string, uid: string, status: Record<string, unknown>) =>
    this.call<void>("setStatus", { key, uid, status });
  remove = (key: string) => this.call<boolean>("remove", { key });
  replace = (entries: StoredWorkload[]) => this.call<void>("replace", { entries });
}
