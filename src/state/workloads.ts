// The node's desired workloads on its disk (Node entry): an append-only log, <stateDir>/workloads.log, one JSON
// line per change, each written and made durable (O_DSYNC) before the change is answered, so a change costs about
// the size of what changed, not the size of every workload:
//   {"p":[record...]}          put (one or several, all or nothing: one line)
//   {"s":[key,uid,status]}     a controller's status write: the status alone
//   {"d":[key]}                remove
//   {"r":[record...]}          replace every workload
// A record is {workload, objects?, audit, storedAt, owner?, generation?, status?}, its Secrets sealed with the
// node's key (secret-seal.ts, bound to the workload's uid): sealed once, when they change (a put whose objects are
// those stored already reuses their sealed form), never in clear. The log is compacted, one put line per workload,
// when it has grown past twice the live records (plus a slack), as the used-jti log is: written beside it,
// fsync'd, renamed over it, the directory fsync'd. A line torn by a crash is dropped at load (its change was never
// answered). Records are validated again at load: a file changed by hand is held to the request's rules. Reads
// answer from memory. The format before this one, workloads.json (the whole set, rewritten on every change), is
// read once and migrated: the log is written, then workloads.json removed.
import { fstatSync } from "node:fs";
import * as nodeFs from "node:fs/promises";
import { join } from "node:path";
import type { z } from "zod";
import { serialQueue } from "../util/serial.js";
import { workloadKey, type StoredWorkload, type WorkloadStore } from "../controllers/store.js";
import { WORKLOAD_SCHEMAS, isWorkloadKind, type Workload } from "../pod/workloads/schema.js";
import { sealPodObjects, unsealPodObjects } from "./secret-seal.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";
import { appendDurably, DURABLE_APPEND } from "./group-commit.js";

const LOG = "workloads.log";
const LEGACY = "workloads.json";
/** Compact once the log holds this many bytes more than twice the live records. */
const COMPACT_SLACK = 256 * 1024;

type Line =
  | { p: StoredWorkload[] }
  | { s: [string, string, Record<string, unknown>] }
  | { d: [string] }
  | { r: StoredWorkload[] };

interface Held {
  /** As the store answers it: Secrets open. */
  entry: StoredWorkload;
  /** As written: Secrets sealed. */
  record: StoredWorkload;
  /** The objects' JSON in clear, to know whether a put changed them (then they are sealed again). */
  objectsJson: string | undefined;
  /** Bytes of its record in a compacted log. */
  bytes: number;
}

export class FileWorkloadStore implements WorkloadStore {
  private readonly items = new Map<string, Held>();
  private opening: Promise<void> | undefined;
  private readonly serial = serialQueue();
  private key: Promise<CryptoKey> | undefined;
  private fh: nodeFs.FileHandle | undefined;
  private logBytes = 0;
  /** Bytes this store has written (appends and compactions), for the bench and tests. */
  bytesWritten = 0;

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
    return [...this.items.values()].map((h) => h.entry);
  }

  async put(entry: StoredWorkload) {
    await this.putAll([entry]);
  }

  async putAll(entries: StoredWorkload[]) {
    await this.change(async () => {
      const held = await Promise.all(entries.map((e) => this.hold(e)));
      return { line: { p: held.map((h) => h.record) }, apply: () => held.forEach((h) => this.set(h)) };
    });
  }

  async setStatus(key: string, uid: string, status: Record<string, unknown>) {
    await this.change(async () => {
      const h = this.items.get(key);
      if (!h || h.entry.workload.metadata.uid !== uid) return undefined;
      return { line: { s: [key, uid, status] }, apply: () => this.applyStatus(key, uid, status) };
    });
  }

  async remove(key: string) {
    let had = false;
    await this.change(async () => {
      if (!this.items.has(key)) return undefined;
      had = true;
      return { line: { d: [key] }, apply: () => void this.items.delete(key) };
    });
    return had;
  }

  async replace(entries: StoredWorkload[]) {
    await this.change(async () => {
      const held = await Promise.all(entries.map((e) => this.hold(e)));
      return {
        line: { r: held.map((h) => h.record) },
        apply: () => {
          this.items.clear();
          for (const h of held) this.set(h);
        },
      };
    });
  }

  async close(): Promise<void> {
    await this.serial(async () => {
      await this.fh?.close().catch(() => undefined);
      this.fh = undefined;
      this.opening = undefined;
    });
  }

  /** The entry with its Secrets sealed: the sealed form stored already when its objects did not change. */
  private async hold(entry: StoredWorkload): Promise<Held> {
    const objectsJson = entry.objects ? JSON.stringify(entry.objects) : undefined;
    const prev = this.items.get(workloadKey(entry.workload));
    let objects = entry.objects;
    if (entry.objects?.secrets?.length)
      objects =
        prev && prev.objectsJson === objectsJson
          ? prev.record.objects
          : await sealPodObjects(entry.objects, await this.getKey(), entry.workload.metadata.uid!);
    const record = { ...entry, ...(objects ? { objects } : {}) };
    return { entry, record, objectsJson, bytes: JSON.stringify(record).length + 8 };
  }

  private set(h: Held) {
    this.items.set(workloadKey(h.entry.workload), h);
  }

  private applyStatus(key: string, uid: string, status: Record<string, unknown>) {
    const h = this.items.get(key);
    if (!h || h.entry.workload.metadata.uid !== uid) return;
    const record = { ...h.record, status };
    this.items.set(key, {
      ...h,
      entry: { ...h.entry, status },
      record,
      bytes: h.bytes - JSON.stringify(h.record.status ?? null).length + JSON.stringify(status).length,
    });
  }

  /** One change: its line made durable, then applied (a failed write leaves the old state); compacted when due. */
  private async change(make: () => Promise<{ line: Line; apply: () => void } | undefined>): Promise<void> {
    await this.open();
    await this.serial(async () => {
      const c = await make();
      if (!c) return;
      try {
        await this.append(`${JSON.stringify(c.line)}\n`);
      } catch (e) {
        throw e instanceof StateUnavailableError ? e : new StateUnavailableError("storing the desired workloads", e);
      }
      c.apply();
      let live = 0;
      for (const h of this.items.values()) live += h.bytes;
      if (this.logBytes > 2 * live + COMPACT_SLACK) await this.compact().catch(() => undefined);
    });
  }

  private async append(text: string): Promise<void> {
    // Never append to a file no longer at the path (replaced by hand or another process): compact afresh instead.
    if (this.fh && fstatSync(this.fh.fd).nlink === 0) {
      await this.fh.close().catch(() => undefined);
      this.fh = undefined;
    }
    if (!this.fh) await this.compact();
    try {
      await appendDurably(this.fh!, text, "utf8");
    } catch (e) {
      await this.fh?.close().catch(() => undefined);
      this.fh = undefined;
      throw e;
    }
    const n = Buffer.byteLength(text);
    this.logBytes += n;
    this.bytesWritten += n;
  }

  /** The log rewritten as one put line per workload: beside it, fsync'd, renamed over it, the directory fsync'd. */
  private async compact(): Promise<void> {
    const file = join(this.stateDir, LOG);
    const tmp = join(this.stateDir, `.${LOG}.tmp`);
    let bytes = 0;
    const out = await nodeFs.open(tmp, "w", 0o600);
    try {
      let chunk = "";
      for (const h of this.items.values()) {
        chunk += `${JSON.stringify({ p: [h.record] })}\n`;
        if (chunk.length > 1 << 20) {
          await out.writeFile(chunk, "utf8");
          bytes += Buffer.byteLength(chunk);
          chunk = "";
        }
      }
      await out.writeFile(chunk, "utf8");
      bytes += Buffer.byteLength(chunk);
      await out.sync();
    } finally {
      await out.close();
    }
    await nodeFs.rename(tmp, file);
    await this.syncDir();
    await this.fh?.close().catch(() => undefined);
    this.fh = await nodeFs.open(file, DURABLE_APPEND, 0o600);
    this.logBytes = bytes;
    this.bytesWritten += bytes;
  }

  private async syncDir(): Promise<void> {
    const d = await nodeFs.open(this.stateDir, "r");
    await d.sync().finally(() => d.close());
  }

  private async load(): Promise<void> {
    await nodeFs.mkdir(this.stateDir, { recursive: true, mode: 0o700 });
    await nodeFs.unlink(join(this.stateDir, `.${LOG}.tmp`)).catch(() => undefined);
    this.items.clear();
    const read = (name: string) =>
      nodeFs.readFile(join(this.stateDir, name), "utf8").catch((e: { code?: string }) => {
        if (e.code === "ENOENT") return undefined;
        throw e;
      });
    const log = await read(LOG);
    const legacy = log === undefined ? await read(LEGACY) : undefined;
    let rewrite = false;
    if (log !== undefined) {
      const lines = log.split("\n");
      for (const [i, text] of lines.entries()) {
        if (!text) continue;
        let line: Line;
        try {
          line = JSON.parse(text) as Line;
        } catch {
          // A torn last line (a crash mid-append: its change was never answered) is dropped; elsewhere, reported.
          if (i < lines.length - 2) this.onSkip(LOG, `line ${i + 1} is not JSON`);
          rewrite = true;
          continue;
        }
        await this.replay(line);
      }
      this.logBytes = Buffer.byteLength(log);
    } else if (legacy !== undefined) {
      // The format before the log: read once, written as a compacted log, then removed.
      const j = JSON.parse(legacy) as { workloads?: StoredWorkload[] };
      for (const rec of j.workloads ?? []) await this.admit(rec, LEGACY);
      rewrite = true;
    }
    if (rewrite || log === undefined) await this.compact();
    else this.fh = await nodeFs.open(join(this.stateDir, LOG), DURABLE_APPEND, 0o600);
    // workloads.json goes only once the log holding its records is durable.
    await nodeFs.unlink(join(this.stateDir, LEGACY)).catch(() => undefined);
  }

  private async replay(line: Line): Promise<void> {
    if ("p" in line) for (const rec of line.p) await this.admit(rec, LOG);
    else if ("r" in line) {
      this.items.clear();
      for (const rec of line.r) await this.admit(rec, LOG);
    } else if ("s" in line) this.applyStatus(...line.s);
    else if ("d" in line) this.items.delete(line.d[0]);
  }

  /** A stored record, validated as a request's and its Secrets opened; one that fails is skipped and reported. */
  private async admit(rec: StoredWorkload, file: string): Promise<void> {
    const kind = (rec.workload as { kind?: unknown } | undefined)?.kind;
    if (!isWorkloadKind(kind)) {
      this.onSkip(file, `a record of unknown kind ${JSON.stringify(kind)}`);
      return;
    }
    const r = (WORKLOAD_SCHEMAS[kind] as z.ZodType<Workload>).safeParse(rec.workload);
    if (!r.success || !r.data.metadata.uid) {
      this.onSkip(
        file,
        `${kind} ${JSON.stringify(rec.workload?.metadata?.name)} is not valid: ${r.success ? "no uid" : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
      return;
    }
    let objects = rec.objects;
    if (objects?.secrets?.length) {
      try {
        objects = await unsealPodObjects(objects, await this.getKey(), r.data.metadata.uid);
      } catch (e) {
        this.onSkip(file, `the Secrets of ${kind} ${r.data.metadata.name} do not open: ${(e as Error).message}`);
        objects = { ...(rec.objects?.configMaps ? { configMaps: rec.objects.configMaps } : {}) };
      }
    }
    const entry: StoredWorkload = { ...rec, workload: r.data, ...(objects ? { objects } : {}) };
    const record = { ...rec, workload: r.data };
    this.set({
      entry,
      record,
      objectsJson: objects ? JSON.stringify(objects) : undefined,
      bytes: JSON.stringify(record).length + 8,
    });
  }
}
