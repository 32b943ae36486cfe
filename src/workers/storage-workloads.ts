// StorageWorkloadStore: the node's workloads (Deployments, Jobs, ...) over its Durable Object's storage. Guarantees:
// a change is never half stored (its writes issued together with no await between them, one atomic commit); the
// memory copy changes only after it; a workload's Secrets are stored sealed (secret-seal.ts, bound to its uid), never
// in clear.
import { workloadKey, type StoredWorkload, type WorkloadStore } from "../controllers/store.js";
import { sealPodObjects, unsealPodObjects } from "../state/secret-seal.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";
import { serialQueue } from "../util/serial.js";
import type { DOStorage } from "./durable-object.js";

const PREFIX = "wl:";

/** `wl:<kind>/<namespace>/<name>` → the stored workload, its Secrets sealed. This object is the store's only writer,
 * so it keeps the workloads in memory (opened) once read: the controllers' passes read no storage row. */
export class StorageWorkloadStore implements WorkloadStore {
  private items: Promise<Map<string, StoredWorkload>> | undefined;
  private key: Promise<CryptoKey> | undefined;
  /** Changes one at a time (sealing awaits between the read and the write). */
  private readonly serial = serialQueue();

  constructor(
    private readonly s: DOStorage,
    /** The sealing key (PODSYNC_SECRETS_KEY); asked for only when a workload brings Secrets. */
    private readonly loadKey: () => Promise<CryptoKey>,
  ) {}

  private getKey(): Promise<CryptoKey> {
    return (this.key ??= this.loadKey().catch((e) => {
      this.key = undefined;
      throw e;
    }));
  }

  private all(): Promise<Map<string, StoredWorkload>> {
    return (this.items ??= this.s.list<StoredWorkload>({ prefix: PREFIX }).then(
      async (m) =>
        new Map(
          await Promise.all([...m.values()].map(async (e) => [workloadKey(e.workload), await this.open(e)] as const)),
        ),
      (e) => ((this.items = undefined), Promise.reject(e)),
    ));
  }

  private async open(e: StoredWorkload): Promise<StoredWorkload> {
    if (!e.objects?.secrets?.length) return e;
    try {
      return { ...e, objects: await unsealPodObjects(e.objects, await this.getKey(), e.workload.metadata.uid!) };
    } catch (err) {
      // Its Secrets do not open (the key lost or replaced): it stays without them until it is sent again.
      const { secrets: _, ...rest } = e.objects;
      console.log(
        JSON.stringify({
          time: new Date().toISOString(),
          store: "workloads",
          workload: workloadKey(e.workload),
          error: `its Secrets do not open: ${(err as Error)?.message ?? err}`,
        }),
      );
      return { ...e, objects: rest };
    }
  }

  private async sealed(e: StoredWorkload): Promise<StoredWorkload> {
    if (!e.objects?.secrets?.length) return e;
    return { ...e, objects: await sealPodObjects(e.objects, await this.getKey(), e.workload.metadata.uid!) };
  }

  /** Write `puts` and delete `deletes` in one commit, then make `next` the memory copy. */
  private async commit(next: Map<string, StoredWorkload>, puts: StoredWorkload[], deletes: string[]): Promise<void> {
    const records = await Promise.all(puts.map((e) => this.sealed(e)));
    try {
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < deletes.length; i += 128)
        writes.push(this.s.delete(deletes.slice(i, i + 128).map((k) => PREFIX + k)));
      for (let i = 0; i < records.length; i += 127)
        writes.push(
          this.s.put(Object.fromEntries(records.slice(i, i + 127).map((e) => [PREFIX + workloadKey(e.workload), e]))),
        );
      await Promise.all(writes);
    } catch (e) {
      throw new StateUnavailableError("the desired workloads (the node's Durable Object)", e);
    }
    this.items = Promise.resolve(next);
  }

  async list() {
    return [...(await this.all()).values()];
  }

  put(entry: StoredWorkload) {
    return this.putAll([entry]);
  }

  putAll(entries: StoredWorkload[]) {
    return this.serial(async () => {
      const next = new Map(await this.all());
      for (const e of entries) next.set(workloadKey(e.workload), e);
      await this.commit(next, entries, []);
    });
  }

  setStatus(key: string, uid: string, status: Record<string, unknown>) {
    return this.serial(async () => {
      const e = (await this.all()).get(key);
      if (!e || e.workload.metadata.uid !== uid) return;
      const next = new Map(await this.all());
      const updated = { ...e, status };
      next.set(key, updated);
      await this.commit(next, [updated], []);
    });
  }

  remove(key: string) {
    return this.serial(async () => {
      const had = (await this.all()).has(key);
      if (!had) return false;
      const next = new Map(await this.all());
      next.delete(key);
      await this.commit(next, [], [key]);
      return true;
    });
  }

  replace(entries: StoredWorkload[]) {
    return this.serial(async () => {
      const before = await this.all();
      const next = new Map(entries.map((e) => [workloadKey(e.workload), e]));
      await this.commit(
        next,
        entries,
        [...before.keys()].filter((k) => !next.has(k)),
      );
    });
  }
}
