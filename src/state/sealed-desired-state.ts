// The desired-state store with every Secret sealed at rest (secret-seal.ts): wraps any DesiredState (the file
// store on Node, the Durable Object on Workers), sealing the Secrets of each entry before it is written and
// opening them when read, so the store itself never holds a Secret's data in clear. ConfigMaps pass as they are.
// A Secret that does not open (the node key lost or replaced) is a StateUnavailableError: the store is then not
// usable for that pod until it is put again.
import {
  stillStored,
  type DesiredPod,
  type DesiredState,
  type RemoveOptions,
  type ReplaceOptions,
} from "../pleg/desired-state.js";
import { sealPodObjects, unsealPodObjects } from "./secret-seal.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";

export class SealedDesiredState implements DesiredState {
  private key: Promise<CryptoKey> | undefined;
  /** Opened objects per stored objects (by identity: a store that answers from memory hands back the same
   * object until the entry changes), so reading the whole set, as admission does on every sync, does not decrypt
   * every Secret each time. Weak: an entry replaced or removed takes its opened copy with it. */
  private readonly opened = new WeakMap<object, DesiredPod["objects"]>();
  /** `loadKey` is called on first use and again after a failure (Node: loadSealKey(stateDir), which fails with
   * StateUnavailableError; Workers: the PODSYNC_SECRETS_KEY secret). Its error is passed on as it is. */
  constructor(
    private readonly inner: DesiredState,
    private readonly loadKey: () => Promise<CryptoKey>,
  ) {}

  private getKey(): Promise<CryptoKey> {
    return (this.key ??= this.loadKey().catch((e) => {
      this.key = undefined;
      throw e;
    }));
  }

  private async seal(e: DesiredPod): Promise<DesiredPod> {
    if (!e.objects?.secrets?.length) return e;
    return { ...e, objects: await sealPodObjects(e.objects, await this.getKey(), e.pod.metadata.uid) };
  }

  private async open(e: DesiredPod | undefined): Promise<DesiredPod | undefined> {
    if (!e?.objects?.secrets?.length) return e;
    const hit = this.opened.get(e.objects);
    if (hit) return { ...e, objects: hit };
    const key = await this.getKey();
    try {
      const objects = await unsealPodObjects(e.objects, key, e.pod.metadata.uid);
      this.opened.set(e.objects, objects);
      return { ...e, objects };
    } catch (err) {
      throw err instanceof StateUnavailableError
        ? err
        : new StateUnavailableError(`the Secrets stored with pod ${e.pod.metadata.uid}`, err);
    }
  }

  /** One entry whose Secrets do not open fails alone: it comes back without its objects (its syncs then fail
   * naming the missing Secret, and a sync that sends it again repairs it), while every other pod, admission and
   * DELETE go on. */
  private async openOrBare(e: DesiredPod | undefined): Promise<DesiredPod | undefined> {
    try {
      return await this.open(e);
    } catch (err) {
      if (!(err instanceof StateUnavailableError) || !e) throw err;
      const { objects: _, ...bare } = e;
      return bare;
    }
  }

  async list() {
    return Promise.all((await this.inner.list()).map(async (e) => (await this.openOrBare(e))!));
  }
  async get(uid: string) {
    return this.openOrBare(await this.inner.get(uid));
  }
  async put(entry: DesiredPod) {
    // The same pod with the same Secrets keeps the stored sealed copies (a new seal has a new nonce, which would
    // look like a change to the store and cost a rewrite of the pod's file on every converged sync).
    if (entry.objects?.secrets?.length) {
      const raw = await this.inner.get(entry.pod.metadata.uid);
      const opened = await this.open(raw).catch(() => undefined);
      if (raw && opened && stillStored(opened, entry)) return this.inner.put({ ...entry, objects: raw.objects });
    }
    return this.inner.put(await this.seal(entry));
  }
  remove(uid: string, opts?: RemoveOptions) {
    return this.inner.remove(uid, opts);
  }
  tombstone(uid: string) {
    return this.inner.tombstone(uid);
  }
  generation() {
    return this.inner.generation();
  }
  async replace(generation: number, entries: DesiredPod[], opts?: ReplaceOptions) {
    return this.inner.replace(generation, await Promise.all(entries.map((e) => this.seal(e))), opts);
  }
}
