// StorageDesiredState: the node's desired state over its Durable Object's storage. Guarantees: a set, its
// generation and its tombstones are never half stored (one atomic write per change); the memory copy changes only
// after it.
import {
  checkRemove,
  checkReplace,
  type DesiredPod,
  type DesiredState,
  type RemoveOptions,
  type ReplaceOptions,
} from "../pleg/desired-state.js";
import { checkPut, checkSet, ownerRecreates, setTombstones, tombstone, type Tombstone } from "../pleg/tombstones.js";
import type { DOStorage } from "./durable-object.js";

/** The node's desired state over its Durable Object's storage (`pod:<uid>` → the desired pod with its audit
 * record, `generation` → the node-wide set's generation, `tomb:<uid>` → a removed pod's tombstone, see
 * src/pleg/tombstones.ts). This object is the store's only writer, so it keeps the set in memory once read: a
 * converged reconcile alarm reads no storage row. Each change is its reads, then its writes issued together with
 * no await between them, which the runtime commits as one atomic write: a set, its generation and its
 * tombstones are never half stored; the memory copy changes only once the write succeeded. */
export class StorageDesiredState implements DesiredState {
  private pods: Promise<Map<string, DesiredPod>> | undefined;
  private tombs: Promise<Map<string, Tombstone>> | undefined;
  private gen: Promise<number> | undefined;
  /** `window`: the tombstones' lifetime after their iat (the token lifetime plus the skew, seconds). */
  constructor(
    private readonly s: DOStorage,
    private readonly window: () => number,
  ) {}
  private all(): Promise<Map<string, DesiredPod>> {
    return (this.pods ??= this.s.list<DesiredPod>({ prefix: "pod:" }).then(
      (m) => new Map([...m.values()].map((e) => [e.pod.metadata.uid, e])),
      (e) => ((this.pods = undefined), Promise.reject(e)),
    ));
  }
  /** The live tombstones; the expired ones are deleted with the next write. */
  private tombstones(): Promise<Map<string, Tombstone>> {
    return (this.tombs ??= this.s.list<Tombstone>({ prefix: "tomb:" }).then(
      (m) => new Map([...m].map(([k, t]) => [k.slice("tomb:".length), t])),
      (e) => ((this.tombs = undefined), Promise.reject(e)),
    ));
  }
  /** Storage deletes for the tombstones that expired (pruned from memory once written). */
  private expired(t: Map<string, Tombstone>): string[] {
    const now = Date.now();
    return [...t].filter(([, x]) => x.until <= now).map(([uid]) => `tomb:${uid}`);
  }
  async list() {
    return [...(await this.all()).values()];
  }
  async get(uid: string) {
    return (await this.all()).get(uid);
  }
  async tombstone(uid: string) {
    const t = (await this.tombstones()).get(uid);
    return t && t.until > Date.now() ? t : undefined;
  }
  async generation() {
    return (this.gen ??= this.s.get<number>("generation").then(
      (g) => g ?? 0,
      (e) => ((this.gen = undefined), Promise.reject(e)),
    ));
  }
  async put(entry: DesiredPod) {
    const [pods, tombs] = await Promise.all([this.all(), this.tombstones()]);
    const uid = entry.pod.metadata.uid;
    const t = tombs.get(uid);
    const live = t && t.until > Date.now() ? t : undefined;
    checkPut(pods.get(uid), entry, live);
    // A removed pod its controller made anew keeps its tombstone (src/pleg/tombstones.ts).
    const keep = ownerRecreates(live, entry);
    const writes: Promise<unknown>[] = [this.s.put(`pod:${uid}`, entry)];
    if (tombs.has(uid) && !keep) writes.push(this.s.delete(`tomb:${uid}`));
    await Promise.all(writes);
    pods.set(uid, entry);
    if (!keep) tombs.delete(uid);
  }
  async remove(uid: string, opts?: RemoveOptions) {
    const [pods, tombs] = await Promise.all([this.all(), this.tombstones()]);
    const stored = pods.get(uid);
    checkRemove(stored, uid, opts);
    const prev = tombs.get(uid);
    const t =
      opts?.iat !== undefined && !(prev && prev.iat >= opts.iat)
        ? tombstone(opts.iat, this.window(), stored)
        : undefined;
    const expired = this.expired(tombs);
    const writes: Promise<unknown>[] = [];
    if (stored) writes.push(this.s.delete(`pod:${uid}`));
    if (t) writes.push(this.s.put(`tomb:${uid}`, t));
    for (let i = 0; i < expired.length; i += 128) writes.push(this.s.delete(expired.slice(i, i + 128)));
    await Promise.all(writes);
    for (const k of expired) tombs.delete(k.slice("tomb:".length));
    if (t) tombs.set(uid, t);
    return pods.delete(uid);
  }
  async replace(generation: number, entries: DesiredPod[], opts?: ReplaceOptions) {
    const [pods, tombs] = await Promise.all([this.all(), this.tombstones()]);
    checkReplace(await this.generation(), generation);
    const expired = this.expired(tombs);
    const live = new Map([...tombs].filter(([uid]) => !expired.includes(`tomb:${uid}`)));
    if (opts?.iat !== undefined) checkSet(pods, live, entries, opts.iat);
    const keep = new Set(entries.map((e) => e.pod.metadata.uid));
    const dropped = [...pods.keys()].filter((uid) => !keep.has(uid));
    const added = new Map<string, Tombstone>();
    if (opts?.iat !== undefined)
      setTombstones(
        added,
        dropped.map((uid) => pods.get(uid)!),
        opts.iat,
        generation,
        this.window(),
      );
    const gone = [...expired, ...[...keep].filter((uid) => tombs.has(uid)).map((uid) => `tomb:${uid}`)];
    // All writes issued before any is awaited: one atomic commit (multi-key calls take 128 keys each).
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < dropped.length; i += 128)
      writes.push(this.s.delete(dropped.slice(i, i + 128).map((uid) => `pod:${uid}`)));
    for (let i = 0; i < gone.length; i += 128) writes.push(this.s.delete(gone.slice(i, i + 128)));
    for (let i = 0; i < entries.length; i += 127)
      writes.push(
        this.s.put(Object.fromEntries(entries.slice(i, i + 127).map((e) => [`pod:${e.pod.metadata.uid}`, e]))),
      );
    const addedList = [...added];
    for (let i = 0; i < addedList.length; i += 127)
      writes.push(this.s.put(Object.fromEntries(addedList.slice(i, i + 127).map(([uid, t]) => [`tomb:${uid}`, t]))));
    writes.push(this.s.put("generation", generation));
    await Promise.all(writes);
    pods.clear();
    for (const e of entries) pods.set(e.pod.metadata.uid, e);
    for (const k of gone) tombs.delete(k.slice("tomb:".length));
    for (const [uid, t] of added) tombs.set(uid, t);
    this.gen = Promise.resolve(generation);
    return { removed: dropped };
  }
}
