// StorageDesiredState: the node's desired state over its Durable Object's storage. Guarantees: a set and its
// generation are never half stored (one atomic write per change); the memory copy changes only after it.
import { checkPut, checkRemove, checkReplace, type DesiredPod, type DesiredState, type RemoveOptions } from "../pleg/desired-state.js";
import type { DOStorage } from "./durable-object.js";

/** The node's desired state over its Durable Object's storage (`pod:<uid>` → the desired pod with its audit
 * record, `generation` → the node-wide set's generation). This object is the store's only writer, so it keeps
 * the set in memory once read: a converged reconcile alarm reads no storage row. Each change is its reads,
 * then its writes issued together with no await between them, which the runtime commits as one atomic write:
 * a set and its generation are never half stored; the memory copy changes only once the write succeeded. */
export class StorageDesiredState implements DesiredState {
  private pods: Promise<Map<string, DesiredPod>> | undefined;
  private gen: Promise<number> | undefined;
  constructor(private readonly s: DOStorage) {}
  private all(): Promise<Map<string, DesiredPod>> {
    return (this.pods ??= this.s.list<DesiredPod>({ prefix: "pod:" }).then(
      (m) => new Map([...m.values()].map((e) => [e.pod.metadata.uid, e])),
      (e) => ((this.pods = undefined), Promise.reject(e)),
    ));
  }
  async list() {
    return [...(await this.all()).values()];
  }
  async get(uid: string) {
    return (await this.all()).get(uid);
  }
  async generation() {
    return (this.gen ??= this.s.get<number>("generation").then(
      (g) => g ?? 0,
      (e) => ((this.gen = undefined), Promise.reject(e)),
    ));
  }
  async put(entry: DesiredPod) {
    const pods = await this.all();
    const uid = entry.pod.metadata.uid;
    checkPut(pods.get(uid), entry);
    await this.s.put(`pod:${uid}`, entry);
    pods.set(uid, entry);
  }
  async remove(uid: string, opts?: RemoveOptions) {
    const pods = await this.all();
    checkRemove(pods.get(uid), uid, opts);
    if (!pods.has(uid)) return false;
    await this.s.delete(`pod:${uid}`);
    pods.delete(uid);
    return true;
  }
  async replace(generation: number, entries: DesiredPod[]) {
    const pods = await this.all();
    checkReplace(await this.generation(), generation);
    const keep = new Set(entries.map((e) => e.pod.metadata.uid));
    const dropped = [...pods.keys()].filter((uid) => !keep.has(uid));
    // All writes issued before any is awaited: one atomic commit (multi-key calls take 128 keys each).
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < dropped.length; i += 128) writes.push(this.s.delete(dropped.slice(i, i + 128).map((uid) => `pod:${uid}`)));
    for (let i = 0; i < entries.length; i += 127) writes.push(this.s.put(Object.fromEntries(entries.slice(i, i + 127).map((e) => [`pod:${e.pod.metadata.uid}`, e]))));
    writes.push(this.s.put("generation", generation));
    await Promise.all(writes);
    pods.clear();
    for (const e of entries) pods.set(e.pod.metadata.uid, e);
    this.gen = Promise.resolve(generation);
    return { removed: dropped };
  }
}
