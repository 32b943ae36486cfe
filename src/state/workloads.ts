// The node's desired workloads on its disk (Node entry): <stateDir>/workloads.json, one file holding every
// workload with podsync's record beside it ({workload, objects?, audit, storedAt, owner?, status?}), rewritten
// whole and atomically (writeFileAtomic, then the directory fsync'd) on each change, so a replace is all or
// nothing. File 0600 under the 0700 state dir. A workload's Secrets are sealed with the node's key
// (secret-seal.ts, bound to the workload's uid), never in clear. Reads answer from memory (loaded at open).
// Workloads are validated again when loaded: a file changed by hand is held to the request's rules.
import * as nodeFs from "node:fs/promises";
import { join } from "node:path";
import type { z } from "zod";
import { serialQueue } from "../util/serial.js";
import { workloadKey, type StoredWorkload, type WorkloadStore } from "../controllers/store.js";
import { WORKLOAD_SCHEMAS, isWorkloadKind, type Workload } from "../pod/workloads/schema.js";
import { sealPodObjects, unsealPodObjects } from "./secret-seal.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";
import { writeFileAtomic } from "./atomic-file.js";

const FILE = "workloads.json";

export class FileWorkloadStore implements WorkloadStore {
  private readonly items = new Map<string, StoredWorkload>();
  private opening: Promise<void> | undefined;
  private readonly serial = serialQueue();
  private key: Promise<CryptoKey> | undefined;

  constructor(
    readonly stateDir: string,
    private readonly loadKey: () => Promise<CryptoKey>,
    private readonly onSkip: (what: string, why: string) => void = () => undefined,
  ) {}

  private getKey(): Promise<CryptoKey> {
    return (this.key ??= this.loadKey().catch((e) => {
      this.key = undefined;
      throw e;
    }));
  }

  open(): Promise<void> {
    this.opening ??= this.serial(() => this.load()).catch((e) => {
      this.opening = undefined;
      throw e instanceof StateUnavailableError ? e : new StateUnavailableError("the desired workloads", e);
    });
    return this.opening;
  }

  async list() {
    await this.open();
    return [...this.items.values()];
  }

  async put(entry: StoredWorkload) {
    await this.change((m) => void m.set(workloadKey(entry.workload), entry));
  }

  async putAll(entries: StoredWorkload[]) {
    await this.change((m) => {
      for (const e of entries) m.set(workloadKey(e.workload), e);
    });
  }

  async setStatus(key: string, uid: string, status: Record<string, unknown>) {
    await this.change((m) => {
      const e = m.get(key);
      if (e && e.workload.metadata.uid === uid) m.set(key, { ...e, status });
    });
  }

  async remove(key: string) {
    let had = false;
    await this.change((m) => void (had = m.delete(key)));
    return had;
  }

  async replace(entries: StoredWorkload[]) {
    await this.change((m) => {
      m.clear();
      for (const e of entries) m.set(workloadKey(e.workload), e);
    });
  }

  /** Apply `fn` to a copy, write the copy, then make it the state (a failed write leaves the old state). */
  private async change(fn: (m: Map<string, StoredWorkload>) => void): Promise<void> {
    await this.open();
    await this.serial(async () => {
      const next = new Map(this.items);
      fn(next);
      try {
        const key = [...next.values()].some((e) => e.objects?.secrets?.length) ? await this.getKey() : undefined;
        const records = await Promise.all(
          [...next.values()].map(async (e) => ({
            ...e,
            ...(e.objects && key ? { objects: await sealPodObjects(e.objects, key, e.workload.metadata.uid!) } : {}),
          })),
        );
        await writeFileAtomic(join(this.stateDir, FILE), `${JSON.stringify({ workloads: records }, null, 1)}\n`);
        const d = await nodeFs.open(this.stateDir, "r");
        await d.sync().finally(() => d.close());
      } catch (e) {
        throw e instanceof StateUnavailableError ? e : new StateUnavailableError("storing the desired workloads", e);
      }
      this.items.clear();
      for (const [k, v] of next) this.items.set(k, v);
    });
  }

  private async load(): Promise<void> {
    await nodeFs.mkdir(this.stateDir, { recursive: true, mode: 0o700 });
    let text: string;
    try {
      text = await nodeFs.readFile(join(this.stateDir, FILE), "utf8");
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") return;
      throw e;
    }
    const j = JSON.parse(text) as { workloads?: StoredWorkload[] };
    this.items.clear();
    for (const rec of j.workloads ?? []) {
      const kind = (rec.workload as { kind?: unknown } | undefined)?.kind;
      if (!isWorkloadKind(kind)) {
        this.onSkip(FILE, `a record of unknown kind ${JSON.stringify(kind)}`);
        continue;
      }
      const r = (WORKLOAD_SCHEMAS[kind] as z.ZodType<Workload>).safeParse(rec.workload);
      if (!r.success || !r.data.metadata.uid) {
        this.onSkip(
          FILE,
          `${kind} ${JSON.stringify(rec.workload?.metadata?.name)} is not valid: ${r.success ? "no uid" : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
        );
        continue;
      }
      let objects = rec.objects;
      if (objects?.secrets?.length) {
        try {
          objects = await unsealPodObjects(objects, await this.getKey(), r.data.metadata.uid);
        } catch (e) {
          this.onSkip(FILE, `the Secrets of ${kind} ${r.data.metadata.name} do not open: ${(e as Error).message}`);
          objects = { ...(rec.objects?.configMaps ? { configMaps: rec.objects.configMaps } : {}) };
        }
      }
      const entry: StoredWorkload = { ...rec, workload: r.data, ...(objects ? { objects } : {}) };
      this.items.set(workloadKey(entry.workload), entry);
    }
  }
}
