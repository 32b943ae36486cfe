// Probe workers' state on the node's disk (Node entry), so a restart of podsync carries consecutive
// success/failure counts, published results and holds across: a liveness probe 2 failures into a threshold
// of 3 restarts the container at the next failure, not 3 failures later. A ProbeStateStore (prober.ts) under
// `<stateDir>/probes/`, one JSON file per pod (`<uid>.json`, 0600; the dir 0700).
//
// The prober's store is synchronous (it runs inside a tick), so everything is loaded at open and reads come
// from memory; writes are write-behind: a changed pod is written within `flushMs` (and at close), each file
// atomically (write a temporary file, fsync, rename), so a crash leaves either the old state or the new one.
// Losing the last flushMs of changes costs at most that many probe results, never a torn file. A file that
// does not parse is ignored (its pod starts over, as a new worker would). A pod is written only when what a
// restart reads changed: every field but the ticker's next time (`nextAt`, which moves on every probe; the one on
// disk is never later than the live one, so a restarted worker still probes within a period), so steady probes
// write nothing.
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { PodProbeState, ProbeStateStore } from "../prober/prober.js";
import { writeFileAtomic } from "./atomic-file.js";
import { StateUnavailableError } from "../pleg/state-unavailable.js";

/** A pod uid as a file name: what the pod schema allows, nothing that could leave the directory. */
const SAFE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;
const SUFFIX = ".json";

export interface FileProbeStateOptions {
  /** Most time a change waits before it is written (ms). Default 1000. */
  flushMs?: number;
  onError?: (e: unknown) => void;
}

export class FileProbeStateStore implements ProbeStateStore {
  private readonly m = new Map<string, PodProbeState>();
  private readonly dirty = new Set<string>();
  /** Each pod's state as last written or pending, without the tickers' times: what decides a write. */
  private readonly durable = new Map<string, string>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private flushing: Promise<void> | undefined;
  private readonly flushMs: number;

  constructor(
    /** `<stateDir>/probes` */
    readonly dir: string,
    private readonly o: FileProbeStateOptions = {},
  ) {
    this.flushMs = o.flushMs ?? 1000;
  }

  /** Load every pod's state. Throws StateUnavailableError when the directory cannot be made or read. */
  async open(): Promise<void> {
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      for (const name of await readdir(this.dir)) {
        if (!name.endsWith(SUFFIX)) {
          // A temporary file left by a crash mid-write.
          if (name.endsWith(".tmp")) await rm(join(this.dir, name), { force: true });
          continue;
        }
        const uid = name.slice(0, -SUFFIX.length);
        if (!SAFE.test(uid)) continue;
        try {
          const state = JSON.parse(await readFile(join(this.dir, name), "utf8")) as unknown;
          if (isState(state)) {
            this.m.set(uid, state);
            this.durable.set(uid, durableOf(state));
          }
        } catch {
          // Unreadable or torn: the pod's workers start over.
        }
      }
    } catch (e) {
      throw new StateUnavailableError("probe state", e);
    }
  }

  get(uid: string) {
    return this.m.get(uid);
  }
  set(uid: string, state: PodProbeState) {
    if (!SAFE.test(uid)) return;
    this.m.set(uid, state);
    const d = durableOf(state);
    if (this.durable.get(uid) === d) return;
    this.durable.set(uid, d);
    this.mark(uid);
  }
  delete(uid: string) {
    if (!this.m.delete(uid)) return;
    this.durable.delete(uid);
    this.mark(uid);
  }

  private mark(uid: string) {
    this.dirty.add(uid);
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Write every pending change now. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.flushing) await this.flushing;
    if (this.dirty.size === 0) return;
    const uids = [...this.dirty];
    this.dirty.clear();
    this.flushing = (async () => {
      for (const uid of uids) {
        const path = join(this.dir, uid + SUFFIX);
        const state = this.m.get(uid);
        try {
          if (!state) await rm(path, { force: true });
          else await writeFileAtomic(path, JSON.stringify(state));
        } catch (e) {
          // Kept dirty: the next flush tries again.
          this.dirty.add(uid);
          this.o.onError?.(e);
        }
      }
    })().finally(() => (this.flushing = undefined));
    await this.flushing;
  }

  async close(): Promise<void> {
    await this.flush();
  }
}

/** A pod's state without its workers' `nextAt`, as one string to compare. */
function durableOf(state: PodProbeState): string {
  return JSON.stringify(state, (k, v: unknown) => (k === "nextAt" ? undefined : v));
}

function isState(v: unknown): v is PodProbeState {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  return Object.values(v).every(
    (w) =>
      typeof w === "object" &&
      w !== null &&
      typeof (w as { containerId?: unknown }).containerId === "string" &&
      typeof (w as { nextAt?: unknown }).nextAt === "number" &&
      typeof (w as { resultRun?: unknown }).resultRun === "number",
  );
}
