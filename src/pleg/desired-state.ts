// The node's desired state: the engine's port to the store that says what should run (the runtime says what
// does). The node agent's loop reconciles every pod in it; requests change it. Implementations sit outside
// the engine: files under the state dir on Node (one manifest per pod, like kubelet's static-pod directory),
// the node's Durable Object on Workers, memory in tests.
//
// The store is trusted local state: the loop acts on it after the tokens that put pods there have expired,
// as kubelet acts on its manifest directory.
// The entry and the rollback error live below this port and the tombstones that check entries against it.
export { StaleGenerationError, type DesiredAudit, type DesiredPod } from "./desired-pod.js";
import { canonicalJSON } from "../util/canonical-json.js";
import { StaleGenerationError, type DesiredPod } from "./desired-pod.js";
import {
  checkPut,
  ownerRecreates,
  checkSet,
  DEFAULT_TOMBSTONE_SECONDS,
  pruneTombstones,
  setTombstones,
  tombstone,
  type Tombstone,
} from "./tombstones.js";

export interface RemoveOptions {
  /** The removing token's iat (seconds): the store keeps a tombstone with it (src/pleg/tombstones.ts). */
  iat?: number | undefined;
}

export interface ReplaceOptions {
  /** The PUT's token iat (seconds): the set is checked against newer per-pod changes, and its dropped pods
   * leave tombstones with it (src/pleg/tombstones.ts). */
  iat?: number | undefined;
}

export interface DesiredState {
  /** Every desired pod (order unspecified). */
  list(): Promise<DesiredPod[]>;
  get(uid: string): Promise<DesiredPod | undefined>;
  /** Store one pod (durably, before anything acts on it). Refuses, with nothing changed, an entry whose audit.iat
   * is older than the stored entry's or than the uid's tombstone (StaleGenerationError), and one whose uid is
   * stored under another namespace/name (UidConflictError): the checks and the write are one step. */
  put(entry: DesiredPod): Promise<void>;
  /** Forget one pod; false when it was not there. With `iat` (a DELETE's token), refuses (StaleGenerationError,
   * nothing changed) when the stored entry was put by a newer token: the check and the removal are one step,
   * so a sync with a newer iat stored meanwhile is never removed by an older DELETE; and leaves a tombstone (also
   * for a uid it did not hold), so a sync signed before the DELETE is refused later. */
  remove(uid: string, opts?: RemoveOptions): Promise<boolean>;
  /** The uid's live tombstone, if any (a removed pod; src/pleg/tombstones.ts). */
  tombstone(uid: string): Promise<Tombstone | undefined>;
  /** The node-wide set's generation (0 before any PUT /v1/node/pods). */
  generation(): Promise<number>;
  /** Replace the whole set at `generation` (durably, all or nothing): returns the uids that were dropped.
   * Refuses (StaleGenerationError, nothing changed) a generation not above the current one, and (with `iat`) a
   * set signed before a per-pod change it would roll back (checkSet); the dropped pods leave tombstones. */
  replace(generation: number, entries: DesiredPod[], opts?: ReplaceOptions): Promise<{ removed: string[] }>;
}

/** The same stored entry: the same object, or one stored at the same time by the same token (a store may
 * hand out fresh copies on every read). */
export function sameEntry(a: DesiredPod | undefined, b: DesiredPod): boolean {
  return (
    a === b ||
    (a !== undefined &&
      a.storedAt === b.storedAt &&
      a.audit.iat === b.audit.iat &&
      a.audit.jti === b.audit.jti &&
      a.pod.metadata.uid === b.pod.metadata.uid)
  );
}

/** Whether acting on `mine` still acts on what is stored: `stored` is that entry, or one with the same pod
 * and objects (a later request that sent the same spec; acting on it rolls nothing back). */
export function stillStored(stored: DesiredPod | undefined, mine: DesiredPod): boolean {
  return (
    sameEntry(stored, mine) ||
    (stored !== undefined &&
      (stored.pod === mine.pod || canonicalJSON(stored.pod) === canonicalJSON(mine.pod)) &&
      (stored.objects === mine.objects ||
        canonicalJSON(stored.objects ?? null) === canonicalJSON(mine.objects ?? null)))
  );
}

/** The desired state as the pod workers' work checks it (src/podworkers/dispatch.ts): whether a request's entry
 * is still the one stored, and whether a pod has left the store. */
export const storeView = (desired: DesiredState) => ({
  stillStored: async (uid: string, mine: DesiredPod) => stillStored(await desired.get(uid), mine),
  absent: async (uid: string) => (await desired.get(uid)) === undefined,
  /** Entries with one key have the same pod and objects (stillStored's test). */
  specKey: (e: DesiredPod) => `${canonicalJSON(e.pod)}\n${canonicalJSON(e.objects ?? null)}`,
});

/** The checks every store makes inside its write (shared so Node, Workers and memory refuse alike; put's and a
 * set's are in src/pleg/tombstones.ts with the tombstones). */
export function checkRemove(stored: DesiredPod | undefined, uid: string, opts: RemoveOptions | undefined): void {
  const iat = opts?.iat;
  if (stored && iat !== undefined && iat < stored.audit.iat)
    throw new StaleGenerationError(
      `pod ${uid} was last changed by a token issued at ${stored.audit.iat}; this delete token was issued at ${iat} (older): refused, nothing changed`,
      stored.audit.iat,
    );
}
export function checkReplace(current: number, generation: number): void {
  if (!(generation > current))
    throw new StaleGenerationError(
      `generation ${generation} is not above the node's current generation ${current}: refused, nothing changed`,
      current,
    );
}

/** In memory: tests, and deployments that choose not to keep state. */
export class MemoryDesiredState implements DesiredState {
  private readonly pods = new Map<string, DesiredPod>();
  private readonly tombs = new Map<string, Tombstone>();
  private gen = 0;
  constructor(private readonly o: { tombstoneSeconds?: number; now?: () => number } = {}) {}
  private get window() {
    return this.o.tombstoneSeconds ?? DEFAULT_TOMBSTONE_SECONDS;
  }
  async list() {
    return [...this.pods.values()];
  }
  async get(uid: string) {
    return this.pods.get(uid);
  }
  private live(uid: string) {
    pruneTombstones(this.tombs, (this.o.now ?? Date.now)());
    return this.tombs.get(uid);
  }
  async tombstone(uid: string) {
    return this.live(uid);
  }
  async put(entry: DesiredPod) {
    const uid = entry.pod.metadata.uid;
    const tomb = this.live(uid);
    checkPut(this.pods.get(uid), entry, tomb);
    this.pods.set(uid, entry);
    if (!ownerRecreates(tomb, entry)) this.tombs.delete(uid);
  }
  async remove(uid: string, opts?: RemoveOptions) {
    const stored = this.pods.get(uid);
    checkRemove(stored, uid, opts);
    const t = this.tombs.get(uid);
    if (opts?.iat !== undefined && !(t && t.iat >= opts.iat))
      this.tombs.set(uid, tombstone(opts.iat, this.window, stored));
    return this.pods.delete(uid);
  }
  async generation() {
    return this.gen;
  }
  async replace(generation: number, entries: DesiredPod[], opts?: ReplaceOptions) {
    checkReplace(this.gen, generation);
    pruneTombstones(this.tombs, (this.o.now ?? Date.now)());
    if (opts?.iat !== undefined) checkSet(this.pods, this.tombs, entries, opts.iat);
    const keep = new Set(entries.map((e) => e.pod.metadata.uid));
    const removed = [...this.pods.keys()].filter((uid) => !keep.has(uid));
    if (opts?.iat !== undefined)
      setTombstones(
        this.tombs,
        removed.map((uid) => this.pods.get(uid)!),
        opts.iat,
        generation,
        this.window,
      );
    for (const uid of keep) this.tombs.delete(uid);
    this.pods.clear();
    for (const e of entries) this.pods.set(e.pod.metadata.uid, e);
    this.gen = generation;
    return { removed };
  }
}
