// DurableWorkloadStore, the Worker routes' WorkloadStore over the node's NodeDesiredState object (which runs the
// controllers from its alarm). Guarantees: every isolate serving a node sees one store; each change is the object's
// one atomic write, and a change kicks the object's alarm so the controllers run at once.
import type { StoredWorkload, WorkloadStore } from "../controllers/store.js";
import { callNode } from "./desired-state-client.js";
import type { DONamespace } from "./durable-object.js";

export class DurableWorkloadStore implements WorkloadStore {
  constructor(private readonly ns: DONamespace, private readonly node: string) {}
  private call<T>(op: string, arg: unknown = null): Promise<T> {
    return callNode<T>(this.ns, this.node, `workloads/${op}`, arg);
  }
  list = () => this.call<StoredWorkload[]>("list");
  put = (entry: StoredWorkload) => this.call<void>("putAll", { entries: [entry] });
  putAll = (entries: StoredWorkload[]) => this.call<void>("putAll", { entries });
  setStatus = (key: string, uid: string, status: Record<string, unknown>) => this.call<void>("setStatus", { key, uid, status });
  remove = (key: string) => this.call<boolean>("remove", { key });
  replace = (entries: StoredWorkload[]) => this.call<void>("replace", { entries });
}
