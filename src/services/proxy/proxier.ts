// Package services/proxy/ — kube-proxy's nftables proxier: the pure rule set, nft transactions, the loop, flush.
// Imports ../types.js and node: modules only; never the runtime, HTTP or an entry point.
//
// The proxier's loop: reads the ServiceSource, computes the desired table (ruleset.ts, pure) and brings the kernel
// to it through nft (one transaction per sync). As kube-proxy's syncProxyRules: a full sync at start and after any
// failure (the kernel's table is read and everything of it rewritten), otherwise only what changed; changes that
// arrive during a sync are coalesced into the next one.
import type { ServiceSource } from "../types.js";
import { type NftRunner, nftCli } from "./nft.js";
import { desiredRuleset, type NftRuleset, type RulesetSettings } from "./ruleset.js";
import { fullSyncScript, incrementalScript, renderRuleset } from "./transaction.js";

export interface ProxierHealth {
  available: boolean;
  /** Why the data plane is unavailable (nft missing, no rights), or the last sync's error. */
  reason?: string;
  nftVersion?: string;
  syncs: number;
  failures: number;
  /** The last transaction written to the kernel (a sync with nothing to change writes none). */
  lastSync?: { at: number; full: boolean; commands: number; ms: number };
}

export interface Proxier {
  health(): ProxierHealth;
  /** Resolves when the kernel holds the source's state as of this call (or rejects with the sync's error); a
   * sync already under way that read that state is not repeated. */
  sync(): Promise<void>;
  stop(): Promise<void>;
}

export interface ProxierOptions {
  source: ServiceSource;
  settings: RulesetSettings;
  nft?: NftRunner;
  /** After a failed sync, the next try (kube-proxy retries after its syncPeriod; podsync sooner). */
  retryMs?: number;
  log?: (rec: Record<string, unknown>) => void;
}

/** Starts the proxier; resolves after the first (full) sync, or at once with available: false when nft cannot be
 * used (nothing is written then). */
/** The first sync, now; or, while the source has not its whole state yet (kube-proxy's isInitialized), later: the
 * table a previous run left keeps carrying traffic until then. */
async function firstSync(
  o: ProxierOptions,
  health: ProxierHealth,
  log: (rec: Record<string, unknown>) => void,
  kick: () => Promise<void>,
): Promise<void> {
  if (o.source.synced?.() === false) {
    health.available = true; // nft is usable
    log({ proxier: "waiting for the Services and their endpoints" });
    return;
  }
  await kick().catch((e: unknown) => log({ proxier: "first sync failed", error: (e as Error).message }));
}

export async function startProxier(o: ProxierOptions): Promise<Proxier> {
  const nft = o.nft ?? nftCli();
  const log = o.log ?? (() => undefined);
  const retryMs = o.retryMs ?? 1000;
  const health: ProxierHealth = { available: false, syncs: 0, failures: 0 };
  const probe = await nft.probe();
  if (!probe.ok) {
    health.reason = probe.reason;
    log({ proxier: "unavailable", error: probe.reason });
    return { health: () => ({ ...health }), sync: () => Promise.reject(new Error(probe.reason)), stop: async () => {} };
  }
  health.nftVersion = probe.version;
  // The probe listed the kernel's tables: where ours is not among them, the first full sync needs no listing.
  let knownAbsent = probe.tables !== undefined && !probe.tables.includes(o.settings.table);
  let applied: NftRuleset | undefined; // what the last successful transaction left in the kernel
  let needFull = true;
  let recreateBase = true;
  let running: Promise<void> | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  let changes = 0; // source changes seen
  let synced = -1; // the change count the last successful sync read
  let waiters: { upTo: number; resolve: () => void; reject: (e: unknown) => void }[] = [];

  const once = async () => {
    const upTo = changes;
    const started = performance.now();
    // The kernel's listing (a child process) runs while the desired table is computed.
    const listing =
      needFull || !applied ? (knownAbsent ? Promise.resolve(undefined) : nft.list(o.settings.table)) : undefined;
    knownAbsent = false;
    listing?.catch(() => undefined);
    const snap = o.source.snapshot();
    const want = desiredRuleset(snap.services, snap.endpointSlices, o.settings);
    let script: string[] | undefined = listing ? undefined : incrementalScript(applied!, want);
    const full = script === undefined;
    if (script === undefined)
      script = fullSyncScript(want, await (listing ?? nft.list(o.settings.table)), recreateBase);
    if (script.length > 0) {
      try {
        await nft.apply(script);
      } catch (e) {
        if (!full) throw e;
        // A table the full sync cannot take in place (a set of another type, say): rebuild it from nothing.
        await nft.deleteTable(o.settings.table);
        await nft.apply(renderRuleset(want));
      }
      health.lastSync = { at: Date.now(), full, commands: script.length, ms: performance.now() - started };
    }
    applied = want;
    needFull = false;
    recreateBase = false;
    synced = upTo;
    health.syncs++;
    health.available = true;
    delete health.reason;
  };

  /** Resolves when a sync that read the source as of now has succeeded. */
  const kick = (): Promise<void> => {
    const upTo = changes;
    if (upTo <= synced) return Promise.resolve();
    const p = new Promise<void>((resolve, reject) => waiters.push({ upTo, resolve, reject }));
    // Started in a microtask, not a timer: the changes made in this turn of the event loop go into one
    // transaction (kube-proxy's BoundedFrequencyRunner coalesces the same way, but also waits minSyncPeriod,
    // 1 s by default, after a burst of 2; podsync waits for nothing but a sync already under way).
    running ??= Promise.resolve().then(loop);
    return p;
  };
  const loop = async () => {
    while (!stopped && waiters.some((w) => w.upTo > synced)) {
      try {
        await once();
        const done = waiters.filter((w) => w.upTo <= synced);
        waiters = waiters.filter((w) => w.upTo > synced);
        for (const w of done) w.resolve();
      } catch (e) {
        needFull = true;
        synced = -1; // nothing is known good until a full sync succeeds
        health.failures++;
        health.reason = (e as Error).message;
        log({ proxier: "sync failed", error: health.reason, retryInMs: retryMs });
        const failed = waiters;
        waiters = [];
        for (const w of failed) w.reject(e);
        if (!stopped) {
          clearTimeout(retry);
          retry = setTimeout(() => {
            changes++; // a retry is owed a full sync whatever changed
            void kick().catch(() => undefined);
          }, retryMs);
          retry.unref?.();
        }
      }
    }
    running = undefined;
  };

  const unsubscribe = o.source.subscribe(() => {
    changes++;
    if (!stopped && o.source.synced?.() !== false) void kick().catch(() => undefined);
  });
  await firstSync(o, health, log, kick);
  return {
    health: () => ({ ...health, ...(health.lastSync ? { lastSync: { ...health.lastSync } } : {}) }),
    sync: kick,
    async stop() {
      stopped = true;
      unsubscribe();
      clearTimeout(retry);
      await running;
      nft.close?.();
      for (const w of waiters.splice(0)) w.reject(new Error("the proxier was stopped"));
    },
  };
}
