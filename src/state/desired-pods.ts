// Package state/ — the Node entry's stores on disk: desired pods (Secrets sealed), probe state, used jtis.
// Implements the ports pleg/ and prober/ define; imported only by entry points and HTTP.
//
// The node's desired state on its disk (Node entry): what the node agent keeps running when nobody calls.
// Laid out like kubelet's static-pod directory, so a person can read it:
//   <stateDir>/pods/<uid>.json    one per desired pod: the v1 Pod (apiVersion, kind, metadata, spec) plus a
//                                 `podsync` field {audit: {iss, kid, jti, iat}, storedAt, objects?}
//   <stateDir>/generation.json    {"generation": N} (the node-wide set's generation), or, while a PUT's set is
//                                 being put in place, {"generation": N, "keep": [uids], "tombstones"?: {...}}
//   <stateDir>/tombstones.json    {"<uid>": {iat, until, generation?, removed?}}: the pods removed while a token
//                                 issued before their removal can still be valid (src/pleg/tombstones.ts)
// Dirs 0700, files 0600: the store is trusted local state (the loop acts on it after the tokens expired); only
// root may read or change it. The Secrets signed with a pod reach it sealed (the Node entry wraps it in
// SealedDesiredState), never in clear.
//
//   <stateDir>/audit.log          a put that changes nothing but the audit record (a converged sync: same pod,
//                                 same objects, a newer token) is one line here, `{"uid","of","audit"}`, instead
//                                 of a rewrite of the pod's file: `of` is the storedAt of the file it amends
//
// Every write is atomic: written to a hidden temp file, fsync'd, renamed into place, the directory fsync'd.
// An audit line is appended durably (the log is opened O_DSYNC), concurrent ones sharing one write (group
// commit): a crash leaves the line whole (the new iat) or absent or torn (skipped: the old iat, with the same
// spec), so the store holds the old entry or the new one. The iat must survive (a pod's iat orders its syncs and
// DELETEs across restarts), so it is durable before the put returns, as a rewrite would be. open folds the lines
// into the pod files (rewritten with the same storedAt, so a crash while folding applies a line twice, to the same
// result) and empties the log.
// Writes are serialised; list/get answer from memory (loaded at open), changed only after the disk is.
// Any I/O failure is a StateUnavailableError (503) and leaves the previous state in force.
import * as nodeFs from "node:fs/promises";
import { join } from "node:path";
import {
  checkRemove,
  checkReplace,
  stillStored,
  type DesiredPod,
  type DesiredState,
  type RemoveOptions,
  type ReplaceOptions,
} from "../pleg/desired-state.js";
import {
  checkPut,
  ownerRecreates,
  checkSet,
  DEFAULT_TOMBSTONE_SECONDS,
  pruneTombstones,
  setTombstones,
  tombstone,
  type Tombstone,
} from "../pleg/tombstones.js";
import { Pod } from "../pod/schema.js";
import { serialQueue } from "../util/serial.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";
import { writeFileAtomic } from "./atomic-file.js";
import { appendDurably, DURABLE_APPEND, groupCommit } from "./group-commit.js";

/** The few file operations used, so a test can make them fail (disk full, read-only) at a chosen point. */
export type StateFs = Pick<typeof nodeFs, "mkdir" | "chmod" | "readdir" | "readFile" | "open" | "rename" | "unlink">;

const POD_FILE = /^([A-Za-z0-9][A-Za-z0-9._-]{0,127})\.json$/;
const NEXT_FILE = /^([A-Za-z0-9][A-Za-z0-9._-]{0,127})\.json\.next$/;
const GENERATION = "generation.json";
const TOMBSTONES = "tombstones.json";
const AUDIT_LOG = "audit.log";
/** Empty the audit log (folding it into the pod files) once it holds this many lines. */
const AUDIT_FOLD_AT = 4096;

interface AuditLine {
  uid: string;
  /** The storedAt of the pod file the line amends: a line for a file since rewritten or removed is void. */
  of: number;
  audit: DesiredPod["audit"];
}

interface GenerationFile {
  generation: number;
  /** Present only between replace's commit and its completion: the uids of the new set, and the tombstones
   * when the set changes them. */
  keep?: string[];
  tombstones?: Record<string, Tombstone>;
}

export interface FileDesiredStateOptions {
  fs?: StateFs;
  /** Stored pods that could not be read back (a hand-edited or torn file): left out, and reported here. */
  onSkip?: (file: string, reason: string) => void;
  /** The state directory's lock (state-dir-lock.ts), taken before anything is loaded. */
  lock?: { acquire(): Promise<void> };
  /** How long a removed pod's tombstone outlives its removing token's iat: the token lifetime plus the clock skew
   * (seconds; default 330). */
  tombstoneSeconds?: number;
  now?: () => number;
}

export class FileDesiredState implements DesiredState {
  readonly podsDir: string;
  private readonly genFile: string;
  private readonly auditFile: string;
  private auditLines = 0;
  /** The audit log, open for appending between folds (a fold renames a new, empty log over it and drops this).
   * Kept open: the state directory's lock makes this store the log's only writer. */
  private auditFh: nodeFs.FileHandle | undefined;
  /** Audit lines of concurrent puts go out in one durable write. */
  private readonly auditLog = groupCommit(async (chunk, n) => {
    try {
      this.auditFh ??= await this.fs.open(this.auditFile, DURABLE_APPEND, 0o600);
      await appendDurably(this.auditFh, chunk, "utf8");
    } catch (e) {
      await this.closeAuditLog(); // a bad handle (disk gone): the next batch opens the file at the path again
      throw e;
    }
    this.auditLines += n;
  });
  private readonly fs: StateFs;
  private readonly pods = new Map<string, DesiredPod>();
  private readonly tombs = new Map<string, Tombstone>();
  private readonly window: number;
  private readonly now: () => number;
  private gen = 0;
  private opening: Promise<void> | undefined;
  /** Writes (and the first load) one at a time. */
  private readonly serial = serialQueue();

  constructor(
    /** PODSYNC_STATE_DIR: pods/ and generation.json live under it. */
    readonly stateDir: string,
    private readonly o: FileDesiredStateOptions = {},
  ) {
    this.podsDir = join(stateDir, "pods");
    this.genFile = join(stateDir, GENERATION);
    this.auditFile = join(stateDir, AUDIT_LOG);
    this.fs = o.fs ?? nodeFs;
    this.window = o.tombstoneSeconds ?? DEFAULT_TOMBSTONE_SECONDS;
    this.now = o.now ?? Date.now;
  }

  /** Load the store (at start-up; a later call retries it if it failed), finishing or undoing a replace that a
   * crash interrupted. Throws StateUnavailableError. */
  open(): Promise<void> {
    this.opening ??= this.serial(() => this.load()).catch((e) => {
      this.opening = undefined;
      throw e instanceof StateUnavailableError ? e : new StateUnavailableError("the desired state", e);
    });
    return this.opening;
  }

  async list(): Promise<DesiredPod[]> {
    await this.open();
    return [...this.pods.values()];
  }

  async get(uid: string): Promise<DesiredPod | undefined> {
    await this.open();
    return this.pods.get(uid);
  }

  async generation(): Promise<number> {
    await this.open();
    return this.gen;
  }

  async tombstone(uid: string): Promise<Tombstone | undefined> {
    await this.open();
    return this.liveTombstone(uid);
  }

  private liveTombstone(uid: string): Tombstone | undefined {
    const t = this.tombs.get(uid);
    return t && t.until > this.now() ? t : undefined;
  }

  async put(entry: DesiredPod): Promise<void> {
    await this.open();
    const amended = await this.serial(async () => {
      const uid = entry.pod.metadata.uid;
      const stored = this.pods.get(uid);
      const tomb = this.liveTombstone(uid);
      checkPut(stored, entry, tomb);
      if (stored && stillStored(stored, entry)) {
        // The same pod and objects: only the audit record changes. The file stays (and its storedAt: the spec
        // was stored then); the newer audit is held from now (a concurrent older token is refused against it)
        // and made durable outside the write queue, so concurrent converged syncs share one durable write.
        // A tombstone a controller's re-made pod kept goes once a newer request stores it.
        if (tomb && !ownerRecreates(tomb, entry) && this.tombs.delete(uid))
          await this.writeTombstones().catch(() => undefined);
        const next: DesiredPod = { ...stored, audit: entry.audit };
        this.pods.set(uid, next);
        const line: AuditLine = { uid, of: stored.storedAt, audit: entry.audit };
        return { uid, stored, next, done: this.auditLog.append(`${JSON.stringify(line)}\n`) };
      }
      await this.io("storing a desired pod", () => this.writeAtomic(this.podsDir, `${uid}.json`, encode(entry)));
      this.pods.set(uid, entry);
      // Stored again with a newer token: the entry's iat guards it from here on. Left in place if its file cannot
      // be rewritten (it only refuses tokens older than the entry's anyway).
      // (Not when the removed pod's controller made it anew: the tombstone still refuses the requests signed
      // before the removal.)
      if (!ownerRecreates(tomb, entry) && this.tombs.delete(uid)) await this.writeTombstones().catch(() => undefined);
      return undefined;
    });
    if (!amended) return;
    try {
      await amended.done;
    } catch (e) {
      // Not durable: the old audit stands again (unless something replaced the entry meanwhile), and the next
      // read loads the disk (a torn line is skipped there).
      if (this.pods.get(amended.uid) === amended.next) this.pods.set(amended.uid, amended.stored);
      this.opening = undefined;
      throw new StateUnavailableError("storing a desired pod", e);
    }
    if (this.auditLines >= AUDIT_FOLD_AT)
      // In the write queue, after the lines already queued are written (none is queued while it runs).
      void this.serial(async () => {
        await this.auditLog.idle();
        if (this.auditLines >= AUDIT_FOLD_AT) await this.foldAuditLog();
      }).catch(() => (this.opening = undefined));
  }

  async remove(uid: string, opts?: RemoveOptions): Promise<boolean> {
    await this.open();
    return this.serial(async () => {
      const stored = this.pods.get(uid);
      checkRemove(stored, uid, opts);
      // The tombstone first (durably), then the removal: a crash between them is finished at load. A DELETE of a
      // pod the store never held leaves one too: a sync signed before it is late, whatever it finds.
      const before = this.tombs.get(uid);
      if (opts?.iat !== undefined && !(before && before.iat >= opts.iat)) {
        this.tombs.set(uid, tombstone(opts.iat, this.window, stored));
        try {
          await this.io("recording a removed pod", () => this.writeTombstones());
        } catch (e) {
          if (before) this.tombs.set(uid, before);
          else this.tombs.delete(uid);
          throw e;
        }
      }
      if (!stored) return false;
      await this.io("removing a desired pod", async () => {
        await this.fs.unlink(join(this.podsDir, `${uid}.json`)).catch(ignore("ENOENT"));
        await this.syncDir(this.podsDir).catch((e) => {
          throw new AfterChange(e);
        });
      });
      this.pods.delete(uid);
      return true;
    });
  }

  /** All or nothing, across a crash at any point:
   *  1. each new pod is written beside its file as `<uid>.json.next` (the current files are untouched);
   *  2. generation.json is rewritten with the new generation and the new set's uids: the commit point;
   *  3. each `.next` is renamed over its `.json`, every `.json` not in the set is removed;
   *  4. generation.json is rewritten without the set.
   * A crash before 2 leaves the old state (open deletes the `.next` files); after 2, open completes 3 and 4.
   * A failure before 2 is a StateUnavailableError with the old state in force; after 2 the new set is
   * committed, so it is in force, and what is left of 3 and 4 is finished by the next write or open. */
  async replace(generation: number, entries: DesiredPod[], opts?: ReplaceOptions): Promise<{ removed: string[] }> {
    await this.open();
    return this.serial(async () => {
      checkReplace(this.gen, generation);
      pruneTombstones(this.tombs, this.now());
      if (opts?.iat !== undefined) checkSet(this.pods, this.tombs, entries, opts.iat);
      const keep = entries.map((e) => e.pod.metadata.uid);
      const keepSet = new Set(keep);
      const removed = [...this.pods.keys()].filter((uid) => !keepSet.has(uid));
      const tombs = new Map(this.tombs);
      for (const uid of keep) tombs.delete(uid);
      if (opts?.iat !== undefined)
        setTombstones(
          tombs,
          removed.map((uid) => this.pods.get(uid)!),
          opts.iat,
          generation,
          this.window,
        );
      // Written with the commit only when the set changes them (pods dropped, or removed pods back in the set).
      const tombstones =
        tombs.size === this.tombs.size && [...tombs.keys()].every((uid) => this.tombs.has(uid))
          ? undefined
          : Object.fromEntries(tombs);
      await this.io("storing the node's desired set", async () => {
        try {
          // Written (and fsync'd) 16 at a time: the fsyncs overlap, the order does not matter before the commit.
          // All of a batch settle before a failure is thrown, so no write of this replace lands after it returned.
          for (let i = 0; i < entries.length; i += 16) {
            const done = await Promise.allSettled(
              entries
                .slice(i, i + 16)
                .map((e) => this.writeAtomic(this.podsDir, `${e.pod.metadata.uid}.json.next`, encode(e), false)),
            );
            const failed = done.find((d) => d.status === "rejected");
            if (failed) throw failed.reason;
          }
          await this.syncDir(this.podsDir);
          await this.writeAtomic(
            this.stateDir,
            GENERATION,
            `${JSON.stringify({ generation, keep, ...(tombstones ? { tombstones } : {}) } satisfies GenerationFile)}\n`,
          );
        } catch (err) {
          // Once generation.json was renamed, the set is committed on disk: its `.next` files must stay for open to
          // finish it. Before that, they go and the old state stands.
          if (!(err instanceof AfterChange))
            for (const e of entries)
              await this.fs.unlink(join(this.podsDir, `${e.pod.metadata.uid}.json.next`)).catch(() => undefined);
          throw err;
        }
      });
      this.gen = generation;
      this.pods.clear();
      for (const e of entries) this.pods.set(e.pod.metadata.uid, e);
      this.tombs.clear();
      for (const [uid, t] of tombs) this.tombs.set(uid, t);
      // Committed: a failure from here on is finished at the next open (the set is already in force).
      await this.complete(generation, keepSet, tombstones).catch(() => (this.opening = undefined));
      return { removed };
    });
  }

  /** Steps 3 and 4 of replace (also run by open after a crash); the set's tombstones are written before step 4. */
  private async complete(
    generation: number,
    keep: Set<string>,
    tombstones: Record<string, Tombstone> | undefined,
  ): Promise<void> {
    const names = await this.fs.readdir(this.podsDir);
    for (const name of names) {
      const next = NEXT_FILE.exec(name);
      if (next && keep.has(next[1]!))
        await this.fs.rename(join(this.podsDir, name), join(this.podsDir, `${next[1]}.json`));
      else if (next) await this.fs.unlink(join(this.podsDir, name));
    }
    for (const name of names) {
      const m = POD_FILE.exec(name);
      if (m && !keep.has(m[1]!)) await this.fs.unlink(join(this.podsDir, name)).catch(ignore("ENOENT"));
    }
    await this.syncDir(this.podsDir);
    if (tombstones) await this.writeAtomic(this.stateDir, TOMBSTONES, `${JSON.stringify(tombstones)}\n`);
    await this.writeAtomic(this.stateDir, GENERATION, `${JSON.stringify({ generation } satisfies GenerationFile)}\n`);
  }

  private async writeTombstones(): Promise<void> {
    pruneTombstones(this.tombs, this.now());
    await this.writeAtomic(this.stateDir, TOMBSTONES, `${JSON.stringify(Object.fromEntries(this.tombs))}\n`);
  }

  private async load(): Promise<void> {
    await this.o.lock?.acquire();
    for (const d of [this.stateDir, this.podsDir]) {
      await this.fs.mkdir(d, { recursive: true, mode: 0o700 });
      await this.fs.chmod(d, 0o700);
    }
    let g: GenerationFile = { generation: 0 };
    try {
      g = JSON.parse(await this.fs.readFile(this.genFile, "utf8")) as GenerationFile;
      if (!Number.isSafeInteger(g.generation) || g.generation < 0)
        throw new Error(`${this.genFile}: "generation" is not a whole number`);
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw e;
    }
    if (g.keep) await this.complete(g.generation, new Set(g.keep), g.tombstones);
    this.gen = g.generation;
    this.tombs.clear();
    try {
      const t = JSON.parse(await this.fs.readFile(join(this.stateDir, TOMBSTONES), "utf8")) as Record<
        string,
        Tombstone
      >;
      if (typeof t !== "object" || t === null) throw new Error(`${TOMBSTONES}: not a JSON object`);
      for (const [uid, x] of Object.entries(t))
        if (typeof x?.iat === "number" && typeof x.until === "number") this.tombs.set(uid, x);
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw e;
    }
    pruneTombstones(this.tombs, this.now());
    this.pods.clear();
    for (const name of await this.fs.readdir(this.podsDir)) {
      const path = join(this.podsDir, name);
      // Leftovers of a write or replace that a crash cut short, never committed.
      if (name.startsWith(".") && name.endsWith(".tmp")) await this.fs.unlink(path).catch(() => undefined);
      else if (NEXT_FILE.test(name)) await this.fs.unlink(path).catch(() => undefined);
      const m = POD_FILE.exec(name);
      if (!m) continue;
      const entry = decode(await this.fs.readFile(path, "utf8"));
      if (typeof entry === "string" || entry.pod.metadata.uid !== m[1]) {
        this.o.onSkip?.(path, typeof entry === "string" ? entry : "metadata.uid does not match the file name");
        continue;
      }
      // A DELETE that a crash cut short after its tombstone was written: finished now.
      const t = this.tombs.get(m[1]!);
      if (t?.removed !== undefined && t.removed === entry.storedAt && t.generation === undefined) {
        await this.fs.unlink(path);
        continue;
      }
      this.pods.set(m[1]!, entry);
    }
    await this.foldAuditLog();
  }

  /** Apply the audit log's lines to the pods they amend, write those pods' files, then empty the log. */
  private async foldAuditLog(): Promise<void> {
    // No line in flight (one queued before a reload is written to the log being folded), and the handle dropped:
    // the log at the path is replaced below, and a line appended to the old file would be lost.
    await this.auditLog.idle();
    await this.closeAuditLog();
    let text: string;
    try {
      text = await this.fs.readFile(this.auditFile, "utf8");
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw e;
      text = "";
    }
    if (text === "") {
      this.auditLines = 0;
      return;
    }
    const amended = new Set<string>();
    for (const raw of text.split("\n")) {
      let line: AuditLine;
      try {
        line = JSON.parse(raw) as AuditLine;
      } catch {
        continue; // the torn last line of a crash, or the empty one after the final newline
      }
      const e = this.pods.get(line.uid);
      if (!e || e.storedAt !== line.of || typeof line.audit?.iat !== "number" || line.audit.iat < e.audit.iat) continue;
      this.pods.set(line.uid, { ...e, audit: line.audit });
      amended.add(line.uid);
    }
    for (const uid of amended)
      await writeFileAtomic(join(this.podsDir, `${uid}.json`), encode(this.pods.get(uid)!), this.fs);
    if (amended.size) await this.syncDir(this.podsDir);
    // Emptied only once every amended file is durable: a crash before this folds the same lines again.
    await writeFileAtomic(this.auditFile, "", this.fs);
    await this.syncDir(this.stateDir);
    this.auditLines = 0;
  }

  private async closeAuditLog(): Promise<void> {
    const fh = this.auditFh;
    this.auditFh = undefined;
    await fh?.close().catch(() => undefined);
  }

  /** Write a file in one step: temp file, fsync, rename, directory fsync (unless the caller does that). */
  private async writeAtomic(dir: string, name: string, data: string, syncDir = true): Promise<void> {
    await writeFileAtomic(join(dir, name), data, this.fs);
    if (syncDir)
      await this.syncDir(dir).catch((e) => {
        throw new AfterChange(e);
      });
  }

  private async syncDir(dir: string): Promise<void> {
    const d = await this.fs.open(dir, "r");
    await d.sync().finally(() => d.close());
  }

  private async io<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      // The new file may be in place (the rename happened, the directory's fsync failed): what is on disk is then
      // not what memory holds, so the next read loads the disk again rather than act on a stale view. The request
      // still fails (its write may not survive a crash); the disk decides what is in force.
      if (e instanceof AfterChange) this.opening = undefined;
      throw new StateUnavailableError(what, e instanceof AfterChange ? e.cause : e);
    }
  }
}

/** A change in a directory (a rename, an unlink) that happened, whose directory fsync failed. */
class AfterChange extends Error {
  constructor(override readonly cause: unknown) {
    super("the directory could not be synced after a change in it");
  }
}

const ignore = (code: string) => (e: unknown) => {
  if ((e as { code?: string }).code !== code) throw e;
};

/** A desired pod as its file: the v1 Pod a person would write, with podsync's record beside it. */
function encode(e: DesiredPod): string {
  const { apiVersion: _a, kind: _k, ...pod } = e.pod;
  const podsync = { audit: e.audit, storedAt: e.storedAt, ...(e.objects ? { objects: e.objects } : {}) };
  return `${JSON.stringify({ apiVersion: "v1", kind: "Pod", ...pod, podsync }, null, 2)}\n`;
}

/** The entry, or why the file cannot be used. The pod goes through the schema again: a file changed by
 * hand is held to the same rules as a request (it is never acted on unvalidated). */
function decode(text: string): DesiredPod | string {
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return "not valid JSON";
  }
  if (typeof j !== "object" || j === null) return "not a JSON object";
  const { podsync, ...rest } = j as {
    podsync?: { audit?: DesiredPod["audit"]; storedAt?: number; objects?: DesiredPod["objects"] };
  };
  const audit = podsync?.audit;
  if (!audit || typeof audit.iss !== "string" || typeof audit.iat !== "number")
    return 'no "podsync.audit" record (iss, iat)';
  const r = Pod.safeParse(rest);
  if (!r.success)
    return `not a valid pod: ${r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`;
  // The file says apiVersion and kind for its readers; the pod as stored had them or not, and they change nothing.
  const { apiVersion: _a, kind: _k, ...pod } = r.data;
  return {
    pod: pod as Pod,
    audit,
    storedAt: typeof podsync.storedAt === "number" ? podsync.storedAt : 0,
    ...(podsync.objects ? { objects: podsync.objects } : {}),
  };
}
